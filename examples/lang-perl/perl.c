/* SPDX-License-Identifier: MIT */
/*
 * perl.c: an EXAMPLE language plugin with a hook, built against an
 * installed llm-sandbox. The manifest (perl.yaml) says almost everything;
 * this code does the one thing it cannot: Perl refuses a program whose #!
 * line asks for taint mode ("-T" is on the #! line, it must also be used
 * on the command line), so the prepare hook reads the program's first
 * line and puts -T (or -t) in the template variable {switches}, which the
 * manifest's run line passes to perl; otherwise {switches} is "--".
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

/* The taint switch the program's #! line carries, or "--" (end of
 * switches: perl then takes the next argument as the program). */
static const char *taint_switch(const char *code, size_t len)
{
    const char *end = memchr(code, '\n', len);
    size_t n = end ? (size_t)(end - code) : len;
    char line[256];
    const char *sw;

    if (n < 2 || memcmp(code, "#!", 2) != 0 || n >= sizeof(line))
        return "--";
    memcpy(line, code, n);
    line[n] = '\0';
    if (!strstr(line, "perl"))
        return "--";
    /* the first switch cluster after the interpreter: "#!/usr/bin/perl -wT" */
    sw = strstr(line, " -");
    if (!sw)
        return "--";
    sw += 2;
    for (; isalpha((unsigned char)*sw); sw++) {
        if (*sw == 'T')
            return "-T";
        if (*sw == 't')
            return "-t";
    }
    return "--";
}

static int prepare(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
        struct sbx_plan *plan, struct sbx_err *err)
{
    int r;

    (void)state;
    r = ops->set_var(plan, "switches", taint_switch(job->code, job->code_len));
    if (r < 0) {
        err->rc = r;
        snprintf(err->msg, sizeof(err->msg), "perl: cannot set {switches}");
    }
    return r;
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .prepare = prepare,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = "perl",
        .version = "0.1.0",
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
