/* SPDX-License-Identifier: MIT */
/*
 * cgroup_v2.c: the unified cgroup v2 hierarchy (cgroup_int.h's table),
 * where it is delegated to us: the memory, pids and cpu controllers
 * available in our own cgroup. A group is one directory. Applies the
 * limits it is given; decides no policy.
 *
 * Which cgroup is ours to use under systemd, and how every process in it
 * leaves for a leaf so that controllers can be enabled (the
 * no-internal-processes rule), is cgroup_v2_place.c's part. A process
 * that starts in that leaf ("<own>/supervisor", say a second server
 * started by a harness the first one moved there) uses its parent, so
 * groups always live under one "llm-sandbox".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "host/cgroup_int.h"

/* base/CG_LEAF -> base, in place. */
static void strip_leaf(char *base)
{
    size_t blen = strlen(base), llen = strlen("/" CG_LEAF);

    if (blen > llen && strcmp(base + blen - llen, "/" CG_LEAF) == 0)
        base[blen - llen] = '\0';
}

/* Is dir the mount's root (trailing slashes aside)? */
static bool is_root(const char *dir, const char *mount_root)
{
    size_t a = strlen(dir), b = strlen(mount_root);

    while (a > 1 && dir[a - 1] == '/')
        a--;
    while (b > 1 && mount_root[b - 1] == '/')
        b--;
    return a == b && strncmp(dir, mount_root, a) == 0;
}

/* Every controller we need, in base's cgroup.controllers. */
static int controllers_check(const struct cg_service *s, const char *base, struct sbx_error **err)
{
    cleanup_free char *ctl = cg_path_join(base, "cgroup.controllers");
    cleanup_free char *avail = NULL;
    int r;

    if (!ctl)
        return cg_oom(err);
    r = cg_read_all(ctl, &avail);
    if (r == -ENOMEM)
        return cg_oom(err);
    if (r < 0)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, -r, "%s: %s", ctl, strerror(-r));
    for (size_t i = 0; i < CG_DIRS; i++)
        if (!cg_has_word(avail, cg_controllers[i], " \n"))
            return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s lacks '%s' (%s)", ctl,
                    cg_controllers[i],
                    s->how == CG_HOW_UNMANAGED ? "not delegated"
                                               : "the unit does not delegate it: "
                                                 "DelegateControllers=");
    return 0;
}

static int v2_refuse(const struct cg_service *s, struct sbx_error **err)
{
    return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
            "cgroup v2: this process runs in %s, which systemd manages and does not delegate "
            "(no Delegate=yes): not writing into it",
            s->unit);
}

static int v2_detect(struct cg_service *s, const struct cg_options *opt, struct sbx_error **err)
{
    cleanup_free char *base = NULL, *moved = NULL;
    int r;

    s->v2_root = cg_has_file(opt->mount_root, "cgroup.controllers");
    if (!s->v2_root)
        return sbx_error_set(
                err, SBX_E_UNAVAILABLE, 0, "%s is not a cgroup2 root", opt->mount_root);
    r = cg_own_dir(opt->mount_root, opt->self_cgroup, NULL, &base, err);
    if (r < 0)
        return r;
    strip_leaf(base);
    s->own = strdup(base);
    if (!s->own)
        return cg_oom(err);
    r = cg_v2_place(s, opt, base);
    if (r < 0)
        return cg_oom(err);
    if (s->how == CG_HOW_NOT_DELEGATED && r == 0)
        return v2_refuse(s, err);
    if (s->how == CG_HOW_NOT_DELEGATED) {
        r = cg_v2_scope(s, opt, base, &moved, err);
        if (r < 0)
            return r;
        free(base);
        base = steal_ptr(&moved);
    }
    r = controllers_check(s, base, err);
    if (r == 0)
        r = cg_v2_take(base, is_root(base, opt->mount_root), s->fake, err);
    if (r < 0)
        return r;
    s->parent[0] = cg_path_join(base, CG_PARENT);
    if (!s->parent[0])
        return cg_oom(err);
    s->n_parents = 1;
    r = cg_parent_prepare(s->parent[0], err);
    if (r < 0)
        return r;
    r = cg_write_ctl(s->parent[0], "cgroup.subtree_control", CG_V2_CTRLS, s->fake, err);
    s->swap = r == 0 && cg_has_file(s->parent[0], "memory.swap.max");
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
    r = cg_write_ctl(d, "memory.max", mem, g->fake, err);
    if (r == 0 && g->swap)
        r = cg_write_ctl(d, "memory.swap.max", "0", g->fake, err);
    if (r == 0)
        r = cg_write_ctl(d, "pids.max", pids, g->fake, err);
    if (r == 0)
        r = cg_write_ctl(d, "cpu.max", cpu, g->fake, err);
    return r;
}

static int v2_describe(struct cg_service *s)
{
    const char *swap = s->swap ? "" : "; swap not accounted";
    int r;

    switch (s->how) {
    case CG_HOW_DELEGATED:
        r = asprintf(&s->describe,
                "cgroup v2: memory, pids, cpu delegated to us (unit %s: %s); sandboxes under %s, "
                "this unit's processes in its leaf '" CG_LEAF "'%s",
                s->unit ? s->unit : "?", s->basis ? s->basis : "delegated", s->parent[0], swap);
        break;
    case CG_HOW_SCOPE:
        r = asprintf(&s->describe,
                "cgroup v2: memory, pids, cpu in %s, a scope with Delegate=yes the %s manager "
                "made for this process (%s, where it started, is not delegated); sandboxes "
                "under %s%s",
                s->scope, s->user_manager ? "user's" : "system", s->unit, s->parent[0], swap);
        break;
    case CG_HOW_NONE:
    case CG_HOW_UNMANAGED:
    case CG_HOW_NOT_DELEGATED:
    case CG_HOW_SCOPE_FAILED:
    default:
        r = asprintf(&s->describe, "cgroup v2: memory, pids, cpu at %s (no systemd)%s",
                s->parent[0], swap);
        break;
    }
    return r < 0 ? SBX_E_NOMEM : 0;
}

/* A parent made again needs its controllers again. */
static int v2_parent_made(const char *parent, bool fake, struct sbx_error **err)
{
    return cg_write_ctl(parent, "cgroup.subtree_control", CG_V2_CTRLS, fake, err);
}

static int v2_oom_killed(const struct cg_group *g)
{
    return cg_event_seen(g->dir[0], "memory.events", "oom_kill");
}

static int v2_pids_limited(const struct cg_group *g)
{
    return cg_event_seen(g->dir[0], "pids.events", "max");
}

/* cgroup.kill (Linux 5.14): every process at once, forks included. */
static int v2_kill_all(struct cg_group *g)
{
    if (!cg_has_file(g->dir[0], "cgroup.kill"))
        return SBX_E_UNAVAILABLE;
    return cg_write_ctl(g->dir[0], "cgroup.kill", "1", g->fake, NULL);
}

const struct cg_ops cg_v2_ops = {
        .mode = CG_V2,
        .name = "v2",
        .memory_note = "memory.max",
        .memory_swap_note = "memory.max, memory.swap.max=0",
        .cpu_note = "cpu.max",
        .detect = v2_detect,
        .describe = v2_describe,
        .parent_made = v2_parent_made,
        .limits = limits_v2,
        .oom_killed = v2_oom_killed,
        .pids_limited = v2_pids_limited,
        .kill_all = v2_kill_all,
};
