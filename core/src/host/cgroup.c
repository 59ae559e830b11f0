/* SPDX-License-Identifier: MIT */
/*
 * cgroup.c: per-sandbox cgroups on v2 (pure unified layout, delegated) or
 * v1 (memory, pids and cpu hierarchies writable), found by trying; the
 * contract is in cgroup.h. Applies the limits it is given and decides no
 * policy; does no logging. Error convention: error.h.
 *
 * v2 no-internal-processes rule: controllers can be enabled in our cgroup's
 * cgroup.subtree_control only while it holds no processes, so that write
 * fails with EBUSY when we live there. Then we create
 * "<our cgroup>/llm-sandbox-server", move this whole process into it (a pid
 * written to cgroup.procs moves every thread) and retry. A server that
 * starts inside llm-sandbox-server (forked by an earlier one) uses its
 * parent as "our cgroup", so groups always live under one "llm-sandbox".
 *
 * Waiting for a group to empty polls cgroup.procs with a short backoff,
 * bounded at ~2 s: a deliberate exception to STYLE C4, because cgroupfs v1
 * has no empty notification short of a release agent (a host-wide
 * setting), and the processes were just sent SIGKILL, so the wait is short.
 * v2 could poll(POLLPRI) cgroup.events; one path for both is kept instead.
 *
 * Fake trees (tests): control files are created on write and unlinked
 * before rmdir, since no kernel provides or owns them.
 */
#include "host/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <llm-sandbox/plugin.h>

#include "base/cleanup.h"
#include "base/dynbuf.h"
#include "base/error.h"
#include "base/util.h"
#include "host/owner.h"

#define CG_DIRS        3
#define CG_PARENT      "llm-sandbox"
#define CG_SERVER      "llm-sandbox-server"
#define CG_V2_CTRLS    "+memory +pids +cpu"
#define CG_PERIOD_US   100000
#define CG_STR_(x)     #x
#define CG_STR(x)      CG_STR_(x)
#define CG_MIN_QUOTA   1000 /* the kernel refuses a CFS quota under 1 ms */
#define CG_READ_CAP    (4u << 20)
#define CG_KILL_PASSES 8
#define CG_WAIT_NS     2000000000L
#define CG_STEP_MAX_NS 64000000L

/* v1 directory slots; v2 groups have one directory, slot D_MEM. */
enum { D_MEM = 0, D_PIDS = 1, D_CPU = 2 };
static const char *const v1_names[CG_DIRS] = {"memory", "pids", "cpu"};

struct cg_service {
    enum cg_mode mode;
    bool fake;
    bool swap; /* v1 memory.memsw.*, v2 memory.swap.max */
    char *describe;
    size_t n_parents;
    char *parent[CG_DIRS]; /* the "llm-sandbox" directories */
};

struct cg_group {
    enum cg_mode mode;
    bool fake;
    bool swap;
    size_t n_dirs;
    char *dir[CG_DIRS];
};

static void closedirp(DIR **d)
{
    if (*d)
        closedir(*d);
}
static void service_freep(struct cg_service **s)
{
    cg_service_free(*s);
}
static void group_freep(struct cg_group **g)
{
    cg_group_free(*g);
}
#define cleanup_dir     __attribute__((cleanup(closedirp)))
#define cleanup_service __attribute__((cleanup(service_freep)))
#define cleanup_group   __attribute__((cleanup(group_freep)))

static int oom(struct sbx_error **err)
{
    return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* "<prefix><path>: <strerror(errno)>" as SBX_E_BACKEND. */
static int sys_fail(struct sbx_error **err, const char *prefix, const char *path)
{
    int e = errno;

    return sbx_error_set(err, SBX_E_BACKEND, e, "%s%s: %s", prefix, path, strerror(e));
}

/* a + "/" + b without doubled slashes. (transfer full) */
static char *path_join(const char *a, const char *b)
{
    size_t alen = strlen(a);
    char *r = NULL;

    while (alen > 1 && a[alen - 1] == '/')
        alen--;
    while (*b == '/')
        b++;
    if (asprintf(&r, "%.*s%s%s", (int)alen, a, *b ? "/" : "", b) < 0)
        return NULL;
    return r;
}

static bool has_file(const char *dir, const char *name)
{
    cleanup_free char *path = path_join(dir, name);

    return path && access(path, F_OK) == 0;
}

/* Read a whole file, NUL-terminated: 0 or -errno. (transfer full) */
static int read_all(const char *path, char **ret)
{
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct dynbuf b;
    char chunk[4096];

    if (fd < 0)
        return -errno;
    dynbuf_init(&b, CG_READ_CAP);
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && dynbuf_append(&b, chunk, (size_t)n) < 0)) {
            int e = n < 0 ? errno : EFBIG;

            dynbuf_done(&b);
            return -e;
        }
        if (n == 0)
            break;
    }
    *ret = dynbuf_take(&b, NULL);
    return *ret ? 0 : -ENOMEM;
}

/* One write(2) of val, as cgroupfs wants. Fake trees get the file
 * created, since no kernel provides it. err may be NULL (best effort). */
static int write_ctl(
        const char *dir, const char *name, const char *val, bool fake, struct sbx_error **err)
{
    cleanup_free char *path = path_join(dir, name);
    cleanup_close int fd = -1;
    size_t len = strlen(val);
    ssize_t n;

    if (!path)
        return oom(err);
    fd = open(path, O_WRONLY | O_CLOEXEC | (fake ? O_CREAT | O_TRUNC : 0), 0644);
    n = fd < 0 ? -1 : write(fd, val, len);
    if (n == (ssize_t)len)
        return 0;
    if (n >= 0)
        errno = EIO; /* a short write to a control file */
    return sbx_error_set(
            err, SBX_E_BACKEND, errno, "writing '%s' to %s: %s", val, path, strerror(errno));
}

/* Cut the next line out of *cur in place; NULL at the end. */
static char *next_line(char **cur)
{
    char *s = *cur, *nl;

    if (!*s)
        return NULL;
    nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        *cur = nl + 1;
    } else {
        *cur = s + strlen(s);
    }
    return s;
}

static bool has_word(const char *list, const char *word, const char *seps)
{
    size_t n = strlen(word);

    for (const char *p = list + strspn(list, seps); *p; p += strspn(p, seps)) {
        size_t len = strcspn(p, seps);

        if (len == n && strncmp(p, word, n) == 0)
            return true;
        p += len;
    }
    return false;
}

/* Our path in the hierarchy holding ctrl, from "ID:CTRLS:PATH" lines of
 * /proc/self/cgroup; ctrl NULL picks the v2 line "0::PATH". 0 or -errno. */
static int self_path(const char *file, const char *ctrl, char **ret)
{
    cleanup_free char *buf = NULL;
    char *cur;
    int r = read_all(file, &buf);

    if (r < 0)
        return r;
    cur = buf;
    for (char *line = next_line(&cur); line; line = next_line(&cur)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

        if (!c2)
            continue;
        *c2 = '\0';
        if (ctrl ? has_word(c1 + 1, ctrl, ",") : (c1 == line + 1 && line[0] == '0' && !c1[1])) {
            *ret = strdup(c2 + 1);
            return *ret ? 0 : -ENOMEM;
        }
    }
    return -ENOENT;
}

/* Our cgroup's directory in a hierarchy. Without a cgroup namespace, a
 * container sees the host's path in /proc/self/cgroup while its own cgroup
 * is mounted at the hierarchy root: then the root is ours. */
static int own_dir(
        const char *hier, const char *self, const char *ctrl, char **ret, struct sbx_error **err)
{
    cleanup_free char *rel = NULL;
    int r = self_path(self, ctrl, &rel);

    if (r == -ENOMEM)
        return oom(err);
    if (r < 0)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, -r, "%s: no %s%s line: %s", self,
                ctrl ? ctrl : "cgroup v2", ctrl ? "" : " \"0::\"", strerror(-r));
    *ret = path_join(hier, rel);
    if (*ret && access(*ret, F_OK) < 0 && errno == ENOENT) {
        free(*ret);
        *ret = strdup(hier);
    }
    return *ret ? 0 : oom(err);
}

/* Unlink the files a fake tree holds (a real cgroupfs refuses, and needs
 * no help), then rmdir. 0 or -errno. */
static int remove_dir(const char *path, bool fake)
{
    if (fake) {
        cleanup_dir DIR *d = opendir(path);

        for (struct dirent *de = d ? readdir(d) : NULL; de; de = readdir(d))
            (void)unlinkat(dirfd(d), de->d_name, 0); /* directories fail: fine */
    }
    return rmdir(path) < 0 ? -errno : 0;
}

/* mkdir the parent (it may exist) and prove we can create groups in it. */
static int parent_prepare(const char *parent, struct sbx_error **err)
{
    cleanup_free char *probe = NULL;

    if (mkdir(parent, 0755) < 0 && errno != EEXIST)
        return sys_fail(err, "", parent);
    if (asprintf(&probe, "%s/probe-%ld", parent, (long)getpid()) < 0)
        return oom(err);
    if (mkdir(probe, 0755) < 0 && errno != EEXIST)
        return sys_fail(err, "", probe);
    if (rmdir(probe) < 0)
        return sys_fail(err, "", probe);
    return 0;
}

/* Drop the parents (rmdir fails harmlessly while other groups remain). */
static void parents_drop(struct cg_service *s)
{
    for (size_t i = 0; i < s->n_parents; i++) {
        (void)remove_dir(s->parent[i], s->fake);
        free(s->parent[i]);
        s->parent[i] = NULL;
    }
    s->n_parents = 0;
}

static int v1_detect(
        struct cg_service *s, const char *root, const char *self, struct sbx_error **err)
{
    for (size_t i = 0; i < CG_DIRS; i++) {
        cleanup_free char *hier = path_join(root, v1_names[i]);
        cleanup_free char *base = NULL;
        struct stat st;
        int r;

        if (!hier)
            return oom(err);
        if (stat(hier, &st) < 0)
            return sys_fail(err, "", hier);
        r = own_dir(hier, self, v1_names[i], &base, err);
        if (r < 0)
            return r;
        s->parent[i] = path_join(base, CG_PARENT);
        if (!s->parent[i])
            return oom(err);
        s->n_parents = i + 1;
        r = parent_prepare(s->parent[i], err);
        if (r < 0)
            return r;
    }
    s->swap = has_file(s->parent[D_MEM], "memory.memsw.limit_in_bytes");
    return 0;
}

/* Enable the controllers in base; on EBUSY move ourselves out (see top). */
static int v2_enable(const char *base, bool fake, struct sbx_error **err)
{
    cleanup_error struct sbx_error *e = NULL;
    cleanup_free char *srv = NULL;
    char pid[24];
    int r = write_ctl(base, "cgroup.subtree_control", CG_V2_CTRLS, fake, &e);

    if (r == 0 || e->sys_errno != EBUSY)
        return r == 0 ? 0 : sbx_error_set(err, r, e->sys_errno, "%s", e->msg);
    srv = path_join(base, CG_SERVER);
    if (!srv)
        return oom(err);
    if (mkdir(srv, 0755) < 0 && errno != EEXIST)
        return sys_fail(err, "", srv);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    r = write_ctl(srv, "cgroup.procs", pid, fake, err);
    if (r < 0)
        return r;
    return write_ctl(base, "cgroup.subtree_control", CG_V2_CTRLS, fake, err);
}

static int v2_detect(struct cg_service *s, const char *root, const char *self, bool *ret_root,
        struct sbx_error **err)
{
    cleanup_free char *base = NULL, *ctl = NULL, *avail = NULL;
    size_t blen;
    int r;

    *ret_root = has_file(root, "cgroup.controllers");
    if (!*ret_root)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s is not a cgroup2 root", root);
    r = own_dir(root, self, NULL, &base, err);
    if (r < 0)
        return r;
    blen = strlen(base);
    if (blen > sizeof(CG_SERVER) && strcmp(base + blen - sizeof(CG_SERVER), "/" CG_SERVER) == 0)
        base[blen - sizeof(CG_SERVER)] = '\0'; /* sizeof counts the NUL: the length of "/..." */
    ctl = path_join(base, "cgroup.controllers");
    if (!ctl)
        return oom(err);
    r = read_all(ctl, &avail);
    if (r == -ENOMEM)
        return oom(err);
    if (r < 0)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, -r, "%s: %s", ctl, strerror(-r));
    for (size_t i = 0; i < CG_DIRS; i++)
        if (!has_word(avail, v1_names[i], " \n"))
            return sbx_error_set(
                    err, SBX_E_UNAVAILABLE, 0, "%s lacks '%s' (not delegated)", ctl, v1_names[i]);
    r = v2_enable(base, s->fake, err);
    if (r < 0)
        return r;
    s->parent[0] = path_join(base, CG_PARENT);
    if (!s->parent[0])
        return oom(err);
    s->n_parents = 1;
    r = parent_prepare(s->parent[0], err);
    if (r < 0)
        return r;
    r = write_ctl(s->parent[0], "cgroup.subtree_control", CG_V2_CTRLS, s->fake, err);
    s->swap = r == 0 && has_file(s->parent[0], "memory.swap.max");
    return r;
}

static int describe_set(struct cg_service *s, const struct cg_options *opt, bool v2_root,
        const struct sbx_error *e1, const struct sbx_error *e2)
{
    const struct sbx_error *why = (v2_root && e2) || !e1 ? e2 : e1;
    const char *swap = s->swap ? "" : "; swap not accounted";
    int r;

    if (s->mode == CG_V2)
        r = asprintf(
                &s->describe, "cgroup v2: memory, pids, cpu delegated at %s%s", s->parent[0], swap);
    else if (s->mode == CG_V1)
        r = asprintf(&s->describe, "cgroup v1: memory, pids, cpu writable (memory at %s%s)",
                s->parent[D_MEM], swap);
    else if (!opt->allow_v1 && !opt->allow_v2)
        r = asprintf(&s->describe, "no writable cgroup: cgroups disabled by settings");
    else
        r = asprintf(&s->describe, "no writable cgroup: %s", why ? why->msg : "unknown reason");
    return r < 0 ? SBX_E_NOMEM : 0;
}

int cg_service_new(const struct cg_options *opt, struct cg_service **ret, struct sbx_error **err)
{
    cleanup_service struct cg_service *s = NULL;
    cleanup_error struct sbx_error *e1 = NULL;
    cleanup_error struct sbx_error *e2 = NULL;
    bool v2_root = false;
    int r = 0;

    if (!opt || !ret || !opt->mount_root || !opt->self_cgroup)
        return sbx_error_set(err, SBX_E_INVALID, 0, "cgroup service: missing options");
    s = calloc(1, sizeof(*s));
    if (!s)
        return oom(err);
    s->fake = opt->fake_tree;
    if (opt->allow_v2) {
        r = v2_detect(s, opt->mount_root, opt->self_cgroup, &v2_root, &e2);
        s->mode = r == 0 ? CG_V2 : CG_NONE;
    }
    if (r != SBX_E_NOMEM && s->mode == CG_NONE && opt->allow_v1) {
        parents_drop(s);
        r = v1_detect(s, opt->mount_root, opt->self_cgroup, &e1);
        s->mode = r == 0 ? CG_V1 : CG_NONE;
    }
    if (s->mode == CG_NONE)
        parents_drop(s);
    if (r == SBX_E_NOMEM || describe_set(s, opt, v2_root, e1, e2) < 0)
        return oom(err);
    *ret = steal_ptr(&s);
    return 0;
}

/* Also removes the parents when no group is left in them, so a server that
 * exits cleanly leaves nothing behind (group_mkdir() copes with a sibling
 * server removing them). */
struct cg_service *cg_service_free(struct cg_service *s)
{
    if (!s)
        return NULL;
    parents_drop(s);
    free(s->describe);
    free(s);
    return NULL;
}

enum cg_mode cg_service_mode(const struct cg_service *s)
{
    return s ? s->mode : CG_NONE;
}

const char *cg_service_describe(const struct cg_service *s)
{
    return s ? s->describe : "no cgroup service";
}

bool cg_service_swap_accounted(const struct cg_service *s)
{
    return s && s->swap;
}

/* Fill one capability; a note too long is cut at a UTF-8 boundary and ends
 * in "...". */
SBX_PRINTF(4, 5)
static void note_set(
        struct sbx_caps *caps, enum sbx_control c, enum sbx_enforce level, const char *fmt, ...)
{
    char *note = caps->note[c];
    size_t size = sizeof(caps->note[c]);
    va_list ap;
    int len;

    caps->level[c] = (uint8_t)level;
    va_start(ap, fmt);
    len = vsnprintf(note, size, fmt, ap);
    va_end(ap);
    if (len < 0) {
        note[0] = '\0';
    } else if ((size_t)len >= size) {
        size_t end = size - 4; /* room for "..." */

        while (end > 0 && ((unsigned char)note[end] & 0xC0) == 0x80)
            end--;
        memcpy(note + end, "...", 4);
    }
}

void cg_service_caps(const struct cg_service *s, struct sbx_caps *caps)
{
    const char *v = cg_service_mode(s) == CG_V2 ? "v2" : "v1";
    bool v2 = cg_service_mode(s) == CG_V2;

    if (!caps)
        return;
    if (cg_service_mode(s) == CG_NONE) {
        const char *why = cg_service_describe(s);

        note_set(caps, SBX_CTL_MEMORY, SBX_ENF_FALLBACK, "RLIMIT_AS per process (%s)", why);
        note_set(caps, SBX_CTL_PIDS, SBX_ENF_FALLBACK, "RLIMIT_NPROC per uid (%s)", why);
        note_set(caps, SBX_CTL_CPU, SBX_ENF_NONE, "%s", why);
        return;
    }
    if (s->swap)
        note_set(caps, SBX_CTL_MEMORY, SBX_ENF_FULL, "cgroup %s %s", v,
                v2 ? "memory.max, memory.swap.max=0" : "memory.limit_in_bytes+memsw");
    else
        note_set(caps, SBX_CTL_MEMORY, SBX_ENF_FULL, "cgroup %s %s (RAM only: swap not accounted)",
                v, v2 ? "memory.max" : "memory.limit_in_bytes");
    note_set(caps, SBX_CTL_CPU, SBX_ENF_FULL, "cgroup %s %s", v,
            v2 ? "cpu.max" : "cpu.cfs_quota_us");
    note_set(caps, SBX_CTL_PIDS, SBX_ENF_FULL, "cgroup %s pids.max", v);
}

/* Group names are run ids: [a-z0-9][a-z0-9.-]{0,63}. */
static bool id_is_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;

    if (n == 0 || n > 64 || id[0] == '.' || id[0] == '-')
        return false;
    return strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789.-") == n;
}

static int limits_check(const struct sbx_policy *pol, struct sbx_error **err)
{
    if (pol->memory_bytes == 0)
        return sbx_error_set_field(err, SBX_E_INVALID, "memory_bytes",
                "a cgroup needs a memory limit (0 is not 'unlimited' here)");
    if (pol->pids_max == 0)
        return sbx_error_set_field(err, SBX_E_INVALID, "pids_max",
                "a cgroup needs a pids limit (0 is not 'unlimited' here)");
    if (pol->cpu_millicores != 0 && (pol->cpu_millicores < CG_MIN_QUOTA / 100 ||
                                            pol->cpu_millicores > (uint64_t)INT64_MAX / 100))
        return sbx_error_set_field(err, SBX_E_INVALID, "cpu_millicores",
                "cpu_millicores %" PRIu64 " is out of range (0 for no quota, or at least %d)",
                pol->cpu_millicores, CG_MIN_QUOTA / 100);
    return 0;
}

/* mkdir parent/id. A sibling server's cg_service_free() may have removed
 * the parent meanwhile: make it again (v2: with its controllers). */
static int group_mkdir(
        struct cg_group *g, const char *parent, const char *id, struct sbx_error **err)
{
    cleanup_free char *path = path_join(parent, id);
    int r = 0;

    if (!path)
        return oom(err);
    for (int tries = 0; r == 0 && mkdir(path, 0755) < 0; tries++) {
        if (errno != ENOENT || tries == 2)
            return sys_fail(err, "cannot create cgroup ", path);
        if (mkdir(parent, 0755) < 0 && errno != EEXIST)
            return sys_fail(err, "cannot create cgroup ", parent);
        if (g->mode == CG_V2)
            r = write_ctl(parent, "cgroup.subtree_control", CG_V2_CTRLS, g->fake, err);
    }
    if (r == 0)
        g->dir[g->n_dirs++] = steal_ptr(&path);
    return r;
}

/* v1: memsw bounds RAM+swap and must stay >= limit_in_bytes, so limit goes
 * first (both start unlimited). swappiness 0 only spares swap; best effort. */
static int limits_v1(const struct cg_group *g, const struct sbx_policy *pol, struct sbx_error **err)
{
    char mem[24], pids[24], quota[24];
    int r;

    snprintf(mem, sizeof(mem), "%" PRIu64, pol->memory_bytes);
    snprintf(pids, sizeof(pids), "%" PRIu64, pol->pids_max);
    snprintf(quota, sizeof(quota), "%" PRIu64, pol->cpu_millicores * (CG_PERIOD_US / 1000));
    r = write_ctl(g->dir[D_MEM], "memory.limit_in_bytes", mem, g->fake, err);
    if (r == 0 && g->swap)
        r = write_ctl(g->dir[D_MEM], "memory.memsw.limit_in_bytes", mem, g->fake, err);
    if (r == 0 && has_file(g->dir[D_MEM], "memory.swappiness"))
        (void)write_ctl(g->dir[D_MEM], "memory.swappiness", "0", g->fake, NULL);
    if (r == 0)
        r = write_ctl(g->dir[D_PIDS], "pids.max", pids, g->fake, err);
    if (r == 0)
        r = write_ctl(g->dir[D_CPU], "cpu.cfs_period_us", CG_STR(CG_PERIOD_US), g->fake, err);
    if (r == 0 && pol->cpu_millicores > 0)
        r = write_ctl(g->dir[D_CPU], "cpu.cfs_quota_us", quota, g->fake, err);
    return r;
}

/* v2: memory.max bounds RAM only and memory.swap.max is a separate swap
 * budget. Unlike v1's memsw there is no combined "RAM+swap" knob, so swap is
 * turned off (0): the group can then never hold more than memory.max in
 * total, at the price of no swapping at all. */
static int limits_v2(const struct cg_group *g, const struct sbx_policy *pol, struct sbx_error **err)
{
    char mem[24], pids[24], cpu[48];
    const char *d = g->dir[0];
    int r;

    snprintf(mem, sizeof(mem), "%" PRIu64, pol->memory_bytes);
    snprintf(pids, sizeof(pids), "%" PRIu64, pol->pids_max);
    if (pol->cpu_millicores > 0)
        snprintf(cpu, sizeof(cpu), "%" PRIu64 " " CG_STR(CG_PERIOD_US),
                pol->cpu_millicores * (CG_PERIOD_US / 1000));
    else
        snprintf(cpu, sizeof(cpu), "max " CG_STR(CG_PERIOD_US));
    r = write_ctl(d, "memory.max", mem, g->fake, err);
    if (r == 0 && g->swap)
        r = write_ctl(d, "memory.swap.max", "0", g->fake, err);
    if (r == 0)
        r = write_ctl(d, "pids.max", pids, g->fake, err);
    if (r == 0)
        r = write_ctl(d, "cpu.max", cpu, g->fake, err);
    return r;
}

int cg_group_new(struct cg_service *s, const char *id, const struct sbx_policy *pol,
        struct cg_group **ret, struct sbx_error **err)
{
    cleanup_group struct cg_group *g = NULL;
    int r;

    if (!s || !pol || !ret || !id_is_valid(id))
        return sbx_error_set(
                err, SBX_E_INVALID, 0, "invalid cgroup request (id '%s')", id ? id : "(null)");
    r = limits_check(pol, err);
    if (r < 0)
        return r;
    if (s->mode == CG_NONE)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s", s->describe);
    g = calloc(1, sizeof(*g));
    if (!g)
        return oom(err);
    g->mode = s->mode;
    g->fake = s->fake;
    g->swap = s->swap;
    for (size_t i = 0; i < s->n_parents; i++) {
        r = group_mkdir(g, s->parent[i], id, err);
        if (r < 0)
            return r;
    }
    r = g->mode == CG_V2 ? limits_v2(g, pol, err) : limits_v1(g, pol, err);
    if (r < 0)
        return r;
    *ret = steal_ptr(&g);
    return 0;
}

int cg_group_procs_fds(const struct cg_group *g, int *fds, size_t max)
{
    if (!g || !fds)
        return SBX_E_INVALID;
    if (max < g->n_dirs)
        return SBX_E_LIMIT;
    for (size_t i = 0; i < g->n_dirs; i++) {
        cleanup_free char *path = path_join(g->dir[i], "cgroup.procs");

        fds[i] = path ? open(path, O_WRONLY | O_CLOEXEC | (g->fake ? O_CREAT : 0), 0644) : -1;
        if (fds[i] < 0) {
            for (size_t j = 0; j < i; j++)
                close(fds[j]);
            return path ? SBX_E_BACKEND : SBX_E_NOMEM;
        }
    }
    return (int)g->n_dirs;
}

/* 1 when the "key N" line of dir/file has N > 0, 0 when N is 0, -1 when
 * the file or the line is missing. */
static int event_seen(const char *dir, const char *file, const char *key)
{
    cleanup_free char *path = path_join(dir, file);
    cleanup_free char *buf = NULL;
    size_t klen = strlen(key);
    char *cur;
    uint64_t n;

    if (!path || read_all(path, &buf) < 0)
        return -1;
    cur = buf;
    for (char *line = next_line(&cur); line; line = next_line(&cur))
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
            return parse_u64(line + klen + 1, &n) < 0 ? -1 : n > 0;
    return -1;
}

int cg_group_oom_killed(const struct cg_group *g)
{
    if (!g)
        return -1;
    return event_seen(
            g->dir[D_MEM], g->mode == CG_V2 ? "memory.events" : "memory.oom_control", "oom_kill");
}

int cg_group_pids_limited(const struct cg_group *g)
{
    if (!g)
        return -1;
    return event_seen(g->dir[g->mode == CG_V2 ? 0 : D_PIDS], "pids.events", "max");
}

/* Count the pids listed in the group's cgroup.procs files, sending sig
 * (unless 0) to each: the count, or a negative enum sbx_rc when a file
 * cannot be read. Never touches pid 1 or ourselves, whatever a file says. */
static int procs_each(const struct cg_group *g, int sig)
{
    int found = 0;

    for (size_t i = 0; i < g->n_dirs; i++) {
        cleanup_free char *path = path_join(g->dir[i], "cgroup.procs");
        cleanup_free char *buf = NULL;
        char *cur;
        int r = path ? read_all(path, &buf) : -ENOMEM;

        if (r == -ENOENT)
            continue;
        if (r < 0)
            return r == -ENOMEM ? SBX_E_NOMEM : SBX_E_BACKEND;
        cur = buf;
        for (char *line = next_line(&cur); line; line = next_line(&cur)) {
            uint64_t pid;

            if (parse_u64(line, &pid) < 0 || pid <= 1 || pid > INT_MAX || (pid_t)pid == getpid())
                continue;
            found++;
            if (sig != 0)
                (void)kill((pid_t)pid, sig);
        }
    }
    return found;
}

/* v1 needs no freezer: a sandbox runs in its own pid namespace, so killing
 * its init kills the rest; the passes catch forks that race the reading. */
int cg_group_kill(struct cg_group *g)
{
    if (!g)
        return SBX_E_INVALID;
    if (g->mode == CG_V2 && has_file(g->dir[0], "cgroup.kill") &&
            write_ctl(g->dir[0], "cgroup.kill", "1", g->fake, NULL) == 0)
        return 0;
    for (int pass = 0; pass < CG_KILL_PASSES; pass++) {
        int n = procs_each(g, SIGKILL);

        if (n <= 0)
            return n;
    }
    return 0;
}

bool cg_group_is_empty(const struct cg_group *g)
{
    return !g || procs_each(g, 0) == 0;
}

/* Kill, wait (bounded, see the top of the file), rmdir: 0 when every
 * directory is gone. A group that outlives the wait stays for a sweep. */
static int group_remove(struct cg_group *g)
{
    long slept = 0, step = 1000000L;
    int failed = 0;

    (void)cg_group_kill(g);
    while (!cg_group_is_empty(g) && slept < CG_WAIT_NS) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = step};

        (void)nanosleep(&ts, NULL);
        slept += step;
        step = step * 2 > CG_STEP_MAX_NS ? CG_STEP_MAX_NS : step * 2;
        (void)cg_group_kill(g);
    }
    for (size_t i = 0; i < g->n_dirs; i++) {
        int r = remove_dir(g->dir[i], g->fake);

        if (r < 0 && r != -ENOENT)
            failed++;
    }
    return failed ? -1 : 0;
}

struct cg_group *cg_group_free(struct cg_group *g)
{
    if (!g)
        return NULL;
    (void)group_remove(g);
    for (size_t i = 0; i < g->n_dirs; i++)
        free(g->dir[i]);
    free(g);
    return NULL;
}

/* "<OWNER>-<SUFFIX>" (owner.h), the suffix [a-z0-9]+ (a run number, or
 * e.g. "probe"). */
static bool group_owner(const char *name, struct owner *ret)
{
    size_t n = owner_parse(name, ret);

    if (n == 0 || name[n] != '-' || !name[n + 1])
        return false;
    for (const char *s = name + n + 1; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* Remove group `name` from every parent: 1 when all its directories went. */
static int sweep_one(const struct cg_service *s, const char *name)
{
    struct cg_group g = {.mode = s->mode, .fake = s->fake, .swap = s->swap};
    int r = 0;

    for (size_t i = 0; i < s->n_parents && r == 0; i++) {
        char *path = path_join(s->parent[i], name);

        if (!path)
            r = SBX_E_NOMEM;
        else if (access(path, F_OK) == 0)
            g.dir[g.n_dirs++] = path;
        else
            free(path);
    }
    if (r == 0 && g.n_dirs > 0)
        r = group_remove(&g) == 0;
    for (size_t i = 0; i < g.n_dirs; i++)
        free(g.dir[i]);
    return r;
}

int cg_service_sweep(struct cg_service *s)
{
    char mine[OWNER_SCOPE_LEN + 1];
    int removed = 0;

    if (!s)
        return SBX_E_INVALID;
    owner_scope(mine);
    for (size_t i = 0; i < s->n_parents; i++) {
        cleanup_dir DIR *d = opendir(s->parent[i]);

        for (struct dirent *de = d ? readdir(d) : NULL; de; de = readdir(d)) {
            struct owner o;
            int r;

            if (!group_owner(de->d_name, &o) || !owner_dead(&o, mine))
                continue;
            r = sweep_one(s, de->d_name);
            if (r < 0)
                return r;
            removed += r;
        }
    }
    return removed;
}
