/* SPDX-License-Identifier: MIT */
/*
 * test_deps.c: the dependency cache's locks (deps.c), on a real directory:
 * a set in use is never evicted, a second handle from deps_share keeps it
 * in use after the first is closed (a ready sandbox mounts a warm-up set
 * after the run that made its pool has ended), and once every handle is
 * closed the set can go. Takes no arguments.
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
#include <unistd.h>

#include "base/error.h"
#include "cache/deps.h"
#include "policy/settings.h"

static char tmpdir[64];

static bool exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* A ready set "t-KEY" holding one file, opened through the cache's own
 * steps: the exclusive lock and a staging directory, then the commit. */
static struct deps_set *make_set(const struct settings *s, const char *key)
{
    struct deps_set *d = NULL;
    struct sbx_error *e = NULL;
    char path[256];
    FILE *f;

    if (deps_open(s, "t", key, -1, -1, 1000, &d, &e) < 0)
        fail_msg("deps_open: %s", e->msg);
    assert_false(d->ready);
    snprintf(path, sizeof(path), "%s/file", d->staging);
    assert_non_null(f = fopen(path, "w"));
    fputs("x", f);
    fclose(f);
    if (deps_commit(d, "{}", &e) < 0)
        fail_msg("deps_commit: %s", e->msg);
    assert_true(d->ready);
    return d;
}

static void test_a_shared_handle_keeps_the_set(void **state)
{
    struct settings s = {.cache_dir = tmpdir, .cache_max_bytes = 0};
    struct deps_set *d, *shared;
    char dir[256];

    (void)state;
    d = make_set(&s, "0123");
    snprintf(dir, sizeof(dir), "%s", d->dir);
    assert_int_equal(deps_evict(&s), 0); /* in use: over the limit, kept */
    assert_true(exists(dir));

    assert_non_null(shared = deps_share(d));
    assert_true(shared->ready);
    assert_string_equal(shared->dir, dir);
    assert_null(shared->staging);
    deps_close(d);
    assert_int_equal(deps_evict(&s), 0); /* the second handle still holds it */
    assert_true(exists(dir));

    deps_close(shared);
    assert_int_equal(deps_evict(&s), 1);
    assert_false(exists(dir));
}

static void test_a_set_being_built_is_not_shared(void **state)
{
    struct settings s = {.cache_dir = tmpdir, .cache_max_bytes = UINT64_MAX};
    struct deps_set *d = NULL;
    struct sbx_error *e = NULL;

    (void)state;
    if (deps_open(&s, "t", "4567", -1, -1, 1000, &d, &e) < 0)
        fail_msg("deps_open: %s", e->msg);
    assert_false(d->ready);
    assert_null(deps_share(d));
    deps_close(d); /* the failed build's staging goes */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_a_shared_handle_keeps_the_set),
            cmocka_unit_test(test_a_set_being_built_is_not_shared),
    };
    char cmd[96];
    int rc;

    snprintf(tmpdir, sizeof(tmpdir), "/var/tmp/sbx-test-deps-XXXXXX");
    if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0) /* sandboxes read sets as another uid */
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
