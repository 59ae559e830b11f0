/* SPDX-License-Identifier: MIT */
/*
 * translate.c: the one policy -> bubblewrap argv. Pure: no I/O, no
 * allocation; golden-tested (tests/golden/bwrap/).
 *
 * Mapping (policy field -> bwrap):
 *   namespaces              --unshare-user --unshare-pid --unshare-ipc --unshare-uts
 *                           --unshare-cgroup, --unshare-net unless network is host;
 *                           --disable-userns (no nested user namespaces)
 *   zygote box (ABI 1.6)    instead of --disable-userns: --cap-add CAP_SYS_ADMIN,
 *                           CAP_NET_ADMIN, CAP_SYS_RESOURCE, CAP_SETPCAP (the zygote's, never a
 *                           child's: docs/zygote-security.md); the runner passes the
 *                           zygote's seccomp program
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
 *
 * WSL2 (in->wsl, plugins/wsl2) changes only the edges: the launcher's words
 * and "-d DISTRO -u USER --cd / --exec OPENER BWRAP" come first (no shell:
 * wsl.exe executes the opener, which takes the blobs from its stdin and
 * executes bwrap; no --info-fd, since only fds 0-2 cross); the
 * environment, which wsl.exe does not carry, follows the namespaces as
 * --clearenv and --setenv pairs, minus WSL's own variables (WSL_INTEROP,
 * WSLENV, ...: interop with Windows) and with PATH's Windows directories
 * (/mnt/..., or not absolute) left out; a host path on a Windows drive
 * (under /mnt) is refused, so nothing of the sandbox is staged there. The
 * rest is the same argv.
 */
#include "translate.h"

#include <stdio.h>
#include <string.h>

#include <llm-sandbox/plugin_kit.h>

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

/* Keep a copy of s[0..n) in the store; NULL when it is full. */
static const char *keep(struct builder *b, const char *s, size_t n)
{
    struct bwrap_argv *o = b->out;
    char *d = o->store + o->used;

    if (n + 1 > BWRAP_ARG_STORE - o->used) {
        b->failed = 1;
        return NULL;
    }
    memcpy(d, s, n);
    d[n] = '\0';
    o->used += n + 1;
    return d;
}

static bool word_ok(const char *s, const char *first, const char *rest, size_t max)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > max || !strchr(first, s[0]))
        return false;
    return strspn(s + 1, rest) == n - 1;
}

#define LOWER  "abcdefghijklmnopqrstuvwxyz"
#define UPPER  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define DIGITS "0123456789"

/* On one of the distribution's Windows drives (wsl.conf's default
 * automount root)? */
static bool on_drive(const char *path)
{
    return path && strncmp(path, "/mnt", 4) == 0 && (path[4] == '/' || path[4] == '\0');
}

static int wsl_check(const struct bwrap_input *in, struct sbx_err *err)
{
    const struct bwrap_wsl *w = in->wsl;
    const char *bad = in->box.proxy_socket;

    if (!w->launcher || !w->launcher[0] || !w->launcher[0][0] || !w->bwrap || w->bwrap[0] != '/' ||
            !w->opener || w->opener[0] != '/')
        return sbx_err_fill(
                err, SBX_E_INVALID, 0, "WSL2 translation: no launcher, opener or bwrap path");
    if (in->box.policy->network == SBX_NET_ON) {
        snprintf(err->field, sizeof(err->field), "network");
        return sbx_err_fill(err, SBX_E_UNSUPPORTED, 0,
                "WSL2: network \"on\" is not offered (pasta cannot attach to a namespace "
                "inside the distribution)");
    }
    if (in->info_fd >= 0 || in->block_fd >= 0)
        return sbx_err_fill(err, SBX_E_INVALID, 0,
                "WSL2 translation: only stdin, stdout and stderr cross wsl.exe (no info or "
                "block fd)");
    if (!word_ok(w->distro, LOWER UPPER DIGITS, LOWER UPPER DIGITS "._-", 64))
        return sbx_err_fill(err, SBX_E_INVALID, 0,
                "WSL2 distribution name '%.64s' is not [A-Za-z0-9][A-Za-z0-9._-]*",
                w->distro ? w->distro : "");
    if (!word_ok(w->user, LOWER "_", LOWER DIGITS "_-", 32))
        return sbx_err_fill(err, SBX_E_INVALID, 0,
                "WSL2 user name '%.32s' is not [a-z_][a-z0-9_-]*", w->user ? w->user : "");
    for (const char *const *rp = in->box.ro_paths; rp && *rp && !on_drive(bad); rp++)
        bad = *rp;
    for (size_t i = 0; i < in->box.n_mounts && !on_drive(bad); i++)
        bad = in->box.mounts[i].source;
    if (on_drive(bad)) {
        snprintf(err->field, sizeof(err->field), "mounts");
        return sbx_err_fill(err, SBX_E_UNSUPPORTED, 0,
                "WSL2: '%.120s' lies on a Windows drive (/mnt); stage it inside the "
                "distribution instead",
                bad);
    }
    return 0;
}

static void add_wsl_launcher(struct builder *b, const struct bwrap_wsl *w)
{
    for (const char *const *a = w->launcher; *a; a++)
        add(b, *a);
    add2(b, "-d", w->distro);
    add2(b, "-u", w->user);
    add2(b, "--cd", "/");
    add3(b, "--exec", w->opener, w->bwrap);
}

/* PATH without Windows directories: those WSL appends live on the drive
 * mounts (/mnt/c/Windows/system32), and a relative entry is no Linux one. */
static const char *wsl_path(struct builder *b, const char *value)
{
    struct bwrap_argv *o = b->out;
    char *d = o->store + o->used, *w = d;
    size_t room = BWRAP_ARG_STORE - o->used;

    for (const char *p = value;;) {
        size_t n = strcspn(p, ":");

        if (n > 0 && p[0] == '/' && !on_drive(p) && strncmp(p, "/mnt:", 5) != 0) {
            if ((size_t)(w - d) + n + 2 > room) {
                b->failed = 1;
                return NULL;
            }
            if (w != d)
                *w++ = ':';
            memcpy(w, p, n);
            w += n;
        }
        if (!p[n])
            break;
        p += n + 1;
    }
    if (room == 0) {
        b->failed = 1;
        return NULL;
    }
    *w = '\0';
    o->used += (size_t)(w - d) + 1;
    return d;
}

/* The sandbox's environment, which wsl.exe does not carry, as bwrap's
 * options: nothing of the distribution's own (--clearenv), none of WSL's
 * interop variables. */
static void add_wsl_env(struct builder *b, const char *const *envp)
{
    add(b, "--clearenv");
    for (const char *const *e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        const char *key, *value;

        if (!eq || eq == *e || strncmp(*e, "WSL", 3) == 0)
            continue;
        key = keep(b, *e, (size_t)(eq - *e));
        value = strcmp(key ? key : "", "PATH") == 0 ? wsl_path(b, eq + 1) : eq + 1;
        if (key && value)
            add3(b, "--setenv", key, value);
    }
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
    if (in->seccomp_fd < 0 || in->agent_fd < 0 || (!in->wsl && in->info_fd < 0) ||
            (net_on && !in->wsl && in->block_fd < 0)) {
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
    if (in->wsl && in->box.zygote) {
        err->rc = SBX_E_UNSUPPORTED;
        snprintf(err->msg, sizeof(err->msg), "no zygote boxes through WSL2");
        return SBX_E_UNSUPPORTED;
    }
    if (in->wsl && wsl_check(in, err) < 0)
        return err->rc;
    if (in->wsl)
        add_wsl_launcher(&b, in->wsl);
    else
        add(&b, "bwrap");
    add3(&b, "--unshare-user", "--unshare-pid", "--unshare-ipc");
    add2(&b, "--unshare-uts", "--unshare-cgroup");
    if (p->network != SBX_NET_HOST)
        add(&b, "--unshare-net");
    if (in->box.zygote) { /* plugin.h: SBX_BOX_ZYGOTE; no child keeps these */
        add2(&b, "--cap-add", "CAP_SYS_ADMIN");
        add2(&b, "--cap-add", "CAP_NET_ADMIN");
        add2(&b, "--cap-add", "CAP_SYS_RESOURCE");
        add2(&b, "--cap-add", "CAP_SETPCAP"); /* so a child can empty its bounding set */
    } else {
        add(&b, "--disable-userns");
    }
    add(&b, "--uid");
    add_num(&b, in->box.sandbox_uid);
    add(&b, "--gid");
    add_num(&b, in->box.sandbox_gid);
    add2(&b, "--hostname", "sandbox");
    add3(&b, "--die-with-parent", "--new-session", "--as-pid-1");
    if (in->wsl)
        add_wsl_env(&b, in->box.envp);
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
    if (in->info_fd >= 0)
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
