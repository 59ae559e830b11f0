/* SPDX-License-Identifier: MIT */
/*
 * test_bwrap_floor.c: doctor's bubblewrap version floor (GHSA-pxhw-h44j-8pfx)
 * against fake bwrap binaries (sh scripts printing a version) and package
 * changelogs made here with gzip: 0.12.0 passes on its version, an older
 * one only when its changelog names the advisory, and the detail always
 * says why llm-sandbox's binds are not exposed.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/bwrap_floor.h"

static char dir[] = "/tmp/sbx-bwrap-floor-XXXXXX";

static void write_file(const char *name, const char *text, mode_t mode)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

/* A gzip'd changelog at dir/name.gz holding text. */
static void changelog(const char *name, const char *text)
{
    char cmd[512];

    write_file(name, text, 0644);
    snprintf(cmd, sizeof(cmd), "/usr/bin/gzip -f '%s/%s'", dir, name);
    assert_int_equal(WEXITSTATUS(system(cmd)), 0); /* NOLINT: test set-up only */
}

static int check(const char *bwrap, const char *log, char *detail, char *fix)
{
    char b[256], l[256];

    snprintf(b, sizeof(b), "%s/%s", dir, bwrap);
    snprintf(l, sizeof(l), "%s/%s", dir, log);
    return bwrap_floor_check(b, l, detail, 1024, fix, 256);
}

static int setup(void **state)
{
    (void)state;
    if (access("/usr/bin/gzip", X_OK) != 0 || !mkdtemp(dir))
        return -1;
    write_file("bwrap-0.8", "#!/bin/sh\necho bubblewrap 0.8.0\n", 0755);
    write_file("bwrap-0.12", "#!/bin/sh\necho bubblewrap 0.12.0\n", 0755);
    write_file("bwrap-junk", "#!/bin/sh\necho hello\n", 0755);
    changelog("fixed", "bubblewrap (0.8.0-2+deb12u2) bookworm-security\n"
                       "  * Backport the fix for GHSA-pxhw-h44j-8pfx\n");
    changelog("unfixed", "bubblewrap (0.8.0-2+deb12u1) bookworm-security\n"
                         "  * Backport --bind-fd (CVE-2024-42472 in Flatpak)\n");
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1; /* NOLINT: test clean-up only */
}

static void test_new_enough(void **state)
{
    char detail[1024], fix[256];

    (void)state;
    assert_int_equal(check("bwrap-0.12", "unfixed.gz", detail, fix), 1);
    assert_non_null(strstr(detail, "0.12.0"));
    assert_string_equal(fix, "");
}

static void test_backported(void **state)
{
    char detail[1024], fix[256];

    (void)state;
    assert_int_equal(check("bwrap-0.8", "fixed.gz", detail, fix), 1);
    assert_non_null(strstr(detail, "bubblewrap 0.8.0"));
    assert_non_null(strstr(detail, "says it carries the fix for GHSA-pxhw-h44j-8pfx"));
    assert_non_null(strstr(detail, "not exposed"));
    assert_string_equal(fix, "");
}

static void test_unfixed(void **state)
{
    char detail[1024], fix[256];

    (void)state;
    assert_int_equal(check("bwrap-0.8", "unfixed.gz", detail, fix), 0);
    assert_non_null(strstr(detail, "does not mention the fix for GHSA-pxhw-h44j-8pfx"));
    assert_non_null(strstr(detail, "none under a sandbox-writable path"));
    assert_non_null(strstr(fix, "0.12.0"));
}

static void test_no_changelog(void **state)
{
    char detail[1024], fix[256];

    (void)state;
    assert_int_equal(check("bwrap-0.8", "absent.gz", detail, fix), 0);
    assert_non_null(strstr(detail, "no package changelog"));
}

static void test_no_version(void **state)
{
    char detail[1024], fix[256];

    (void)state;
    assert_int_equal(check("bwrap-junk", "fixed.gz", detail, fix), -1);
    assert_non_null(strstr(detail, "did not say its version"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_new_enough),
            cmocka_unit_test(test_backported),
            cmocka_unit_test(test_unfixed),
            cmocka_unit_test(test_no_changelog),
            cmocka_unit_test(test_no_version),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
