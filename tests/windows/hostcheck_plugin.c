/* SPDX-License-Identifier: MIT */
/*
 * hostcheck_plugin.c: a backend plugin DLL of the tests', loaded by the
 * real llm-sandbox.exe like any plugin (manifest hostcheck.yaml beside
 * hostcheck.dll, found through LLM_SANDBOX_PLUGIN_PATH). Its probe checks
 * the Windows host table (core/src/platform/win_host.c) from a plugin's
 * side of the ABI, against the stub proc_stub.exe (its setting "stub"):
 * spawning with three pipes, the exact environment, exit codes as wait
 * statuses, a timed-out wait and a kill that ends the whole tree, signal
 * 0, run_capture with its deadline, memfd_new, the embedded seccomp
 * policy, and the refusals of the
 * Linux services. It opens no box: every box operation is refused. The
 * probe fails with the first check that failed, else it reports the
 * number passed in the note of the wall_time control (test_exe.py reads
 * it through `plugins --json`).
 */
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include <fcntl.h>
#include <io.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/plugin_kit.h>

#ifndef SIGKILL
#define SIGKILL 9 /* the ABI's signal numbers are Linux's */
#endif

struct state {
    const struct sbx_host *h;
};

/* The wait status as Linux encodes it, which the host table promises. */
static int exited_with(int status)
{
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1;
}

static int signaled_by(int status)
{
    return (status & 0x7f) != 0 ? status & 0x7f : -1;
}

static size_t read_all(int fd, char *buf, size_t len)
{
    size_t o = 0;
    int n;

    while (o + 1 < len && (n = _read(fd, buf + o, (unsigned)(len - 1 - o))) > 0)
        o += (size_t)n;
    buf[o] = '\0';
    return o;
}

/* Without the CRs a console program's text mode adds, and without the
 * lines of the variables wine gives every program it starts (WINE...):
 * they are wine's, not a leak of ours. */
static void drop_cr(char *s)
{
    char *w = s;
    int bol = 1, skip = 0;

    for (; *s; s++) {
        if (bol)
            skip = strncmp(s, "WINE", 4) == 0;
        bol = *s == '\n';
        if (*s != '\r' && !skip)
            *w++ = *s;
    }
    *w = '\0';
}

static int spawn(const struct sbx_host *h, const char *stub, const char *const *args,
        const char *const *envp, struct sbx_proc **ret, struct sbx_err *err)
{
    const char *argv[6] = {stub};
    struct sbx_spawn sp = {.size = sizeof(sp),
            .path = stub,
            .argv = argv,
            .envp = envp,
            .stdin_fd = SBX_FD_PIPE,
            .stdout_fd = SBX_FD_PIPE,
            .stderr_fd = SBX_FD_PIPE,
            /* what plugins pass on Linux; moot or the Job Object's here */
            .flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG | SBX_SPAWN_KEEPER};

    for (int i = 0; args[i] && i < 4; i++)
        argv[i + 1] = args[i];
    return h->proc_spawn(h, &sp, ret, err);
}

#define FAIL(...) return sbx_err_fill(err, SBX_E_UNAVAILABLE, 0, __VA_ARGS__)

static int check_pipes(const struct sbx_host *h, const char *stub, struct sbx_err *err)
{
    static const char *const args[] = {"echo", NULL};
    struct sbx_proc *p;
    char out[64], errs[64];
    int in, o, e, status = -1, r;

    if (spawn(h, stub, args, NULL, &p, err) < 0)
        return err->rc;
    in = h->proc_fd(p, 0), o = h->proc_fd(p, 1), e = h->proc_fd(p, 2);
    if (in < 0 || o < 0 || e < 0 || h->proc_fd(p, 1) != -1) {
        h->proc_free(p);
        FAIL("pipes: proc_fd gave %d %d %d, and a second time not -1", in, o, e);
    }
    r = _write(in, "hello\n", 6) == 6;
    _close(in);
    read_all(o, out, sizeof(out));
    read_all(e, errs, sizeof(errs));
    _close(o), _close(e);
    r = r && h->proc_wait(p, 10000, &status) == 1;
    h->proc_free(p);
    if (!r || strcmp(out, "hello\n") != 0 || strcmp(errs, "err") != 0 || exited_with(status) != 0)
        FAIL("pipes: out '%s' err '%s' status %d", out, errs, status);
    return 0;
}

static int check_env(const struct sbx_host *h, const char *stub, struct sbx_err *err)
{
    static const char *const args[] = {"env", NULL};
    static const char *const envp[] = {"A=1", "GREEK=\xce\xb1\xce\xb2", NULL};
    struct sbx_proc *p;
    char out[256];
    int o, status = -1;

    if (spawn(h, stub, args, envp, &p, err) < 0)
        return err->rc;
    o = h->proc_fd(p, 1);
    read_all(o, out, sizeof(out));
    _close(o);
    drop_cr(out);
    if (h->proc_wait(p, 10000, &status) != 1 || exited_with(status) != 0 ||
            strcmp(out, "A=1\nGREEK=\xce\xb1\xce\xb2\n") != 0) {
        h->proc_free(p);
        FAIL("environment: got '%s'", out);
    }
    h->proc_free(p);
    return 0;
}

static int check_exit_codes(const struct sbx_host *h, const char *stub, struct sbx_err *err)
{
    static const char *const codes[][2] = {{"0", "0"}, {"3", "3"}, {"255", "255"}, {"257", "1"}};

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *args[] = {"exit", codes[i][0], NULL};
        struct sbx_proc *p;
        int status = -1;

        if (spawn(h, stub, args, NULL, &p, err) < 0)
            return err->rc;
        if (h->proc_wait(p, 10000, &status) != 1 ||
                exited_with(status) != (int)strtol(codes[i][1], NULL, 10)) {
            h->proc_free(p);
            FAIL("exit %s: wait status %d", codes[i][0], status);
        }
        h->proc_free(p);
    }
    return 0;
}

static int gone(DWORD pid)
{
    HANDLE ph = OpenProcess(SYNCHRONIZE, FALSE, pid);
    DWORD w;

    if (!ph)
        return 1;
    w = WaitForSingleObject(ph, 5000);
    CloseHandle(ph);
    return w == WAIT_OBJECT_0;
}

/* A tree: its program starts a child; a wait times out, one kill ends
 * both, the status reads as killed by SIGKILL, signal 0 then fails. */
static int check_kill(const struct sbx_host *h, const char *stub, struct sbx_err *err)
{
    static const char *const args[] = {"tree", NULL};
    struct sbx_proc *p;
    char line[64] = "";
    unsigned long child = 0;
    int o, status = -1, r;
    size_t n = 0;

    if (spawn(h, stub, args, NULL, &p, err) < 0)
        return err->rc;
    o = h->proc_fd(p, 1);
    while (n + 1 < sizeof(line) && _read(o, line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = '\0';
    if (sscanf(line, "child %lu", &child) != 1) {
        _close(o);
        h->proc_free(p);
        FAIL("kill: the tree said '%s'", line);
    }
    r = h->proc_wait(p, 200, &status);
    if (r != 0 || h->proc_signal(p, 0) != 0) {
        _close(o);
        h->proc_free(p);
        FAIL("kill: a wait on a live tree gave %d", r);
    }
    if (h->proc_signal(p, SIGKILL) != 0 || h->proc_wait(p, 10000, &status) != 1) {
        _close(o);
        h->proc_free(p);
        FAIL("kill: SIGKILL did not end it");
    }
    _close(o);
    r = signaled_by(status) == SIGKILL && h->proc_signal(p, 0) != 0 && gone((DWORD)child);
    h->proc_free(p);
    if (!r)
        FAIL("kill: status %d, or its child %lu outlived it", status, child);
    return 0;
}

static int check_capture(const struct sbx_host *h, const char *stub, struct sbx_err *err)
{
    const char *const ok[] = {stub, "exit", "7", NULL};
    const char *const hang[] = {stub, "sleep", NULL};
    char out[64];
    int status = -1, r;
    ULONGLONG t0;

    if (h->run_capture(h, ok, 10000, out, sizeof(out), &status, err) < 0)
        return err->rc;
    if (exited_with(status) != 7)
        FAIL("run_capture: status %d", status);
    t0 = GetTickCount64();
    r = h->run_capture(h, hang, 300, out, sizeof(out), &status, err);
    if (r != SBX_E_BACKEND || GetTickCount64() - t0 > 8000)
        FAIL("run_capture: a program past its deadline gave %d after %llu ms", r,
                (unsigned long long)(GetTickCount64() - t0));
    return 0;
}

static int check_memfd(const struct sbx_host *h, struct sbx_err *err)
{
    char buf[16] = "";
    int fd;

    if (h->memfd_new(h, "blob", "abc\0def", 7, &fd, err) < 0)
        return err->rc;
    if (read_all(fd, buf, sizeof(buf)) != 7 || memcmp(buf, "abc\0def", 7) != 0) {
        _close(fd);
        FAIL("memfd_new: read back other bytes");
    }
    _close(fd);
    return 0;
}

/* The core's policy as BPF (for a WSL2 distribution's kernel): whole
 * instructions of 8 bytes, the first loading the architecture. */
static int check_seccomp(const struct sbx_host *h, struct sbx_err *err)
{
    static unsigned char bpf[1 << 16];
    size_t n;
    int fd;

    if (h->seccomp_bpf_fd(h, &fd, err) < 0)
        return err->rc;
    n = read_all(fd, (char *)bpf, sizeof(bpf));
    _close(fd);
    if (n < 8 || n % 8 != 0 || bpf[0] != 0x20)
        FAIL("seccomp_bpf_fd: %zu bytes, not a BPF program", n);
    return 0;
}

static int check_refusals(const struct sbx_host *h, const char *stub, struct sbx_err *err)
{
    struct sbx_policy pol = {.size = sizeof(pol)};
    struct sbx_err e2 = {.size = sizeof(e2)};
    struct sbx_http req = {.size = sizeof(req), .endpoint = "http://127.0.0.1:9", .path = "/"};
    struct sbx_http_resp resp = {.size = sizeof(resp)};
    struct sbx_fd_map map = {0, 3};
    const char *argv[] = {stub, "exit", "0", NULL};
    struct sbx_spawn sp = {.size = sizeof(sp),
            .path = stub,
            .argv = argv,
            .stdin_fd = SBX_FD_NULL,
            .stdout_fd = SBX_FD_NULL,
            .stderr_fd = SBX_FD_NULL};
    struct sbx_cgroup *cg = NULL;
    struct sbx_proc *p = NULL;
    int fd = -1;

    if (h->cgroup_new(h, "x", &pol, &cg, &e2) != SBX_E_UNAVAILABLE)
        FAIL("cgroup_new was not refused");
    if (h->seccomp_kafel_fd(h, &fd, &e2) != SBX_E_UNSUPPORTED)
        FAIL("seccomp_kafel_fd was not refused");
    if (h->http_request(h, &req, &resp, &e2) != SBX_E_UNSUPPORTED)
        FAIL("http_request was not refused");
    sp.flags = SBX_SPAWN_NO_NEW_PRIVS;
    if (h->proc_spawn(h, &sp, &p, &e2) != SBX_E_UNSUPPORTED)
        FAIL("spawn with no_new_privs was not refused");
    sp.flags = 0, sp.fds = &map, sp.n_fds = 1;
    if (h->proc_spawn(h, &sp, &p, &e2) != SBX_E_UNSUPPORTED)
        FAIL("spawn with an extra fd was not refused");
    return 0;
}

static int hc_probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    const struct sbx_host *h = ((struct state *)state)->h;
    const char *stub = h->setting(h, "stub");
    char note[120];

    if (!stub || !stub[0])
        FAIL("no stub: set LLM_SANDBOX_HOSTCHECK_STUB");
    if (check_pipes(h, stub, err) < 0 || check_env(h, stub, err) < 0 ||
            check_exit_codes(h, stub, err) < 0 || check_kill(h, stub, err) < 0 ||
            check_capture(h, stub, err) < 0 || check_memfd(h, err) < 0 ||
            check_seccomp(h, err) < 0 || check_refusals(h, stub, err) < 0)
        return err->rc;
    snprintf(note, sizeof(note), "host table: 8 checks passed");
    sbx_caps_set(caps, SBX_CTL_WALL_TIME, SBX_ENF_FULL, note);
    return 0;
}

static int hc_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    (void)state, (void)spec, (void)ret_box;
    return sbx_err_fill(err, SBX_E_UNSUPPORTED, 0, "hostcheck opens no box");
}

static int hc_fd(void *box)
{
    (void)box;
    return -1;
}

static int64_t hc_read(void *box, void *buf, size_t len)
{
    (void)box, (void)buf, (void)len;
    return -1;
}

static int64_t hc_write(void *box, const void *buf, size_t len)
{
    (void)box, (void)buf, (void)len;
    return -1;
}

static int hc_kill(void *box)
{
    (void)box;
    return 0;
}

static int hc_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    (void)box, (void)stats, (void)err;
    return 0;
}

static int hc_init(
        const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    struct state *st = calloc(1, sizeof(*st));

    (void)name;
    if (!st)
        return sbx_err_fill(err, SBX_E_NOMEM, 12, "out of memory");
    st->h = h;
    *ret_state = st;
    return 0;
}

static void hc_fini(void *state)
{
    free(state);
}

static const struct sbx_backend_ops ops = {
        .size = sizeof(struct sbx_backend_ops),
        .probe = hc_probe,
        .box_open = hc_box_open,
        .box_poll_fd = hc_fd,
        .box_read = hc_read,
        .box_write = hc_write,
        .box_write_fd = hc_fd,
        .box_kill = hc_kill,
        .box_close = hc_close,
};

static const char *const names[] = {"hostcheck", NULL};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .name = "hostcheck",
        .version = "0.1.0",
        .backend_names = names,
        .init = hc_init,
        .fini = hc_fini,
        .backend = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
