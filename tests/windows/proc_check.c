/* SPDX-License-Identifier: MIT */
/*
 * proc_check.c: the core's Windows process layer (platform/win_proc.c)
 * under wine, against the stub proc_stub.exe: exit codes come back as the
 * program gave them; pipes carry stdin, stdout and stderr separately; the
 * child sees exactly the environment given and nothing of ours; a wait
 * times out and a kill then ends the program and the child it started
 * (the whole Job Object); freeing a running tree ends it too; what
 * Windows cannot do is refused; the job's process and memory limits hold
 * (on Windows; skipped under wine, which does not enforce them). Prints
 * one line per check, exits 1 on any failure.
 */
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/win_proc.h"

static int failures;
static char stub[MAX_PATH];

static void check(int ok, const char *what, const char *saw)
{
    printf("%s %s%s%s\n", ok ? "ok" : "FAIL", what, saw && *saw ? ": " : "", saw ? saw : "");
    if (!ok)
        failures++;
}

static struct win_proc *spawn(const char *const *args, const char *const *envp,
        const struct win_limits *lim, int out, int *ret_rc)
{
    const char *argv[8] = {stub};
    struct sbx_spawn s = {.size = sizeof(s),
            .path = stub,
            .argv = argv,
            .envp = envp,
            .stdin_fd = SBX_FD_PIPE,
            .stdout_fd = out,
            .stderr_fd = SBX_FD_PIPE};
    struct win_proc *p = NULL;
    struct sbx_error *err = NULL;

    for (int i = 0; args[i] && i < 6; i++)
        argv[i + 1] = args[i];
    *ret_rc = win_proc_spawn(&s, lim, &p, &err);
    if (*ret_rc < 0)
        printf("     (spawn: %s)\n", err ? err->msg : "");
    sbx_error_free(err);
    return p;
}

static size_t read_all(int fd, char *buf, size_t len)
{
    size_t got = 0;
    int n;

    while (got + 1 < len && (n = _read(fd, buf + got, (unsigned)(len - 1 - got))) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    return got;
}

/* Reads until a newline (a line the stub flushed), bounded by the buffer. */
static void read_line(int fd, char *buf, size_t len)
{
    size_t got = 0;

    while (got + 1 < len && _read(fd, buf + got, 1) == 1 && buf[got] != '\n')
        got++;
    buf[got] = '\0';
}

static void check_exit_codes(void)
{
    static const char *const codes[] = {"0", "3", "255", "123456"};
    char saw[64];
    int rc;

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *args[] = {"exit", codes[i], NULL};
        struct win_proc *p = spawn(args, NULL, NULL, SBX_FD_NULL, &rc);
        uint32_t code = 0xFFFFFFFF;
        int w = p ? win_proc_wait(p, 30000, &code) : rc;

        snprintf(saw, sizeof(saw), "wait %d, exit code %u", w, code);
        check(w == 1 && code == strtoul(codes[i], NULL, 10), "exit code comes back", saw);
        win_proc_free(p);
    }
}

static void check_pipes(void)
{
    const char *args[] = {"echo", NULL};
    char out[256], err[256];
    int rc, in_fd, out_fd, err_fd;
    struct win_proc *p = spawn(args, NULL, NULL, SBX_FD_PIPE, &rc);
    uint32_t code = 1;

    if (!p) {
        check(0, "pipes", "spawn failed");
        return;
    }
    in_fd = win_proc_take_fd(p, 0);
    out_fd = win_proc_take_fd(p, 1);
    err_fd = win_proc_take_fd(p, 2);
    _write(in_fd, "hello\xc3\xa9\n", 8);
    _close(in_fd);
    read_all(out_fd, out, sizeof(out));
    read_all(err_fd, err, sizeof(err));
    check(strcmp(out, "hello\xc3\xa9\n") == 0 && strcmp(err, "err") == 0 &&
                    win_proc_wait(p, 30000, &code) == 1 && code == 0,
            "stdin, stdout and stderr through separate pipes", out);
    _close(out_fd);
    _close(err_fd);
    win_proc_free(p);
}

static void check_env(void)
{
    const char *args[] = {"env", NULL};
    const char *envp[] = {"A=1", "B=two words \xc3\xa9", NULL};
    char out[8192];
    int rc, fd;
    struct win_proc *p;

    SetEnvironmentVariableW(L"SBX_PARENT_SECRET", L"must-not-leak");
    p = spawn(args, envp, NULL, SBX_FD_PIPE, &rc);
    if (!p) {
        check(0, "environment", "spawn failed");
        return;
    }
    fd = win_proc_take_fd(p, 1);
    read_all(fd, out, sizeof(out));
    check(strstr(out, "A=1\r\n") && strstr(out, "B=two words \xc3\xa9\r\n") &&
                    !strstr(out, "SBX_PARENT_SECRET"),
            "the child sees the environment given and none of ours", NULL);
    _close(fd);
    win_proc_free(p);
}

/* The job holds the program, its child and, where the system starts one
 * for a console program (Windows 10 and later, wine), its conhost. */
static int tree_alive(int alive)
{
    return alive >= 2 && alive <= 3;
}

/* Is the process gone within timeout_ms? */
static int gone(DWORD pid, DWORD timeout_ms)
{
    HANDLE h = OpenProcess(SYNCHRONIZE, FALSE, pid);
    int r;

    if (!h)
        return 1;
    r = WaitForSingleObject(h, timeout_ms) == WAIT_OBJECT_0;
    CloseHandle(h);
    return r;
}

static void check_tree_kill(int by_free)
{
    const char *args[] = {"tree", NULL};
    char line[64], saw[128];
    int rc, fd, alive;
    uint32_t code = 0;
    unsigned long child = 0;
    struct win_proc *p = spawn(args, NULL, NULL, SBX_FD_PIPE, &rc);
    DWORD pid;

    if (!p) {
        check(0, "tree kill", "spawn failed");
        return;
    }
    pid = win_proc_pid(p);
    fd = win_proc_take_fd(p, 1);
    read_line(fd, line, sizeof(line));
    sscanf(line, "child %lu", &child);
    alive = win_proc_alive(p);
    if (by_free) {
        win_proc_free(p);
        snprintf(saw, sizeof(saw), "[%s], %d alive before", line, alive);
        check(child && tree_alive(alive) && gone(pid, 10000) && gone((DWORD)child, 10000),
                "freeing a running tree ends the program and its child", saw);
    } else {
        int w = win_proc_wait(p, 200, &code);
        int k = win_proc_kill(p, 137);
        int w2 = win_proc_wait(p, 10000, &code);

        snprintf(saw, sizeof(saw), "[%s], %d alive, wait %d, kill %d, wait %d, exit %u", line,
                alive, w, k, w2, code);
        check(child && tree_alive(alive) && w == 0 && k == 0 && w2 == 1 && code == 137 &&
                        gone((DWORD)child, 10000) && win_proc_alive(p) == 0,
                "a timed-out wait, then one kill ends the whole tree", saw);
        win_proc_free(p);
    }
    _close(fd);
}

static void check_refusals(void)
{
    const char *argv[] = {stub, NULL};
    struct sbx_fd_map map = {0};
    struct sbx_spawn s = {.size = sizeof(s),
            .path = stub,
            .argv = argv,
            .stdin_fd = SBX_FD_NULL,
            .stdout_fd = SBX_FD_NULL,
            .stderr_fd = SBX_FD_NULL};
    struct sbx_spawn bat = s, fds = s, drop = s, nnp = s, missing = s;
    const char *bat_argv[] = {"C:\\x\\run.bat", NULL};
    const char *missing_argv[] = {"C:\\no\\such\\program.exe", NULL};
    struct win_proc *p = NULL;
    struct sbx_error *err = NULL;
    int ok = 1;

    bat.path = bat_argv[0];
    bat.argv = bat_argv;
    fds.fds = &map;
    fds.n_fds = 1;
    drop.flags = SBX_SPAWN_DROP_PRIVS;
    nnp.flags = SBX_SPAWN_NO_NEW_PRIVS;
    missing.path = missing_argv[0];
    missing.argv = missing_argv;
    ok &= win_proc_spawn(&bat, NULL, &p, &err) == SBX_E_INVALID;
    err = sbx_error_free(err);
    ok &= win_proc_spawn(&fds, NULL, &p, &err) == SBX_E_UNSUPPORTED;
    err = sbx_error_free(err);
    ok &= win_proc_spawn(&drop, NULL, &p, &err) == SBX_E_UNSUPPORTED;
    err = sbx_error_free(err);
    ok &= win_proc_spawn(&nnp, NULL, &p, &err) == SBX_E_UNSUPPORTED;
    err = sbx_error_free(err);
    ok &= win_proc_spawn(&missing, NULL, &p, &err) == SBX_E_UNAVAILABLE;
    err = sbx_error_free(err);
    check(ok && !p, "batch files, extra fds, uid drops, no_new_privs, missing programs refused",
            NULL);
}

/* Windows enforces the job's limits; wine 8.0 sets them and ignores them
 * (it started 7 processes in a job limited to 3), so under wine only the
 * start of a limited tree is checked and the rest says it was skipped. */
static int under_wine(void)
{
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");

    return ntdll && GetProcAddress(ntdll, "wine_get_version") != NULL;
}

static void check_limit(
        const char *const *args, const char *what, const char *want_prefix, int max_started)
{
    struct win_limits lim = {.memory_bytes = 64u << 20, .pids_max = 3};
    char line[64] = "";
    int rc, fd, started = -1;
    struct win_proc *p = spawn(args, NULL, &lim, SBX_FD_PIPE, &rc);

    if (!p) {
        check(0, what, "spawn failed");
        return;
    }
    fd = win_proc_take_fd(p, 1);
    read_line(fd, line, sizeof(line));
    if (under_wine()) {
        printf("skip %s: wine does not enforce Job Object limits (saw [%s])\n", what, line);
    } else if (max_started >= 0) {
        sscanf(line, "started %d", &started);
        check(started >= 0 && started <= max_started, what, line);
    } else {
        check(strncmp(line, want_prefix, strlen(want_prefix)) == 0, what, line);
    }
    _close(fd);
    win_proc_free(p);
}

static void check_limits(void)
{
    const char *spawn5[] = {"spawn", "5", NULL};
    const char *alloc[] = {"alloc", "256", NULL};

    /* 3 processes: the stub and at most 2 children (fewer where the
     * system's conhost counts too) */
    check_limit(spawn5, "a job limited to 3 processes refuses the rest", NULL, 2);
    check_limit(alloc, "a job limited to 64 MiB refuses to commit 256", "alloc failed", -1);
}

int main(void)
{
    char *slash;

    GetModuleFileNameA(NULL, stub, MAX_PATH);
    slash = strrchr(stub, '\\');
    snprintf(slash ? slash + 1 : stub, sizeof(stub) - (size_t)(slash ? slash + 1 - stub : 0),
            "proc_stub.exe");
    check_exit_codes();
    check_pipes();
    check_env();
    check_tree_kill(0);
    check_tree_kill(1);
    check_refusals();
    check_limits();
    printf("%s process layer checks\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
