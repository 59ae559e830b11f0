/* SPDX-License-Identifier: MIT */
/*
 * run.c: open, watch and destroy one bubblewrap box. Thin: the argv comes
 * from translate.c, supervision from the core's host table (spawn, cgroup,
 * seccomp, memfds). The box's channel is the agent's stdin/stdout pipes;
 * bwrap's stderr holds bwrap's and the agent's own diagnostics.
 *
 * bwrap reports the agent's pid on --info-fd; we hold a pidfd on it, kill
 * the sandbox by killing the agent (pid 1 of its namespace, so the kernel
 * kills everything else) and do not return before it is gone, with or
 * without a cgroup. With network "on", bwrap also waits on --block-fd while
 * pasta (user-mode networking, run as the sandbox uid in the sandbox's
 * cgroup) attaches to the new network namespace.
 *
 * bwrap runs under the core's keeper (SBX_SPAWN_KEEPER, ABI 1.6): bwrap
 * clones the sandbox's first process, which then blocks on an eventfd of
 * its own until bwrap writes it, and only later sets its parent-death
 * signal. A bwrap killed in between (the core SIGKILLed, bwrap following by
 * --die-with-parent) would leave it blocked for ever, a child of init; the
 * keeper, a subreaper, inherits it and kills it. nsjail has no such window:
 * its child waits on a socketpair whose other end dies with nsjail.
 *
 * Under WSL2 (st->wsl, plugins/wsl2) only stdin, stdout and stderr cross
 * wsl.exe: no descriptor is passed; the blobs bwrap reads from descriptors
 * go first down the launcher's stdin (plugins/common/wslframe.h) to the
 * opener in the distribution, which puts them at the same numbers and
 * starts bwrap. The agent's pid is the opener's business (a pid of the
 * distribution names no process here): the box ends by SIGTERM to the
 * launcher, on which the opener kills the agent and exits once bwrap has
 * reaped it; SIGKILL after a grace. No keeper there: bwrap's window is
 * inside the distribution, where the opener is bwrap's parent. Nor the
 * core's cgroup: the limits are the distribution's business too, sent to
 * the opener in the stream when its probe found a cgroup there (it makes
 * one, and reports the box's OOM and pids events back on stderr), else
 * the agent's rlimits as without cgroups.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bwrap.h"
#include "wslsend.h"

#define CHILD_FD_BASE 3

struct bwrap_box {
    struct jail_box jb; /* first: channel, launcher, cgroup, pasta (jailbox.h) */
    struct bwrap_state *st;
    int agent_pid;   /* host pid of the agent (pid 1 inside), or 0 */
    int agent_pidfd; /* or -1 (no pidfd_open here) */
};

static void await_agent(struct jail_box *jb);

static const struct jail_kind bwrap_kind = {.launcher = "bwrap",
        .term_grace_ms = 0, /* the agent is killed: bwrap goes at once */
        .kill = bwrap_box_kill,
        .close = bwrap_box_close,
        .reap = await_agent,
        .diag_error = jail_bwrap_diag_error};

/* WSL2: SIGTERM to the launcher reaches the opener, which kills the agent
 * and waits for the sandbox to be gone (plugins/wsl2/open.c). */
static const struct jail_kind wsl_kind = {.launcher = "wsl.exe (bwrap)",
        .term_grace_ms = 5000,
        .kill = bwrap_box_kill,
        .close = bwrap_box_close,
        .reap = NULL,
        .diag_error = jail_bwrap_diag_error,
        .stats_line = jail_wsl_stats_line};

static const struct jail_kind *kind_of(const struct bwrap_box *b)
{
    return b->st->wsl ? &wsl_kind : &bwrap_kind;
}

static const char passwd_data[] = JAIL_PASSWD;
static const char group_data[] = JAIL_GROUP;
static const char hosts_data[] = JAIL_HOSTS;

/* Fds given to bwrap, in child fd order from CHILD_FD_BASE. */
enum { FD_SECCOMP, FD_AGENT, FD_PASSWD, FD_GROUP, FD_HOSTS, FD_INFO, FD_BLOCK, FD_COUNT };

struct box_fds {
    int fd[FD_COUNT];
    int info_r, block_w; /* our ends for network on */
};

static void fds_close(struct box_fds *f)
{
    for (int i = 0; i < FD_COUNT; i++)
        if (f->fd[i] >= 0)
            close(f->fd[i]);
    if (f->info_r >= 0)
        close(f->info_r);
    if (f->block_w >= 0)
        close(f->block_w);
}

static void fds_init(struct box_fds *f)
{
    for (int i = 0; i < FD_COUNT; i++)
        f->fd[i] = -1;
    f->info_r = f->block_w = -1;
}

static int fds_open(const struct sbx_host *h, const struct sbx_box_spec *spec, bool wsl,
        struct box_fds *f, struct sbx_err *err)
{
    bool net_on = spec->policy->network == SBX_NET_ON;
    bool zygote =
            SBX_HAS_FIELD(struct sbx_box_spec, spec, flags) && (spec->flags & SBX_BOX_ZYGOTE) != 0;
    int p[2];

    if (zygote && !SBX_HAS_FIELD(struct sbx_host, h, seccomp_zygote_bpf_fd))
        return sbx_err_fill(err, SBX_E_UNSUPPORTED, 0, "this core has no zygote filter (ABI 1.6)");
    if ((zygote ? h->seccomp_zygote_bpf_fd(h, &f->fd[FD_SECCOMP], err)
                : h->seccomp_bpf_fd(h, &f->fd[FD_SECCOMP], err)) < 0 ||
            h->agent_fd(h, &f->fd[FD_AGENT], err) < 0 ||
            h->memfd_new(h, "passwd", passwd_data, sizeof(passwd_data) - 1, &f->fd[FD_PASSWD],
                    err) < 0 ||
            h->memfd_new(h, "group", group_data, sizeof(group_data) - 1, &f->fd[FD_GROUP], err) <
                    0 ||
            h->memfd_new(h, "hosts", hosts_data, sizeof(hosts_data) - 1, &f->fd[FD_HOSTS], err) < 0)
        return err->rc;
    if (wsl) /* nothing but stdio crosses wsl.exe */
        return 0;
    if (pipe2(p, O_CLOEXEC) < 0)
        return sbx_err_fill(err, SBX_E_IO, errno, "pipe: %s", strerror(errno));
    f->info_r = p[0], f->fd[FD_INFO] = p[1];
    if (!net_on)
        return 0;
    if (pipe2(p, O_CLOEXEC) < 0)
        return sbx_err_fill(err, SBX_E_IO, errno, "pipe: %s", strerror(errno));
    f->fd[FD_BLOCK] = p[0], f->block_w = p[1];
    return 0;
}

/* Read bwrap's whole info JSON (to end of file: closing the pipe early
 * would kill bwrap with SIGPIPE mid-write) and take "child-pid". */
static int read_child_pid(int fd, int *ret_pid, struct sbx_err *err)
{
    char buf[2048];
    const char *k;
    size_t o = 0;

    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&pfd, 1, 10000) <= 0)
            return sbx_err_fill(err, SBX_E_BACKEND, ETIMEDOUT, "bwrap did not report its pid");
        n = read(fd, buf + o, sizeof(buf) - 1 - o);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return sbx_err_fill(
                    err, SBX_E_BACKEND, errno, "reading bwrap's info: %s", strerror(errno));
        if (n == 0)
            break;
        o += (size_t)n;
        if (o + 1 >= sizeof(buf))
            return sbx_err_fill(err, SBX_E_BACKEND, 0, "bwrap's info is too long");
    }
    buf[o] = '\0';
    k = strstr(buf, "\"child-pid\":");
    *ret_pid = k ? (int)strtol(k + 12, NULL, 10) : 0;
    if (*ret_pid <= 0)
        return sbx_err_fill(err, SBX_E_BACKEND, 0, "bwrap ended before reporting its pid");
    return 0;
}

/* With network "on": attach pasta, then let bwrap go on (--block-fd). */
static int attach_pasta(struct bwrap_box *b, struct box_fds *f, const struct sbx_box_spec *spec,
        struct sbx_err *err)
{
    int r = jail_attach_pasta(
            b->jb.h, b->st->pasta, b->agent_pid, spec, b->jb.cg, &b->jb.pasta, err);

    if (r < 0)
        return r;
    if (write(f->block_w, "x", 1) != 1)
        return sbx_err_fill(err, SBX_E_BACKEND, errno, "cannot release bwrap: %s", strerror(errno));
    return 0;
}

static int spawn_bwrap(struct bwrap_box *b, const struct sbx_box_spec *spec, struct box_fds *f,
        int *child, struct sbx_err *err)
{
    const struct sbx_host *h = b->jb.h;
    struct sbx_fd_map map[FD_COUNT];
    size_t n = 0;
    struct bwrap_argv *argv = malloc(sizeof(*argv)); /* ~10 KiB: not on the stack */
    int r;

    if (!argv)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    for (int i = 0; i < FD_COUNT; i++) {
        child[i] = -1;
        if (f->fd[i] >= 0) {
            child[i] = CHILD_FD_BASE + i;
            map[n++] = (struct sbx_fd_map){f->fd[i], child[i]};
        }
    }
    struct bwrap_input in = {.seccomp_fd = child[FD_SECCOMP],
            .agent_fd = child[FD_AGENT],
            .passwd_fd = child[FD_PASSWD],
            .group_fd = child[FD_GROUP],
            .hosts_fd = child[FD_HOSTS],
            .info_fd = child[FD_INFO],
            .block_fd = child[FD_BLOCK],
            .wsl = b->st->wsl};

    jail_input_init(&in.box, spec, &b->st->tops);
    r = bwrap_translate(&in, argv, err);
    if (r == 0) {
        struct sbx_spawn sp = {.size = sizeof(sp),
                .path = b->st->wsl ? b->st->launcher : b->st->bwrap,
                .argv = argv->argv,
                .envp = spec->envp,
                .stdin_fd = SBX_FD_PIPE,
                .stdout_fd = SBX_FD_PIPE,
                .stderr_fd = SBX_FD_PIPE,
                .fds = b->st->wsl ? NULL : map, /* WSL2: down stdin instead */
                .n_fds = b->st->wsl ? 0 : n,
                .cgroup = b->jb.cg,
                .flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG |
                         (h->abi_minor >= 6 && !b->st->wsl ? SBX_SPAWN_KEEPER : 0u)};

        jail_spawn_ids(spec, &sp);
        r = h->proc_spawn(h, &sp, &b->jb.proc, err);
    }
    free(argv);
    return r;
}

int bwrap_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    struct bwrap_state *st = state;
    const struct sbx_host *h = st->h;
    struct bwrap_box *b = calloc(1, sizeof(*b));
    bool net_on = spec->policy->network == SBX_NET_ON;
    struct box_fds f;
    int child[FD_COUNT], r;

    if (!b)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    jail_box_init(&b->jb, h);
    b->st = st;
    b->agent_pidfd = -1;
    fds_init(&f);
    r = st->wsl ? 0 : jail_cgroup_new(h, spec, &b->jb.cg, err); /* WSL2: the opener's */
    if (r == 0)
        r = fds_open(h, spec, st->wsl != NULL, &f, err);
    if (r == 0)
        r = spawn_bwrap(b, spec, &f, child, err);
    if (r == 0 && st->wsl) {
        jail_chan_take(h, b->jb.proc, &b->jb.chan);
        r = wsl_stream_send(
                b->jb.chan.wfd, f.fd, child, FD_COUNT, st->wsl_cgroup ? spec->policy : NULL, err);
    } else if (r == 0) {
        jail_chan_take(h, b->jb.proc, &b->jb.chan);
        for (int i = 0; i < FD_COUNT; i++) /* bwrap has its copies now */
            if (f.fd[i] >= 0)
                close(f.fd[i]), f.fd[i] = -1;
        /* The agent waits for our first frame, so its pid stays its own
         * until we open the pidfd. */
        r = read_child_pid(f.info_r, &b->agent_pid, err);
        if (r == 0)
            b->agent_pidfd = (int)syscall(SYS_pidfd_open, b->agent_pid, 0);
        if (r == 0 && net_on)
            r = attach_pasta(b, &f, spec, err);
    }
    fds_close(&f);
    if (r < 0) /* bwrap's own message ("bwrap: ...") says more than ours */
        return jail_box_open_failed(b, kind_of(b), r, err);
    *ret_box = b;
    return 0;
}

int bwrap_box_kill(void *box)
{
    struct bwrap_box *b = box;
    const struct sbx_host *h = b->jb.h;

    /* Killing the agent, pid 1 of the sandbox's pid namespace, kills every
     * process in it; bwrap, still alive, then reaps it and exits, so host
     * init inherits no orphan (box_close escalates if bwrap lingers, and
     * freeing the cgroup kills whatever is left). Without the agent's pid,
     * the cgroup kill and killing bwrap reach the agent (--die-with-parent). */
    if (b->st->wsl && b->jb.proc) {
        h->proc_signal(b->jb.proc, SIGTERM); /* the opener ends the sandbox */
    } else if (b->agent_pidfd >= 0) {
        syscall(SYS_pidfd_send_signal, b->agent_pidfd, SIGKILL, NULL, 0);
    } else {
        if (b->jb.cg)
            h->cgroup_kill(b->jb.cg);
        if (b->jb.proc)
            h->proc_signal(b->jb.proc, SIGKILL);
    }
    if (b->jb.pasta)
        h->proc_signal(b->jb.pasta, SIGKILL);
    return 0;
}

/* Wait (bounded) until the agent, and with it its whole namespace, is gone:
 * a pid namespace's init finishes exiting only after all its members. */
static void await_agent(struct jail_box *jb)
{
    const struct bwrap_box *b = (const struct bwrap_box *)jb;
    struct pollfd pfd = {.fd = b->agent_pidfd, .events = POLLIN};

    if (b->agent_pidfd >= 0 && poll(&pfd, 1, 5000) == 0)
        jb->h->log(jb->h, SBX_LOG_WARN, "sandbox agent %d still exiting after 5 s", b->agent_pid);
}

int bwrap_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct bwrap_box *b = box;
    int r = jail_box_close(&b->jb, kind_of(b), stats, err);

    if (b->agent_pidfd >= 0)
        close(b->agent_pidfd);
    free(b);
    return r;
}
