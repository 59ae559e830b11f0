/* SPDX-License-Identifier: MIT */
/*
 * test_bwrap_runner.c: bubblewrap's runner (plugins/bwrap/run.c) against a
 * fake host table (fakehost.h): what it asks of the host, in order, when a
 * box opens and closes, when bwrap fails before the agent starts, and when
 * bwrap lingers at close; the transcripts are golden files. The real tool
 * is the integration suites' (tests/integration, backend bwrap).
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

#include "bwrap.h"
#include "fakehost.h"
#include "runner_common.h"

#define INFO_CHILD_FD 8 /* run.c's FD_INFO, from CHILD_FD_BASE */

static void state_init(struct bwrap_state *st, const struct sbx_host *h)
{
    memset(st, 0, sizeof(*st));
    st->h = h;
    snprintf(st->bwrap, sizeof(st->bwrap), "/usr/bin/bwrap");
    runner_tops(&st->tops);
}

static void test_open_talk_close(void **state)
{
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct sbx_box_stats stats = {.size = sizeof(stats), .oom_killed = -1, .pids_limited = -1};
    struct fake_script s = {
            .agent_says = "agent ready", .child_fd = INFO_CHILD_FD, .oom_killed = 1};
    struct bwrap_state st;
    struct sbx_err err;
    char info[64], buf[32];
    void *box = NULL;
    int64_t n;

    (void)state;
    s.agent = agent_stand_in();
    snprintf(info, sizeof(info), "{\n    \"child-pid\": %d\n}\n", (int)s.agent);
    s.child_fd_data = info;
    state_init(&st, fake_host_new(&s));
    sbx_err_init(&err);
    assert_int_equal(bwrap_box_open(&st, &spec, &box, &err), 0);
    n = jail_box_read(box, buf, sizeof(buf) - 1);
    assert_int_equal(n, 11);
    buf[n] = '\0';
    assert_string_equal(buf, "agent ready");
    assert_int_equal(jail_box_write(box, "a frame", 7), 7);
    assert_int_equal(bwrap_box_close(box, &stats, &err), 0);
    assert_string_equal(fake_host_stdin(), "a frame");
    assert_int_equal(stats.oom_killed, 1);
    assert_int_equal(stats.pids_limited, 0);
    assert_true(killed(s.agent)); /* it ended with bwrap, as pid 1 does */
    fake_host_check_golden("bwrap_open_talk_close");
    fake_host_free();
}

/* bwrap says why it could not make the sandbox and never reports a pid:
 * the open fails with bwrap's own words, and nothing is left. */
static void test_bwrap_fails_to_start(void **state)
{
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct fake_script s = {
            .launcher_says = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n",
            .exit_status = 1 << 8};
    struct bwrap_state st;
    struct sbx_err err;
    void *box = NULL;

    (void)state;
    state_init(&st, fake_host_new(&s));
    sbx_err_init(&err);
    assert_int_equal(bwrap_box_open(&st, &spec, &box, &err), SBX_E_BACKEND);
    assert_null(box);
    assert_string_equal(
            err.msg, "bwrap: Can't mount proc on /newroot/proc: Operation not permitted");
    fake_host_check_golden("bwrap_fails_to_start");
    fake_host_free();
}

/* bwrap does not end after the agent's end of input: the agent is killed
 * through its pidfd, then the cgroup and bwrap. */
static void test_close_escalates(void **state)
{
    static const int waits[] = {0};
    struct sbx_policy p = runner_policy();
    struct sbx_box_spec spec = runner_spec(&p);
    struct sbx_box_stats stats = {.size = sizeof(stats)};
    struct fake_script s = {
            .child_fd = INFO_CHILD_FD, .waits = waits, .n_waits = 1, .exit_status = SIGKILL};
    struct bwrap_state st;
    struct sbx_err err;
    char info[64];
    void *box = NULL;

    (void)state;
    s.agent = agent_stand_in();
    snprintf(info, sizeof(info), "{\"child-pid\": %d}", (int)s.agent);
    s.child_fd_data = info;
    state_init(&st, fake_host_new(&s));
    sbx_err_init(&err);
    assert_int_equal(bwrap_box_open(&st, &spec, &box, &err), 0);
    assert_int_equal(bwrap_box_close(box, &stats, &err), 0); /* no "bwrap:" line: no error */
    assert_true(killed(s.agent));
    fake_host_check_golden("bwrap_close_escalates");
    fake_host_free();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_open_talk_close),
            cmocka_unit_test(test_bwrap_fails_to_start),
            cmocka_unit_test(test_close_escalates),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
