/* SPDX-License-Identifier: MIT */
/*
 * win_host.c: the host table (struct sbx_host) the Windows build lends a
 * plugin, what plugins/host_table.c is on Linux. Processes are real:
 * spawning, pipes, waiting and killing go to win_proc.c (CreateProcessW
 * with a quoted command line, every child in its own Job Object), and
 * memfd_new is a delete-on-close temporary file, and seccomp_bpf_fd the
 * core's policy compiled on the build machine for a WSL2 distribution's
 * kernel (win_seccomp.c). Every other Linux host service (cgroups, the
 * Kafel and zygote policies, HTTP and WebSocket for plugins) answers
 * SBX_E_UNSUPPORTED or SBX_E_UNAVAILABLE with "not on Windows", so a
 * plugin that needs one fails closed with that reason. Windows build only.
 *
 * Signals: Windows has none to send a process. SIGKILL, SIGTERM, SIGINT
 * and SIGHUP all end the whole tree at once (TerminateJobObject; no grace
 * is possible, and none is pretended); the wait status then reads as
 * killed by that signal, as on Linux. Signal 0 asks whether anything of
 * its tree (its Job Object) still lives. SIGKILL, SIGHUP: compat_win.h.
 * Wait statuses are Linux's encoding (code << 8, or the signal), which is
 * what plugins decode; an exit code above 255 keeps its low byte, as a
 * Linux parent would see it.
 */
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "host/seccomp_policy.h"
#include "platform/win_proc.h"
#include "plugins/host_table.h"
#include "plugins/plugin_settings.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"

#define NOT_ON_WINDOWS "not on Windows"
#define KILL_CODE_BASE 0x5BC00000u /* exit code of a tree we killed: base | signal */

struct sbx_proc {
    struct win_proc *wp;
    int killed_by; /* the signal proc_signal ended it with, or 0 */
};

/* ---- processes: win_proc.c ---------------------------------------------- */

static int host_proc_spawn(const struct sbx_host *h, const struct sbx_spawn *spec,
        struct sbx_proc **ret, struct sbx_err *perr)
{
    struct sbx_error *e = NULL;
    struct sbx_spawn sp = *spec;
    struct sbx_proc *p;

    (void)h;
    /* No root on Windows (the core never runs as one): dropping to the
     * sandbox's ids is what Linux does only as root, so here it is moot.
     * PDEATHSIG and KEEPER are what the Job Object does for every child
     * (killed with the core's last handle; nothing it started escapes). */
    sp.flags &= ~(uint32_t)(SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG | SBX_SPAWN_KEEPER);
    if (SBX_HAS_FIELD(struct sbx_spawn, spec, gid) && (spec->uid || spec->gid))
        return sbx_err_fill(perr, SBX_E_UNSUPPORTED, 0,
                "spawn: running as host uid %u is " NOT_ON_WINDOWS, spec->uid);
    p = calloc(1, sizeof(*p));
    if (!p)
        return sbx_err_fill(perr, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (win_proc_spawn(&sp, NULL, &p->wp, &e) < 0) {
        free(p);
        return host_ctx_error(perr, e);
    }
    *ret = p;
    return 0;
}

static int host_proc_pid(const struct sbx_proc *p)
{
    return (int)win_proc_pid(p->wp);
}

static int host_proc_fd(struct sbx_proc *p, int child_fd)
{
    return win_proc_take_fd(p->wp, child_fd);
}

static int host_proc_signal(struct sbx_proc *p, int sig)
{
    int r;

    switch (sig) {
    case 0: return win_proc_alive(p->wp) > 0 ? 0 : -1;
    case SIGKILL:
    case SIGTERM:
    case SIGINT:
    case SIGHUP:
        r = win_proc_kill(p->wp, KILL_CODE_BASE | (uint32_t)sig);
        if (r == 0 && !p->killed_by)
            p->killed_by = sig;
        return r;
    default: errno = EINVAL; return -1;
    }
}

static int host_proc_wait(struct sbx_proc *p, int64_t timeout_ms, int *ret_status)
{
    uint32_t code;
    int r = win_proc_wait(p->wp, timeout_ms, &code);

    if (r == 1 && ret_status) {
        if (p->killed_by && code == (KILL_CODE_BASE | (uint32_t)p->killed_by))
            *ret_status = p->killed_by; /* WIFSIGNALED, WTERMSIG */
        else
            *ret_status = (int)((code & 0xffu) << 8); /* WIFEXITED, WEXITSTATUS */
    }
    return r;
}

static void host_proc_free(struct sbx_proc *p)
{
    if (p) {
        win_proc_free(p->wp);
        free(p);
    }
}

/* Wait for output on a pipe without blocking past the deadline. */
static int pipe_wait(int fd, int64_t deadline)
{
    HANDLE h = (HANDLE)_get_osfhandle(fd);

    for (;;) {
        DWORD avail = 0;

        if (!PeekNamedPipe(h, NULL, 0, NULL, &avail, NULL))
            return 1; /* closed: read returns 0 */
        if (avail > 0)
            return 1;
        if (deadline >= 0 && now_ms() >= deadline)
            return 0;
        Sleep(5);
    }
}

static int host_run_capture(const struct sbx_host *h, const char *const *argv, int64_t timeout_ms,
        char *out, size_t out_len, int *ret_status, struct sbx_err *perr)
{
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    struct sbx_spawn sp = {.size = sizeof(sp), .argv = argv, .stdin_fd = SBX_FD_NULL};
    struct sbx_proc *p = NULL;
    size_t o = 0;
    int fds[2], r, status = 0;
    bool timed_out = false;

    if (!argv || !argv[0])
        return sbx_err_fill(perr, SBX_E_INVALID, 0, "run_capture: no program");
    if (_pipe(fds, 65536, _O_BINARY | _O_NOINHERIT) < 0)
        return sbx_err_fill(perr, SBX_E_IO, errno, "pipe: %s", strerror(errno));
    sp.path = argv[0];
    sp.stdout_fd = sp.stderr_fd = fds[1]; /* one stream, as on Linux */
    r = host_proc_spawn(h, &sp, &p, perr);
    _close(fds[1]);
    if (r < 0) {
        _close(fds[0]);
        return r;
    }
    for (;;) {
        char buf[4096];
        int n;

        if (!pipe_wait(fds[0], deadline)) {
            timed_out = true;
            break;
        }
        n = _read(fds[0], buf, sizeof(buf));
        if (n <= 0)
            break;
        for (int i = 0; i < n && out_len && o + 1 < out_len; i++)
            out[o++] = buf[i];
    }
    if (out_len)
        out[o] = '\0';
    _close(fds[0]);
    if (timed_out)
        host_proc_signal(p, SIGKILL);
    r = host_proc_wait(p, timed_out ? 5000 : (deadline < 0 ? -1 : deadline - now_ms()), &status);
    if (r == 0 && !timed_out) {
        timed_out = true;
        host_proc_signal(p, SIGKILL);
        r = host_proc_wait(p, 5000, &status);
    }
    host_proc_free(p);
    if (timed_out)
        return sbx_err_fill(perr, SBX_E_BACKEND, ETIMEDOUT, "%s timed out after %lld ms", argv[0],
                (long long)timeout_ms);
    if (r != 1)
        return sbx_err_fill(perr, SBX_E_BACKEND, 0, "%s: waiting for it failed", argv[0]);
    if (ret_status)
        *ret_status = status;
    return 0;
}

/* ---- a file behind an fd, for blobs ------------------------------------ */

static int host_memfd_new(const struct sbx_host *h, const char *name, const void *data, size_t len,
        int *ret_fd, struct sbx_err *perr)
{
    wchar_t dir[MAX_PATH + 1], path[MAX_PATH + 1];
    const char *p = data;
    HANDLE fh;
    int fd;

    (void)h;
    (void)name;
    if (!GetTempPathW(MAX_PATH + 1, dir) || !GetTempFileNameW(dir, L"sbx", 0, path))
        return sbx_err_fill(perr, SBX_E_IO, 0, "no temporary file (error %lu)", GetLastError());
    /* deleted with its last handle; no other process may open it meanwhile */
    fh = CreateFileW(path, GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
            FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
    if (fh == INVALID_HANDLE_VALUE) {
        DeleteFileW(path);
        return sbx_err_fill(perr, SBX_E_IO, 0, "a temporary file (error %lu)", GetLastError());
    }
    fd = _open_osfhandle((intptr_t)fh, _O_RDWR | _O_BINARY);
    if (fd < 0) {
        CloseHandle(fh);
        return sbx_err_fill(perr, SBX_E_IO, errno, "a temporary file: %s", strerror(errno));
    }
    while (len > 0) {
        int n = _write(fd, p, len > 1u << 20 ? 1u << 20 : (unsigned)len);

        if (n <= 0) {
            _close(fd);
            return sbx_err_fill(
                    perr, SBX_E_IO, errno, "writing a temporary file: %s", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    if (_lseeki64(fd, 0, SEEK_SET) != 0) {
        _close(fd);
        return sbx_err_fill(perr, SBX_E_IO, errno, "a temporary file: %s", strerror(errno));
    }
    *ret_fd = fd;
    return 0;
}

static int host_agent_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *perr)
{
    const char *path = host_ctx_of(h)->rt->agent_path;
    int fd = path ? open(path, O_RDONLY | O_BINARY) : -1;

    if (fd < 0)
        return sbx_err_fill(perr, SBX_E_UNAVAILABLE, errno,
                "the sandbox agent %s cannot be opened: %s", path ? path : "(none)",
                strerror(errno));
    *ret_fd = fd;
    return 0;
}

/* ---- Linux host services: absent ----------------------------------------- */

static int host_cgroup_new(const struct sbx_host *h, const char *id, const struct sbx_policy *pol,
        struct sbx_cgroup **ret, struct sbx_err *perr)
{
    (void)h, (void)id, (void)pol, (void)ret;
    return sbx_err_fill(perr, SBX_E_UNAVAILABLE, 0, "cgroups: " NOT_ON_WINDOWS);
}

/* None is ever made (cgroup_new refuses): these see only NULL. */
static int host_cgroup_kill(struct sbx_cgroup *cg)
{
    (void)cg;
    return SBX_E_UNAVAILABLE;
}

static int host_cgroup_unknown(struct sbx_cgroup *cg)
{
    (void)cg;
    return -1;
}

static void host_cgroup_free(struct sbx_cgroup *cg)
{
    (void)cg;
}

static void host_cgroup_caps(const struct sbx_host *h, struct sbx_caps *caps)
{
    (void)h, (void)caps; /* nothing enforced by cgroups here */
}

static int no_seccomp(const struct sbx_host *h, int *ret_fd, struct sbx_err *perr)
{
    (void)h, (void)ret_fd;
    return sbx_err_fill(perr, SBX_E_UNSUPPORTED, 0,
            "the core's seccomp policy: " NOT_ON_WINDOWS " (this build compiles none)");
}

/* The one policy as BPF for a WSL2 distribution's kernel, compiled on the
 * build machine (win_seccomp.c), in a file behind an fd as on Linux. */
static int host_seccomp_bpf_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *perr)
{
    struct sbx_error *e = NULL;
    const void *bpf;
    size_t len;

    if (seccomp_bpf_get(&bpf, &len, &e) < 0)
        return host_ctx_error(perr, e);
    return host_memfd_new(h, "sbx-seccomp", bpf, len, ret_fd, perr);
}

static int host_seccomp_rules(
        const struct sbx_host *h, const struct sbx_seccomp_rules **ret, struct sbx_err *perr)
{
    (void)ret;
    return no_seccomp(h, NULL, perr);
}

static int no_http(const struct sbx_host *h, const struct sbx_http *req, struct sbx_err *perr)
{
    (void)h, (void)req;
    return sbx_err_fill(perr, SBX_E_UNSUPPORTED, 0, "HTTP for plugins: " NOT_ON_WINDOWS " yet");
}

static int host_http_request(const struct sbx_host *h, const struct sbx_http *req,
        struct sbx_http_resp *resp, struct sbx_err *perr)
{
    (void)resp;
    return no_http(h, req, perr);
}

static int host_http_upgrade(const struct sbx_host *h, const struct sbx_http *req,
        struct sbx_conn **ret_conn, struct sbx_err *perr)
{
    (void)ret_conn;
    return no_http(h, req, perr);
}

static int host_ws_open(const struct sbx_host *h, const struct sbx_http *req,
        const char *const *protocols, struct sbx_ws **ret_ws, struct sbx_err *perr)
{
    (void)protocols, (void)ret_ws;
    return no_http(h, req, perr);
}

/* No connection or WebSocket is ever made (the openers above refuse). */
static int conn_fd(struct sbx_conn *c)
{
    (void)c;
    return -1;
}

static int64_t conn_read(struct sbx_conn *c, void *buf, size_t len)
{
    (void)c, (void)buf, (void)len;
    errno = EBADF;
    return -1;
}

static int64_t conn_write(struct sbx_conn *c, const void *buf, size_t len)
{
    (void)c, (void)buf, (void)len;
    errno = EBADF;
    return -1;
}

static int conn_shutdown_write(struct sbx_conn *c)
{
    (void)c;
    return -1;
}

static void conn_free(struct sbx_conn *c)
{
    (void)c;
}

static const char *ws_protocol(const struct sbx_ws *ws)
{
    (void)ws;
    return "";
}

static int ws_fd(struct sbx_ws *ws)
{
    (void)ws;
    return -1;
}

static int64_t ws_recv(struct sbx_ws *ws, void *buf, size_t len, uint32_t *ret_flags)
{
    (void)ws, (void)buf, (void)len, (void)ret_flags;
    errno = EPIPE;
    return -1;
}

static int ws_send(struct sbx_ws *ws, const void *buf, size_t len, uint32_t flags)
{
    (void)ws, (void)buf, (void)len, (void)flags;
    errno = EPIPE;
    return -1;
}

static int ws_close(struct sbx_ws *ws, uint32_t code)
{
    (void)ws, (void)code;
    errno = EPIPE;
    return -1;
}

static uint32_t ws_close_status(struct sbx_ws *ws, char *reason, size_t len)
{
    (void)ws;
    if (len)
        reason[0] = '\0';
    return 1006;
}

static void ws_free(struct sbx_ws *ws)
{
    (void)ws;
}

static int host_agent_sha256(const struct sbx_host *h, char ret_hex[65], struct sbx_err *perr)
{
    (void)h, (void)ret_hex;
    return sbx_err_fill(perr, SBX_E_UNSUPPORTED, 0, "the agent's digest: " NOT_ON_WINDOWS " yet");
}

static int host_instance_dead(const struct sbx_host *h, const char *name)
{
    (void)h, (void)name;
    return 0; /* not ours to judge here */
}

void host_init(struct host_ctx *hc, struct sbx_runtime *rt, struct plugin *pl)
{
    hc->rt = rt;
    hc->plugin = pl;
    hc->host = (struct sbx_host){
            .size = sizeof(struct sbx_host),
            .abi_minor = SBX_ABI_MINOR,
            .log = host_ctx_log,
            .setting = host_ctx_setting,
            .proc_spawn = host_proc_spawn,
            .proc_pid = host_proc_pid,
            .proc_fd = host_proc_fd,
            .proc_signal = host_proc_signal,
            .proc_wait = host_proc_wait,
            .proc_free = host_proc_free,
            .run_capture = host_run_capture,
            .cgroup_new = host_cgroup_new,
            .cgroup_kill = host_cgroup_kill,
            .cgroup_oom_killed = host_cgroup_unknown,
            .cgroup_pids_limited = host_cgroup_unknown,
            .cgroup_free = host_cgroup_free,
            .cgroup_caps = host_cgroup_caps,
            .seccomp_bpf_fd = host_seccomp_bpf_fd,
            .memfd_new = host_memfd_new,
            .agent_fd = host_agent_fd,
            .sandbox_ids = host_ctx_sandbox_ids,
            .instance_id = host_ctx_instance_id,
            .seccomp_kafel_fd = no_seccomp,
            .http_request = host_http_request,
            .http_upgrade = host_http_upgrade,
            .conn_fd = conn_fd,
            .conn_read = conn_read,
            .conn_write = conn_write,
            .conn_shutdown_write = conn_shutdown_write,
            .conn_free = conn_free,
            .seccomp_rules = host_seccomp_rules,
            .ws_open = host_ws_open,
            .ws_protocol = ws_protocol,
            .ws_fd = ws_fd,
            .ws_recv = ws_recv,
            .ws_send = ws_send,
            .ws_close = ws_close,
            .ws_close_status = ws_close_status,
            .ws_free = ws_free,
            .agent_sha256 = host_agent_sha256,
            .instance_dead = host_instance_dead,
            .seccomp_zygote_bpf_fd = no_seccomp,
    };
}

/* Nothing: no seccomp policy is compiled here, so SBX_CTL_SECCOMP stays
 * as the backend reported it, and a run that needs it is refused. */
void host_probe_caps(struct plugin *pl)
{
    (void)pl;
}
