/* SPDX-License-Identifier: MIT */
/*
 * compat_lang.c: a language plugin written against a frozen older ABI
 * header (tests/abi/1.0 or 1.3; built once against each, as compat10lang
 * and compat13lang): Python under another name, whose prepare hook sets a
 * template variable the manifest's run line uses, so a run proves the hook
 * of an old plugin ran. A test fixture, never installed.
 */
#include <stdio.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

/* COMPAT_NAME ("compat10lang") and COMPAT_MINOR (0) come from the build,
 * and must match the header found. */
#if SBX_ABI_MINOR != COMPAT_MINOR || SBX_ABI_MINOR > 3
#error "compat_lang is built against a frozen ABI 1.0-1.3 header only"
#endif

#define STR_(x) #x
#define STR(x)  STR_(x)

static int check_library(void *state, const char *spec, struct sbx_err *err)
{
    (void)state;
    if (strspn(spec, "abcdefghijklmnopqrstuvwxyz") == strlen(spec))
        return 0;
    err->rc = SBX_E_INVALID;
    snprintf(err->msg, sizeof(err->msg), "'%.64s' is not a " COMPAT_NAME " library", spec);
    return SBX_E_INVALID;
}

static int prepare(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
        struct sbx_plan *plan, struct sbx_err *err)
{
    (void)state;
    (void)err;
    return ops->set_var(
            plan, "greeting", job->code_len > 0 ? "hello-from-1." STR(COMPAT_MINOR) : "empty");
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .check_library = check_library,
        .prepare = prepare,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = COMPAT_NAME,
        .version = COMPAT_VERSION,
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
