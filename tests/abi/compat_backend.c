/* SPDX-License-Identifier: MIT */
/*
 * compat_backend.c: a backend written against a frozen older ABI header
 * (tests/abi/1.0 or 1.3; built once against each, as compat10 and
 * compat13), as a third party would have written it before 1.4: a
 * small bubblewrap box (new user, pid, ipc, uts and network namespaces,
 * /usr read-only, tmpfs /tmp and /workspace, the agent as pid 1) that
 * passes NO seccomp filter of its own. The current core must load it and
 * run code in it unchanged, and give it the core's filter through the
 * agent (ABI 1.4). A test fixture, never installed: it shows the whole
 * host /usr and is no model of a complete backend (plugins/bwrap is).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llm-sandbox/plugin.h>

/* COMPAT_NAME ("compat10") and COMPAT_MINOR (0) come from the build, and
 * must match the header found. */
#if SBX_ABI_MINOR != COMPAT_MINOR || SBX_ABI_MINOR > 3
#error "compat_backend is built against a frozen ABI 1.0-1.3 header only"
#endif

#define BWRAP    "/usr/bin/bwrap"
#define AGENT_FD 3
#define ARGS_MAX 96

struct compat_state {
    const struct sbx_host *h;
};

struct compat_box {
    const struct sbx_host *h;
    struct sbx_proc *proc;
    struct sbx_cgroup *cg;
    int rfd, wfd;
};

static int fail(struct sbx_err *err, int rc, const char *msg)
{
    err->rc = rc;
    snprintf(err->msg, sizeof(err->msg), "%s", msg);
    return rc;
}

static void cap(struct sbx_caps *c, enum sbx_control ctl, enum sbx_enforce lvl, const char *note)
{
    c->level[ctl] = (uint8_t)lvl;
    snprintf(c->note[ctl], sizeof(c->note[ctl]), "%s", note);
}

static int compat_init(const struct sbx_host *h, const char *name, void **ret, struct sbx_err *err)
{
    struct compat_state *st = calloc(1, sizeof(*st));

    (void)name;
    if (!st)
        return fail(err, SBX_E_NOMEM, "out of memory");
    st->h = h;
    *ret = st;
    return 0;
}

static void compat_fini(void *state)
{
    free(state);
}

static int compat_probe(void *state, struct sbx_caps *c, struct sbx_err *err)
{
    struct compat_state *st = state;
    char target[16];
    ssize_t n = readlink("/bin", target, sizeof(target) - 1);

    if (access(BWRAP, X_OK) != 0)
        return fail(err, SBX_E_UNAVAILABLE, BWRAP " is missing");
    if (n != 7 || memcmp(target, "usr/bin", 7) != 0)
        return fail(err, SBX_E_UNAVAILABLE, COMPAT_NAME " needs a merged /usr");
    cap(c, SBX_CTL_WALL_TIME, SBX_ENF_FULL, "the core's deadline");
    cap(c, SBX_CTL_OUTPUT, SBX_ENF_FULL, "the core caps it");
    cap(c, SBX_CTL_FILE_SIZE, SBX_ENF_FULL, "RLIMIT_FSIZE from the agent");
    cap(c, SBX_CTL_WORKSPACE, SBX_ENF_FULL, "tmpfs /workspace and /tmp");
    cap(c, SBX_CTL_NET_OFF, SBX_ENF_FULL, "empty network namespace");
    cap(c, SBX_CTL_READ_ONLY_SYSTEM, SBX_ENF_FULL,
            "/usr bound read-only, root remounted read-only");
    cap(c, SBX_CTL_ENV, SBX_ENF_FULL, "bwrap runs with exactly the sandbox environment");
    cap(c, SBX_CTL_SECCOMP, SBX_ENF_NONE, COMPAT_NAME " passes no filter");
    cap(c, SBX_CTL_NO_NEW_PRIVS, SBX_ENF_FULL,
            "bwrap: no_new_privs, a user namespace without caps");
    cap(c, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL, "the sandbox uid when the core is root");
    st->h->cgroup_caps(st->h, c);
    return 0;
}

static void add(const char **argv, size_t *n, const char *a)
{
    if (*n + 1 < ARGS_MAX)
        argv[(*n)++] = a;
    argv[*n] = NULL;
}

/* The 1.0-1.3 rule for the tmpfs size (1.4 hands it over in the policy). */
static unsigned long long tmpfs_size(const struct sbx_policy *p)
{
    uint64_t cap3 = p->memory_bytes - p->memory_bytes / 4;

    return (unsigned long long)(p->workspace_bytes < cap3 ? p->workspace_bytes : cap3);
}

static int compat_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret, struct sbx_err *err)
{
    static const char *const fixed[] = {"--unshare-user", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-net", "--die-with-parent", "--new-session", "--as-pid-1",
            "--uid", "1000", "--gid", "1000", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin",
            "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink",
            "usr/sbin", "/sbin", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
            "--ro-bind-try", "/etc/alternatives", "/etc/alternatives", "--proc", "/proc", "--dev",
            "/dev"};
    struct compat_state *st = state;
    const struct sbx_host *h = st->h;
    struct compat_box *b = calloc(1, sizeof(*b));
    const char *argv[ARGS_MAX];
    char size[32];
    size_t n = 0;
    int agent = -1, r;

    if (!b)
        return fail(err, SBX_E_NOMEM, "out of memory");
    b->h = h, b->rfd = b->wfd = -1;
    if (h->cgroup_new(h, spec->id, spec->policy, &b->cg, err) < 0)
        b->cg = NULL; /* the rlimit fallback, as cgroup_caps reported */
    snprintf(size, sizeof(size), "%llu", tmpfs_size(spec->policy));
    add(argv, &n, BWRAP);
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        add(argv, &n, fixed[i]);
    for (const char *const *p = spec->ro_paths; p && *p; p++) {
        add(argv, &n, "--ro-bind-try");
        add(argv, &n, *p);
        add(argv, &n, *p);
    }
    for (int i = 0; i < 2; i++) {
        const char *const t[] = {"--size", size, "--tmpfs", i ? "/workspace" : "/tmp"};

        for (size_t j = 0; j < 4; j++)
            add(argv, &n, t[j]);
    }
    {
        const char *const t[] = {"--perms", "0555", "--file", "3", "/.sbx/agent", "--remount-ro",
                "/", "--chdir", "/workspace", "/.sbx/agent"};

        for (size_t j = 0; j < sizeof(t) / sizeof(t[0]); j++)
            add(argv, &n, t[j]);
    }
    r = h->agent_fd(h, &agent, err);
    if (r == 0) {
        struct sbx_fd_map map = {agent, AGENT_FD};
        struct sbx_spawn sp = {.size = sizeof(sp),
                .flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG,
                .path = BWRAP,
                .argv = argv,
                .envp = spec->envp,
                .stdin_fd = SBX_FD_PIPE,
                .stdout_fd = SBX_FD_PIPE,
                .stderr_fd = SBX_FD_NULL,
                .fds = &map,
                .n_fds = 1,
                .cgroup = b->cg};

        r = n + 1 < ARGS_MAX ? h->proc_spawn(h, &sp, &b->proc, err)
                             : fail(err, SBX_E_LIMIT, "too many arguments");
        close(agent);
    }
    if (r == 0) {
        b->rfd = h->proc_fd(b->proc, 1);
        b->wfd = h->proc_fd(b->proc, 0);
        fcntl(b->rfd, F_SETFL, O_NONBLOCK);
        fcntl(b->wfd, F_SETFL, O_NONBLOCK);
        *ret = b;
        return 0;
    }
    if (b->cg)
        h->cgroup_free(b->cg);
    free(b);
    return r;
}

static int compat_poll_fd(void *box)
{
    return ((struct compat_box *)box)->rfd;
}

static int compat_write_fd(void *box)
{
    return ((struct compat_box *)box)->wfd;
}

static int64_t compat_read(void *box, void *buf, size_t len)
{
    return read(((struct compat_box *)box)->rfd, buf, len);
}

static int64_t compat_write(void *box, const void *buf, size_t len)
{
    return write(((struct compat_box *)box)->wfd, buf, len);
}

static int compat_kill(void *box)
{
    struct compat_box *b = box;

    if (b->cg)
        b->h->cgroup_kill(b->cg);
    return b->h->proc_signal(b->proc, SIGKILL);
}

static int compat_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct compat_box *b = box;
    int status = 0;

    (void)err;
    if (b->wfd >= 0)
        close(b->wfd); /* EOF: the agent ends every process and exits */
    if (b->h->proc_wait(b->proc, 5000, &status) != 1)
        compat_kill(b);
    stats->oom_killed = b->cg ? b->h->cgroup_oom_killed(b->cg) : -1;
    stats->pids_limited = b->cg ? b->h->cgroup_pids_limited(b->cg) : -1;
    b->h->proc_free(b->proc);
    if (b->cg)
        b->h->cgroup_free(b->cg);
    if (b->rfd >= 0)
        close(b->rfd);
    free(b);
    return 0;
}

static const struct sbx_backend_ops ops = {
        .size = sizeof(struct sbx_backend_ops),
        .probe = compat_probe,
        .box_open = compat_box_open,
        .box_poll_fd = compat_poll_fd,
        .box_read = compat_read,
        .box_write = compat_write,
        .box_write_fd = compat_write_fd,
        .box_kill = compat_kill,
        .box_close = compat_close,
};

static const char *const names[] = {COMPAT_NAME, NULL};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .version = COMPAT_VERSION,
        .backend_names = names,
        .init = compat_init,
        .fini = compat_fini,
        .backend = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
