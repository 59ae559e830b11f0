/* SPDX-License-Identifier: MIT */
/*
 * python.c: what the python manifest cannot say: the grammar of a pip
 * requirement. Accepts a PEP 508 name with optional extras and version
 * specifiers ("numpy", "pandas[excel]>=2.0,<3"); refuses URLs, markers,
 * options ("--index-url=..."), paths and anything a shell would interpret,
 * before any installer sees it.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "langkit.h"

#define WHAT "pip requirement"

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

/* PEP 508 name: starts and ends alphanumeric. Returns its length or 0. */
static size_t scan_name(const char *s)
{
    size_t n = 0;

    if (!isalnum((unsigned char)s[0]))
        return 0;
    while (name_char(s[n]))
        n++;
    while (n > 0 && !isalnum((unsigned char)s[n - 1]))
        n--;
    return n;
}

static bool version_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '*' || c == '+' || c == '!' || c == '-';
}

/* One specifier: an operator, then a version. Returns its length or 0. */
static size_t scan_spec(const char *s)
{
    static const char *const ops[] = {"===", "==", "!=", "~=", ">=", "<=", ">", "<"};
    size_t n = 0, v;

    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (strncmp(s, ops[i], strlen(ops[i])) == 0) {
            n = strlen(ops[i]);
            break;
        }
    }
    if (n == 0)
        return 0;
    for (v = 0; version_char(s[n + v]); v++)
        ;
    return v && isalnum((unsigned char)s[n]) ? n + v : 0;
}

static int python_check_library(void *state, const char *spec, struct sbx_err *err)
{
    const char *p = spec;
    size_t n;

    (void)state;
    if (strlen(spec) > LANG_LIBRARY_MAX)
        return lang_refuse(err, WHAT, spec, "too long");
    n = scan_name(p);
    if (n == 0)
        return lang_refuse(err, WHAT, spec, "a name starts with a letter or digit");
    p += n;
    if (*p == '[') {
        do {
            p++;
            n = scan_name(p);
            if (n == 0)
                return lang_refuse(err, WHAT, spec, "bad extra");
            p += n;
        } while (*p == ',');
        if (*p++ != ']')
            return lang_refuse(err, WHAT, spec, "unclosed extras");
    }
    while (*p) {
        n = scan_spec(p);
        if (n == 0)
            return lang_refuse(err, WHAT, spec, "only version specifiers may follow the name");
        p += n;
        if (*p == ',' && p[1] == '\0')
            return lang_refuse(err, WHAT, spec, "a version specifier must follow ','");
        if (*p == ',')
            p++;
        else if (*p)
            return lang_refuse(err, WHAT, spec, "unexpected character");
    }
    return 0;
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .check_library = python_check_library,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = "python",
        .version = "0.1.0",
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
