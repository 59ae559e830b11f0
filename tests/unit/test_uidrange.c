/* SPDX-License-Identifier: MIT */
/*
 * test_uidrange.c: cmocka tests for host/uidrange.c: leases are the lowest
 * free ids, skip what a fake /etc's passwd and group name (empty fields
 * too), are exclusive while held (within one process as between
 * processes: a forked child holds one), come back when freed or when the
 * holder dies, and run out with SBX_E_LIMIT. Takes no arguments.
 */
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* cmocka needs these four before it */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "host/uidrange.h"

/* High, so that no process of this machine runs as one of them. */
#define FIRST 3000000000u

static char root[64], etc[96], locks[96];

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[160];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "we");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/sbx-test-uidrange-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    snprintf(etc, sizeof(etc), "%s/etc", root);
    snprintf(locks, sizeof(locks), "%s/uids", root);
    mkdir(etc, 0755);
    /* FIRST is a user's uid, FIRST+1 a user's gid (empty password field),
     * FIRST+3 a group's */
    write_file(etc, "passwd",
            "root:x:0:0:root:/root:/bin/sh\n"
            "a:x:3000000000:100::/:/bin/sh\n"
            "b::200:3000000001::/:/bin/sh\n");
    write_file(etc, "group", "root:x:0:\ng::3000000003:\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static struct uidrange *open_range(uint32_t count)
{
    struct uidrange *u = NULL;
    struct sbx_error *e = NULL;

    assert_int_equal(uidrange_new(FIRST, count, locks, etc, &u, &e), 0);
    return u;
}

static uint32_t take(struct uidrange *u, struct uid_lease **l)
{
    struct sbx_error *e = NULL;

    assert_int_equal(uidrange_take(u, l, &e), 0);
    assert_int_equal((*l)->uid, (*l)->gid);
    return (*l)->uid;
}

static void test_lowest_free_skipping_accounts(void **state)
{
    struct uidrange *u = open_range(8);
    struct uid_lease *a, *b, *c;
    struct stat st;

    (void)state;
    assert_int_equal(uidrange_skipped(u), 3);
    assert_int_equal(take(u, &a), FIRST + 2);
    assert_int_equal(take(u, &b), FIRST + 4);
    assert_int_equal(take(u, &c), FIRST + 5);
    uid_lease_free(b);
    assert_int_equal(take(u, &b), FIRST + 4); /* given back, taken again */
    assert_int_equal(stat(locks, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    uid_lease_free(a);
    uid_lease_free(b);
    uid_lease_free(c);
    uidrange_free(u);
}

static void test_exhausted(void **state)
{
    struct uidrange *u = open_range(4); /* FIRST+2 is the only free id */
    struct uid_lease *a, *b = NULL;
    struct sbx_error *e = NULL;

    (void)state;
    assert_int_equal(take(u, &a), FIRST + 2);
    assert_int_equal(uidrange_take(u, &b, &e), SBX_E_LIMIT);
    assert_null(b);
    assert_non_null(strstr(e->msg, "LLM_SANDBOX_UID_RANGE"));
    sbx_error_free(e);
    uid_lease_free(a);
    uidrange_free(u);
}

/* Another process's lease (another server on the host) is respected, and
 * comes free when that process dies without giving it back. */
static void test_other_process(void **state)
{
    struct uidrange *u = open_range(8);
    struct uid_lease *l;
    int p[2], status;
    char c;
    pid_t pid;

    (void)state;
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct sbx_error *e = NULL;

        close(p[0]);
        if (uidrange_take(u, &l, &e) < 0 || l->uid != FIRST + 2)
            _exit(1);
        (void)!write(p[1], "x", 1);
        pause(); /* killed holding it */
        _exit(0);
    }
    close(p[1]);
    assert_int_equal(read(p[0], &c, 1), 1);
    assert_int_equal(take(u, &l), FIRST + 4);
    uid_lease_free(l);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(take(u, &l), FIRST + 2);
    uid_lease_free(l);
    close(p[0]);
    uidrange_free(u);
}

static void test_bad_ranges(void **state)
{
    struct uidrange *u = NULL;
    struct sbx_error *e = NULL;

    (void)state;
    assert_int_equal(uidrange_new(FIRST, 0, locks, etc, &u, &e), SBX_E_INVALID);
    sbx_error_free(e);
    e = NULL;
    assert_int_equal(uidrange_new(0xffffff00u, 0x200, locks, etc, &u, &e), SBX_E_INVALID);
    sbx_error_free(e);
    e = NULL;
    assert_int_equal(uidrange_new(0, 10, locks, etc, &u, &e), SBX_E_INVALID);
    sbx_error_free(e);
    assert_null(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_lowest_free_skipping_accounts, setup, teardown),
            cmocka_unit_test_setup_teardown(test_exhausted, setup, teardown),
            cmocka_unit_test_setup_teardown(test_other_process, setup, teardown),
            cmocka_unit_test_setup_teardown(test_bad_ranges, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
