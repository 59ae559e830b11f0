/* SPDX-License-Identifier: MIT */
/*
 * cgroup.h: per-sandbox cgroups for memory (RAM and swap together), CPU
 * quota and process count, on cgroup v2 where it is delegated to us and on
 * v1 where its hierarchies are writable (as on hosts that mount v1). When
 * neither works, the service reports "none" with the reason and the spawner
 * falls back to rlimits.
 *
 * Groups are created under the caller's own cgroup in each hierarchy, in a
 * parent directory "llm-sandbox" made at run time, named by the run id
 * ("<owner>-<seq>", owner "p<pid>t<starttime>"), so a sweep can tell what
 * belongs to a dead server instance and remove only that.
 *
 * On v2 under systemd the caller's cgroup must be delegated to us (the
 * unit has Delegate=yes): then every process in it moves to a leaf beside
 * the groups ("<own>/supervisor"), as the no-internal-processes rule
 * wants. In a scope systemd manages without delegation (a login shell's
 * session-N.scope) we ask systemd for a transient scope with Delegate=yes
 * first (scope.h); in a service without it, nothing is written into
 * systemd's tree and the limits fall back (cgroup_v2_place.c).
 *
 * The tree root and the /proc/self/cgroup path are parameters so unit tests
 * can point the code at a fake tree (the v2 code cannot run on v1 hosts).
 * Does no logging; errors via error.h.
 */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

enum cg_mode { CG_NONE = 0, CG_V1 = 1, CG_V2 = 2 };

/* How v2 came to be usable, or why not (CG_HOW_NONE: v2 was not tried or
 * not found; v1 and CG_NONE say why in cg_service_describe()). */
enum cg_how {
    CG_HOW_NONE = 0,
    CG_HOW_UNMANAGED,     /* no systemd on the host: our cgroup, as found */
    CG_HOW_DELEGATED,     /* our unit (or one above our cgroup) has Delegate=yes */
    CG_HOW_SCOPE,         /* a transient scope with Delegate=yes, asked for */
    CG_HOW_NOT_DELEGATED, /* a unit without Delegate=yes: not used */
    CG_HOW_SCOPE_FAILED,  /* a scope without it, and asking for one failed */
};

struct scope_request;
struct sbx_error;

/* How the service talks to systemd (scope.h); tests put a fake here. */
struct cg_systemd {
    /* Start the scope req describes and wait for it: 0 once this process
     * is in it. */
    int (*start_scope)(const struct scope_request *req, void *userdata, struct sbx_error **err);
    /* Does the manager req names (req->user_manager) say unit has
     * Delegate=yes: 1, 0, or < 0 when it cannot be asked. */
    int (*unit_delegated)(const struct scope_request *req, const char *unit, void *userdata,
            struct sbx_error **err);
    void *userdata;
};

/* The real one: libsystemd's sd-bus (dl/sdbus.h), opened on first use. */
extern const struct cg_systemd cg_systemd_dbus;

struct cg_options {
    const char *mount_root;  /* "/sys/fs/cgroup" */
    const char *self_cgroup; /* "/proc/self/cgroup" */
    bool fake_tree;          /* tests: create control files that a real cgroupfs provides */
    bool allow_v2;           /* false: never pick v2 (operator setting) */
    bool allow_v1;
    /* systemd (v2 only): it manages the host when this directory exists
     * ("/run/systemd/system", sd_booted(3)); NULL: never */
    const char *systemd_dir;
    const char *owner;                /* this instance's name (owner.h): a scope's unit name */
    const char *runtime_dir;          /* $XDG_RUNTIME_DIR or NULL: where the user bus is */
    const struct cg_systemd *systemd; /* NULL: never ask systemd */
    const uid_t *as_uid;              /* tests: whose cgroups (NULL: geteuid()) */
};

/* What doctor says about the service (cg_service_info). */
struct cg_info {
    enum cg_mode mode;
    enum cg_how how;
    bool user_manager;       /* the scope was (to be) asked of the user's manager */
    const char *own;         /* our cgroup when we started (v2: absolute), or NULL */
    const char *unit;        /* the systemd unit of own, or NULL */
    const char *scope;       /* CG_HOW_SCOPE: the scope made for us */
    const char *basis;       /* CG_HOW_DELEGATED: how we know, e.g. "marked user.delegate=1" */
    const char *parent;      /* where sandboxes go (the first "llm-sandbox"), or NULL */
    const char *controllers; /* what groups get: "memory pids cpu", or NULL */
};

struct cg_service;
struct cg_group;

/* Detect what works. Never fails for lack of cgroups (mode CG_NONE, with
 * a reason); fails only on out of memory. (transfer full) */
int cg_service_new(const struct cg_options *opt, struct cg_service **ret, struct sbx_error **err);
struct cg_service *cg_service_free(struct cg_service *s);
enum cg_mode cg_service_mode(const struct cg_service *s);
/* Why the mode is what it is, e.g. "cgroup v1: memory, pids, cpu writable"
 * or "no writable cgroup hierarchy: /sys/fs/cgroup/memory: Permission denied". */
const char *cg_service_describe(const struct cg_service *s);
bool cg_service_swap_accounted(const struct cg_service *s);
/* The facts behind the description; pointers live as long as s. */
void cg_service_info(const struct cg_service *s, struct cg_info *ret);
/* Set levels and notes for SBX_CTL_MEMORY, _CPU, _PIDS: FULL through the
 * cgroup, or FALLBACK (memory: RLIMIT_AS, pids: RLIMIT_NPROC) or NONE (cpu). */
void cg_service_caps(const struct cg_service *s, struct sbx_caps *caps);
/* Without a group of their own (CG_NONE on v2), sandboxes live in our
 * unit's cgroup, where an OOM kill also counts: *ret is that cgroup's
 * memory.events oom_kill count (0), or -1 when there is none to read. A
 * rise during a run means the kernel's OOM killer, not a cancellation,
 * ended it (systemd's OOMPolicy=stop then stops the unit). */
int cg_service_unit_oom_kills(const struct cg_service *s, uint64_t *ret);
/* Remove groups left by dead owners (kill their processes first). Returns
 * how many were removed, or a negative enum sbx_rc. */
int cg_service_sweep(struct cg_service *s);

/* Create a group with the policy's memory, cpu and pids limits. Fails with
 * SBX_E_UNAVAILABLE when mode is CG_NONE. */
int cg_group_new(struct cg_service *s, const char *id, const struct sbx_policy *pol,
        struct cg_group **ret, struct sbx_error **err);
/* Open fds on every cgroup.procs file of the group into fds (up to max);
 * returns the count. A child writes its own pid into each before exec. */
int cg_group_procs_fds(const struct cg_group *g, int *fds, size_t max);
/* v2: an O_PATH fd on the group's directory, for clone3's
 * CLONE_INTO_CGROUP (the child starts there: no cgroup.procs write);
 * -1 on v1 (one directory per controller) or when it cannot be opened. */
int cg_group_dir_fd(const struct cg_group *g);
/* SIGKILL everything in the group (v2: cgroup.kill when present). */
int cg_group_kill(struct cg_group *g);
int cg_group_oom_killed(const struct cg_group *g);   /* 1, 0, -1 unknown */
int cg_group_pids_limited(const struct cg_group *g); /* 1, 0, -1 unknown */
bool cg_group_is_empty(const struct cg_group *g);
/* Kill, wait (bounded, ~2 s) until empty, remove the directories. */
struct cg_group *cg_group_free(struct cg_group *g);

/* A zygote forks a run in the run's own group (sessions/pool_zygote.c):
 * the host pid of the process in group id (a sandbox's, made by
 * cg_group_new of this service) or in g whose pid in the sandbox's pid
 * namespace is ns_pid (the second entry of its NSpid); a process moved
 * into every directory of group id or of g. Only for processes that
 * cannot end meanwhile (a held child; the zygote, which forks only when
 * told), so that the pid found is still theirs when it is written. */
int cg_service_find_pid(const struct cg_service *s, const char *id, pid_t ns_pid, pid_t *ret,
        struct sbx_error **err);
int cg_group_find_pid(const struct cg_group *g, pid_t ns_pid, pid_t *ret, struct sbx_error **err);
int cg_service_attach(
        const struct cg_service *s, const char *id, pid_t pid, struct sbx_error **err);
int cg_group_attach(const struct cg_group *g, pid_t pid, struct sbx_error **err);
/* The pid at level (0: the reader's namespace) of a /proc/PID/status
 * text's NSpid line: 0, or -1 when there is no such entry. */
int cg_nspid(const char *status, size_t level, pid_t *ret);

#endif
