/* SPDX-License-Identifier: MIT */
/*
 * cgroup.c: per-sandbox cgroups on v2 (pure unified layout, delegated:
 * cgroup_v2.c) or v1 (memory, pids and cpu hierarchies writable:
 * cgroup_v1.c), found by trying in that order; the contract is in
 * cgroup.h. This file holds what both versions share (the service, a
 * group's life, killing, waiting, the sweep of dead owners' groups) and
 * reaches a version only through its table (cgroup_int.h). Applies the
 * limits it is given and decides no policy; does no logging. Error
 * convention: error.h.
 *
 * Waiting for a group to empty polls cgroup.procs with a short backoff,
 * bounded at ~2 s: a deliberate exception to STYLE C4, because cgroupfs v1
 * has no empty notification short of a release agent (a host-wide
 * setting), and the processes were just sent SIGKILL, so the wait is short.
 * v2 could poll(POLLPRI) cgroup.events; one path for both is kept instead.
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
#include "base/error.h"
#include "base/util.h"
#include "host/cgroup_int.h"
#include "host/owner.h"

#define CG_MIN_QUOTA   1000 /* the kernel refuses a CFS quota under 1 ms */
#define CG_KILL_PASSES 8
#define CG_WAIT_NS     2000000000L
#define CG_STEP_MAX_NS 64000000L

const char *const cg_controllers[CG_DIRS] = {"memory", "pids", "cpu"};

static void service_freep(struct cg_service **s)
{
    cg_service_free(*s);
}
static void group_freep(struct cg_group **g)
{
    cg_group_free(*g);
}
#define cleanup_service __attribute__((cleanup(service_freep)))
#define cleanup_group   __attribute__((cleanup(group_freep)))

/* Drop the parents (rmdir fails harmlessly while other groups remain). */
static void parents_drop(struct cg_service *s)
{
    for (size_t i = 0; i < s->n_parents; i++) {
        (void)cg_remove_dir(s->parent[i], s->fake);
        free(s->parent[i]);
        s->parent[i] = NULL;
    }
    s->n_parents = 0;
}

static int describe_set(struct cg_service *s, const struct cg_options *opt,
        const struct sbx_error *e1, const struct sbx_error *e2)
{
    const struct sbx_error *why = (s->v2_root && e2) || !e1 ? e2 : e1;
    int r;

    if (s->ops)
        return s->ops->describe(s);
    if (!opt->allow_v1 && !opt->allow_v2)
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
    int r = 0;

    if (!opt || !ret || !opt->mount_root || !opt->self_cgroup)
        return sbx_error_set(err, SBX_E_INVALID, 0, "cgroup service: missing options");
    s = calloc(1, sizeof(*s));
    if (!s)
        return cg_oom(err);
    s->fake = opt->fake_tree;
    if (opt->allow_v2 && (r = cg_v2_ops.detect(s, opt, &e2)) == 0)
        s->ops = &cg_v2_ops;
    if (r != SBX_E_NOMEM && !s->ops && opt->allow_v1) {
        parents_drop(s);
        if ((r = cg_v1_ops.detect(s, opt, &e1)) == 0)
            s->ops = &cg_v1_ops;
    }
    if (!s->ops)
        parents_drop(s);
    if (r == SBX_E_NOMEM || describe_set(s, opt, e1, e2) < 0)
        return cg_oom(err);
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
    free(s->own);
    free(s->unit);
    free(s->scope);
    free(s);
    return NULL;
}

enum cg_mode cg_service_mode(const struct cg_service *s)
{
    return s && s->ops ? s->ops->mode : CG_NONE;
}

const char *cg_service_describe(const struct cg_service *s)
{
    return s ? s->describe : "no cgroup service";
}

bool cg_service_swap_accounted(const struct cg_service *s)
{
    return s && s->swap;
}

void cg_service_info(const struct cg_service *s, struct cg_info *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!s)
        return;
    ret->mode = cg_service_mode(s);
    ret->how = s->how;
    ret->user_manager = s->user_manager;
    ret->own = s->own;
    ret->unit = s->unit;
    ret->scope = s->scope;
    ret->basis = s->basis;
    ret->parent = s->n_parents ? s->parent[0] : NULL;
    ret->controllers = s->ops ? "memory pids cpu" : NULL;
}

int cg_service_unit_oom_kills(const struct cg_service *s, uint64_t *ret)
{
    cleanup_free char *path = NULL, *buf = NULL;
    char *cur;

    if (!s || s->ops || !s->own || !s->v2_root)
        return -1;
    path = cg_path_join(s->own, "memory.events");
    if (!path || cg_read_all(path, &buf) < 0)
        return -1;
    cur = buf;
    for (char *line = cg_next_line(&cur); line; line = cg_next_line(&cur))
        if (strncmp(line, "oom_kill ", 9) == 0)
            return parse_u64(line + 9, ret) < 0 ? -1 : 0;
    return -1;
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
    const struct cg_ops *ops = s ? s->ops : NULL;

    if (!caps)
        return;
    if (!ops) {
        const char *why = cg_service_describe(s);

        note_set(caps, SBX_CTL_MEMORY, SBX_ENF_FALLBACK, "RLIMIT_AS per process (%s)", why);
        note_set(caps, SBX_CTL_PIDS, SBX_ENF_FALLBACK, "RLIMIT_NPROC per uid (%s)", why);
        note_set(caps, SBX_CTL_CPU, SBX_ENF_NONE, "%s", why);
        return;
    }
    if (s->swap)
        note_set(caps, SBX_CTL_MEMORY, SBX_ENF_FULL, "cgroup %s %s", ops->name,
                ops->memory_swap_note);
    else
        note_set(caps, SBX_CTL_MEMORY, SBX_ENF_FULL, "cgroup %s %s (RAM only: swap not accounted)",
                ops->name, ops->memory_note);
    note_set(caps, SBX_CTL_CPU, SBX_ENF_FULL, "cgroup %s %s", ops->name, ops->cpu_note);
    note_set(caps, SBX_CTL_PIDS, SBX_ENF_FULL, "cgroup %s pids.max", ops->name);
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
 * the parent meanwhile: make it again (and as its version wants). */
static int group_mkdir(
        struct cg_group *g, const char *parent, const char *id, struct sbx_error **err)
{
    cleanup_free char *path = cg_path_join(parent, id);
    int r = 0;

    if (!path)
        return cg_oom(err);
    for (int tries = 0; r == 0 && mkdir(path, 0755) < 0; tries++) {
        if (errno != ENOENT || tries == 2)
            return cg_sys_fail(err, "cannot create cgroup ", path);
        if (mkdir(parent, 0755) < 0 && errno != EEXIST)
            return cg_sys_fail(err, "cannot create cgroup ", parent);
        if (g->ops->parent_made)
            r = g->ops->parent_made(parent, g->fake, err);
    }
    if (r == 0)
        g->dir[g->n_dirs++] = steal_ptr(&path);
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
    if (!s->ops)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s", s->describe);
    g = calloc(1, sizeof(*g));
    if (!g)
        return cg_oom(err);
    g->ops = s->ops;
    g->fake = s->fake;
    g->swap = s->swap;
    for (size_t i = 0; i < s->n_parents; i++) {
        r = group_mkdir(g, s->parent[i], id, err);
        if (r < 0)
            return r;
    }
    r = g->ops->limits(g, pol, err);
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
        cleanup_free char *path = cg_path_join(g->dir[i], "cgroup.procs");

        fds[i] = path ? open(path, O_WRONLY | O_CLOEXEC | (g->fake ? O_CREAT : 0), 0644) : -1;
        if (fds[i] < 0) {
            for (size_t j = 0; j < i; j++)
                close(fds[j]);
            return path ? SBX_E_BACKEND : SBX_E_NOMEM;
        }
    }
    return (int)g->n_dirs;
}

int cg_group_dir_fd(const struct cg_group *g)
{
    if (!g || g->ops->mode != CG_V2 || g->n_dirs != 1 || g->fake)
        return -1;
    return open(g->dir[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int cg_group_oom_killed(const struct cg_group *g)
{
    return g ? g->ops->oom_killed(g) : -1;
}

int cg_group_pids_limited(const struct cg_group *g)
{
    return g ? g->ops->pids_limited(g) : -1;
}

/* Call fn for each pid listed in dir's cgroup.procs (never pid 1 or
 * ourselves, whatever the file says) until it returns nonzero: that value;
 * 0 at the end; -errno when the file cannot be read. */
static int procs_walk(const char *dir, int (*fn)(pid_t pid, void *arg), void *arg)
{
    cleanup_free char *path = cg_path_join(dir, "cgroup.procs");
    cleanup_free char *buf = NULL;
    char *cur;
    int r = path ? cg_read_all(path, &buf) : -ENOMEM;

    if (r < 0)
        return r;
    cur = buf;
    for (char *line = cg_next_line(&cur); line; line = cg_next_line(&cur)) {
        uint64_t pid;

        if (parse_u64(line, &pid) < 0 || pid <= 1 || pid > INT_MAX || (pid_t)pid == getpid())
            continue;
        r = fn((pid_t)pid, arg);
        if (r != 0)
            return r;
    }
    return 0;
}

struct procs_count {
    int sig, found;
};

static int count_one(pid_t pid, void *arg)
{
    struct procs_count *c = arg;

    c->found++;
    if (c->sig != 0)
        (void)kill(pid, c->sig);
    return 0;
}

/* Count the pids listed in the group's cgroup.procs files, sending sig
 * (unless 0) to each: the count, or a negative enum sbx_rc when a file
 * cannot be read. */
static int procs_each(const struct cg_group *g, int sig)
{
    struct procs_count c = {.sig = sig, .found = 0};

    for (size_t i = 0; i < g->n_dirs; i++) {
        int r = procs_walk(g->dir[i], count_one, &c);

        if (r < 0 && r != -ENOENT)
            return r == -ENOMEM ? SBX_E_NOMEM : SBX_E_BACKEND;
    }
    return c.found;
}

/* At once where the version can (v2's cgroup.kill); else each process:
 * no freezer is needed, because a sandbox runs in its own pid namespace,
 * so killing its init kills the rest, and the passes catch forks that race
 * the reading. */
int cg_group_kill(struct cg_group *g)
{
    if (!g)
        return SBX_E_INVALID;
    if (g->ops->kill_all && g->ops->kill_all(g) == 0)
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
        int r = cg_remove_dir(g->dir[i], g->fake);

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

int cg_nspid(const char *status, size_t level, pid_t *ret)
{
    const char *p = status;

    while (p && strncmp(p, "NSpid:", 6) != 0) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    if (!p)
        return -1;
    p += 6;
    for (size_t i = 0;; i++) {
        char *end;
        long v;

        while (*p == ' ' || *p == '\t')
            p++;
        if (*p < '0' || *p > '9')
            return -1; /* the line ended before that level */
        errno = 0;
        v = strtol(p, &end, 10);
        if (errno || v <= 0 || v > INT_MAX || (*end != ' ' && *end != '\t' && *end != '\n' && *end))
            return -1;
        if (i == level) {
            *ret = (pid_t)v;
            return 0;
        }
        p = end;
    }
}

struct nspid_match {
    pid_t ns_pid, found;
};

static int nspid_is(pid_t pid, void *arg)
{
    struct nspid_match *m = arg;
    cleanup_free char *status = NULL;
    char path[64];
    pid_t got;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (cg_read_all(path, &status) < 0 || cg_nspid(status, 1, &got) < 0 || got != m->ns_pid)
        return 0;
    m->found = pid;
    return 1;
}

/* The process listed in dir's cgroup.procs whose pid one namespace below
 * ours (NSpid's second entry) is ns_pid. */
static int find_in(const char *dir, pid_t ns_pid, pid_t *ret, struct sbx_error **err)
{
    struct nspid_match m = {.ns_pid = ns_pid, .found = 0};
    int r = procs_walk(dir, nspid_is, &m);

    if (r < 0)
        return r == -ENOMEM ? cg_oom(err)
                            : sbx_error_set(err, SBX_E_BACKEND, -r, "%s/cgroup.procs: %s", dir,
                                      strerror(-r));
    if (r == 0)
        return sbx_error_set(err, SBX_E_BACKEND, ESRCH, "no process %d of the sandbox's in %s",
                (int)ns_pid, dir);
    *ret = m.found;
    return 0;
}

int cg_service_find_pid(const struct cg_service *s, const char *id, pid_t ns_pid, pid_t *ret,
        struct sbx_error **err)
{
    cleanup_free char *dir = NULL;

    if (!s || !s->ops || !s->n_parents || !id_is_valid(id) || ns_pid <= 0)
        return sbx_error_set(err, SBX_E_INVALID, 0, "invalid request for a sandbox's process");
    dir = cg_path_join(s->parent[0], id);
    return dir ? find_in(dir, ns_pid, ret, err) : cg_oom(err);
}

int cg_group_find_pid(const struct cg_group *g, pid_t ns_pid, pid_t *ret, struct sbx_error **err)
{
    if (!g || !g->n_dirs || ns_pid <= 0)
        return sbx_error_set(err, SBX_E_INVALID, 0, "invalid request for a sandbox's process");
    return find_in(g->dir[0], ns_pid, ret, err);
}

/* pid into dirs[0..n)'s cgroup.procs */
static int attach_to(char *const *dirs, size_t n, pid_t pid, bool fake, struct sbx_error **err)
{
    char val[24];

    if (pid <= 1)
        return sbx_error_set(err, SBX_E_INVALID, 0, "invalid cgroup move");
    snprintf(val, sizeof(val), "%d", (int)pid);
    for (size_t i = 0; i < n; i++) {
        int r = cg_write_ctl(dirs[i], "cgroup.procs", val, fake, err);

        if (r < 0)
            return r;
    }
    return 0;
}

int cg_service_attach(const struct cg_service *s, const char *id, pid_t pid, struct sbx_error **err)
{
    char *dirs[CG_DIRS] = {NULL};
    size_t n = 0;
    int r = 0;

    if (!s || !s->ops || !id_is_valid(id))
        return sbx_error_set(err, SBX_E_INVALID, 0, "invalid cgroup move");
    for (; n < s->n_parents && r == 0; n++)
        if (!(dirs[n] = cg_path_join(s->parent[n], id)))
            r = cg_oom(err);
    if (r == 0)
        r = attach_to(dirs, n, pid, s->fake, err);
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    return r;
}

int cg_group_attach(const struct cg_group *g, pid_t pid, struct sbx_error **err)
{
    if (!g)
        return sbx_error_set(err, SBX_E_INVALID, 0, "invalid cgroup move");
    return attach_to(g->dir, g->n_dirs, pid, g->fake, err);
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
    struct cg_group g = {.ops = s->ops, .fake = s->fake, .swap = s->swap};
    int r = 0;

    for (size_t i = 0; i < s->n_parents && r == 0; i++) {
        char *path = cg_path_join(s->parent[i], name);

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
