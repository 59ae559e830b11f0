/* SPDX-License-Identifier: MIT */
/*
 * test_lang_names.c: each language plugin's check_library hook, the
 * grammar a library name must pass before any installer sees it. Built
 * once per language (LANG_NAME names it; the plugin's source is linked in)
 * and reached the way the core reaches it, through the descriptor. The
 * python plugin has its own, longer test (test_python_names.c).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <stdio.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

const struct sbx_plugin *sbx_plugin_entry_v1(void);

struct names {
    const char *lang;
    const char *const *good;
    const char *const *bad;
};

static const char *const js_good[] = {
        "lodash", "is-number@7.0.0", "@types/node", "left-pad@^1.3.0", "lodash@4.17.21", NULL};
static const char *const js_bad[] = {"Lodash", "../x", "lodash@npm:evil", "http://x/y.tgz", "a b",
        "-g", "lodash; rm -rf /", "git+ssh://x", "file:../x", "", NULL};
static const char *const go_good[] = {"github.com/google/uuid", "golang.org/x/text@v0.14.0",
        "example.com/m@latest", "github.com/google/uuid@v1.6.0", NULL};
static const char *const go_bad[] = {"uuid", "../x", "github.com/a/b@master", "-insecure",
        "Github.com/a", "github.com/a/b; id", NULL};
static const char *const java_good[] = {
        "org.apache.commons:commons-lang3:3.14.0", "g:a:jar:1.0", NULL};
static const char *const java_bad[] = {
        "commons-lang3", "a:b", "a:b:c:d:e:f", "a;b:c:1", ":a:1", "-Dx=y", NULL};
static const char *const r_good[] = {"ggplot2", "data.table", "Rcpp@1.0.12", NULL};
static const char *const r_bad[] = {"1abc", "a", "x.", "pkg; system('id')", "pkg@latest", NULL};
static const char *const ruby_good[] = {"rake", "activesupport:7.1.3", "nokogiri", NULL};
static const char *const ruby_bad[] = {"-v", "../x", "rake:>=1", "a b", "rake; id", NULL};

static const struct names tables[] = {
        {"javascript", js_good, js_bad},
        {"go", go_good, go_bad},
        {"java", java_good, java_bad},
        {"r", r_good, r_bad},
        {"ruby", ruby_good, ruby_bad},
};

static const struct names *table(void)
{
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
        if (strcmp(tables[i].lang, LANG_NAME) == 0)
            return &tables[i];
    fail_msg("no names for %s", LANG_NAME);
    return NULL;
}

static int check(const char *spec, struct sbx_err *err)
{
    const struct sbx_plugin *d = sbx_plugin_entry_v1();

    memset(err, 0, sizeof(*err));
    err->size = sizeof(*err);
    assert_non_null(d->language);
    assert_non_null(d->language->check_library);
    return d->language->check_library(NULL, spec, err);
}

static void test_descriptor(void **state)
{
    const struct sbx_plugin *d = sbx_plugin_entry_v1();

    (void)state;
    assert_string_equal(d->name, LANG_NAME);
    assert_int_equal(d->kind, SBX_KIND_LANGUAGE);
}

static void test_accepts(void **state)
{
    struct sbx_err err;

    (void)state;
    for (const char *const *n = table()->good; *n; n++) {
        if (check(*n, &err) != 0)
            fail_msg("%s refused '%s': %s", LANG_NAME, *n, err.msg);
    }
}

static void test_refuses(void **state)
{
    struct sbx_err err;

    (void)state;
    for (const char *const *n = table()->bad; *n; n++) {
        if (check(*n, &err) != SBX_E_INVALID)
            fail_msg("%s accepted '%s'", LANG_NAME, *n);
        assert_true(err.msg[0] != '\0');
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_descriptor),
            cmocka_unit_test(test_accepts),
            cmocka_unit_test(test_refuses),
    };

    return cmocka_run_group_tests_name(LANG_NAME, tests, NULL, NULL);
}
