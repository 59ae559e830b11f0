/* SPDX-License-Identifier: MIT */
/*
 * go.c: what the go manifest cannot say. prepare: code that defines a test
 * function (func TestXxx(t *testing.T)) runs in the manifest's "test" mode,
 * `go test -v`, as the public listing's "Execute this Go test snippet"
 * expects. check_library: a module path with an optional @version
 * ("github.com/google/uuid", "golang.org/x/text@v0.14.0"): a domain-like
 * first element, then path elements of letters, digits and -._~; the
 * version is "latest" or starts with v and a digit. Options, URLs and
 * relative paths are refused.
 */
#include <string.h>

#include "langkit.h"

#define WHAT "Go module path"

/* "func Test" + an uppercase letter, digit or _ (or end of name), then
 * "(NAME *testing.T)". */
static bool has_test_func(const char *code, size_t len)
{
    for (size_t i = lang_find_word(code, len, 0, "func"); i < len;
            i = lang_find_word(code, len, i + 4, "func")) {
        char name[128], param[128];
        size_t j = lang_skip_space(code, len, i + 4), n;

        n = lang_ident(code, len, j, name, sizeof(name));
        if (n < 4 || strncmp(name, "Test", 4) != 0 ||
                (name[4] && !(name[4] == '_' || (name[4] >= 'A' && name[4] <= 'Z') ||
                                    (name[4] >= '0' && name[4] <= '9'))))
            continue;
        j = lang_skip_space(code, len, j + n);
        if (j >= len || code[j] != '(')
            continue;
        j = lang_skip_space(code, len, j + 1);
        n = lang_ident(code, len, j, param, sizeof(param));
        if (n == 0)
            continue;
        j = lang_skip_space(code, len, j + n);
        if (j + 10 <= len && memcmp(code + j, "*testing.T", 10) == 0)
            return true;
    }
    return false;
}

static int go_prepare(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
        struct sbx_plan *plan, struct sbx_err *err)
{
    (void)state;
    if (!has_test_func(job->code, job->code_len))
        return 0;
    if (ops->size < offsetof(struct sbx_plan_ops, select_mode) + sizeof(ops->select_mode) ||
            !ops->select_mode || ops->select_mode(plan, "test") < 0) {
        err->rc = SBX_E_INTERNAL;
        snprintf(err->msg, sizeof(err->msg), "cannot select the go test mode");
        return SBX_E_INTERNAL;
    }
    return 0;
}

static int go_check_library(void *state, const char *spec, struct sbx_err *err)
{
    const char *p = spec;
    size_t n;

    (void)state;
    if (strlen(spec) > LANG_LIBRARY_MAX)
        return lang_refuse(err, WHAT, spec, "too long");
    /* the first element: a domain with a dot, lowercase */
    n = lang_span(p, ".-");
    if (n == 0 || !memchr(p, '.', n) || p[0] == '.' || p[0] == '-')
        return lang_refuse(err, WHAT, spec, "it starts with a domain like github.com");
    for (size_t i = 0; i < n; i++)
        if (p[i] >= 'A' && p[i] <= 'Z')
            return lang_refuse(err, WHAT, spec, "the domain is lowercase");
    p += n;
    while (*p == '/') {
        n = lang_span(p + 1, "-._~");
        if (n == 0 || p[1] == '.' || (n == 2 && p[1] == '.' && p[2] == '.'))
            return lang_refuse(err, WHAT, spec, "empty or dot path element");
        p += n + 1;
    }
    if (*p == '\0')
        return 0;
    if (*p != '@')
        return lang_refuse(err, WHAT, spec, "only /ELEMENT and @VERSION may follow");
    p++;
    if (strcmp(p, "latest") == 0)
        return 0;
    if (p[0] != 'v' || !(p[1] >= '0' && p[1] <= '9'))
        return lang_refuse(err, WHAT, spec, "a version is 'latest' or like v1.2.3");
    n = lang_span(p, ".-+");
    if (p[n] != '\0')
        return lang_refuse(err, WHAT, spec, "a version is letters, digits and .-+");
    return 0;
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .check_library = go_check_library,
        .prepare = go_prepare,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 1, /* select_mode */
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = "go",
        .version = "0.1.0",
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
