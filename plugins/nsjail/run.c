/* SPDX-License-Identifier: MIT */
/*
 * run.c: open, watch and destroy one nsjail box. Thin: the configuration
 * comes from translate.c, supervision from the core's host table (spawn,
 * cgroup, the Kafel policy, memfds), networking from localjail.c. The box's
 * channel is the agent's stdin/stdout, which nsjail hands to its child
 * unchanged; nsjail's stderr holds nsjail's and the agent's diagnostics.
 *
 * nsjail runs in the core's cgroup (so the agent and everything it starts
 * do too) and starts the agent as pid 1 of new namespaces (mode ONCE). On
 * SIGTERM nsjail SIGKILLs that pid 1 and reaps it, and a pid namespace's
 * init finishes exiting only after all its members: so killing the box is
 * SIGTERM to nsjail, and nsjail's exit means the sandbox is gone. If nsjail
 * itself dies, the kernel SIGKILLs the agent (nsjail sets PDEATHSIG).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsjail.h"

#define CHILD_FD_BASE 3
#define LIBNL_NOISE   "no version information available" /* ld.so on some nsjail builds */

struct nsjail_box {
    struct jail_box jb; /* first: channel, launcher, cgroup, pasta (jailbox.h) */
    struct nsjail_state *st;
};

static int nsjail_diag_error(char *diag, struct sbx_err *err);

/* On SIGTERM nsjail kills its sandbox and exits: give it 2 s to. */
static const struct jail_kind nsjail_kind = {.launcher = "nsjail",
        .noise = LIBNL_NOISE,
        .term_grace_ms = 2000,
        .kill = nsjail_box_kill,
        .close = nsjail_box_close,
        .diag_error = nsjail_diag_error};

/* Fds given to nsjail, in child fd order from CHILD_FD_BASE. */
enum { FD_CONFIG, FD_SECCOMP, FD_AGENT, FD_COUNT };

static void fds_close(int *fd)
{
    for (int i = 0; i < FD_COUNT; i++)
        if (fd[i] >= 0)
            close(fd[i]), fd[i] = -1;
}

/* The configuration, in a memfd nsjail reads as /proc/self/fd/N. */
static int make_config(const struct nsjail_state *st, const struct sbx_box_spec *spec, int *fd,
        struct sbx_err *err)
{
    const struct sbx_host *h = st->h;
    struct nsjail_config *cfg = malloc(sizeof(*cfg)); /* 32 KiB: not on the stack */
    struct nsjail_input in = {
            .agent_fd = CHILD_FD_BASE + FD_AGENT, .seccomp_fd = CHILD_FD_BASE + FD_SECCOMP};
    int r;

    jail_input_init(&in.box, spec, &st->tops);
    if (!cfg)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    r = nsjail_translate(&in, cfg, err);
    if (r == 0)
        r = h->memfd_new(h, "nsjail.cfg", cfg->text, cfg->len, &fd[FD_CONFIG], err);
    free(cfg);
    return r;
}

/*
 * nsjail builds its mount tree under the first of /run/user/UID/nsjail,
 * /run/user, /tmp, ... it can create (UID: its real uid). As root we give
 * the sandbox uid (each box's own: run.c) a private /run/user/UID, so nsjail
 * never falls back to a predictable name in the world-writable /tmp. Best
 * effort: without it nsjail still works.
 */
void nsjail_run_dir(const struct sbx_host *h, uint32_t uid, uint32_t gid)
{
    char dir[64];
    struct stat s;

    if (geteuid() != 0)
        return;
    snprintf(dir, sizeof(dir), "/run/user/%u", uid);
    if (mkdir("/run/user", 0755) < 0 && errno != EEXIST)
        return;
    if (mkdir(dir, 0700) == 0 && chown(dir, uid, gid) < 0)
        h->log(h, SBX_LOG_WARN, "chown %s: %s", dir, strerror(errno));
    if (lstat(dir, &s) < 0 || !S_ISDIR(s.st_mode) || s.st_uid != uid || (s.st_mode & 0077))
        h->log(h, SBX_LOG_WARN,
                "%s is not a private directory of uid %u: nsjail will use /tmp instead", dir, uid);
}

static int spawn_nsjail(
        struct nsjail_box *b, const struct sbx_box_spec *spec, const int *fd, struct sbx_err *err)
{
    const struct sbx_host *h = b->jb.h;
    char config[32];
    struct sbx_fd_map map[FD_COUNT];

    snprintf(config, sizeof(config), "/proc/self/fd/%d", CHILD_FD_BASE + FD_CONFIG);
    for (int i = 0; i < FD_COUNT; i++)
        map[i] = (struct sbx_fd_map){fd[i], CHILD_FD_BASE + i};
    const char *argv[] = {b->st->nsjail, "--config", config, NULL};
    struct sbx_spawn sp = {.size = sizeof(sp),
            .path = b->st->nsjail,
            .argv = argv,
            .envp = spec->envp,
            .stdin_fd = SBX_FD_PIPE,
            .stdout_fd = SBX_FD_PIPE,
            .stderr_fd = SBX_FD_PIPE,
            .fds = map,
            .n_fds = FD_COUNT,
            .cgroup = b->jb.cg,
            .flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG | SBX_SPAWN_NO_NEW_PRIVS};

    jail_spawn_ids(spec, &sp);
    if (sp.uid) /* the box's own uid: its own run directory */
        nsjail_run_dir(h, sp.uid, sp.gid);
    return h->proc_spawn(h, &sp, &b->jb.proc, err);
}

/* nsjail's child, the agent: with mode ONCE it has no other. */
static int find_agent(int nsjail_pid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int pid = 0;

    while (d && (e = readdir(d)) && !pid)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
                jail_parent_of((int)strtol(e->d_name, NULL, 10)) == nsjail_pid)
            pid = (int)strtol(e->d_name, NULL, 10);
    if (d)
        closedir(d);
    return pid;
}

/*
 * Network "on": once the agent has started (its first frame is readable,
 * and left there for the core), attach pasta to its network namespace. The
 * agent does nothing before the core's first frame, so the program never
 * runs without its network.
 */
static int attach_network(
        struct nsjail_box *b, const struct sbx_box_spec *spec, struct sbx_err *err)
{
    const struct sbx_host *h = b->jb.h;
    struct pollfd pfd = {.fd = b->jb.chan.rfd, .events = POLLIN};
    int agent;

    if (poll(&pfd, 1, 10000) != 1)
        return sbx_err_fill(err, SBX_E_BACKEND, ETIMEDOUT, "the sandbox agent did not start");
    agent = find_agent(h->proc_pid(b->jb.proc));
    if (agent <= 0)
        return sbx_err_fill(err, SBX_E_BACKEND, ESRCH, "nsjail has no running child");
    return jail_attach_pasta(h, b->st->pasta, agent, spec, b->jb.cg, &b->jb.pasta, err);
}

/* The box's Kafel policy: the one policy, or a zygote box's (plugin.h,
 * SBX_BOX_ZYGOTE), which only a core of ABI 1.6 with its Kafel form has:
 * without it no zygote box, rather than one under the strict policy that
 * could not isolate its children, or under none. */
static int seccomp_fd(
        const struct sbx_host *h, const struct sbx_box_spec *spec, int *ret_fd, struct sbx_err *err)
{
    bool zygote =
            SBX_HAS_FIELD(struct sbx_box_spec, spec, flags) && (spec->flags & SBX_BOX_ZYGOTE) != 0;

    if (!zygote)
        return h->seccomp_kafel_fd(h, ret_fd, err);
    if (!SBX_HAS_FIELD(struct sbx_host, h, seccomp_zygote_kafel_fd) || !h->seccomp_zygote_kafel_fd)
        return sbx_err_fill(err, SBX_E_UNSUPPORTED, 0,
                "this core has no zygote policy as Kafel (ABI 1.6): no zygote box on nsjail");
    return h->seccomp_zygote_kafel_fd(h, ret_fd, err);
}

int nsjail_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    struct nsjail_state *st = state;
    const struct sbx_host *h = st->h;
    struct nsjail_box *b = calloc(1, sizeof(*b));
    int fd[FD_COUNT] = {-1, -1, -1}, r;

    if (!b)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    jail_box_init(&b->jb, h);
    b->st = st;
    r = jail_cgroup_new(h, spec, &b->jb.cg, err);
    if (r == 0)
        r = make_config(st, spec, fd, err);
    if (r == 0)
        r = seccomp_fd(h, spec, &fd[FD_SECCOMP], err);
    if (r == 0)
        r = h->agent_fd(h, &fd[FD_AGENT], err);
    if (r == 0)
        r = spawn_nsjail(b, spec, fd, err);
    fds_close(fd); /* nsjail has its copies */
    if (r == 0) {
        jail_chan_take(h, b->jb.proc, &b->jb.chan);
        if (spec->policy->network == SBX_NET_ON)
            r = attach_network(b, spec, err);
    }
    if (r < 0) /* nsjail's own message says more than ours */
        return jail_box_open_failed(b, &nsjail_kind, r, err);
    *ret_box = b;
    return 0;
}

int nsjail_box_kill(void *box)
{
    struct nsjail_box *b = box;
    const struct sbx_host *h = b->jb.h;

    /* nsjail SIGKILLs pid 1 of the sandbox, reaps it and exits; box_close
     * escalates if it lingers. */
    if (b->jb.proc)
        h->proc_signal(b->jb.proc, SIGTERM);
    if (b->jb.pasta)
        h->proc_signal(b->jb.pasta, SIGKILL);
    return 0;
}

/* One nsjail log line's prefix, "[E][2026-...][123] func():45 ": where the
 * message starts, or p itself when the line has no such prefix. */
static char *skip_prefix(char *p)
{
    char *q = p, *sp;

    if (*q != '[')
        return p;
    for (int i = 0; i < 3; i++) { /* [level][time][pid] */
        q = strchr(q, ']');
        if (!q)
            return p;
        q++;
    }
    while (*q == ' ')
        q++;
    sp = strchr(q, ' ');
    if (sp && memmem(q, (size_t)(sp - q), "():", 3))
        q = sp + 1;
    return q;
}

/* "[E][...][1] newProc():232 x; [F][...] y" -> "x; y" (lines joined by "; ") */
static char *tidy(char *diag)
{
    char *in = diag, *out = diag;

    while (*in) {
        char *end = strstr(in, "; "), *msg = skip_prefix(in);
        size_t n;

        if (end && msg > end) /* a prefix never spans lines */
            msg = in;
        n = end ? (size_t)(end - msg) + 2 : strlen(msg);

        memmove(out, msg, n);
        out += n;
        in = end ? end + 2 : msg + n;
    }
    *out = '\0';
    return diag;
}

/* nsjail's own error and fatal lines ([E], [F]) are its error. */
static int nsjail_diag_error(char *diag, struct sbx_err *err)
{
    if (!strstr(diag, "[E][") && !strstr(diag, "[F]["))
        return 0;
    return sbx_err_fill(err, SBX_E_BACKEND, 0, "nsjail: %s", tidy(diag));
}

int nsjail_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct nsjail_box *b = box;
    int r = jail_box_close(&b->jb, &nsjail_kind, stats, err);

    free(b);
    return r;
}
