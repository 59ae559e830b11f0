/* SPDX-License-Identifier: MIT */
/*
 * cgroup_int.h: what the cgroup service's files share, private to them:
 * the service and group structs, the table each hierarchy version fills
 * (cgroup_v1.c, cgroup_v2.c: struct cg_ops, as crun's cgroup managers do),
 * and the cgroupfs helpers (cgroup_fs.c). cgroup.c holds what is the same
 * on both versions and calls a version only through its table.
 */
#ifndef SBX_HOST_CGROUP_INT_H
#define SBX_HOST_CGROUP_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

#include "host/cgroup.h"

#define CG_DIRS      3
#define CG_PARENT    "llm-sandbox"
#define CG_PERIOD_US 100000
#define CG_STR_(x)   #x
#define CG_STR(x)    CG_STR_(x)

/* v1 directory slots (one hierarchy per controller); a v2 group has one
 * directory, slot D_MEM. The controllers' names, in slot order. */
enum { D_MEM = 0, D_PIDS = 1, D_CPU = 2 };
extern const char *const cg_controllers[CG_DIRS];

struct cg_ops;

struct cg_service {
    const struct cg_ops *ops; /* NULL: no writable hierarchy (CG_NONE) */
    bool fake;
    bool swap;    /* v1 memory.memsw.*, v2 memory.swap.max */
    bool v2_root; /* the mount is a cgroup2 root (whether or not we could use it) */
    char *describe;
    size_t n_parents;
    char *parent[CG_DIRS]; /* the "llm-sandbox" directories */
    /* v2 under systemd (cgroup_v2_place.c), for cg_service_info() */
    enum cg_how how;
    bool user_manager;
    char *own;         /* our cgroup at start */
    char *unit;        /* its unit */
    char *scope;       /* the scope asked for */
    const char *basis; /* CG_HOW_DELEGATED: how we know (a static string) */
};

struct cg_group {
    const struct cg_ops *ops;
    bool fake;
    bool swap;
    size_t n_dirs;
    char *dir[CG_DIRS];
};

/* One cgroup hierarchy version. */
struct cg_ops {
    enum cg_mode mode;
    const char *name; /* "v1", "v2": in notes and descriptions */
    /* The control files the capability notes name. */
    const char *memory_note, *memory_swap_note, *cpu_note;
    /* Find our own cgroup in this version's hierarchy, make the
     * "llm-sandbox" parent(s) beneath it and prove we can create groups
     * there: s->parent[], s->n_parents, s->swap (and s->v2_root). */
    int (*detect)(struct cg_service *s, const struct cg_options *opt, struct sbx_error **err);
    /* s->describe, once detected ("cgroup v2: ... delegated at PATH"). */
    int (*describe)(struct cg_service *s);
    /* A parent made again after a sibling server removed it; NULL: nothing
     * more to do. */
    int (*parent_made)(const char *parent, bool fake, struct sbx_error **err);
    /* Write the policy's memory, pids and cpu limits into a new group. */
    int (*limits)(const struct cg_group *g, const struct sbx_policy *pol, struct sbx_error **err);
    int (*oom_killed)(const struct cg_group *g);   /* 1, 0, -1 unknown */
    int (*pids_limited)(const struct cg_group *g); /* 1, 0, -1 unknown */
    /* Kill everything in the group at once when the kernel can: 0 when
     * done; NULL or < 0: signal each listed process instead. */
    int (*kill_all)(struct cg_group *g);
};

extern const struct cg_ops cg_v1_ops;
extern const struct cg_ops cg_v2_ops;

/* ---- v2 under systemd (cgroup_v2_place.c) -------------------------------- */

#define CG_V2_CTRLS "+memory +pids +cpu"
#define CG_LEAF     "supervisor" /* where our cgroup's processes go */

/* Where our v2 cgroup base (absolute) sits among systemd's units: fills
 * s->how (CG_HOW_UNMANAGED, _DELEGATED, or _NOT_DELEGATED: then base is a
 * unit systemd manages and s->unit names it) and returns 1 when that unit
 * is a scope we may ask to leave, else 0; < 0 on out of memory. */
int cg_v2_place(struct cg_service *s, const struct cg_options *opt, const char *base);
/* Ask for a delegated scope (opt->ask_scope) and move there: *ret_base is
 * the new cgroup (transfer full). s->how becomes CG_HOW_SCOPE, or
 * CG_HOW_SCOPE_FAILED with the error. */
int cg_v2_scope(struct cg_service *s, const struct cg_options *opt, const char *base,
        char **ret_base, struct sbx_error **err);
/* Move every process of base into base/CG_LEAF, then enable the
 * controllers in base (retrying while processes keep arriving). The root
 * cgroup (root: true) is exempt from the rule: nothing is moved there. */
int cg_v2_take(const char *base, bool root, bool fake, struct sbx_error **err);

/* ---- cgroupfs helpers (cgroup_fs.c) ------------------------------------ */

int cg_oom(struct sbx_error **err);
/* "<prefix><path>: <strerror(errno)>" as SBX_E_BACKEND. */
int cg_sys_fail(struct sbx_error **err, const char *prefix, const char *path);
/* a + "/" + b without doubled slashes. (transfer full) */
char *cg_path_join(const char *a, const char *b);
bool cg_has_file(const char *dir, const char *name);
/* Read a whole file, NUL-terminated: 0 or -errno. (transfer full) */
int cg_read_all(const char *path, char **ret);
/* One write(2) of val, as cgroupfs wants. Fake trees get the file
 * created, since no kernel provides it. err may be NULL (best effort). */
int cg_write_ctl(
        const char *dir, const char *name, const char *val, bool fake, struct sbx_error **err);
/* Cut the next line out of *cur in place; NULL at the end. */
char *cg_next_line(char **cur);
/* Is word one of the seps-separated words of list? */
bool cg_has_word(const char *list, const char *word, const char *seps);
/* Our cgroup's directory in a hierarchy (ctrl: the v1 controller whose
 * line of self, /proc/self/cgroup, names it; NULL: the v2 line). */
int cg_own_dir(
        const char *hier, const char *self, const char *ctrl, char **ret, struct sbx_error **err);
/* mkdir the parent (it may exist) and prove we can create groups in it. */
int cg_parent_prepare(const char *parent, struct sbx_error **err);
/* rmdir (a fake tree's files unlinked first): 0 or -errno. */
int cg_remove_dir(const char *path, bool fake);
/* 1 when the "key N" line of dir/file has N > 0, 0 when N is 0, -1 when
 * the file or the line is missing. */
int cg_event_seen(const char *dir, const char *file, const char *key);

#endif
