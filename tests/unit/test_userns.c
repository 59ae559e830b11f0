/* SPDX-License-Identifier: MIT */
/*
 * test_userns.c: cmocka tests for host/userns.c: the verdict on user
 * namespaces from fake /proc/sys trees (Debian's unprivileged_userns_clone,
 * max_user_namespaces=0, Ubuntu's AppArmor restriction), for root and for
 * an ordinary user. Takes no arguments.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* cmocka needs these four before it */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include "host/userns.h"

static char root[64];

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    char d[128];

    (void)state;
    snprintf(root, sizeof(root), "/tmp/test_userns.XXXXXX");
    if (!mkdtemp(root))
        return -1;
    snprintf(d, sizeof(d), "%s/user", root);
    mkdir(d, 0755);
    snprintf(d, sizeof(d), "%s/kernel", root);
    mkdir(d, 0755);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void sysctl(const char *name, const char *value)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", root, name);
    if (!value) {
        unlink(path);
        return;
    }
    f = fopen(path, "we");
    assert_non_null(f);
    fprintf(f, "%s\n", value);
    fclose(f);
}

static void test_open_host(void **state)
{
    struct userns_check c;

    (void)state;
    sysctl("user/max_user_namespaces", "15000");
    userns_check(root, 1000, &c);
    assert_int_equal(c.status, USERNS_OK);
    assert_string_equal(c.detail, "user.max_user_namespaces=15000");
    assert_string_equal(c.fix, "");
}

static void test_max_zero(void **state)
{
    struct userns_check c;

    (void)state;
    sysctl("user/max_user_namespaces", "0");
    userns_check(root, 0, &c); /* root too: the limit is for everyone */
    assert_int_equal(c.status, USERNS_FAIL);
    assert_non_null(strstr(c.fix, "sysctl -w user.max_user_namespaces=15000"));
}

static void test_debian_clone(void **state)
{
    struct userns_check c;

    (void)state;
    sysctl("user/max_user_namespaces", "15000");
    sysctl("kernel/unprivileged_userns_clone", "0");
    userns_check(root, 1000, &c);
    assert_int_equal(c.status, USERNS_FAIL);
    assert_non_null(strstr(c.detail, "kernel.unprivileged_userns_clone=0"));
    assert_non_null(strstr(c.fix, "kernel.unprivileged_userns_clone=1"));
    userns_check(root, 0, &c);
    assert_int_equal(c.status, USERNS_OK);
    assert_non_null(strstr(c.detail, "unprivileged users only"));
}

static void test_ubuntu_apparmor(void **state)
{
    struct userns_check c;

    (void)state;
    sysctl("user/max_user_namespaces", "15000");
    sysctl("kernel/apparmor_restrict_unprivileged_userns", "1");
    userns_check(root, 1000, &c);
    assert_int_equal(c.status, USERNS_FAIL);
    assert_non_null(strstr(c.detail, "apparmor_restrict_unprivileged_userns=1"));
    assert_non_null(strstr(c.fix, "userns,"));
    assert_non_null(strstr(c.fix, "apparmor_parser -r /etc/apparmor.d/bwrap"));
    assert_non_null(strstr(c.fix, "kernel.apparmor_restrict_unprivileged_userns=0"));
    userns_check(root, 0, &c);
    assert_int_equal(c.status, USERNS_OK);
    sysctl("kernel/apparmor_restrict_unprivileged_userns", "0");
    userns_check(root, 1000, &c);
    assert_int_equal(c.status, USERNS_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_open_host, setup, teardown),
            cmocka_unit_test_setup_teardown(test_max_zero, setup, teardown),
            cmocka_unit_test_setup_teardown(test_debian_clone, setup, teardown),
            cmocka_unit_test_setup_teardown(test_ubuntu_apparmor, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
