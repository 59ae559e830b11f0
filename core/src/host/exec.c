/* SPDX-License-Identifier: MIT */
/*
 * exec.c: the one place that forks (STYLE C2).
 *
 * Between fork and execve the child uses only async-signal-safe calls (the
 * parent may be multi-threaded): sigaction, setsid, write, fcntl, dup2,
 * close_range, prctl and raw set*id syscalls (glibc's wrappers
 * would try to broadcast to threads that do not exist in the child). A
 * failure there is reported to the parent as an errno over a CLOEXEC pipe,
 * then _exit. The parent holds a pidfd for waits and signals.
 *
 * Order in the child: signals reset, new session, cgroup join (still
 * privileged), fds placed, identity dropped, parent-death signal (set after
 * the identity change, which clears it), execve. Resource limits are the
 * agent's job inside the sandbox, for every backend alike.
 *
 * With SBX_SPAWN_KEEPER the child stays behind as a keeper (keeper_main)
 * and a grandchild execs: a launcher such as bwrap clones its sandbox
 * before it sets that child's parent-death signal and releases it, so a
 * launcher killed in between (the core SIGKILLed, the launcher following
 * by its own parent-death signal) leaves the sandbox's first process
 * blocked for ever on a handshake, a child of init. The keeper is a child
 * subreaper: what its launcher leaves comes to it, and it kills it. It
 * learns of the core's death by a caught SIGTERM, not SIGKILL, so it lives
 * to do that.
 *
 * On cgroup v2 the child is made with clone3(CLONE_INTO_CGROUP) and starts
 * in its group, so it writes no cgroup.procs (a write migrates a running
 * process under the cgroup locks; bench/spawn_cgroup.c measures both).
 * clone3 without a stack is fork: the child runs on a copy of the
 * parent's, and calls nothing that needs glibc's idea of its thread id
 * (which a raw clone leaves stale). Where clone3 is refused (kernels before 5.7, seccomp filters
 * of container runtimes, valgrind) fork and the write take over.
 */
#include "host/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/util.h"
#include "host/cgroup.h"

#define MAX_FDS 16

/* Set once clone3 turned out to be unavailable here: fork from then on. */
static atomic_bool no_clone3;

struct exec_proc {
    pid_t pid;
    int pidfd;
    int fds[3];  /* parent ends of stdio pipes, or -1 */
    bool keeper; /* pid is a keeper: any signal ends its whole tree */
    bool reaped;
    int status;
};

/* Everything the child needs, prepared by the parent before fork. */
struct child_plan {
    const struct sbx_spawn *spec;
    int map_src[MAX_FDS + 3], map_dst[MAX_FDS + 3];
    size_t n_map;
    int cg_fds[4];
    size_t n_cg;
    bool drop;
    uint32_t uid, gid;
    pid_t parent;
    int err_fd;
};

static __attribute__((noreturn)) void child_fail(const struct child_plan *cp, int e)
{
    (void)!write(cp->err_fd, &e, sizeof(e));
    _exit(127);
}

/* Async-signal-safe decimal formatting for cgroup.procs. */
static size_t fmt_pid(char *buf, pid_t pid)
{
    char tmp[16];
    size_t n = 0, o = 0;
    unsigned long v = (unsigned long)pid;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < sizeof(tmp));
    while (n)
        buf[o++] = tmp[--n];
    return o;
}

static void child_place_fds(const struct child_plan *cp)
{
    int tmp[MAX_FDS + 3], base = 3;

    for (size_t i = 0; i < cp->n_map; i++)
        if (cp->map_dst[i] >= base)
            base = cp->map_dst[i] + 1;
    /* Move every source above all targets first, so no dup2 clobbers a
     * source that another mapping still needs. */
    for (size_t i = 0; i < cp->n_map; i++) {
        tmp[i] = fcntl(cp->map_src[i], F_DUPFD_CLOEXEC, base);
        if (tmp[i] < 0)
            child_fail(cp, errno);
    }
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        child_fail(cp, errno);
    for (size_t i = 0; i < cp->n_map; i++) {
        if (dup2(tmp[i], cp->map_dst[i]) < 0)
            child_fail(cp, errno);
    }
}

/* SIGKILL each child of this (single-threaded) process: what the launcher
 * left, reparented to us, and the launcher. Pids stay ours until reaped.
 * Without /proc's children list (CONFIG_PROC_CHILDREN), the launcher
 * alone, while it is unreaped (0: it is reaped). */
static void kill_children(pid_t launcher)
{
    char buf[512];
    long pid = 0;
    bool in = false;
    int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0) {
        if (launcher > 0)
            kill(launcher, SIGKILL);
        return;
    }
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                pid = pid * 10 + (buf[i] - '0'), in = true;
                continue;
            }
            if (in)
                kill((pid_t)pid, SIGKILL);
            pid = 0, in = false;
        }
    }
    if (in)
        kill((pid_t)pid, SIGKILL);
    close(fd);
}

/* End as the launcher ended: its exit code, or its signal. */
static __attribute__((noreturn)) void keeper_exit(int status_code, int code)
{
    struct sigaction sa;
    sigset_t none;

    if (status_code == CLD_EXITED)
        _exit(code);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    (void)sigaction(code, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    kill(getpid(), code);
    _exit(128 + code);
}

/* The keeper: run the launcher as a grandchild, reap it and what it leaves
 * (a subreaper inherits its orphans), and on SIGTERM (sent by the core, or
 * the core's death) kill them all. It exits when nothing is left. */
static __attribute__((noreturn)) void keeper_main(const struct child_plan *cp)
{
    const struct sbx_spawn *spec = cp->spec;
    int main_code = CLD_KILLED, main_status = SIGKILL;
    bool main_done = false, ending = false;
    pid_t self = getpid();
    sigset_t set, none;
    long pid;

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigemptyset(&none);
    sigprocmask(SIG_BLOCK, &set, NULL);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
        child_fail(cp, errno);
    if (getppid() != cp->parent)
        _exit(127);
    /* A raw clone: glibc's fork would run atfork handlers, whose locks
     * another thread of the core may have held when we were forked. */
    pid = syscall(SYS_clone, (unsigned long)SIGCHLD, 0, 0, 0, 0);
    if (pid < 0)
        child_fail(cp, errno);
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
            child_fail(cp, errno);
        if (getppid() != self)
            _exit(127);
        execve(spec->path, (char *const *)spec->argv, (char *const *)spec->envp);
        child_fail(cp, errno);
    }
    /* The launcher holds the stdio, the passed fds and the error pipe. */
    close_range(0, ~0U, 0);
    for (;;) {
        siginfo_t si;

        if (!ending) {
            int sig = sigwaitinfo(&set, &si);

            if (sig == SIGTERM)
                ending = true;
            if (sig != SIGCHLD && sig != SIGTERM)
                continue;
        }
        if (ending)
            kill_children(main_done ? 0 : (pid_t)pid);
        for (;;) {
            memset(&si, 0, sizeof(si));
            if (waitid(P_ALL, 0, &si, WEXITED | (ending ? 0 : WNOHANG)) < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == ECHILD && (ending || main_done))
                    keeper_exit(main_code, main_status);
                break;
            }
            if (si.si_pid == 0)
                break;
            if (si.si_pid == (pid_t)pid)
                main_done = true, main_code = si.si_code, main_status = si.si_status;
            if (main_done)
                ending = true; /* the launcher is gone: end what it left */
            if (ending)
                kill_children(main_done ? 0 : (pid_t)pid);
        }
    }
}

static __attribute__((noreturn)) void child_main(const struct child_plan *cp)
{
    const struct sbx_spawn *spec = cp->spec;
    struct sigaction sa;
    sigset_t none;
    char buf[16];

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        (void)sigaction(sig, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0)
        child_fail(cp, errno);
    for (size_t i = 0; i < cp->n_cg; i++) {
        size_t n = fmt_pid(buf, getpid());

        if (write(cp->cg_fds[i], buf, n) != (ssize_t)n)
            child_fail(cp, errno);
    }
    child_place_fds(cp);
    if (cp->drop) {
        if (syscall(SYS_setgroups, 0, NULL) < 0 ||
                syscall(SYS_setresgid, cp->gid, cp->gid, cp->gid) < 0 ||
                syscall(SYS_setresuid, cp->uid, cp->uid, cp->uid) < 0)
            child_fail(cp, errno);
    }
    if ((spec->flags & SBX_SPAWN_NO_NEW_PRIVS) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        child_fail(cp, errno);
    if (spec->flags & SBX_SPAWN_KEEPER)
        keeper_main(cp);
    if (spec->flags & SBX_SPAWN_PDEATHSIG) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
            child_fail(cp, errno);
        if (getppid() != cp->parent)
            _exit(127);
    }
    execve(spec->path, (char *const *)spec->argv, (char *const *)spec->envp);
    child_fail(cp, errno);
}

/* A child that starts in the cgroup whose directory cg_dir is: its pid (0
 * in the child), or -1 with errno when clone3 cannot do it (the caller
 * forks instead). */
static pid_t clone_into(int cg_dir)
{
    struct clone_args args = {.flags = CLONE_INTO_CGROUP,
            .exit_signal = (__u64)SIGCHLD,
            .cgroup = (__u64)(unsigned)cg_dir};
    long pid;

    if (cg_dir < 0 || atomic_load(&no_clone3)) {
        errno = EOPNOTSUPP;
        return -1;
    }
    pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EPERM || errno == EINVAL))
        atomic_store(&no_clone3, true);
    return (pid_t)pid;
}

/* Resolve one stdio slot into the child's source fd; make a pipe if asked. */
static int plan_stdio(
        int want, int slot, int null_fd, int *ret_src, int *ret_parent, int *ret_child_end)
{
    int p[2];

    *ret_child_end = -1;
    if (want == SBX_FD_NULL) {
        *ret_src = null_fd;
        return 0;
    }
    if (want != SBX_FD_PIPE) {
        *ret_src = want;
        return 0;
    }
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    *ret_parent = slot == 0 ? p[1] : p[0];
    *ret_child_end = slot == 0 ? p[0] : p[1];
    *ret_src = *ret_child_end;
    return 0;
}

static int check_spec(const struct sbx_spawn *spec, struct sbx_error **err)
{
    if (!spec || !spec->path || spec->path[0] != '/' || !spec->argv || !spec->argv[0] ||
            !spec->envp || spec->n_fds > MAX_FDS || (spec->n_fds && !spec->fds) ||
            (spec->flags & ~(uint32_t)(SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG |
                                       SBX_SPAWN_NO_NEW_PRIVS | SBX_SPAWN_KEEPER)) ||
            ((spec->flags & SBX_SPAWN_KEEPER) && !(spec->flags & SBX_SPAWN_PDEATHSIG)))
        return sbx_error_set(err, SBX_E_INVALID, 0, "invalid spawn request");
    for (size_t i = 0; i < spec->n_fds; i++) {
        if (spec->fds[i].child_fd < 3 || spec->fds[i].parent_fd < 0)
            return sbx_error_set(err, SBX_E_INVALID, 0, "invalid fd mapping %d -> %d",
                    spec->fds[i].parent_fd, spec->fds[i].child_fd);
    }
    return 0;
}

int exec_spawn(const struct sbx_spawn *spec, const struct exec_ctx *ctx, struct exec_proc **ret,
        struct sbx_error **err)
{
    cleanup_close int null_fd = -1, err_r = -1, err_w = -1;
    int child_ends[3] = {-1, -1, -1}, want[3], e = 0, r;
    struct child_plan cp = {.spec = spec, .parent = getpid()};
    struct exec_proc *p;
    ssize_t n;

    if (check_spec(spec, err) < 0)
        return SBX_E_INVALID;
    p = calloc(1, sizeof(*p));
    if (!p)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    p->pidfd = p->fds[0] = p->fds[1] = p->fds[2] = -1;
    p->keeper = spec->flags & SBX_SPAWN_KEEPER;
    want[0] = spec->stdin_fd, want[1] = spec->stdout_fd, want[2] = spec->stderr_fd;
    null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) {
        r = sbx_error_set(err, SBX_E_IO, errno, "cannot open /dev/null: %s", strerror(errno));
        goto fail;
    }
    for (int i = 0; i < 3; i++) {
        int src = -1;

        if ((e = plan_stdio(want[i], i, null_fd, &src, &p->fds[i], &child_ends[i])) < 0) {
            r = sbx_error_set(err, SBX_E_IO, -e, "pipe: %s", strerror(-e));
            goto fail;
        }
        cp.map_src[cp.n_map] = src, cp.map_dst[cp.n_map++] = i;
    }
    for (size_t i = 0; i < spec->n_fds; i++)
        cp.map_src[cp.n_map] = spec->fds[i].parent_fd,
        cp.map_dst[cp.n_map++] = spec->fds[i].child_fd;
    cp.drop = (spec->flags & SBX_SPAWN_DROP_PRIVS) && geteuid() == 0;
    cp.uid = ctx ? ctx->uid : 65534, cp.gid = ctx ? ctx->gid : 65534;
    {
        int ep[2];

        if (pipe2(ep, O_CLOEXEC) < 0) {
            r = sbx_error_set(err, SBX_E_IO, errno, "pipe: %s", strerror(errno));
            goto fail;
        }
        err_r = ep[0], err_w = ep[1], cp.err_fd = err_w;
    }
    if (ctx && ctx->cgroup) {
        cleanup_close int cg_dir = cg_group_dir_fd(ctx->cgroup);

        p->pid = clone_into(cg_dir);
        if (p->pid == 0)
            child_main(&cp); /* n_cg is 0: it is in its group already */
    }
    if (ctx && ctx->cgroup && p->pid < 0) {
        r = cg_group_procs_fds(ctx->cgroup, cp.cg_fds, 4);
        if (r < 0) {
            sbx_error_set(err, SBX_E_BACKEND, errno, "cannot open the cgroup: %s", strerror(errno));
            goto fail;
        }
        cp.n_cg = (size_t)r;
    }
    if (!ctx || !ctx->cgroup || p->pid < 0)
        p->pid = fork();
    if (p->pid < 0) {
        r = sbx_error_set(err, SBX_E_IO, errno, "fork: %s", strerror(errno));
        goto fail;
    }
    if (p->pid == 0)
        child_main(&cp);
    close(steal_fd(&err_w));
    for (int i = 0; i < 3; i++)
        if (child_ends[i] >= 0)
            close(steal_fd(&child_ends[i]));
    for (size_t i = 0; i < cp.n_cg; i++)
        close(cp.cg_fds[i]);
    cp.n_cg = 0;
    do
        n = read(err_r, &e, sizeof(e));
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(e)) {
        r = sbx_error_set(err, e == ENOENT ? SBX_E_UNAVAILABLE : SBX_E_IO, e,
                "cannot execute '%s': %s", spec->path, strerror(e));
        goto fail;
    }
    /* Kernels before 5.3 (and valgrind) lack pidfd_open: fall back to the
     * pid, which is safe while it stays our unreaped child. */
    p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
    *ret = p;
    return 0;
fail:
    for (int i = 0; i < 3; i++)
        if (child_ends[i] >= 0)
            close(child_ends[i]);
    for (size_t i = 0; i < cp.n_cg; i++)
        close(cp.cg_fds[i]);
    exec_proc_free(p);
    return r;
}

pid_t exec_proc_pid(const struct exec_proc *p)
{
    return p->pid;
}

int exec_proc_pidfd(const struct exec_proc *p)
{
    return p->pidfd;
}

int exec_proc_take_fd(struct exec_proc *p, int child_fd)
{
    int fd;

    if (child_fd < 0 || child_fd > 2)
        return -1;
    fd = p->fds[child_fd];
    p->fds[child_fd] = -1;
    return fd;
}

int exec_proc_signal(struct exec_proc *p, int sig)
{
    int r;

    if (p->reaped)
        return 0;
    if (p->keeper) /* SIGKILL would kill the keeper alone */
        sig = SIGTERM;
    r = p->pidfd >= 0 ? (int)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0)
                      : kill(p->pid, sig);
    if (r < 0 && errno != ESRCH)
        return SBX_E_IO;
    return 0;
}

static void set_status(struct exec_proc *p, const siginfo_t *si)
{
    p->reaped = true;
    p->status = si->si_code == CLD_EXITED
                        ? (si->si_status & 0xff) << 8
                        : (si->si_status & 0x7f) | (si->si_code == CLD_DUMPED ? 0x80 : 0);
}

/* Without a pidfd there is nothing to poll: check, then sleep briefly, with
 * a growing interval (1 to 16 ms). Only used on kernels without pidfds. */
static int wait_pid_polling(struct exec_proc *p, int64_t deadline)
{
    long step_ns = 1000000;
    siginfo_t si;

    for (;;) {
        struct timespec ts = {0, step_ns};

        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG) < 0) {
            if (errno == EINTR)
                continue;
            return SBX_E_IO;
        }
        if (si.si_pid == p->pid) {
            set_status(p, &si);
            return 1;
        }
        if (deadline >= 0 && now_ms() >= deadline)
            return 0;
        nanosleep(&ts, NULL);
        if (step_ns < 16000000)
            step_ns *= 2;
    }
}

int exec_proc_wait(struct exec_proc *p, int64_t timeout_ms, int *ret_status)
{
    struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    siginfo_t si;

    if (!p->reaped && p->pidfd < 0) {
        int r = wait_pid_polling(p, deadline);

        if (r <= 0)
            return r;
    }
    while (!p->reaped) {
        int64_t left = deadline < 0 ? -1 : deadline - now_ms();
        int r;

        if (deadline >= 0 && left < 0)
            left = 0;
        r = poll(&pfd, 1, (int)(left > 100000 ? 100000 : left));
        if (r < 0 && errno != EINTR)
            return SBX_E_IO;
        if (r == 0 && deadline >= 0 && now_ms() >= deadline)
            return 0;
        if (r <= 0)
            continue;
        memset(&si, 0, sizeof(si));
        if (waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED) < 0) {
            if (errno == EINTR)
                continue;
            return SBX_E_IO;
        }
        set_status(p, &si);
    }
    if (ret_status)
        *ret_status = p->status;
    return 1;
}

struct exec_proc *exec_proc_free(struct exec_proc *p)
{
    if (!p)
        return NULL;
    if (p->pid > 0 && !p->reaped) {
        exec_proc_signal(p, SIGKILL);
        exec_proc_wait(p, -1, NULL);
    }
    if (p->pidfd >= 0)
        close(p->pidfd);
    for (int i = 0; i < 3; i++)
        if (p->fds[i] >= 0)
            close(p->fds[i]);
    free(p);
    return NULL;
}

int exec_capture(const char *const *argv, int64_t timeout_ms, char *out, size_t out_len,
        int *ret_status, struct sbx_error **err)
{
    static const char *const no_env[] = {NULL};
    cleanup_close int rd = -1, wr = -1;
    struct exec_proc *p = NULL;
    int64_t deadline = now_ms() + timeout_ms;
    size_t o = 0;
    int fds[2], r;

    if (!out_len || pipe2(fds, O_CLOEXEC) < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "pipe: %s", strerror(errno));
    rd = fds[0], wr = fds[1];
    struct sbx_spawn spec = {.size = sizeof(spec),
            .path = argv[0],
            .argv = argv,
            .envp = no_env,
            .stdin_fd = SBX_FD_NULL,
            .stdout_fd = wr,
            .stderr_fd = wr};
    r = exec_spawn(&spec, NULL, &p, err);
    if (r < 0)
        return r;
    close(steal_fd(&wr));
    for (;;) {
        struct pollfd pfd = {.fd = rd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        char buf[4096];
        ssize_t n;

        if (left <= 0 || poll(&pfd, 1, (int)left) == 0)
            break;
        n = read(rd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n && o + 1 < out_len; i++)
            out[o++] = buf[i];
    }
    out[o] = '\0';
    r = exec_proc_wait(p, deadline - now_ms() > 0 ? deadline - now_ms() : 0, ret_status);
    exec_proc_free(p);
    if (r == 0)
        return sbx_error_set(err, SBX_E_BACKEND, ETIMEDOUT, "'%s' did not finish in %lld ms",
                argv[0], (long long)timeout_ms);
    return r < 0 ? sbx_error_set(err, r, errno, "waiting for '%s' failed", argv[0]) : 0;
}
