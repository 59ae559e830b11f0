/* SPDX-License-Identifier: MIT */
/*
 * r.c: what the r manifest cannot say: the grammar of an R package
 * requirement, a package name (letters, digits and '.', starting with a
 * letter, not ending with '.', at least two characters: "ggplot2",
 * "data.table") with an optional "@VERSION" (digits separated by '.' or
 * '-'). Anything else, R code included, is refused before R sees it.
 */
#include <ctype.h>
#include <string.h>

#include "langkit.h"

#define WHAT "R package name"

static int r_check_library(void *state, const char *spec, struct sbx_err *err)
{
    const char *p = spec;
    size_t n;

    (void)state;
    if (strlen(spec) > LANG_LIBRARY_MAX)
        return lang_refuse(err, WHAT, spec, "too long");
    if (!isalpha((unsigned char)p[0]))
        return lang_refuse(err, WHAT, spec, "a name starts with a letter");
    n = lang_span(p, ".");
    if (n < 2 || p[n - 1] == '.')
        return lang_refuse(err, WHAT, spec, "a name has two or more letters, digits and dots");
    p += n;
    if (*p == '\0')
        return 0;
    if (*p != '@' || !isdigit((unsigned char)p[1]))
        return lang_refuse(err, WHAT, spec, "only @VERSION may follow the name");
    p++;
    while (isdigit((unsigned char)*p) || ((*p == '.' || *p == '-') && isdigit((unsigned char)p[1])))
        p++;
    if (*p != '\0')
        return lang_refuse(err, WHAT, spec, "a version is numbers separated by . or -");
    return 0;
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .check_library = r_check_library,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 0,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = "r",
        .version = "0.1.0",
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
