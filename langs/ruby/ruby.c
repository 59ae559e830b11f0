/* SPDX-License-Identifier: MIT */
/*
 * ruby.c: what the ruby manifest cannot say: the grammar of a gem
 * requirement, a gem name (letters, digits and -_., starting with a letter
 * or digit: "rake", "activesupport") with an optional ":VERSION" (as gem
 * install NAME:VERSION takes it: digits, letters and '.'). Options, paths
 * and URLs are refused before gem sees them.
 */
#include <ctype.h>
#include <string.h>

#include "langkit.h"

#define WHAT "gem name"

static int ruby_check_library(void *state, const char *spec, struct sbx_err *err)
{
    const char *p = spec;
    size_t n;

    (void)state;
    if (strlen(spec) > LANG_LIBRARY_MAX)
        return lang_refuse(err, WHAT, spec, "too long");
    if (!isalnum((unsigned char)p[0]))
        return lang_refuse(err, WHAT, spec, "a name starts with a letter or digit");
    n = lang_span(p, "-_.");
    p += n;
    if (*p == '\0')
        return 0;
    if (*p != ':' || !isdigit((unsigned char)p[1]))
        return lang_refuse(err, WHAT, spec, "only :VERSION may follow the name");
    p++;
    n = lang_span(p, ".");
    if (p[n] != '\0')
        return lang_refuse(err, WHAT, spec, "a version is letters, digits and dots");
    return 0;
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .check_library = ruby_check_library,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 0,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = "ruby",
        .version = "0.1.0",
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
