/* SPDX-License-Identifier: MIT */
/*
 * pool_zygote.c: zygote boxes (LLM_SANDBOX_ZYGOTE), beside a kind's ready
 * sandboxes (pool.c, whose filler threads make them and whose pool_take
 * lends them). A kind whose language has language.zygote, on a backend of
 * ABI 1.6 or later, keeps zygote boxes: boxes opened with SBX_BOX_ZYGOTE
 * whose agent runs the language's zygote (core/agent/proto.h). A run of
 * the kind that finds one ready borrows it, stages its files, and FORKs
 * its program into the child the box prepared, which runs in namespaces,
 * a /tmp and /proc of its own under the strict filter
 * (docs/zygote-security.md).
 *
 * One run at a time in a box (its workspace is the run's). A run that
 * finds none ready takes a ready sandbox or starts cold (but see below),
 * and the kind then wants one more zygote box, up to LLM_SANDBOX_POOL of
 * them: as many runs as come at once fork, once the filler has caught up.
 *
 * Each box keeps the next run's child ready: the zygote forks it, and it
 * isolates itself, before the run comes (PREP), so that a run pays only
 * for handing it the program and its pipes (FORK). A run gives its box
 * back unready, and a filler thread gives it a fresh workspace and
 * prepares its next child (zygote_fill), after the run's answer. A run
 * that finds no box ready waits for one a filler is at (at most
 * ZYG_WAIT_MS), or takes one given back that no filler has taken up yet
 * and makes it ready itself: either is cheaper than a sandbox of its own.
 *
 * Where the backend enforces memory, pids or CPU by cgroup, each run gets
 * a group of its own with its limits (those of the kind: they are the
 * run's), made with the child it will run in: the zygote holds the child
 * before the run is known (PREP with AGENT_PREP_HOLD: in its namespaces,
 * with its mounts, not yet in a cgroup namespace of its own and still with
 * the box's capabilities), prepare() finds it among the box group's
 * processes and moves it into the run's group, and only then (GO) does it
 * take that group as its cgroup namespace's root, drop its capabilities
 * and apply the filter. The move is the run's one cgroup migration, made
 * before the run comes: one can wait for an RCU grace period in the
 * kernel (bench/RESULTS.md). The zygote never moves. A language whose
 * zygote does not hold gets no zygote there. Where rlimits stand in for
 * cgroups they are per process, as in a cold box. Only network off (a
 * child's network namespace is empty), no build, no mode, no warm-up set.
 * Made and replaced by the filler as ready sandboxes are; FAIL_MAX
 * failures in a row, or one child that could not be placed, end a kind's
 * zygote boxes until its pool is emptied.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "host/cgroup.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"
#include "sessions/pool.h"
#include "sessions/pool_int.h"

/* Does a cgroup (the box's) hold the backend's limits? */
static bool cgroup_limits(const struct plugin *backend)
{
    const struct sbx_caps *caps = &backend->caps;

    return caps->level[SBX_CTL_MEMORY] == SBX_ENF_FULL ||
           caps->level[SBX_CTL_PIDS] == SBX_ENF_FULL || caps->level[SBX_CTL_CPU] == SBX_ENF_FULL;
}

static bool zygote_able(const struct pools *ps, const struct pool *p)
{
    const struct manifest_session *z = p->lang->m->lang->zygote;

    return ps->rt->settings->zygote && z && p->backend->desc->abi_minor >= 6 && !p->warm &&
           p->policy.network == SBX_NET_OFF && (z->holds || !cgroup_limits(p->backend));
}

/* Under the lock: is b one of p's zygote boxes? */
static bool zygote_has(const struct pool *p, const struct pbox *b)
{
    for (const struct pbox *x = p->zyg; x; x = x->next)
        if (x == b)
            return true;
    return false;
}

/* Under the lock: take b off p's list of zygote boxes. */
static void zygote_unlink(struct pool *p, struct pbox *b)
{
    for (struct pbox **pp = &p->zyg; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            b->next = NULL;
            p->n_zyg--;
            return;
        }
}

/* Without the lock: b's next run's child, isolated and waiting (where
 * cgroups hold the limits, in a group of its own with the kind's limits,
 * b->cg). 0, or -1 with *err set; *unplaced when its group failed (every
 * next one would fail alike). */
static int prepare(
        struct pools *ps, struct pool *p, struct pbox *b, bool *unplaced, struct sbx_error **err)
{
    struct sbx_runtime *rt = ps->rt;
    bool hold = cgroup_limits(p->backend);
    char id[sizeof(b->r.box_id)];
    int32_t box_pid = 0;
    pid_t pid, in_group;

    *unplaced = false;
    if (hold) {
        snprintf(id, sizeof(id), "%s-%" PRIuFAST64, rt->owner, atomic_fetch_add(&rt->seq, 1));
        if (cg_group_new(rt->cg, id, &p->policy, &b->cg, err) < 0)
            goto unplaced;
    }
    if (agentc_prep(b->r.ac, hold, now_ms() + SETUP_TIMEOUT_MS, &box_pid) != 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(b->r.ac));
    if (!hold)
        return 0;
    if (cg_service_find_pid(rt->cg, b->r.box_id, (pid_t)box_pid, &pid, err) < 0 ||
            cg_group_attach(b->cg, pid, err) < 0 ||
            cg_group_find_pid(b->cg, (pid_t)box_pid, &in_group, err) < 0)
        goto unplaced;
    if (in_group != pid) {
        sbx_error_set(err, SBX_E_BACKEND, 0, "the run's child is not in its group");
        goto unplaced;
    }
    if (agentc_go(b->r.ac, now_ms() + SETUP_TIMEOUT_MS) != 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(b->r.ac));
    return 0;
unplaced:
    *unplaced = true;
    sbx_error_wrap(err, "the run's own cgroup");
    return -1;
}

/* Under the lock: one of p's zygote boxes could not be made ready again
 * (e says why) and is closed; when its child could not be placed, the
 * kind's zygote boxes end (the next would fail alike). */
static void unready(struct pool *p, bool unplaced, const struct sbx_error *e)
{
    const char *why = e && e->msg ? e->msg : "unknown error";

    if (unplaced) {
        p->zyg_broken = true;
        log_msg(SBX_LOG_WARN, p->lang->name,
                "no zygote box on %s: %s; its runs use ready sandboxes or start cold",
                p->backend->name, why);
    } else {
        log_msg(SBX_LOG_INFO, p->lang->name, "a zygote box on %s is closed: %s", p->backend->name,
                why);
    }
}

/* Under the lock: one zygote box back from a run made ready again (a fresh
 * workspace, the next child prepared), or closed when that fails (the lock
 * is dropped meanwhile). True when there was one. */
static bool zygote_refresh(struct pools *ps)
{
    struct sbx_error *e = NULL;
    struct pool *p;
    struct pbox *b = NULL;
    bool unplaced = false, ok;

    for (p = ps->head; p; p = p->next) {
        for (b = p->zyg; b && !b->stale; b = b->next)
            ;
        if (b)
            break;
    }
    if (!p)
        return false;
    b->stale = false;
    b->refreshing = true;
    pthread_mutex_unlock(&ps->lock);
    ok = agentc_fresh(b->r.ac, now_ms() + SETUP_TIMEOUT_MS) == 0;
    if (!ok)
        sbx_error_set(&e, SBX_E_BACKEND, 0, "%s", agentc_last_error(b->r.ac));
    else
        ok = prepare(ps, p, b, &unplaced, &e) == 0;
    pthread_mutex_lock(&ps->lock);
    b->refreshing = false;
    if (ok) {
        b->busy = false;
    } else {
        zygote_unlink(p, b);
        unready(p, unplaced, e);
    }
    pthread_cond_broadcast(&ps->zyg_ready);
    if (!ok) {
        pthread_mutex_unlock(&ps->lock);
        b->r.backend->desc->backend->box_kill(b->r.box);
        pbox_free(b);
        pthread_mutex_lock(&ps->lock);
    }
    sbx_error_free(e);
    return true;
}

/* Under the lock: ready a zygote box a run gave back, or make one where a
 * kind wants one more, its first child prepared (the lock is dropped
 * meanwhile). True when it tried. */
bool zygote_fill(struct pools *ps)
{
    struct sbx_error *e = NULL;
    struct pool *p;
    struct pbox *b;
    bool unplaced = false;

    if (zygote_refresh(ps))
        return true;
    for (p = ps->head; p; p = p->next)
        if (p->n_zyg + p->zyg_filling < p->zyg_want && !p->zyg_broken &&
                now_ms() >= p->zyg_retry_ms && zygote_able(ps, p))
            break;
    if (!p)
        return false;
    p->zyg_filling++;
    pthread_mutex_unlock(&ps->lock);
    b = pbox_make(ps, p, true, &e);
    if (b && prepare(ps, p, b, &unplaced, &e) < 0) {
        b->r.backend->desc->backend->box_kill(b->r.box);
        pbox_free(b);
        b = NULL;
    }
    pthread_mutex_lock(&ps->lock);
    p->zyg_filling--;
    if (b) {
        p->zyg_failed = 0;
        b->next = p->zyg;
        p->zyg = b;
        p->n_zyg++;
        pthread_cond_broadcast(&ps->zyg_ready);
        return true;
    }
    p->zyg_retry_ms = now_ms() + 1000 * (int64_t)++p->zyg_failed;
    if (p->zyg_failed >= FAIL_MAX || unplaced)
        p->zyg_broken = true;
    log_msg(p->zyg_broken ? SBX_LOG_WARN : SBX_LOG_INFO, p->lang->name, "%s zygote box on %s: %s%s",
            p->zyg_broken ? "no" : "a", p->backend->name, e && e->msg ? e->msg : "unknown error",
            p->zyg_broken ? "; its runs use ready sandboxes or start cold" : "");
    sbx_error_free(e);
    return true;
}

/* Under the lock: the free zygote boxes that waited too long (their
 * backend's backstop would end them), or all free ones of a kind no longer
 * used, onto *gone. */
void zygote_drop(struct pools *ps, struct pool *p, struct pbox **gone)
{
    int64_t idle = (int64_t)ps->rt->settings->pool_idle_ms, now = now_ms();

    for (struct pbox *b = p->zyg, *next; b; b = next) {
        next = b->next;
        if (b->busy || (now - b->made_ms < idle && now - p->used_ms < idle))
            continue;
        zygote_unlink(p, b);
        b->next = *gone;
        *gone = b;
    }
}

/* Under the lock: lend one of p's zygote boxes to r when one is ready and
 * the run fits; else wait for one a filler is making ready (it is part
 * done); else take one a run gave back that no filler has taken up yet,
 * which the run makes ready itself (r->zyg_unready: pool_zygote_ready).
 * A run that goes without makes the kind want one more (the filler makes
 * it), up to LLM_SANDBOX_POOL: as many runs as come at once fork. */
bool zygote_lend(struct pools *ps, struct pool *p, struct run *r)
{
    uint64_t most = ps->rt->settings->pool_size;
    int64_t until = now_ms() + ZYG_WAIT_MS;
    struct pbox *b, *stale;

    if (!zygote_able(ps, p) || !r->plan || r->plan->build || r->plan->mode || r->probe_argv)
        return false;
    for (;;) {
        bool soon = false;
        struct timespec ts;

        stale = NULL;
        for (b = p->zyg; b && b->busy; b = b->next) {
            if (b->stale && !stale)
                stale = b;
            soon = soon || b->refreshing;
        }
        if (b || !soon || ps->stopping || now_ms() >= until)
            break;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(until - now_ms()) * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&ps->zyg_ready, &ps->lock, &ts);
    }
    if (!b && !stale && p->n_zyg + p->zyg_filling >= p->zyg_want && p->zyg_want < most) {
        p->zyg_want++;
        pthread_cond_broadcast(&ps->wake);
    }
    r->zyg_unready = !b && stale;
    if (r->zyg_unready) {
        b = stale;
        b->stale = false; /* lent as it is: no filler takes it up now */
    }
    if (!b)
        return false;
    b->busy = true;
    p->used_ms = now_ms();
    r->zyg = b;
    r->box = b->r.box;
    r->ac = b->r.ac;
    r->zyg_cg = b->cg; /* the run's own group, its child in it: the run's */
    b->cg = NULL;
    agentc_set_cancel(r->ac, r->req->cancel ? r->req->cancel->fd : -1, -1);
    return true;
}

int pool_zygote_ready(struct run *r, struct sbx_error **err)
{
    struct pools *ps = r->rt->pools;
    struct pbox *b = r->zyg;
    struct pool *p;
    bool unplaced = false;
    int rc;

    if (!r->zyg_unready)
        return 0;
    r->zyg_unready = false;
    pthread_mutex_lock(&ps->lock);
    for (p = ps->head; p && !zygote_has(p, b); p = p->next) /* on its list while lent */
        ;
    pthread_mutex_unlock(&ps->lock);
    if (!p)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "the zygote box is no longer its kind's");
    if (agentc_fresh(b->r.ac, now_ms() + SETUP_TIMEOUT_MS) != 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(b->r.ac));
    rc = prepare(ps, p, b, &unplaced, err);
    r->zyg_cg = b->cg;
    b->cg = NULL;
    if (rc < 0 && unplaced) {
        pthread_mutex_lock(&ps->lock);
        unready(p, true, *err);
        pthread_mutex_unlock(&ps->lock);
    }
    return rc < 0 ? (*err)->rc : 0;
}

void pool_zygote_cgroup_end(struct run *r, struct sbx_box_stats *st)
{
    if (!r->zyg_cg)
        return;
    st->oom_killed = cg_group_oom_killed(r->zyg_cg);
    st->pids_limited = cg_group_pids_limited(r->zyg_cg);
    r->zyg_cg = cg_group_free(r->zyg_cg); /* kills what is left of the run, waits, removes */
}

void pool_zygote_return(struct run *r, bool ok)
{
    struct pools *ps = r->rt->pools;
    struct pbox *b = r->zyg;

    if (!b)
        return;
    agentc_set_cancel(r->ac, -1, -1);
    r->zyg = NULL;
    r->box = NULL;
    r->ac = NULL;
    pthread_mutex_lock(&ps->lock);
    if (ok) {
        b->stale = true; /* a filler makes it ready again, after the run's answer */
        pthread_cond_broadcast(&ps->wake);
        pthread_mutex_unlock(&ps->lock);
        return;
    }
    b->busy = false;
    for (struct pool *p = ps->head; p; p = p->next)
        zygote_unlink(p, b);
    pthread_cond_signal(&ps->wake);
    pthread_mutex_unlock(&ps->lock);
    b->r.backend->desc->backend->box_kill(b->r.box);
    pbox_free(b);
}
