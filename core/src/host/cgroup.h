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

struct cg_options {
    const char *mount_root;  /* "/sys/fs/cgroup" */
    const char *self_cgroup; /* "/proc/self/cgroup" */
    bool fake_tree;          /* tests: create control files that a real cgroupfs provides */
    bool allow_v2;           /* false: never pick v2 (operator setting) */
    bool allow_v1;
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
/* Set levels and notes for SBX_CTL_MEMORY, _CPU, _PIDS: FULL through the
 * cgroup, or FALLBACK (memory: RLIMIT_AS, pids: RLIMIT_NPROC) or NONE (cpu). */
void cg_service_caps(const struct cg_service *s, struct sbx_caps *caps);
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
/* SIGKILL everything in the group (v2: cgroup.kill when present). */
int cg_group_kill(struct cg_group *g);
int cg_group_oom_killed(const struct cg_group *g);   /* 1, 0, -1 unknown */
int cg_group_pids_limited(const struct cg_group *g); /* 1, 0, -1 unknown */
bool cg_group_is_empty(const struct cg_group *g);
/* Kill, wait (bounded, ~2 s) until empty, remove the directories. */
struct cg_group *cg_group_free(struct cg_group *g);

#endif
