/* SPDX-License-Identifier: MIT */
/*
 * test_python_names.c: the python plugin's check_library hook, the grammar
 * a pip requirement must pass before any installer sees it. Links
 * langs/python/python.c directly and reaches the hook the way the core
 * does, through the descriptor. Accepts PEP 508 names with extras and
 * version specifiers; refuses URLs, markers, options, paths, shell
 * syntax, control characters and overlong names, with a message that
 * quotes the requirement and names the field "libraries".
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

static const struct sbx_language_ops *ops(void)
{
    const struct sbx_plugin *d = sbx_plugin_entry_v1();

    assert_non_null(d);
    assert_int_equal(d->kind, SBX_KIND_LANGUAGE);
    assert_non_null(d->language);
    assert_non_null(d->language->check_library);
    return d->language;
}

static int check(const char *spec, struct sbx_err *err)
{
    memset(err, 0, sizeof(*err));
    err->size = sizeof(*err);
    return ops()->check_library(NULL, spec, err);
}

static void test_descriptor(void **state)
{
    const struct sbx_plugin *d = sbx_plugin_entry_v1();

    (void)state;
    assert_int_equal(d->abi_major, SBX_ABI_MAJOR);
    assert_true(d->abi_minor <= SBX_ABI_MINOR);
    assert_string_equal(d->name, "python");
    assert_true(d->language->size >= sizeof(struct sbx_language_ops));
}

static void test_accepts(void **state)
{
    static const char *const good[] = {
            "numpy",
            "pyfiglet",
            "scikit-learn",
            "zope.interface",
            "pandas[excel]>=2.0,<3",
            "requests==2.31.0",
            "torch~=2.1",
            "a==1.0.post1",
            "Django!=4.0",
            "pandas[excel,performance]",
            "numpy>=1.20,<2,!=1.21.0",
            "a",
            "A1_b-c.d",
    };
    struct sbx_err err;

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int r = check(good[i], &err);

        if (r != 0)
            fail_msg("'%s' refused: %s", good[i], err.msg);
    }
}

/* Refused with SBX_E_INVALID, field "libraries", a message quoting spec. */
static void assert_refused(const char *spec)
{
    struct sbx_err err;
    char quoted[128];
    int r = check(spec, &err);

    if (r == 0)
        fail_msg("'%s' accepted", spec);
    assert_int_equal(r, SBX_E_INVALID);
    assert_int_equal(err.rc, SBX_E_INVALID);
    assert_string_equal(err.field, "libraries");
    assert_non_null(memchr(err.msg, '\0', sizeof(err.msg)));
    snprintf(quoted, sizeof(quoted), "'%s'", spec);
    if (!strstr(err.msg, quoted))
        fail_msg("message '%s' does not quote %s", err.msg, quoted);
}

static void test_refuses(void **state)
{
    static const char *const bad[] = {
            "; rm -rf /",
            "--index-url=http://x",
            "-e .",
            "../x",
            "x @ https://evil",
            "x; python_version<'3'",
            "git+https://x",
            "",
            "a b",
            "numpy==",
            "[extra]",
            "x>=",
            "$(id)",
            "x$(id)",
            "numpy==$(id)",
            "`id`",
            "numpy`id`",
            "numpy|sh",
            "numpy&&id",
            "numpy[",
            "numpy[]",
            "numpy[a",
            "numpy[a]extra",
            "numpy ==1.0",
            "numpy==1.0 ",
            " numpy",
            "/abs/path",
            "file:///x",
            "numpy>=1.0;",
            "numpy=1.0",
            "numpy,",
            ",numpy",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_refused(bad[i]);
}

/* PEP 508 has no empty specifier after a comma; pip would refuse it later. */
static void test_refuses_trailing_comma(void **state)
{
    (void)state;
    assert_refused("numpy>=1,");
    assert_refused("pandas[excel]>=2.0,<3,");
}

/* Control characters are refused, and the message stays one printable
 * line (STYLE E7) that still names the requirement. */
static void assert_refused_control(const char *spec)
{
    struct sbx_err err;

    if (check(spec, &err) == 0)
        fail_msg("a requirement with a control character was accepted");
    assert_int_equal(err.rc, SBX_E_INVALID);
    assert_string_equal(err.field, "libraries");
    assert_non_null(strstr(err.msg, "nu"));
    for (const char *m = err.msg; *m; m++) {
        if ((unsigned char)*m < 0x20 || *m == 0x7f)
            fail_msg("message '%s' holds control character 0x%02x", err.msg, *m);
    }
}

static void test_refuses_control(void **state)
{
    (void)state;
    assert_refused_control("numpy\n");
    assert_refused_control("numpy\r");
    assert_refused_control("numpy\t");
    assert_refused_control("numpy\n==1.0");
    assert_refused_control("nu\x01mpy");
    assert_refused_control("numpy\x1b[2J");
}

/* 201 characters is one too many; the message shows the first 80. */
static void test_refuses_long(void **state)
{
    char name[202], head[81];
    struct sbx_err err;

    (void)state;
    memset(name, 'a', 200);
    name[200] = '\0';
    assert_int_equal(check(name, &err), 0);
    name[200] = 'a';
    name[201] = '\0';
    assert_int_equal(check(name, &err), SBX_E_INVALID);
    assert_string_equal(err.field, "libraries");
    memcpy(head, name, 80);
    head[80] = '\0';
    assert_non_null(strstr(err.msg, head));
    assert_non_null(strstr(err.msg, "too long"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_descriptor),
            cmocka_unit_test(test_accepts),
            cmocka_unit_test(test_refuses),
            cmocka_unit_test(test_refuses_trailing_comma),
            cmocka_unit_test(test_refuses_control),
            cmocka_unit_test(test_refuses_long),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
