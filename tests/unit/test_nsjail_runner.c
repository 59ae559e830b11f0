/* SPDX-License-Identifier: MIT */
/*
 * test_nsjail_runner.c: NsJail's runner (plugins/nsjail/run.c) against a
 * fake host table (fakehost.h): what it asks of the host, in order, when a
 * box opens and closes, when nsjail reports an error as it ends, when an
 * open fails before nsjail runs, and when nsjail ignores SIGTERM; the
 * transcripts are golden files. The real tool is the integration suites'
 * (tests/integration, SBX_TEST_BACKEND=nsjail).
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

#include "fakehost.h"
#include "nsjail.h"
#include "runner_common.h"

static void state_init(struct nsjail_state *st, const struct sbx_host *h)
{
    memset(st, 0, sizeof(*st));
    st->h = h;
    snprintf(st->nsjail, sizeof(st->nsjail), "/usr/local/bin/nsjail");
    runner_tops(&st->tops);
}

static void test_open_talk_close(void **state)
{
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct sbx_box_stats stats = {.size = sizeof(stats), .oom_killed = -1, .pids_limited = -1};
    struct fake_script s = {.agent_says = "agent ready", .pids_limited = 1};
    struct nsjail_state st;
    struct sbx_err err;
    char buf[32];
    void *box = NULL;
    int64_t n;

    (void)state;
    state_init(&st, fake_host_new(&s));
    sbx_err_init(&err);
    assert_int_equal(nsjail_box_open(&st, &spec, &box, &err), 0);
    n = jail_box_read(box, buf, sizeof(buf) - 1);
    assert_int_equal(n, 11);
    buf[n] = '\0';
    assert_string_equal(buf, "agent ready");
    assert_int_equal(jail_box_write(box, "a frame", 7), 7);
    assert_int_equal(nsjail_box_close(box, &stats, &err), 0);
    assert_string_equal(fake_host_stdin(), "a frame");
    assert_int_equal(stats.oom_killed, 0);
    assert_int_equal(stats.pids_limited, 1);
    fake_host_check_golden("nsjail_open_talk_close");
    fake_host_free();
}

/* nsjail's own error lines, without their prefixes, are the close's error;
 * the library noise some builds print is left out. */
static void test_nsjail_error_at_close(void **state)
{
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct sbx_box_stats stats = {.size = sizeof(stats)};
    struct fake_script s = {.launcher_says = "nsjail: libnl-3.so.200: no version information "
                                             "available\n[E][2026-01-01T00:00:00+0000][12] "
                                             "mountFs():123 mount('/proc'): Operation not "
                                             "permitted\n",
            .exit_status = 255 << 8};
    struct nsjail_state st;
    struct sbx_err err;
    void *box = NULL;

    (void)state;
    state_init(&st, fake_host_new(&s));
    sbx_err_init(&err);
    assert_int_equal(nsjail_box_open(&st, &spec, &box, &err), 0);
    assert_int_equal(nsjail_box_close(box, &stats, &err), SBX_E_BACKEND);
    assert_string_equal(err.msg, "nsjail: mount('/proc'): Operation not permitted");
    fake_host_check_golden("nsjail_error_at_close");
    fake_host_free();
}

/* An open that fails before nsjail runs frees what it made (the cgroup)
 * and keeps its own reason. */
static void test_open_fails_before_spawn(void **state)
{
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct fake_script s = {.fail = FAKE_FAIL_AGENT_FD};
    struct nsjail_state st;
    struct sbx_err err;
    void *box = NULL;

    (void)state;
    state_init(&st, fake_host_new(&s));
    sbx_err_init(&err);
    assert_int_equal(nsjail_box_open(&st, &spec, &box, &err), SBX_E_UNAVAILABLE);
    assert_null(box);
    assert_string_equal(err.msg, "sbx-agent: not found");
    fake_host_check_golden("nsjail_open_fails_before_spawn");
    fake_host_free();
}

/* nsjail lingers, then ignores SIGTERM: after 2 s more it and the cgroup
 * get SIGKILL, and the delay is logged. */
static void test_close_escalates(void **state)
{
    static const int waits[] = {0, 0};
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct sbx_box_stats stats = {.size = sizeof(stats)};
    struct fake_script s = {.waits = waits, .n_waits = 2, .exit_status = SIGKILL};
    struct nsjail_state st;
    struct sbx_err err;
    void *box = NULL;

    (void)state;
    state_init(&st, fake_host_new(&s));
    sbx_err_init(&err);
    assert_int_equal(nsjail_box_open(&st, &spec, &box, &err), 0);
    assert_int_equal(nsjail_box_close(box, &stats, &err), 0);
    fake_host_check_golden("nsjail_close_escalates");
    fake_host_free();
}

/* A zygote box (SBX_BOX_ZYGOTE) runs under the zygote's policy, as Kafel,
 * with the four capabilities in its configuration. */
static void test_zygote_box(void **state)
{
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct sbx_box_stats stats = {.size = sizeof(stats)};
    struct fake_script s = {.agent_says = "agent ready"};
    struct nsjail_state st;
    struct sbx_err err;
    void *box = NULL;

    (void)state;
    spec.flags = SBX_BOX_ZYGOTE;
    state_init(&st, fake_host_new(&s));
    sbx_err_init(&err);
    assert_int_equal(nsjail_box_open(&st, &spec, &box, &err), 0);
    assert_int_equal(nsjail_box_close(box, &stats, &err), 0);
    assert_non_null(strstr(fake_host_transcript(), "child fd 4: seccomp zygote kafel\n"));
    assert_null(strstr(fake_host_transcript(), "seccomp_kafel_fd"));
    fake_host_check_golden("nsjail_zygote_box");
    fake_host_free();
}

/* A core without the zygote's Kafel policy (a host table of an earlier
 * 1.6): no zygote box at all, rather than one under the strict policy, and
 * no nsjail started. */
static void test_zygote_box_needs_its_policy(void **state)
{
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct fake_script s = {.agent_says = "agent ready"};
    struct nsjail_state st;
    struct sbx_host old;
    struct sbx_err err;
    void *box = NULL;

    (void)state;
    spec.flags = SBX_BOX_ZYGOTE;
    old = *fake_host_new(&s);
    old.size = (uint32_t)offsetof(struct sbx_host, seccomp_zygote_kafel_fd);
    state_init(&st, &old);
    sbx_err_init(&err);
    assert_int_equal(nsjail_box_open(&st, &spec, &box, &err), SBX_E_UNSUPPORTED);
    assert_null(box);
    assert_non_null(strstr(err.msg, "no zygote box on nsjail"));
    assert_null(strstr(fake_host_transcript(), "proc_spawn"));
    fake_host_free();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_open_talk_close),
            cmocka_unit_test(test_nsjail_error_at_close),
            cmocka_unit_test(test_open_fails_before_spawn),
            cmocka_unit_test(test_close_escalates),
            cmocka_unit_test(test_zygote_box),
            cmocka_unit_test(test_zygote_box_needs_its_policy),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
