/* SPDX-License-Identifier: MIT */
/*
 * cgroup_v2.c: the unified cgroup v2 hierarchy (cgroup_int.h's table),
 * where it is delegated to us: the memory, pids and cpu controllers
 * available in our own cgroup. A group is one directory. Applies the
 * limits it is given; decides no policy.
 *
 * The no-internal-processes rule: controllers can be enabled in our
 * cgroup's cgroup.subtree_control only while it holds no processes, so
 * that write fails with EBUSY when we live there. Then we create
 * "<our cgroup>/llm-sandbox-server", move this whole process into it (a
 * pid written to cgroup.procs moves every thread) and retry. A server
 * that starts inside llm-sandbox-server (forked by an earlier one) uses
 * its parent as "our cgroup", so groups always live under one
 * "llm-sandbox".
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

#define CG_SERVER   "llm-sandbox-server"
#define CG_V2_CTRLS "+memory +pids +cpu"

/* Enable the controllers in base; on EBUSY move ourselves out (see top). */
static int v2_enable(const char *base, bool fake, struct sbx_error **err)
{
    cleanup_error struct sbx_error *e = NULL;
    cleanup_free char *srv = NULL;
    char pid[24];
    int r = cg_write_ctl(base, "cgroup.subtree_control", CG_V2_CTRLS, fake, &e);

    if (r == 0 || e->sys_errno != EBUSY)
        return r == 0 ? 0 : sbx_error_set(err, r, e->sys_errno, "%s", e->msg);
    srv = cg_path_join(base, CG_SERVER);
    if (!srv)
        return cg_oom(err);
    if (mkdir(srv, 0755) < 0 && errno != EEXIST)
        return cg_sys_fail(err, "", srv);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    r = cg_write_ctl(srv, "cgroup.procs", pid, fake, err);
    if (r < 0)
        return r;
    return cg_write_ctl(base, "cgroup.subtree_control", CG_V2_CTRLS, fake, err);
}

static int v2_detect(struct cg_service *s, const struct cg_options *opt, struct sbx_error **err)
{
    cleanup_free char *base = NULL, *ctl = NULL, *avail = NULL;
    size_t blen;
    int r;

    s->v2_root = cg_has_file(opt->mount_root, "cgroup.controllers");
    if (!s->v2_root)
        return sbx_error_set(
                err, SBX_E_UNAVAILABLE, 0, "%s is not a cgroup2 root", opt->mount_root);
    r = cg_own_dir(opt->mount_root, opt->self_cgroup, NULL, &base, err);
    if (r < 0)
        return r;
    blen = strlen(base);
    if (blen > sizeof(CG_SERVER) && strcmp(base + blen - sizeof(CG_SERVER), "/" CG_SERVER) == 0)
        base[blen - sizeof(CG_SERVER)] = '\0'; /* sizeof counts the NUL: the length of "/..." */
    ctl = cg_path_join(base, "cgroup.controllers");
    if (!ctl)
        return cg_oom(err);
    r = cg_read_all(ctl, &avail);
    if (r == -ENOMEM)
        return cg_oom(err);
    if (r < 0)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, -r, "%s: %s", ctl, strerror(-r));
    for (size_t i = 0; i < CG_DIRS; i++)
        if (!cg_has_word(avail, cg_controllers[i], " \n"))
            return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s lacks '%s' (not delegated)", ctl,
                    cg_controllers[i]);
    r = v2_enable(base, s->fake, err);
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
    return asprintf(&s->describe, "cgroup v2: memory, pids, cpu delegated at %s%s", s->parent[0],
                   s->swap ? "" : "; swap not accounted") < 0
                   ? SBX_E_NOMEM
                   : 0;
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
