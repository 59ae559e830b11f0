/* SPDX-License-Identifier: MIT */
/*
 * test_minire.c: the Windows build's regular-expression subset
 * (core/src/platform/minire.c) against glibc's regcomp/regexec, which the
 * Linux build uses: every in-tree language's version_pattern on version
 * outputs, refusals of what is outside the subset, and many generated
 * patterns of the subset searched in generated texts, where both must
 * agree on whether, where and what group 1 matched.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/minire.h"

/* Both engines on one pattern and text: they agree on the outcome, the
 * whole match and every group. */
static void agree(const char *pat, const char *text)
{
    long m[3][2];
    regmatch_t rm[3];
    regex_t re;
    int mine = minire_search(pat, text, m, 3), theirs;

    assert_int_equal(regcomp(&re, pat, REG_EXTENDED), 0);
    theirs = regexec(&re, text, 3, rm, 0) == 0;
    regfree(&re);
    if (mine != theirs)
        fail_msg("'%s' in '%s': minire %d, regexec %d", pat, text, mine, theirs);
    for (int g = 0; mine == 1 && g < 3; g++)
        if (m[g][0] != (long)rm[g].rm_so || m[g][1] != (long)rm[g].rm_eo)
            fail_msg("'%s' in '%s', group %d: minire %ld..%ld, regexec %ld..%ld", pat, text, g,
                    m[g][0], m[g][1], (long)rm[g].rm_so, (long)rm[g].rm_eo);
}

static void test_manifest_patterns(void **state)
{
    static const char *const outputs[] = {"Python 3.11.2\n", "g++ (Debian 12.2.0-14) 12.2.0\n",
            "go version go1.19.8 linux/amd64\n", "javac 17.0.13\n", "v18.19.0\n",
            "Rscript (R) version 4.2.2 (2022-10-31)\n",
            "ruby 3.1.2p20 (2022-04-12 revision 4491bb740a) [x86_64-linux-gnu]\n", "", "\n",
            "no version here", "Python \n3", "g++ 1.2", "gogo go", "version  4."};
    char path[4096];
    const char *src = getenv("SBX_SOURCE_DIR");
    struct dirent *de;
    DIR *d;
    int found = 0;

    (void)state;
    if (!src)
        skip();
    snprintf(path, sizeof(path), "%s/langs", src);
    d = opendir(path);
    assert_non_null(d);
    while ((de = readdir(d))) {
        char line[512], pat[512];
        FILE *f;

        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/langs/%s/%s.yaml", src, de->d_name, de->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof(line), f)) {
            char *p = strstr(line, "version_pattern: \""), *w = pat;

            if (!p)
                continue;
            /* the YAML double-quoted scalar: only \\ and \" occur */
            for (p += 18; *p && *p != '"'; p++)
                *w++ = *p == '\\' ? *++p : *p;
            *w = '\0';
            assert_null(minire_check(pat, NULL));
            for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++)
                agree(pat, outputs[i]);
            found++;
        }
        fclose(f);
    }
    closedir(d);
    assert_true(found >= 7); /* every in-tree language has one */
}

static void test_versions(void **state)
{
    long m[2][2];

    (void)state;
    assert_int_equal(minire_search("Python ([0-9][0-9.]*)", "Python 3.11.2\n", m, 2), 1);
    assert_int_equal(m[1][0], 7);
    assert_int_equal(m[1][1], 13);
    assert_int_equal(minire_search("g\\+\\+[^0-9]*([0-9]+\\.[0-9]+\\.[0-9]+)",
                             "g++ (Debian 12.2.0-14) 12.2.0", m, 2),
            1);
    assert_int_equal(m[1][0], 12);
    assert_int_equal(m[1][1], 18);
    assert_int_equal(minire_search("^v([0-9]+)$", "xv1", m, 2), 0);
    assert_int_equal(minire_search("^v([0-9]+)$", "v12", m, 2), 1);
}

static void test_refusals(void **state)
{
    static const char *const outside[] = {"a|b", "a{1,2}", "*a", "(a)*", "((a))", "(a", "a)", "a^",
            "$a", "[[:digit:]]", "\\d", "\\1", "a\\", "[a", "[z-a]", "a**", "a+?",
            "(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)"};
    size_t groups = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        long m[1][2];

        if (!minire_check(outside[i], NULL))
            fail_msg("'%s' was taken", outside[i]);
        assert_int_equal(minire_search(outside[i], "abc", m, 1), -1);
    }
    assert_null(minire_check("x([0-9.]+)-(y)", &groups));
    assert_int_equal(groups, 2);
    assert_null(minire_check("[]a-]\\.\\+\\(", &groups));
    assert_int_equal(groups, 0);
}

/* A pattern budget that would take exponential time gives up, never hangs. */
static void test_budget(void **state)
{
    char text[80];
    long m[1][2];

    (void)state;
    memset(text, 'a', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    assert_int_equal(minire_search("a*a*a*a*a*a*a*a*a*a*a*a*b", text, m, 1), -1);
}

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

/* Generated patterns of the subset over a small alphabet, in generated
 * texts over the same: both engines agree. */
static void test_generated(void **state)
{
    static const char *const atoms[] = {
            "a", "b", ".", "[ab]", "[^a]", "[a-c]", "\\.", "0", "[0-9]", "[^0-9]", "c"};
    static const char *const quants[] = {"", "", "*", "+", "?"};
    unsigned seed = 42;
    int compared = 0;

    (void)state;
    for (int t = 0; t < 4000; t++) {
        char pat[128] = "", text[24];
        size_t n = 1 + rnd(&seed) % 5, tl = rnd(&seed) % 12;
        int group_at = (int)(rnd(&seed) % (n + 1)) - 1, group_len = 1 + (int)(rnd(&seed) % 2);

        if (rnd(&seed) % 6 == 0)
            strcat(pat, "^");
        for (size_t i = 0; i < n; i++) {
            if ((int)i == group_at)
                strcat(pat, "(");
            strcat(pat, atoms[rnd(&seed) % (sizeof(atoms) / sizeof(atoms[0]))]);
            strcat(pat, quants[rnd(&seed) % (sizeof(quants) / sizeof(quants[0]))]);
            if (group_at >= 0 && (int)i == group_at + group_len - 1)
                strcat(pat, ")");
        }
        if (group_at >= 0 && group_at + group_len > (int)n)
            strcat(pat, ")");
        if (rnd(&seed) % 6 == 0)
            strcat(pat, "$");
        for (size_t i = 0; i < tl; i++)
            text[i] = "ab.c0 9"[rnd(&seed) % 7];
        text[tl] = '\0';
        assert_null(minire_check(pat, NULL));
        agree(pat, text);
        compared++;
    }
    assert_int_equal(compared, 4000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_manifest_patterns),
            cmocka_unit_test(test_versions),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_budget),
            cmocka_unit_test(test_generated),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
