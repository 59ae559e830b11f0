/* SPDX-License-Identifier: MIT */
/*
 * test_cmdline.c: the Windows command line built from an argv
 * (core/src/platform/cmdline.c): known lines, refusals, and a round trip
 * through a parser written here from Microsoft's documented rules for
 * many generated argvs. The same round trip runs against Windows' own
 * parsers (CommandLineToArgvW and a child's C runtime) under wine, in
 * tests/windows/cmdline_check.c.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "platform/cmdline.h"

#define MAX_ARGS 16
#define ARG_LEN  64

static char *build(const char *const *argv, int *ret_rc)
{
    struct dynbuf b;
    struct sbx_error *err = NULL;
    char *s;

    dynbuf_init(&b, 1 << 20);
    *ret_rc = win_cmdline_build(argv, &b, &err);
    sbx_error_free(err);
    s = dynbuf_take(&b, NULL);
    return s;
}

/* The C runtime's rules for the arguments after the program name. */
static int parse_args(const char *p, char out[][ARG_LEN], int max)
{
    int n = 0;

    while (*p == ' ' || *p == '\t')
        p++;
    while (*p && n < max) {
        size_t o = 0;
        int quoted = 0;

        while (*p && (quoted || (*p != ' ' && *p != '\t'))) {
            size_t slashes = 0;

            while (*p == '\\') {
                slashes++;
                p++;
            }
            if (*p == '"') {
                for (size_t i = 0; i < slashes / 2; i++)
                    out[n][o++] = '\\';
                if (slashes % 2)
                    out[n][o++] = '"';
                else
                    quoted = !quoted;
                p++;
                continue;
            }
            for (size_t i = 0; i < slashes; i++)
                out[n][o++] = '\\';
            if (*p && (quoted || (*p != ' ' && *p != '\t')))
                out[n][o++] = *p++;
        }
        out[n++][o] = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
    }
    return n;
}

/* Skips the program name: up to a space, or a quoted part, no escapes. */
static const char *skip_program(const char *p, char *ret_prog)
{
    size_t o = 0;

    if (*p == '"') {
        for (p++; *p && *p != '"'; p++)
            ret_prog[o++] = *p;
        if (*p)
            p++;
    } else {
        while (*p && *p != ' ' && *p != '\t')
            ret_prog[o++] = *p++;
    }
    ret_prog[o] = '\0';
    return p;
}

static void round_trip(const char *const *argv)
{
    char args[MAX_ARGS][ARG_LEN], prog[ARG_LEN];
    int rc, n, want = 0;
    char *line = build(argv, &rc);
    const char *rest;

    assert_int_equal(rc, 0);
    rest = skip_program(line, prog);
    assert_string_equal(prog, argv[0]);
    n = parse_args(rest, args, MAX_ARGS);
    while (argv[want + 1])
        want++;
    if (n != want)
        fail_msg("line [%s]: %d arguments back, %d given", line, n, want);
    for (int i = 0; i < n; i++)
        if (strcmp(args[i], argv[i + 1]) != 0)
            fail_msg("line [%s]: argument %d came back as [%s], given [%s]", line, i + 1, args[i],
                    argv[i + 1]);
    free(line);
}

static void test_known_lines(void **state)
{
    static const struct {
        const char *argv[6];
        const char *line;
    } cases[] = {
            {{"wsl.exe", "-l", "-q", NULL}, "wsl.exe -l -q"},
            {{"C:\\Program Files\\wsl.exe", "a b", NULL}, "\"C:\\Program Files\\wsl.exe\" \"a b\""},
            {{"p", "", NULL}, "p \"\""},
            {{"p", "a\"b", NULL}, "p \"a\\\"b\""},
            {{"p", "a\\\\b", NULL}, "p a\\\\b"},
            {{"p", "a b\\", NULL}, "p \"a b\\\\\""},
            {{"p", "\\\"", NULL}, "p \"\\\\\\\"\""},
            {{"p", "tab\there", NULL}, "p \"tab\there\""},
            {{"p", "C:\\dir\\", NULL}, "p C:\\dir\\"},
    };
    int rc;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *line = build(cases[i].argv, &rc);

        assert_int_equal(rc, 0);
        assert_string_equal(line, cases[i].line);
        round_trip(cases[i].argv);
        free(line);
    }
}

static void test_refusals(void **state)
{
    const char *none[] = {NULL};
    const char *empty[] = {"", NULL};
    const char *quote[] = {"a\"b.exe", NULL};
    const char *bat[] = {"C:\\x\\run.BAT", "arg", NULL};
    const char *cmd[] = {"run.cmd. .", NULL};
    char *big = malloc(WIN_CMDLINE_MAX + 1);
    const char *toolong[] = {"p", big, NULL};
    int rc;

    (void)state;
    assert_non_null(big);
    memset(big, 'x', WIN_CMDLINE_MAX);
    big[WIN_CMDLINE_MAX] = '\0';
    free(build(none, &rc));
    assert_int_equal(rc, SBX_E_INVALID);
    free(build(empty, &rc));
    assert_int_equal(rc, SBX_E_INVALID);
    free(build(quote, &rc));
    assert_int_equal(rc, SBX_E_INVALID);
    free(build(bat, &rc));
    assert_int_equal(rc, SBX_E_INVALID);
    free(build(cmd, &rc));
    assert_int_equal(rc, SBX_E_INVALID);
    free(build(toolong, &rc));
    assert_int_equal(rc, SBX_E_LIMIT);
    big[WIN_CMDLINE_MAX - 3] = '\0'; /* "p " + it = 32766 characters: fits */
    free(build(toolong, &rc));
    assert_int_equal(rc, 0);
    free(big);
}

/* Arguments drawn from the characters the rules treat specially. */
static void test_generated(void **state)
{
    static const char alphabet[] = {'a', ' ', '\t', '"', '\\', 'z', '\n', '\xc3', '\xa9'};
    unsigned seed = 12345;

    (void)state;
    for (int round = 0; round < 20000; round++) {
        char store[4][12];
        const char *argv[6] = {"prog.exe"};
        int nargs = 1 + round % 4;

        for (int i = 0; i < nargs; i++) {
            int len = (int)((seed >> 8) % 11);

            for (int k = 0; k < len; k++) {
                seed = seed * 1103515245u + 12345u;
                store[i][k] = alphabet[(seed >> 16) % sizeof(alphabet)];
            }
            store[i][len] = '\0';
            seed = seed * 1103515245u + 12345u;
            argv[i + 1] = store[i];
        }
        argv[nargs + 1] = NULL;
        round_trip(argv);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_known_lines),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_generated),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
