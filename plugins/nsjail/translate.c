/* SPDX-License-Identifier: MIT */
/*
 * translate.c: the one policy -> an nsjail configuration in protobuf text
 * format. Pure: no I/O, no allocation; golden-tested (tests/golden/nsjail/).
 * The keys are those of the NsJailConfig message of nsjail 3.4 and later.
 *
 * Mapping (policy field -> nsjail):
 *   lifetime                mode ONCE: one agent, pid 1 of its namespace, its exit ends
 *                           every process of the sandbox; time_limit only as a backstop
 *                           (wall time + 60 s): the core's deadline comes first
 *   namespaces              clone_new{user,ns,pid,ipc,uts,cgroup}, clone_newnet unless
 *                           network is host
 *   identity                uid/gid 1000 inside, mapped to the one uid nsjail runs as (the
 *                           runner has dropped to the sandbox uid when the core is root)
 *   seccomp, no_new_privs   seccomp_policy_file: the core's one policy as Kafel; nsjail
 *                           sets no_new_privs and drops every capability (keep_caps false)
 *   zygote box (ABI 1.6)    cap CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_RESOURCE, CAP_SETPCAP
 *                           (keep_caps stays false: nsjail keeps exactly these, in the box's
 *                           user namespace, as ambient capabilities of the agent and the
 *                           zygote, and drops the rest from the bounding set; never a
 *                           child's: docs/zygote-security.md); /proc mounted rw, so the
 *                           zygote can set user.max_user_namespaces to 0 itself (nsjail has
 *                           no --disable-userns of its own: like bwrap's box, only the
 *                           filters and that limit stop nested user namespaces); the runner
 *                           passes the zygote's policy as Kafel
 *   environment             keep_env false, envar: exactly the agent's environment
 *   read_only_system        the root tmpfs is mounted read-only (rw: false); /usr and the
 *                           other host paths always are
 *   tmpfs_bytes             size-limited tmpfs for /workspace, /tmp and /dev/shm (the
 *                           workspace size, at most 3/4 of memory: plugin.h says why);
 *                           every tmpfs has nr_inodes of one per 4 KiB, at least 1024
 *   network off             new network namespace: loopback only
 *   network on              the same namespace; the runner attaches pasta itself (nsjail's
 *                           own user_net starts pasta with its default of forwarding the
 *                           sandbox's loopback ports to the host's loopback)
 *   network host            clone_newnet false (operator override only)
 *   memory, cpu, pids       not here: the core's cgroup, joined by nsjail before it clones
 *                           (nsjail's own cgroups are left off: it removes them on exit, so
 *                           an OOM kill could not be read back)
 *   rlimits                 every one set explicitly (nsjail's defaults of 1 MiB files, 32
 *                           open files and 4 GiB address space break compilers): file size
 *                           and open files at the policy's values (the agent lowers them to
 *                           the byte), core 0, rtprio 0; address space, processes, cpu,
 *                           stack, memlock and message queues inherited: where no cgroup
 *                           enforces memory and pids, the agent sets the RLIMIT_AS and
 *                           RLIMIT_NPROC fallbacks itself, as under bwrap (with the
 *                           language's address_space allowance, which nsjail cannot know)
 *   nice                    0, as for bwrap (nsjail's default is 19)
 *
 * Mount order (nsjail mounts in this order, then remounts read-only what
 * is not rw):
 *   1. a 1 MiB tmpfs as the root
 *   2. /usr read-only; the merged-usr symlinks (/bin -> usr/bin, ...) or, on hosts without
 *      merged /usr, read-only binds of those directories
 *   3. the few /etc files runtimes need, one by one, when present; generated /etc/passwd,
 *      /etc/group and /etc/hosts
 *   4. the language's extra read-only host paths, when present
 *   5. /proc (read-only; read-write in a zygote box), a small /dev tmpfs with the usual
 *      device nodes bound from the host and the /dev/fd, /dev/std* symlinks
 *   6. size-limited tmpfs for /tmp, /dev/shm and /workspace (nosuid, nodev)
 * The agent is not mounted at all: nsjail opens it before it builds the
 * mount namespace and executes the open file (exec_fd). Every mount target
 * lies in nsjail's fresh root tmpfs, and the workspace is a fresh tmpfs: no
 * target lies under a path the sandbox could have written.
 */
#include "translate.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MIB              (1024ull * 1024ull)
#define TIME_LIMIT_SLACK 60 /* seconds past the wall time: a backstop, never the limit */

static const char *const etc_files[] = {JAIL_ETC_FILES};

static const char *const dev_nodes[] = {
        "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"};

static const char passwd_data[] = JAIL_PASSWD;
static const char group_data[] = JAIL_GROUP;
static const char hosts_data[] = JAIL_HOSTS;

struct out {
    struct nsjail_config *cfg;
    bool failed;
};

static void put(struct out *o, const char *fmt, ...) SBX_PRINTF(2, 3);

static void put(struct out *o, const char *fmt, ...)
{
    struct nsjail_config *c = o->cfg;
    size_t room = sizeof(c->text) - c->len;
    va_list ap;
    int n;

    if (o->failed)
        return;
    va_start(ap, fmt);
    n = vsnprintf(c->text + c->len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room) {
        o->failed = true;
        c->text[c->len] = '\0';
        return;
    }
    c->len += (size_t)n;
}

/* A protobuf text-format string literal: printable ASCII as is, quotes and
 * backslashes escaped, every other byte as a three-digit octal escape. */
static void put_quoted(struct out *o, const char *s)
{
    put(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p && !o->failed; p++) {
        if (*p == '"' || *p == '\\')
            put(o, "\\%c", *p);
        else if (*p >= 0x20 && *p < 0x7f)
            put(o, "%c", *p);
        else
            put(o, "\\%03o", *p);
    }
    put(o, "\"");
}

static void put_str(struct out *o, const char *key, const char *value)
{
    put(o, "%s: ", key);
    put_quoted(o, value);
    put(o, "\n");
}

static void bind_ro(struct out *o, const char *path, bool mandatory)
{
    put(o, "mount { src: ");
    put_quoted(o, path);
    put(o, " dst: ");
    put_quoted(o, path);
    put(o, " is_bind: true rw: false nosuid: true nodev: true%s }\n",
            mandatory ? "" : " mandatory: false");
}

static void bind(struct out *o, const char *src, const char *dst, bool rw)
{
    put(o, "mount { src: ");
    put_quoted(o, src);
    put(o, " dst: ");
    put_quoted(o, dst);
    put(o, " is_bind: true rw: %s nosuid: true nodev: true }\n", rw ? "true" : "false");
}

static void bind_dev(struct out *o, const char *path)
{
    put(o, "mount { src: \"%s\" dst: \"%s\" is_bind: true rw: true nosuid: true }\n", path, path);
}

static void symlink_to(struct out *o, const char *target, const char *path)
{
    put(o, "mount { src: ");
    put_quoted(o, target);
    put(o, " dst: ");
    put_quoted(o, path);
    put(o, " is_symlink: true }\n");
}

static void content(struct out *o, const char *data, const char *path)
{
    put(o, "mount { src_content: ");
    put_quoted(o, data);
    put(o, " dst: \"%s\" rw: false }\n", path);
}

/* Every tmpfs also caps its inodes, at one per 4 KiB of its size (at least
 * 1024): empty files take no space, but each costs kernel memory that no
 * rlimit counts, so without a cap and a memory cgroup only the wall clock
 * would stop a program creating files by the million. */
static void tmpfs(
        struct out *o, const char *path, unsigned long long size, const char *mode, bool rw)
{
    unsigned long long inodes = size / 4096 < 1024 ? 1024 : size / 4096;

    put(o,
            "mount { dst: \"%s\" fstype: \"tmpfs\" options: \"size=%llu,nr_inodes=%llu,mode=%s\" "
            "rw: %s nosuid: true nodev: true }\n",
            path, size, inodes, mode, rw ? "true" : "false");
}

static unsigned long long mib_up(uint64_t bytes)
{
    unsigned long long m = (unsigned long long)((bytes + MIB - 1) / MIB);

    return m ? m : 1;
}

static void rlimits(struct out *o, const struct nsjail_input *in)
{
    const struct sbx_policy *p = in->box.policy;

    put(o, "rlimit_as_type: HARD\n");
    put(o, "rlimit_core: 0\n");
    put(o, "rlimit_cpu_type: HARD\n");
    put(o, "rlimit_fsize: %llu\n", mib_up(p->file_size_bytes));
    put(o, "rlimit_nofile: %llu\n", (unsigned long long)p->open_files_max);
    put(o, "rlimit_nproc_type: HARD\n");
    put(o, "rlimit_stack_type: SOFT\n");
    put(o, "rlimit_memlock_type: SOFT\n");
    put(o, "rlimit_rtprio: 0\n");
    put(o, "rlimit_msgqueue_type: SOFT\n");
}

static int fail(struct sbx_err *err, int rc, const char *field, const char *msg)
{
    err->rc = rc;
    snprintf(err->field, sizeof(err->field), "%s", field);
    snprintf(err->msg, sizeof(err->msg), "%s", msg);
    return rc;
}

int nsjail_translate(const struct nsjail_input *in, struct nsjail_config *cfg, struct sbx_err *err)
{
    const struct sbx_policy *p = in->box.policy;
    struct out o = {.cfg = cfg};
    bool net_on = p->network == SBX_NET_ON, net_host = p->network == SBX_NET_HOST;
    unsigned long long wall_s = (unsigned long long)((p->wall_time_ms + 999) / 1000);

    cfg->len = 0;
    cfg->text[0] = '\0';
    if (in->agent_fd < 0 || in->seccomp_fd < 0)
        return fail(err, SBX_E_INVALID, "", "nsjail translation: missing fd");
    if ((p->network == SBX_NET_REGISTRIES || p->network == SBX_NET_ALLOWLIST) &&
            !in->box.proxy_socket)
        return fail(err, SBX_E_UNSUPPORTED, "network", "network mode needs the filtering proxy");

    put(&o, "name: \"llm-sandbox\"\n");
    put(&o, "mode: ONCE\n");
    put(&o, "hostname: \"sandbox\"\n");
    put(&o, "cwd: \"/workspace\"\n");
    put(&o, "time_limit: %llu\n", wall_s + TIME_LIMIT_SLACK);
    put(&o, "max_cpus: 0\n");
    put(&o, "nice_level: 0\n");
    put(&o, "log_level: WARNING\n");
    put(&o, "keep_env: false\n");
    for (const char *const *e = in->box.envp; e && *e; e++)
        put_str(&o, "envar", *e);
    put(&o, "keep_caps: false\n");
    if (in->box.zygote) { /* plugin.h: SBX_BOX_ZYGOTE; no child keeps these */
        put(&o, "cap: \"CAP_SYS_ADMIN\"\n");
        put(&o, "cap: \"CAP_NET_ADMIN\"\n");
        put(&o, "cap: \"CAP_SYS_RESOURCE\"\n");
        put(&o, "cap: \"CAP_SETPCAP\"\n"); /* so a child can empty its bounding set */
    }
    put(&o, "silent: false\n");
    put(&o, "skip_setsid: false\n");
    put(&o, "stderr_to_null: false\n");
    put(&o, "disable_no_new_privs: false\n");
    put(&o, "forward_signals: false\n");
    put(&o, "disable_tsc: false\n");
    rlimits(&o, in);
    put(&o, "disable_rl: false\n");
    put(&o, "clone_newnet: %s\n", net_host ? "false" : "true");
    put(&o, "clone_newuser: true\n");
    put(&o, "clone_newns: true\n");
    put(&o, "clone_newpid: true\n");
    put(&o, "clone_newipc: true\n");
    put(&o, "clone_newuts: true\n");
    put(&o, "clone_newcgroup: true\n");
    put(&o, "clone_newtime: false\n");
    put(&o, "uidmap { inside_id: \"%u\" outside_id: \"\" count: 1 use_newidmap: false }\n",
            in->box.sandbox_uid);
    put(&o, "gidmap { inside_id: \"%u\" outside_id: \"\" count: 1 use_newidmap: false }\n",
            in->box.sandbox_gid);
    put(&o, "iface_no_lo: false\n");
    put(&o, "mount_proc: false\n");
    /* 1. the root */
    tmpfs(&o, "/", MIB, "0755", !p->read_only_system);
    /* 2. the system */
    bind_ro(&o, "/usr", true);
    for (size_t i = 0; i < in->box.n_tops; i++) {
        if (in->box.tops[i].target)
            symlink_to(&o, in->box.tops[i].target, in->box.tops[i].name);
        else
            bind_ro(&o, in->box.tops[i].name, true);
    }
    /* 3. /etc, file by file */
    for (size_t i = 0; i < sizeof(etc_files) / sizeof(etc_files[0]); i++)
        bind_ro(&o, etc_files[i], false);
    if (net_on || net_host)
        bind_ro(&o, "/etc/resolv.conf", false);
    content(&o, passwd_data, "/etc/passwd");
    content(&o, group_data, "/etc/group");
    content(&o, hosts_data, "/etc/hosts");
    /* 4. the language's paths */
    for (const char *const *rp = in->box.ro_paths; rp && *rp; rp++)
        bind_ro(&o, *rp, false);
    /* 5. kernel filesystems */
    /* a zygote writes user.max_user_namespaces (the box's own, under its
     * CAP_SYS_RESOURCE); its children mount a /proc of their own */
    put(&o, "mount { dst: \"/proc\" fstype: \"proc\" rw: %s }\n",
            in->box.zygote ? "true" : "false");
    tmpfs(&o, "/dev", 64 * 1024, "0755", true);
    for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++)
        bind_dev(&o, dev_nodes[i]);
    symlink_to(&o, "/proc/self/fd", "/dev/fd");
    symlink_to(&o, "/proc/self/fd/0", "/dev/stdin");
    symlink_to(&o, "/proc/self/fd/1", "/dev/stdout");
    symlink_to(&o, "/proc/self/fd/2", "/dev/stderr");
    /* 6. private writable space */
    tmpfs(&o, "/tmp", (unsigned long long)p->tmpfs_bytes, "1777", true);
    tmpfs(&o, "/dev/shm", (unsigned long long)p->tmpfs_bytes, "1777", true);
    tmpfs(&o, "/workspace", (unsigned long long)p->tmpfs_bytes, "0755", true);
    /* 7. the core's directories (dependency sets), over the workspace */
    for (size_t i = 0; i < in->box.n_mounts; i++)
        bind(&o, in->box.mounts[i].source, in->box.mounts[i].target,
                in->box.mounts[i].flags & SBX_MOUNT_RW);
    /* the filtering proxy: a socket is usable through a read-only mount */
    if (p->network == SBX_NET_REGISTRIES || p->network == SBX_NET_ALLOWLIST)
        bind(&o, in->box.proxy_socket, SBX_PROXY_SOCKET, false);
    /* the policy and the program */
    put(&o, "seccomp_policy_file: \"/proc/self/fd/%d\"\n", in->seccomp_fd);
    put(&o, "seccomp_log: false\n");
    put(&o, "exec_bin { path: \"/proc/self/fd/%d\" arg0: \"sbx-agent\" exec_fd: true }\n",
            in->agent_fd);
    if (o.failed)
        return fail(err, SBX_E_LIMIT, "", "nsjail translation: the configuration is too long");
    return 0;
}
