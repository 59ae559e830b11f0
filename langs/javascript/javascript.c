/* SPDX-License-Identifier: MIT */
/*
 * javascript.c: what the javascript manifest cannot say. prepare: code with
 * ES module syntax (an import or export statement, import.meta, or await
 * outside every brace) is staged as main.mjs, so Node runs it as a module
 * with top-level await; anything else stays the CommonJS main.js, where
 * require() works. The scan skips comments and strings but is no parser: a
 * wrong guess costs a SyntaxError or a missing require, nothing worse.
 * check_library: the grammar of an npm requirement, NAME or NAME@RANGE, where NAME is an npm
 * package name
 * ("lodash", "@types/node": lowercase, at most 214 characters, not
 * starting with '.' or '_') and RANGE a version, tag or semver range
 * without spaces. URLs, paths, git specs, aliases ("npm:") and options are
 * refused before any installer sees them.
 */
#include <string.h>

#include "langkit.h"

#define WHAT "npm package"

/* One name part: lowercase letters, digits and -._~, not starting with . or _ */
static size_t name_part(const char *s)
{
    size_t n = 0;

    if (s[0] == '.' || s[0] == '_')
        return 0;
    while (s[n] &&
            ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || strchr("-._~", s[n])))
        n++;
    return n;
}

/* Skip a comment or string starting at code[i]; the index after it, or i. */
static size_t skip_literal(const char *code, size_t len, size_t i)
{
    char q = code[i];

    if (q == '/' && i + 1 < len && code[i + 1] == '/') {
        while (i < len && code[i] != '\n')
            i++;
        return i;
    }
    if (q == '/' && i + 1 < len && code[i + 1] == '*') {
        for (i += 2; i + 1 < len && !(code[i] == '*' && code[i + 1] == '/'); i++)
            ;
        return i + 2 <= len ? i + 2 : len;
    }
    if (q == '"' || q == '\'' || q == '`') {
        for (i++; i < len && code[i] != q; i++)
            if (code[i] == '\\')
                i++;
        return i < len ? i + 1 : len;
    }
    return i;
}

static bool is_module(const char *code, size_t len)
{
    int depth = 0;
    bool line_start = true;

    for (size_t i = 0; i < len;) {
        size_t next = skip_literal(code, len, i);
        char c = code[i];

        if (next != i) {
            i = next;
            continue;
        }
        if (c == '{') /* function bodies; an await in (...) at the top is still top-level */
            depth++;
        else if (c == '}' && depth > 0)
            depth--;
        if (lang_ident_char(c) && (i == 0 || !lang_ident_char(code[i - 1]))) {
            size_t n = 0;

            while (i + n < len && lang_ident_char(code[i + n]))
                n++;
            if (n == 6 && memcmp(code + i, "import", 6) == 0) {
                size_t j = lang_skip_space(code, len, i + 6);

                if (j < len && code[j] == '.') /* import.meta */
                    return true;
                if (line_start && depth == 0 && j < len && code[j] != '(')
                    return true;
            }
            if (line_start && depth == 0 && n == 6 && memcmp(code + i, "export", 6) == 0)
                return true;
            if (depth == 0 && n == 5 && memcmp(code + i, "await", 5) == 0)
                return true;
            i += n;
            line_start = false;
            continue;
        }
        if (c == '\n' || c == ';')
            line_start = true;
        else if (!isspace((unsigned char)c))
            line_start = false;
        i++;
    }
    return false;
}

static int javascript_prepare(void *state, const struct sbx_lang_job *job,
        const struct sbx_plan_ops *ops, struct sbx_plan *plan, struct sbx_err *err)
{
    (void)state;
    if (is_module(job->code, job->code_len) && ops->set_source_name(plan, "main.mjs") < 0) {
        err->rc = SBX_E_NOMEM;
        snprintf(err->msg, sizeof(err->msg), "out of memory");
        return SBX_E_NOMEM;
    }
    return 0;
}

static int javascript_check_library(void *state, const char *spec, struct sbx_err *err)
{
    const char *p = spec, *name = spec;
    size_t n;

    (void)state;
    if (strlen(spec) > LANG_LIBRARY_MAX)
        return lang_refuse(err, WHAT, spec, "too long");
    if (*p == '@') { /* @scope/name */
        n = name_part(p + 1);
        if (n == 0 || p[1 + n] != '/')
            return lang_refuse(err, WHAT, spec, "a scope is @scope/name");
        p += n + 2;
    }
    n = name_part(p);
    if (n == 0 || *p == '.' || *p == '_' || *p == '-')
        return lang_refuse(err, WHAT, spec,
                "a name is lowercase letters, digits and -._~, not starting with . _ or -");
    p += n;
    if ((size_t)(p - name) > 214)
        return lang_refuse(err, WHAT, spec, "a name has at most 214 characters");
    if (*p == '\0')
        return 0;
    if (*p != '@' || p[1] == '\0')
        return lang_refuse(err, WHAT, spec, "only @VERSION may follow the name");
    p++;
    if (strncmp(p, "npm:", 4) == 0 || p[0] == '-')
        return lang_refuse(err, WHAT, spec, "aliases and options are not versions");
    n = lang_span(p, ".-+^~<>=*|");
    if (p[n] != '\0')
        return lang_refuse(err, WHAT, spec, "a version is letters, digits and .-+^~<>=*|");
    return 0;
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .check_library = javascript_check_library,
        .prepare = javascript_prepare,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 0,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = "javascript",
        .version = "0.1.0",
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
