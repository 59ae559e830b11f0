/* SPDX-License-Identifier: MIT */
/*
 * translate.c: the one policy -> bubblewrap argv. Pure: no I/O, no
 * allocation; golden-tested (tests/golden/bwrap/).
 *
 * Mapping (policy field -> bwrap):
 *   namespaces              --unshare-user --unshare-pid --unshare-ipc --unshare-uts
 *                           --unshare-cgroup, --unshare-net unless network is host;
 *                           --disable-userns (no nested user namespaces)
 *   identity                --uid/--gid (unprivileged inside; the runner has already
 *                           dropped to the sandbox uid when the core is root)
 *   seccomp, no_new_privs   --seccomp FD (the core's one policy; bwrap sets no_new_privs)
 *   read_only_system        --remount-ro / after all mounts (the root is bwrap's tmpfs)
 *   tmpfs_bytes             --size N --tmpfs /workspace, and the same for /tmp, /dev/shm
 *                           (the workspace size, at most 3/4 of memory: plugin.h says why)
 *   network off             empty network namespace (loopback only)
 *   network on              same namespace plus --block-fd: the runner attaches pasta to
 *                           the namespace before the agent starts
 *   network host            no --unshare-net (operator override only)
 *   network registries      empty network namespace, the core's proxy socket bound in
 *   environment             not here: bwrap is executed with exactly the sandbox env
 *   memory, cpu, pids       not here: cgroup joined by the runner (rlimits as fallback)
 *   file_size, open files   not here: rlimits the agent sets inside (LIMITS)
 *   lifetime                --die-with-parent --new-session --as-pid-1 (the agent is pid 1,
 *                           so its exit ends every process of the sandbox); --info-fd
 *                           tells the runner the agent's pid, to kill it and await it
 *
 * Mount order:
 *   1. --ro-bind /usr /usr; the merged-usr symlinks (/bin -> usr/bin, ...) or, on hosts
 *      without merged /usr, read-only binds of those directories
 *   2. --ro-bind-try of the few /etc files runtimes need (never /etc as a whole, never
 *      /home, /root, /sys or anything under them); generated /etc/passwd, /etc/group,
 *      /etc/hosts from memfds
 *   3. the language's extra read-only host paths (--ro-bind-try)
 *   4. --proc /proc, --dev /dev
 *   5. size-limited tmpfs for /tmp, /dev/shm and /workspace; then --remount-ro /dev (bwrap
 *      gives its /dev tmpfs no size, and nothing needs to create files there)
 *   6. the agent binary (copied from an fd, mode 0555) at /.sbx/agent
 *   7. --remount-ro / when the system is read-only
 * Every bind target is created by bwrap inside its own fresh root tmpfs before any
 * sandboxed code runs, and the workspace is a fresh tmpfs: no target lies under a
 * path the sandbox could have written, so a planted symlink cannot redirect a bind
 * (bubblewrap < 0.12 follows symlinks while setting up).
 */
#include "translate.h"

#include <stdio.h>
#include <string.h>

static const char *const etc_files[] = {JAIL_ETC_FILES};

struct builder {
    struct bwrap_argv *out;
    int failed;
};

static void add(struct builder *b, const char *arg)
{
    if (b->out->argc + 2 >= BWRAP_MAX_ARGS) {
        b->failed = 1;
        return;
    }
    b->out->argv[b->out->argc++] = arg;
    b->out->argv[b->out->argc] = NULL;
}

/* Keep a decimal number in the store and add it. */
static void add_num(struct builder *b, unsigned long long v)
{
    struct bwrap_argv *o = b->out;
    size_t room = BWRAP_ARG_STORE - o->used;
    int n = snprintf(o->store + o->used, room, "%llu", v);

    if (n < 0 || (size_t)n >= room) {
        b->failed = 1;
        return;
    }
    add(b, o->store + o->used);
    o->used += (size_t)n + 1;
}

static void add2(struct builder *b, const char *a, const char *c)
{
    add(b, a);
    add(b, c);
}

static void add3(struct builder *b, const char *a, const char *c, const char *d)
{
    add(b, a);
    add(b, c);
    add(b, d);
}

static void add_fd(struct builder *b, const char *opt, int fd)
{
    add(b, opt);
    add_num(b, (unsigned long long)fd);
}

static void add_tmpfs(
        struct builder *b, unsigned long long size, const char *mode, const char *dest)
{
    add2(b, "--perms", mode);
    add(b, "--size");
    add_num(b, size);
    add2(b, "--tmpfs", dest);
}

static void add_data(struct builder *b, const char *mode, int fd, const char *dest)
{
    add2(b, "--perms", mode);
    add_fd(b, "--ro-bind-data", fd);
    add(b, dest);
}

int bwrap_translate(const struct bwrap_input *in, struct bwrap_argv *out, struct sbx_err *err)
{
    const struct sbx_policy *p = in->box.policy;
    struct builder b = {.out = out};
    bool net_on = p->network == SBX_NET_ON;

    out->argc = 0;
    out->used = 0;
    if (in->seccomp_fd < 0 || in->agent_fd < 0 || in->info_fd < 0 || (net_on && in->block_fd < 0)) {
        err->rc = SBX_E_INVALID;
        snprintf(err->msg, sizeof(err->msg), "bwrap translation: missing fd");
        return SBX_E_INVALID;
    }
    if ((p->network == SBX_NET_REGISTRIES || p->network == SBX_NET_ALLOWLIST) &&
            !in->box.proxy_socket) {
        err->rc = SBX_E_UNSUPPORTED;
        snprintf(err->field, sizeof(err->field), "network");
        snprintf(err->msg, sizeof(err->msg), "network mode needs the filtering proxy");
        return SBX_E_UNSUPPORTED;
    }
    add(&b, "bwrap");
    add3(&b, "--unshare-user", "--unshare-pid", "--unshare-ipc");
    add2(&b, "--unshare-uts", "--unshare-cgroup");
    if (p->network != SBX_NET_HOST)
        add(&b, "--unshare-net");
    add(&b, "--disable-userns");
    add(&b, "--uid");
    add_num(&b, in->box.sandbox_uid);
    add(&b, "--gid");
    add_num(&b, in->box.sandbox_gid);
    add2(&b, "--hostname", "sandbox");
    add3(&b, "--die-with-parent", "--new-session", "--as-pid-1");
    /* 1. the system */
    add3(&b, "--ro-bind", "/usr", "/usr");
    for (size_t i = 0; i < in->box.n_tops; i++) {
        if (in->box.tops[i].target)
            add3(&b, "--symlink", in->box.tops[i].target, in->box.tops[i].name);
        else
            add3(&b, "--ro-bind", in->box.tops[i].name, in->box.tops[i].name);
    }
    /* 2. /etc, file by file */
    for (size_t i = 0; i < sizeof(etc_files) / sizeof(etc_files[0]); i++)
        add3(&b, "--ro-bind-try", etc_files[i], etc_files[i]);
    if (net_on || p->network == SBX_NET_HOST)
        add3(&b, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf");
    if (in->passwd_fd >= 0)
        add_data(&b, "0444", in->passwd_fd, "/etc/passwd");
    if (in->group_fd >= 0)
        add_data(&b, "0444", in->group_fd, "/etc/group");
    if (in->hosts_fd >= 0)
        add_data(&b, "0444", in->hosts_fd, "/etc/hosts");
    /* 3. the language's paths */
    for (const char *const *rp = in->box.ro_paths; rp && *rp; rp++)
        add3(&b, "--ro-bind-try", *rp, *rp);
    /* 4, 5. kernel filesystems and private writable space */
    add2(&b, "--proc", "/proc");
    add2(&b, "--dev", "/dev");
    add_tmpfs(&b, (unsigned long long)p->tmpfs_bytes, "1777", "/tmp");
    add_tmpfs(&b, (unsigned long long)p->tmpfs_bytes, "1777", "/dev/shm");
    add_tmpfs(&b, (unsigned long long)p->tmpfs_bytes, "0755", "/workspace");
    /* bwrap's /dev is a tmpfs without a size limit; the nodes, /dev/pts and
     * /dev/shm are mounts of their own, which this does not touch */
    add2(&b, "--remount-ro", "/dev");
    /* the core's directories (dependency sets), over the workspace */
    for (size_t i = 0; i < in->box.n_mounts; i++)
        add3(&b, in->box.mounts[i].flags & SBX_MOUNT_RW ? "--bind" : "--ro-bind",
                in->box.mounts[i].source, in->box.mounts[i].target);
    /* the filtering proxy: a socket is usable through a read-only mount */
    if (p->network == SBX_NET_REGISTRIES || p->network == SBX_NET_ALLOWLIST)
        add3(&b, "--ro-bind", in->box.proxy_socket, SBX_PROXY_SOCKET);
    /* 6. the agent */
    add_data(&b, "0555", in->agent_fd, BWRAP_AGENT);
    /* 7. */
    if (p->read_only_system)
        add2(&b, "--remount-ro", "/");
    add2(&b, "--chdir", "/workspace");
    add_fd(&b, "--seccomp", in->seccomp_fd);
    add_fd(&b, "--info-fd", in->info_fd);
    if (net_on)
        add_fd(&b, "--block-fd", in->block_fd);
    add2(&b, "--", BWRAP_AGENT);
    if (b.failed) {
        err->rc = SBX_E_LIMIT;
        snprintf(err->msg, sizeof(err->msg), "bwrap translation: too many arguments");
        return SBX_E_LIMIT;
    }
    return 0;
}
