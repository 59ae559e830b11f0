/* SPDX-License-Identifier: MIT */
/*
 * open.c: wsl2-open, run inside the WSL2 distribution as
 *
 *   wsl.exe -d DISTRO -u USER --cd / --exec OPENER BWRAP <bwrap's options>
 *
 * wsl.exe carries only stdin, stdout and stderr into the distribution, but
 * bwrap takes the seccomp filter, the agent binary and the generated /etc
 * files as descriptors. The host therefore sends them first on stdin
 * (wslframe.h); this program reads exactly that stream and no byte more,
 * puts each blob in a sealed memfd at the descriptor number the bwrap argv
 * names, closes every other descriptor above 2 and starts bwrap, whose
 * stdin and stdout are then the agent's channel as without WSL.
 *
 * It stays as bwrap's parent, holding none of the channel, to end the box
 * as the host cannot: a pid of the distribution names no process of the
 * host, so bwrap reports the agent's pid here (--info-fd) and on SIGTERM
 * (or SIGINT, SIGHUP) this program kills the agent, pid 1 of the sandbox,
 * through a pidfd, and exits only when bwrap has reaped it, that is when
 * every process of the sandbox is gone. Its exit status is bwrap's. Killed
 * itself, bwrap and the agent follow (parent-death signals), at once but
 * without that wait.
 *
 * Staging in memfds, not files: they are memory of this process alone, on
 * no filesystem (neither a Windows drive under /mnt nor a directory another
 * process of USER could read or swap), sealed before bwrap reads them, and
 * gone with their last descriptor, so nothing is left to remove, even when
 * the opener or the box is killed half-way.
 *
 * Limits: when the stream carries a limits record (the host counts on a
 * cgroup here, as the probe found with --caps), the opener makes a cgroup
 * of the distribution's own with them through the core's cgroup service
 * (core/src/host/cgroup*.c, built in: v1 where its hierarchies are
 * writable, v2 where our cgroup is ours or delegated; systemd is never
 * asked), bwrap joins it before exec, SIGTERM kills it whole, and at the
 * end the opener writes one "sbx-wsl2-stats oom_killed=N pids_limited=N"
 * line on stderr (the runner reads it), then kills, waits for and removes
 * the group; groups of openers that died first are swept. No cgroup when
 * one was asked for refuses the box (fail closed); without the record the
 * agent's rlimits are the limits. --caps prints what the service can do
 * here, in the core's own words, as "caps CONTROL LEVEL NOTE" lines.
 *
 * Static (built like the agent). Exit 125 and one "wsl2-open: ..." line on
 * stderr when the stream is refused or the cgroup cannot be made.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/cgroup.h"
#include "host/owner.h"
#include "wslframe.h"

#define HIGH_FD  64                     /* memfds wait above every target until the end */
#define INFO_FD  (WSL_FRAME_FD_MAX + 1) /* bwrap's --info-fd, above every blob */
#define MAX_ARGS 512                    /* the translator makes at most 448 */

/* The box's cgroup in the distribution, when the host asked for one. */
static struct cg_service *cg_svc;
static struct cg_group *cg_box;

static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "wsl2-open: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return 125;
}

/* Exactly n bytes of stdin, or -1 (end of input counts as an error). */
static int read_exact(unsigned char *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = read(0, buf + got, n - got);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            errno = r == 0 ? EPIPE : errno;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const unsigned char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A sealed memfd holding the next len bytes of stdin, above HIGH_FD. */
static int blob(uint32_t len, const char **why)
{
    unsigned char buf[65536];
    int m = (int)syscall(SYS_memfd_create, "sbx-wsl2", MFD_CLOEXEC | MFD_ALLOW_SEALING), hi;

    *why = "memfd_create";
    if (m < 0)
        return -1;
    hi = fcntl(m, F_DUPFD_CLOEXEC, HIGH_FD);
    close(m);
    if (hi < 0) {
        *why = "moving a memfd";
        return -1;
    }
    while (len > 0) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);

        if (read_exact(buf, n) < 0) {
            *why = "stdin ended inside a blob";
            close(hi);
            return -1;
        }
        if (write_all(hi, buf, n) < 0) {
            *why = "writing a memfd";
            close(hi);
            return -1;
        }
        len -= (uint32_t)n;
    }
    if (fcntl(hi, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
            lseek(hi, 0, SEEK_SET) != 0) {
        *why = "sealing a memfd";
        close(hi);
        return -1;
    }
    return hi;
}

/* The agent's pid from bwrap's info (read to its end: bwrap writes it once
 * and closes it), or 0 when bwrap ended first. */
static int agent_pid(int fd)
{
    char buf[2048];
    size_t o = 0;
    const char *k;

    for (;;) {
        ssize_t n = read(fd, buf + o, sizeof(buf) - 1 - o);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        o += (size_t)n;
        if (o + 1 >= sizeof(buf))
            break;
    }
    buf[o] = '\0';
    k = strstr(buf, "\"child-pid\":");
    return k ? (int)strtol(k + 12, NULL, 10) : 0;
}

static int exit_status(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The distribution's cgroup service, as the core's (cgroup.h) but never
 * asking systemd for a scope: NULL and *why on out of memory. */
static struct cg_service *service(const char **why)
{
    static char owner[64];
    struct cg_options opt = {.mount_root = "/sys/fs/cgroup",
            .self_cgroup = "/proc/self/cgroup",
            .allow_v2 = true,
            .allow_v1 = true,
            .systemd_dir = "/run/systemd/system",
            .owner = owner};
    struct cg_service *s = NULL;
    struct sbx_error *e = NULL;

    owner_make(owner, sizeof(owner));
    if (cg_service_new(&opt, &s, &e) < 0)
        *why = "out of memory";
    sbx_error_free(e);
    return s;
}

/* The host counts on a cgroup here: make the box's, or say why not. */
static int make_cgroup(const struct wsl_frame_limits *l)
{
    struct sbx_policy pol = {.memory_bytes = l->memory_bytes,
            .cpu_millicores = l->cpu_millicores,
            .pids_max = l->pids_max};
    struct sbx_error *e = NULL;
    const char *why = NULL;
    char owner[64], id[80];
    int r;

    cg_svc = service(&why);
    if (!cg_svc)
        return fail("cgroup service", why);
    if (cg_service_mode(cg_svc) == CG_NONE)
        return fail(
                "limits asked for, but no cgroup in the distribution", cg_service_describe(cg_svc));
    (void)cg_service_sweep(cg_svc); /* groups of openers killed before they could */
    owner_make(owner, sizeof(owner));
    snprintf(id, sizeof(id), "%s-1", owner); /* one box an opener */
    r = cg_group_new(cg_svc, id, &pol, &cg_box, &e);
    if (r < 0) {
        fail("cannot create the sandbox's cgroup", e ? e->msg : sbx_rc_str(r));
        sbx_error_free(e);
        return 125;
    }
    return 0;
}

/* In bwrap's process before exec: into every directory of the group. */
static int join_cgroup(void)
{
    int fds[3], n = cg_group_procs_fds(cg_box, fds, 3), r = 0; /* v1: three dirs */
    char pid[24];

    if (n < 0) {
        errno = EIO;
        return -1;
    }
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    for (int i = 0; i < n; i++) {
        if (r == 0 && write(fds[i], pid, strlen(pid)) < 0)
            r = -1;
        close(fds[i]);
    }
    return r;
}

/* --caps: what the cgroup service can enforce here, one control a line. */
static int print_caps(void)
{
    static const struct {
        enum sbx_control c;
        const char *name;
    } ctl[] = {{SBX_CTL_MEMORY, "memory"}, {SBX_CTL_CPU, "cpu"}, {SBX_CTL_PIDS, "pids"}};
    static const char *const level[] = {"none", "fallback", "full"};
    static struct sbx_caps caps;
    const char *why = NULL;
    struct cg_service *s = service(&why);

    if (!s)
        return fail("cgroup service", why);
    cg_service_caps(s, &caps);
    for (size_t i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++)
        printf("caps %s %s %s\n", ctl[i].name, level[caps.level[ctl[i].c] % 3],
                caps.note[ctl[i].c]);
    cg_service_free(s);
    return fflush(stdout) == 0 ? 0 : 125;
}

/* Start bwrap (path, then its options) with --info-fd INFO_FD, and end as
 * the comment at the top says. */
static int supervise(const char *bwrap, char **opts, int n_opts)
{
    static char *args[MAX_ARGS];
    char info_fd[8];
    sigset_t set, old;
    int p[2], pid, agent, pidfd = -1, status = 0;

    if (n_opts + 4 > MAX_ARGS)
        return fail("too many bwrap options", NULL);
    snprintf(info_fd, sizeof(info_fd), "%d", INFO_FD);
    args[0] = "bwrap";
    args[1] = "--info-fd";
    args[2] = info_fd;
    for (int i = 0; i < n_opts; i++)
        args[3 + i] = opts[i];
    args[3 + n_opts] = NULL;
    if (pipe(p) < 0 || fcntl(p[0], F_SETFD, FD_CLOEXEC) < 0)
        return fail("pipe", strerror(errno));
    if (p[1] != INFO_FD && (dup2(p[1], INFO_FD) != INFO_FD || close(p[1]) < 0))
        return fail("dup2", strerror(errno));
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid = fork();
    if (pid < 0)
        return fail("fork", strerror(errno));
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
            _exit(125);
        if (cg_box && join_cgroup() < 0)
            _exit(fail("cannot join the sandbox's cgroup", strerror(errno)));
        execv(bwrap, args);
        _exit(fail("cannot execute bwrap", strerror(errno)));
    }
    /* none of the channel, none of the blobs: bwrap has them */
    close(INFO_FD);
    for (int fd = 3; fd <= WSL_FRAME_FD_MAX; fd++)
        if (fd != p[0])
            close(fd);
    close(0);
    close(1);
    agent = agent_pid(p[0]);
    close(p[0]);
    if (agent > 0)
        pidfd = (int)syscall(SYS_pidfd_open, agent, 0);
    for (;;) {
        int sig = sigwaitinfo(&set, NULL);

        if (sig == SIGCHLD && waitpid(pid, &status, WNOHANG) == pid)
            break;
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
            /* pid 1 of the sandbox: the kernel ends the rest, bwrap reaps it */
            if (pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0)
                kill(pid, SIGKILL);
            if (cg_box) /* and whatever left the pid namespace's reach */
                cg_group_kill(cg_box);
        }
    }
    if (pidfd >= 0) { /* bwrap killed, not ending: wait for the namespace (bounded) */
        struct pollfd pfd = {.fd = pidfd, .events = POLLIN};

        poll(&pfd, 1, 5000);
    }
    if (cg_box) {
        /* on a line of its own: the box's processes share this stderr, and
         * one killed mid-line leaves no newline (seen: "/bin/sh: 0: ") */
        fprintf(stderr, "\nsbx-wsl2-stats oom_killed=%d pids_limited=%d\n",
                cg_group_oom_killed(cg_box), cg_group_pids_limited(cg_box));
        cg_box = cg_group_free(cg_box); /* kills what is left, waits, removes */
    }
    cg_svc = cg_service_free(cg_svc);
    return exit_status(status);
}

int main(int argc, char **argv)
{
    struct wsl_frame f;
    struct wsl_frame_rec rec;
    struct wsl_frame_limits lim;
    unsigned char hdr[WSL_FRAME_MAGIC_LEN], lbuf[WSL_FRAME_LIMITS_LEN];
    int at[WSL_FRAME_FD_MAX + 1];
    const char *why = NULL;

    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("wsl2-open stream %.7s\n", WSL_FRAME_MAGIC);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--caps") == 0)
        return print_caps();
    if (argc < 3 || argv[1][0] != '/')
        return fail("usage: wsl2-open /ABS/PATH/bwrap BWRAP-OPTIONS... (stream on stdin)", NULL);
    /* it needs no privilege, and neither does what it starts (bwrap sets
     * this too, before the sandbox) */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return fail("no_new_privs", strerror(errno));
    for (int i = 0; i <= WSL_FRAME_FD_MAX; i++)
        at[i] = -1;
    wsl_frame_init(&f);
    if (read_exact(hdr, WSL_FRAME_MAGIC_LEN) < 0)
        return fail("stdin ended before the stream", strerror(errno));
    if (wsl_frame_magic(&f, hdr, &why) < 0)
        return fail(why, NULL);
    while (!f.ended) {
        if (read_exact(hdr, WSL_FRAME_HDR) < 0)
            return fail("stdin ended inside the stream", strerror(errno));
        if (wsl_frame_header(&f, hdr, &rec, &why) < 0)
            return fail(why, NULL);
        if (rec.type == WSL_FRAME_FD && (at[rec.fd] = blob(rec.len, &why)) < 0)
            return fail(why, strerror(errno));
        if (rec.type == WSL_FRAME_LIMITS && read_exact(lbuf, sizeof(lbuf)) < 0)
            return fail("stdin ended inside the limits", strerror(errno));
        if (rec.type == WSL_FRAME_LIMITS && wsl_frame_limits_get(lbuf, &lim, &why) < 0)
            return fail(why, NULL);
    }
    /* Each blob at its number; nothing else above stderr goes to bwrap. */
    for (int fd = 3; fd <= WSL_FRAME_FD_MAX; fd++) {
        if (at[fd] >= 0 && dup2(at[fd], fd) != fd)
            return fail("dup2", strerror(errno));
        if (at[fd] < 0)
            close(fd);
    }
    if (syscall(SYS_close_range, (unsigned)WSL_FRAME_FD_MAX + 1, ~0U, 0) < 0)
        for (int fd = WSL_FRAME_FD_MAX + 1; fd < 1024; fd++)
            close(fd);
    if (f.limits && make_cgroup(&lim) != 0)
        return 125;
    return supervise(argv[1], argv + 2, argc - 2);
}
