/* SPDX-License-Identifier: MIT */
/*
 * unshare.c: an EXAMPLE backend for llm-sandbox. NOT A SECURITY BOUNDARY:
 * it shows how a backend is built against the installed kit, and it is
 * deliberately small. Use plugins/bwrap (bubblewrap) for real work.
 *
 * A box is util-linux unshare(1): new user, mount, pid, network, ipc, uts
 * and cgroup namespaces, in which /bin/sh builds a root (a read-only tmpfs
 * with /usr and the language's host paths bound read-only, tmpfs
 * /workspace, /tmp and /dev/shm of the policy's size, a few device nodes),
 * pivots into it and, in a nested user namespace, becomes the core's agent
 * (uid 1000, no capabilities) as pid 1. The host table does the rest:
 * proc_spawn runs unshare as the unprivileged sandbox uid with
 * no_new_privs in the policy's cgroup (cgroup_new), and the core's seccomp
 * policy is applied by the agent before each program (this backend
 * reports seccomp as not applied by itself). Every control it cannot
 * enforce is reported as such and refused: other network modes, host
 * mounts (dependency sets).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llm-sandbox/plugin.h>

#define UNSHARE  "/usr/bin/unshare"
#define SH       "/bin/sh"
#define AGENT_FD 3
#define ARGS_MAX 64

/* Run by /bin/sh as root of the first user namespace, pid 1 of the new pid
 * namespace; $1 is the tmpfs size, the rest are host paths to bind
 * read-only; fd 3 is the agent binary; stdin and stdout are the channel. */
static const char box_script[] =
        "set -eu\n"
        "size=$1\n"
        "shift\n"
        "/usr/bin/mount -t tmpfs -o mode=0755,size=1m sbx-root /tmp\n"
        "cd /tmp\n"
        "/usr/bin/mkdir usr proc dev etc workspace tmp .sbx .old\n"
        "/usr/bin/mount --rbind /usr usr\n"
        "/usr/bin/mount -o remount,bind,ro usr\n"
        "for l in bin lib lib64 sbin; do\n"
        "    [ ! -e /usr/$l ] || /usr/bin/ln -s usr/$l $l\n"
        "done\n"
        "for p in /etc/ld.so.cache /etc/alternatives \"$@\"; do\n"
        "    [ -e \"$p\" ] || continue\n"
        "    if [ -d \"$p\" ]; then\n"
        "        /usr/bin/mkdir -p \".$p\"\n"
        "    else\n"
        "        /usr/bin/mkdir -p \".${p%/*}\"\n"
        "        /usr/bin/touch \".$p\"\n"
        "    fi\n"
        "    /usr/bin/mount --rbind \"$p\" \".$p\"\n"
        "    /usr/bin/mount -o remount,bind,ro \".$p\"\n"
        "done\n"
        "/usr/bin/mount -t proc -o nosuid,nodev,noexec proc proc\n"
        "for d in null zero full random urandom tty; do\n"
        "    /usr/bin/touch dev/$d\n"
        "    /usr/bin/mount --bind /dev/$d dev/$d\n"
        "done\n"
        "/usr/bin/mkdir dev/shm\n"
        "/usr/bin/ln -s /proc/self/fd dev/fd\n"
        "for t in workspace tmp dev/shm; do\n"
        "    /usr/bin/mount -t tmpfs -o \"size=$size,mode=1777,nosuid,nodev\" tmpfs $t\n"
        "done\n"
        "/usr/bin/cat <&3 >.sbx/agent\n"
        "exec 3<&-\n"
        "/usr/bin/chmod 0555 .sbx/agent\n"
        "/usr/sbin/pivot_root . .old\n"
        "cd /\n"
        "/usr/bin/umount -l /.old\n"
        "/usr/bin/rmdir /.old\n"
        "/usr/bin/mount -o remount,bind,ro /\n"
        "exec /usr/bin/unshare --user --map-user=1000 --map-group=1000 --wd=/workspace"
        " /.sbx/agent\n";

struct ex_state {
    const struct sbx_host *h;
};

struct ex_box {
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

static int ex_init(const struct sbx_host *h, const char *name, void **ret, struct sbx_err *err)
{
    struct ex_state *st = calloc(1, sizeof(*st));

    (void)name;
    if (!st)
        return fail(err, SBX_E_NOMEM, "out of memory");
    st->h = h;
    *ret = st;
    return 0;
}

static void ex_fini(void *state)
{
    free(state);
}

/* Can this host make the namespaces? Found by trying, as probes must. */
static int ex_probe(void *state, struct sbx_caps *c, struct sbx_err *err)
{
    static const char *const trial[] = {UNSHARE, "--user", "--map-root-user", "--mount", "--pid",
            "--fork", "--net", "--ipc", "--uts", "--cgroup", "/bin/true", NULL};
    struct ex_state *st = state;
    char target[16], out[200];
    ssize_t n = readlink("/bin", target, sizeof(target) - 1);
    int status = -1;

    if (access(UNSHARE, X_OK) != 0)
        return fail(err, SBX_E_UNAVAILABLE, UNSHARE " is missing (Debian: util-linux)");
    if (n != 7 || memcmp(target, "usr/bin", 7) != 0)
        return fail(err, SBX_E_UNAVAILABLE, "the unshare example needs a merged /usr");
    if (st->h->run_capture(st->h, trial, 10000, out, sizeof(out), &status, err) < 0)
        return err->rc;
    if (status != 0) {
        err->rc = SBX_E_UNAVAILABLE;
        snprintf(err->msg, sizeof(err->msg), "unshare cannot make namespaces here: %.180s", out);
        return err->rc;
    }
    cap(c, SBX_CTL_WALL_TIME, SBX_ENF_FULL, "the core's deadline, then SIGKILL of the namespace");
    cap(c, SBX_CTL_OUTPUT, SBX_ENF_FULL, "the core caps it");
    cap(c, SBX_CTL_FILE_SIZE, SBX_ENF_FULL, "RLIMIT_FSIZE from the agent");
    cap(c, SBX_CTL_WORKSPACE, SBX_ENF_FULL,
            "tmpfs /workspace, /tmp, /dev/shm of the policy's size");
    cap(c, SBX_CTL_NET_OFF, SBX_ENF_FULL, "unshare --net: loopback only");
    cap(c, SBX_CTL_READ_ONLY_SYSTEM, SBX_ENF_FULL, "read-only tmpfs root, /usr bound read-only");
    cap(c, SBX_CTL_ENV, SBX_ENF_FULL, "unshare runs with exactly the sandbox environment");
    cap(c, SBX_CTL_SECCOMP, SBX_ENF_NONE, "the example applies no filter itself");
    cap(c, SBX_CTL_NO_NEW_PRIVS, SBX_ENF_FULL, "set at spawn (SBX_SPAWN_NO_NEW_PRIVS)");
    cap(c, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL,
            "uid 1000 of a user namespace, no capabilities; the sandbox uid when the core is root");
    cap(c, SBX_CTL_NET_REGISTRIES, SBX_ENF_NONE, "not in this example");
    cap(c, SBX_CTL_NET_ALLOWLIST, SBX_ENF_NONE, "not in this example");
    cap(c, SBX_CTL_NET_ON, SBX_ENF_NONE, "not in this example");
    cap(c, SBX_CTL_NET_HOST, SBX_ENF_NONE, "not in this example");
    cap(c, SBX_CTL_HOST_MOUNTS, SBX_ENF_NONE, "not in this example (no dependency sets)");
    st->h->cgroup_caps(st->h, c); /* memory, cpu, pids: cgroups or rlimits */
    return 0;
}

static void add(const char **argv, size_t *n, const char *a)
{
    if (*n + 1 < ARGS_MAX)
        argv[(*n)++] = a;
    argv[*n] = NULL;
}

/* Fail closed: refuse what the probe said this backend cannot do, even if
 * a caller got past the core's own check. */
static int check_spec(const struct sbx_box_spec *spec, struct sbx_err *err)
{
    if (spec->policy->network != SBX_NET_OFF)
        return fail(err, SBX_E_UNSUPPORTED, "the unshare example has network off only");
    if (SBX_HAS_FIELD(struct sbx_box_spec, spec, n_mounts) && spec->n_mounts > 0)
        return fail(err, SBX_E_UNSUPPORTED, "the unshare example mounts no host directories");
    if (SBX_HAS_FIELD(struct sbx_box_spec, spec, proxy_socket) && spec->proxy_socket)
        return fail(err, SBX_E_UNSUPPORTED, "the unshare example has no proxy");
    return 0;
}

static int spawn_box(const struct sbx_host *h, struct ex_box *b, const char *const *argv,
        const struct sbx_box_spec *spec, struct sbx_err *err)
{
    int agent = -1;
    int r = h->agent_fd(h, &agent, err);

    if (r == 0) {
        struct sbx_fd_map map = {agent, AGENT_FD};
        struct sbx_spawn sp = {.size = sizeof(sp),
                .flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG | SBX_SPAWN_NO_NEW_PRIVS,
                .path = UNSHARE,
                .argv = argv,
                .envp = spec->envp,
                .stdin_fd = SBX_FD_PIPE,
                .stdout_fd = SBX_FD_PIPE,
                .stderr_fd = STDERR_FILENO, /* the box script's errors, in the server's log */
                .fds = &map,
                .n_fds = 1,
                .cgroup = b->cg};

        r = h->proc_spawn(h, &sp, &b->proc, err);
        close(agent);
    }
    return r;
}

static int ex_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret, struct sbx_err *err)
{
    static const char *const fixed[] = {UNSHARE, "--user", "--map-root-user", "--mount", "--pid",
            "--fork", "--kill-child", "--net", "--ipc", "--uts", "--cgroup", "--propagation",
            "private", SH, "-c", box_script, "sbx-unshare-box"};
    const struct sbx_host *h = ((struct ex_state *)state)->h;
    struct ex_box *b;
    const char *argv[ARGS_MAX];
    char size[32];
    size_t n = 0;
    int r = check_spec(spec, err);

    if (r < 0)
        return r;
    b = calloc(1, sizeof(*b));
    if (!b)
        return fail(err, SBX_E_NOMEM, "out of memory");
    b->h = h, b->rfd = b->wfd = -1;
    if (h->cgroup_new(h, spec->id, spec->policy, &b->cg, err) < 0)
        b->cg = NULL; /* the rlimit fallback, as cgroup_caps reported */
    snprintf(size, sizeof(size), "%llu", (unsigned long long)spec->policy->tmpfs_bytes);
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        add(argv, &n, fixed[i]);
    add(argv, &n, size);
    for (const char *const *p = spec->ro_paths; p && *p; p++)
        add(argv, &n, *p);
    r = n + 1 < ARGS_MAX ? spawn_box(h, b, argv, spec, err)
                         : fail(err, SBX_E_LIMIT, "too many host paths");
    if (r < 0) {
        if (b->cg)
            h->cgroup_free(b->cg);
        free(b);
        return r;
    }
    b->rfd = h->proc_fd(b->proc, 1);
    b->wfd = h->proc_fd(b->proc, 0);
    fcntl(b->rfd, F_SETFL, O_NONBLOCK);
    fcntl(b->wfd, F_SETFL, O_NONBLOCK);
    *ret = b;
    return 0;
}

static int ex_poll_fd(void *box)
{
    return ((struct ex_box *)box)->rfd;
}

static int ex_write_fd(void *box)
{
    return ((struct ex_box *)box)->wfd;
}

static int64_t ex_read(void *box, void *buf, size_t len)
{
    return read(((struct ex_box *)box)->rfd, buf, len);
}

static int64_t ex_write(void *box, const void *buf, size_t len)
{
    return write(((struct ex_box *)box)->wfd, buf, len);
}

/* unshare --kill-child takes pid 1, and with it the pid namespace. */
static int ex_kill(void *box)
{
    struct ex_box *b = box;

    if (b->cg)
        b->h->cgroup_kill(b->cg);
    return b->h->proc_signal(b->proc, SIGKILL);
}

static int ex_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct ex_box *b = box;
    int status = 0;

    (void)err;
    if (b->wfd >= 0)
        close(b->wfd); /* EOF: the agent ends every process and exits */
    if (b->h->proc_wait(b->proc, 5000, &status) != 1)
        ex_kill(b);
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
        .probe = ex_probe,
        .box_open = ex_box_open,
        .box_poll_fd = ex_poll_fd,
        .box_read = ex_read,
        .box_write = ex_write,
        .box_write_fd = ex_write_fd,
        .box_kill = ex_kill,
        .box_close = ex_close,
};

static const char *const names[] = {"unshare", NULL};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .version = "0.1.0",
        .backend_names = names,
        .init = ex_init,
        .fini = ex_fini,
        .backend = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
