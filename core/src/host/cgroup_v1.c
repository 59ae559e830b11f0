/* SPDX-License-Identifier: MIT */
/*
 * cgroup_v1.c: the cgroup v1 hierarchies (cgroup_int.h's table): one per
 * controller (memory, pids, cpu), each writable beneath our own cgroup, as
 * on hosts that mount v1. A group is three directories, one per
 * hierarchy. Applies the limits it is given; decides no policy.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "host/cgroup_int.h"

static int v1_detect(struct cg_service *s, const struct cg_options *opt, struct sbx_error **err)
{
    for (size_t i = 0; i < CG_DIRS; i++) {
        cleanup_free char *hier = cg_path_join(opt->mount_root, cg_controllers[i]);
        cleanup_free char *base = NULL;
        struct stat st;
        int r;

        if (!hier)
            return cg_oom(err);
        if (stat(hier, &st) < 0)
            return cg_sys_fail(err, "", hier);
        r = cg_own_dir(hier, opt->self_cgroup, cg_controllers[i], &base, err);
        if (r < 0)
            return r;
        s->parent[i] = cg_path_join(base, CG_PARENT);
        if (!s->parent[i])
            return cg_oom(err);
        s->n_parents = i + 1;
        r = cg_parent_prepare(s->parent[i], err);
        if (r < 0)
            return r;
    }
    s->swap = cg_has_file(s->parent[D_MEM], "memory.memsw.limit_in_bytes");
    return 0;
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
    r = cg_write_ctl(g->dir[D_MEM], "memory.limit_in_bytes", mem, g->fake, err);
    if (r == 0 && g->swap)
        r = cg_write_ctl(g->dir[D_MEM], "memory.memsw.limit_in_bytes", mem, g->fake, err);
    if (r == 0 && cg_has_file(g->dir[D_MEM], "memory.swappiness"))
        (void)cg_write_ctl(g->dir[D_MEM], "memory.swappiness", "0", g->fake, NULL);
    if (r == 0)
        r = cg_write_ctl(g->dir[D_PIDS], "pids.max", pids, g->fake, err);
    if (r == 0)
        r = cg_write_ctl(g->dir[D_CPU], "cpu.cfs_period_us", CG_STR(CG_PERIOD_US), g->fake, err);
    if (r == 0 && pol->cpu_millicores > 0)
        r = cg_write_ctl(g->dir[D_CPU], "cpu.cfs_quota_us", quota, g->fake, err);
    return r;
}

static int v1_describe(struct cg_service *s)
{
    return asprintf(&s->describe, "cgroup v1: memory, pids, cpu writable (memory at %s%s)",
                   s->parent[D_MEM], s->swap ? "" : "; swap not accounted") < 0
                   ? SBX_E_NOMEM
                   : 0;
}

static int v1_oom_killed(const struct cg_group *g)
{
    return cg_event_seen(g->dir[D_MEM], "memory.oom_control", "oom_kill");
}

static int v1_pids_limited(const struct cg_group *g)
{
    return cg_event_seen(g->dir[D_PIDS], "pids.events", "max");
}

/* No freezer and no cgroup.kill: a sandbox runs in its own pid namespace,
 * so killing its init kills the rest (cgroup.c signals each process). */
const struct cg_ops cg_v1_ops = {
        .mode = CG_V1,
        .name = "v1",
        .memory_note = "memory.limit_in_bytes",
        .memory_swap_note = "memory.limit_in_bytes+memsw",
        .cpu_note = "cpu.cfs_quota_us",
        .detect = v1_detect,
        .describe = v1_describe,
        .limits = limits_v1,
        .oom_killed = v1_oom_killed,
        .pids_limited = v1_pids_limited,
};
