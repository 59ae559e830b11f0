/* SPDX-License-Identifier: MIT */
/*
 * test_exec.c: cmocka tests for the keeper of host/exec.c
 * (SBX_SPAWN_KEEPER) with real processes: what a launcher leaves behind
 * when it exits, or when the core that spawned it is SIGKILLed, is killed;
 * the launcher's exit status comes through; a missing program is an error.
 * And the window that needs it, with the real bubblewrap: bwrap's parent
 * killed after the clone and before it releases the sandbox's first
 * process (held there by --userns-block-fd) leaves that process blocked on
 * its eventfd for ever, unless the keeper kills it. Takes no arguments.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
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
#include "host/exec.h"

static const char *const env[] = {"PATH=/usr/bin:/bin", NULL};

static struct exec_proc *spawn_sh(const char *script, int out_fd)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    struct sbx_spawn sp = {.size = sizeof(sp),
            .flags = SBX_SPAWN_PDEATHSIG | SBX_SPAWN_KEEPER,
            .path = "/bin/sh",
            .argv = argv,
            .envp = env,
            .stdin_fd = SBX_FD_NULL,
            .stdout_fd = out_fd,
            .stderr_fd = SBX_FD_NULL};
    struct sbx_error *err = NULL;
    struct exec_proc *p = NULL;
    int r = exec_spawn(&sp, NULL, &p, &err);

    if (r < 0)
        fail_msg("spawn: %s", err ? err->msg : "?");
    return p;
}

/* Pids, one a line, from fd until end of file. */
static size_t read_pids(int fd, long *pids, size_t max)
{
    char buf[256];
    size_t o = 0, n = 0;
    ssize_t k;

    while (o + 1 < sizeof(buf) && (k = read(fd, buf + o, sizeof(buf) - 1 - o)) > 0)
        o += (size_t)k;
    buf[o] = '\0';
    for (char *s = buf, *e; n < max && *s; s = e) {
        long v = strtol(s, &e, 10);

        if (e == s)
            break;
        pids[n++] = v;
    }
    return n;
}

/* Bounded wait until pid is gone, reaping our own zombies meanwhile. */
static bool gone_within(long pid, int ms)
{
    struct timespec ts = {0, 10 * 1000 * 1000};

    for (int i = 0; i < ms / 10; i++) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
            return true;
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_orphans_of_an_exited_launcher_are_killed(void **state)
{
    int fds[2], status = -1;
    long pid[1];
    struct exec_proc *p;

    (void)state;
    assert_int_equal(pipe(fds), 0);
    /* sh leaves sleep behind (an orphan: the keeper's now) and exits 7 */
    p = spawn_sh("sleep 600 >/dev/null & echo $!; exit 7", fds[1]);
    close(fds[1]);
    assert_int_equal(read_pids(fds[0], pid, 1), 1);
    close(fds[0]);
    assert_int_equal(exec_proc_wait(p, 10000, &status), 1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);
    if (!gone_within(pid[0], 100))
        fail_msg("sleep %ld, left by the launcher, outlived the keeper", pid[0]);
    exec_proc_free(p);
}

static void test_signal_ends_launcher_and_what_it_left(void **state)
{
    int fds[2], status = -1;
    long pid[2];
    struct exec_proc *p;

    (void)state;
    assert_int_equal(pipe(fds), 0);
    p = spawn_sh("sleep 600 >/dev/null & echo $!; echo $$; exec 1>&-; exec sleep 600", fds[1]);
    close(fds[1]);
    assert_int_equal(read_pids(fds[0], pid, 2), 2);
    close(fds[0]);
    /* SIGKILL to a kept proc ends its whole tree, not the keeper alone */
    assert_int_equal(exec_proc_signal(p, SIGKILL), 0);
    assert_int_equal(exec_proc_wait(p, 10000, &status), 1);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    for (int i = 0; i < 2; i++)
        if (!gone_within(pid[i], 100))
            fail_msg("pid %ld outlived the keeper", pid[i]);
    exec_proc_free(p);
}

/* The core (here a forked test process) is SIGKILLed while its launcher
 * runs: the keeper hears of it and kills the launcher and what it left. */
static void test_death_of_the_core_ends_everything(void **state)
{
    int fds[2];
    long pid[2];
    pid_t core;

    (void)state;
    /* We are the subreaper above the core: orphans the keeper failed to
     * kill would come to us and stay alive, and the test would see them. */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    assert_int_equal(pipe(fds), 0);
    core = fork();
    assert_true(core >= 0);
    if (core == 0) {
        close(fds[0]);
        spawn_sh("sleep 600 >/dev/null & echo $!; echo $$; exec 1>&-; exec sleep 600", fds[1]);
        close(fds[1]);
        pause();
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read_pids(fds[0], pid, 2), 2);
    close(fds[0]);
    kill(core, SIGKILL);
    assert_int_equal(waitpid(core, NULL, 0), core);
    for (int i = 0; i < 2; i++)
        if (!gone_within(pid[i], 10000))
            fail_msg("pid %ld outlived the core's death", pid[i]);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
}

/* The sandbox's first process as bwrap reports it on --info-fd. */
static long info_child_pid(int fd)
{
    char buf[512];
    size_t o = 0;
    ssize_t k;
    const char *p;

    while (o + 1 < sizeof(buf) && (k = read(fd, buf + o, sizeof(buf) - 1 - o)) > 0)
        o += (size_t)k;
    buf[o] = '\0';
    p = strstr(buf, "\"child-pid\":");
    return p ? strtol(p + 12, NULL, 10) : -1;
}

static void test_bwrap_killed_before_release_leaves_nothing(void **state)
{
    const char *argv[] = {"/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--die-with-parent",
            "--ro-bind", "/", "/", "--info-fd", "3", "--userns-block-fd", "4", "/bin/true", NULL};
    int info[2], block[2];
    long child;
    pid_t core;

    (void)state;
    if (access(argv[0], X_OK) < 0)
        skip();
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    /* We hold block's write end: bwrap's parent waits on it, between its
     * clone and its release of the child, until the core dies. */
    assert_int_equal(pipe(info), 0);
    assert_int_equal(pipe(block), 0);
    core = fork();
    assert_true(core >= 0);
    if (core == 0) {
        struct sbx_fd_map map[] = {{info[1], 3}, {block[0], 4}};
        struct sbx_spawn sp = {.size = sizeof(sp),
                .flags = SBX_SPAWN_PDEATHSIG | SBX_SPAWN_KEEPER,
                .path = argv[0],
                .argv = argv,
                .envp = env,
                .stdin_fd = SBX_FD_NULL,
                .stdout_fd = SBX_FD_NULL,
                .stderr_fd = SBX_FD_NULL,
                .fds = map,
                .n_fds = 2};
        struct sbx_error *err = NULL;
        struct exec_proc *p = NULL;

        close(info[0]), close(block[1]);
        if (exec_spawn(&sp, NULL, &p, &err) < 0)
            _exit(1);
        close(info[1]), close(block[0]);
        pause();
        _exit(0);
    }
    close(info[1]), close(block[0]);
    child = info_child_pid(info[0]);
    close(info[0]);
    if (child <= 0) { /* no user namespaces here */
        kill(core, SIGKILL);
        waitpid(core, NULL, 0);
        close(block[1]);
        skip();
    }
    kill(core, SIGKILL);
    assert_int_equal(waitpid(core, NULL, 0), core);
    if (!gone_within(child, 10000)) {
        kill((pid_t)child, SIGKILL);
        fail_msg("bwrap's child %ld, never released, outlived the core", child);
    }
    close(block[1]);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
}

static void test_missing_program_is_an_error(void **state)
{
    const char *argv[] = {"/nonexistent/launcher", NULL};
    struct sbx_spawn sp = {.size = sizeof(sp),
            .flags = SBX_SPAWN_PDEATHSIG | SBX_SPAWN_KEEPER,
            .path = argv[0],
            .argv = argv,
            .envp = env,
            .stdin_fd = SBX_FD_NULL,
            .stdout_fd = SBX_FD_NULL,
            .stderr_fd = SBX_FD_NULL};
    struct sbx_error *err = NULL;
    struct exec_proc *p = NULL;

    (void)state;
    assert_int_equal(exec_spawn(&sp, NULL, &p, &err), SBX_E_UNAVAILABLE);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "/nonexistent/launcher"));
    sbx_error_free(err);
    /* a keeper without the parent-death signal is refused */
    sp.flags = SBX_SPAWN_KEEPER, err = NULL;
    assert_int_equal(exec_spawn(&sp, NULL, &p, &err), SBX_E_INVALID);
    sbx_error_free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_orphans_of_an_exited_launcher_are_killed),
            cmocka_unit_test(test_signal_ends_launcher_and_what_it_left),
            cmocka_unit_test(test_death_of_the_core_ends_everything),
            cmocka_unit_test(test_bwrap_killed_before_release_leaves_nothing),
            cmocka_unit_test(test_missing_program_is_an_error),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
