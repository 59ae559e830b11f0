/* SPDX-License-Identifier: MIT */
/*
 * pool_zygote.c: zygote boxes (LLM_SANDBOX_ZYGOTE), beside a kind's ready
 * sandboxes (pool.c, whose filler threads make them and whose pool_take
 * lends them). A kind whose language has language.zygote, on a backend of
 * ABI 1.6 or later, keeps zygote boxes: boxes opened with SBX_BOX_ZYGOTE
 * whose agent runs the language's zygote (core/agent/proto.h). A run of
 * the kind that finds one free borrows it, stages its files, and FORKs its
 * program, which runs in namespaces, a /tmp and /proc of its own under the
 * strict filter (docs/zygote-security.md); the box then gets a fresh
 * workspace and waits for the next run.
 *
 * One run at a time in a box (its workspace is the run's). A run that
 * finds every one busy takes a ready sandbox or starts cold, and the kind
 * then wants one more zygote box, up to LLM_SANDBOX_POOL of them: as many
 * runs as come at once fork, once the filler has caught up.
 *
 * A child is born in its box's cgroup, with the zygote. Where the backend
 * enforces memory, pids or CPU by cgroup, each run gets a group of its own
 * with its limits: the zygote holds the isolated child before its program
 * (the language's zygote.holds; FORK with AGENT_FORK_HOLD), pool_zygote_place
 * finds it among the box group's processes and moves it into the run's
 * group, and only then does it run. A language whose zygote does not hold
 * gets no zygote there. Where rlimits stand in for cgroups they are per
 * process, as in a cold box. Only network off (a child's network namespace
 * is empty), no build, no mode, no warm-up set. Made and replaced by the
 * filler as ready sandboxes are; FAIL_MAX failures in a row, or one run
 * that could not be placed, end a kind's zygote boxes until its pool is
 * emptied.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

/* Under the lock: make one zygote box where a kind wants one more (the
 * lock is dropped meanwhile). True when it tried. */
bool zygote_fill(struct pools *ps)
{
    struct sbx_error *e = NULL;
    struct pool *p;
    struct pbox *b;

    for (p = ps->head; p; p = p->next)
        if (p->n_zyg + p->zyg_filling < p->zyg_want && !p->zyg_broken &&
                now_ms() >= p->zyg_retry_ms && zygote_able(ps, p))
            break;
    if (!p)
        return false;
    p->zyg_filling++;
    pthread_mutex_unlock(&ps->lock);
    b = pbox_make(ps, p, true, &e);
    pthread_mutex_lock(&ps->lock);
    p->zyg_filling--;
    if (b) {
        p->zyg_failed = 0;
        b->next = p->zyg;
        p->zyg = b;
        p->n_zyg++;
        return true;
    }
    p->zyg_retry_ms = now_ms() + 1000 * (int64_t)++p->zyg_failed;
    if (p->zyg_failed >= FAIL_MAX)
        p->zyg_broken = true;
    log_msg(p->zyg_broken ? SBX_LOG_WARN : SBX_LOG_INFO, p->lang->name, "%s zygote box on %s: %s%s",
            p->zyg_broken ? "no" : "a", p->backend->name, e && e->msg ? e->msg : "unknown error",
            p->zyg_broken ? "; its runs use ready sandboxes or start cold" : "");
    sbx_error_free(e);
    return true;
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

/* Under the lock: lend one of p's zygote boxes to r when one is free and
 * the run fits; when every one is busy, want one more (the filler makes
 * it), up to LLM_SANDBOX_POOL. */
bool zygote_lend(struct pools *ps, struct pool *p, struct run *r)
{
    uint64_t most = ps->rt->settings->pool_size;
    struct pbox *b;

    if (!zygote_able(ps, p) || !r->plan || r->plan->build || r->plan->mode || r->probe_argv)
        return false;
    for (b = p->zyg; b && b->busy; b = b->next)
        ;
    if (!b) {
        if (p->n_zyg + p->zyg_filling >= p->zyg_want && p->zyg_want < most) {
            p->zyg_want++;
            pthread_cond_broadcast(&ps->wake);
        }
        return false;
    }
    b->busy = true;
    p->used_ms = now_ms();
    r->zyg = b;
    r->box = b->r.box;
    r->ac = b->r.ac;
    agentc_set_cancel(r->ac, r->req->cancel ? r->req->cancel->fd : -1, -1);
    return true;
}

agentc_hold_fn pool_zygote_hold(const struct run *r)
{
    return r->zyg && cgroup_limits(r->backend) ? pool_zygote_place : NULL;
}

/* r's placing failed (*err says why): the kind's zygote boxes end when the
 * box is given back (pool_zygote_return). */
static int unplaced(struct run *r, struct sbx_error **err)
{
    r->zyg_unplaced = true;
    sbx_error_wrap(err, "the run's own cgroup");
    return SBX_E_BACKEND;
}

int pool_zygote_enter(struct run *r, struct sbx_error **err)
{
    struct cg_service *svc = r->rt->cg;
    char id[sizeof(r->box_id)];
    pid_t pid;

    if (r->zyg->r.zygote_pid <= 0) {
        sbx_error_set(err, SBX_E_BACKEND, 0, "the zygote's pid is not known");
        return unplaced(r, err);
    }
    snprintf(id, sizeof(id), "%s-%" PRIuFAST64, r->rt->owner, atomic_fetch_add(&r->rt->seq, 1));
    if (cg_group_new(svc, id, &r->policy, &r->zyg_cg, err) < 0 ||
            cg_service_find_pid(svc, r->zyg->r.box_id, r->zyg->r.zygote_pid, &pid, err) < 0 ||
            cg_group_attach(r->zyg_cg, pid, err) < 0)
        return unplaced(r, err);
    r->zygote_host = pid;
    return 0;
}

/* The zygote home again, and the child born in the run's group. */
int pool_zygote_place(void *userdata, int32_t box_pid, char *why, size_t why_len)
{
    struct run *r = userdata;
    struct sbx_error *e = NULL;
    pid_t pid;

    if (cg_service_attach(r->rt->cg, r->zyg->r.box_id, r->zygote_host, &e) == 0) {
        r->zygote_host = 0;
        if (cg_group_find_pid(r->zyg_cg, (pid_t)box_pid, &pid, &e) == 0)
            return 0;
    }
    unplaced(r, &e);
    snprintf(why, why_len, "%s", e->msg);
    sbx_error_free(e);
    return -1;
}

void pool_zygote_cgroup_end(struct run *r, struct sbx_box_stats *st)
{
    if (!r->zyg_cg)
        return;
    if (r->zygote_host > 0) /* the fork never got as far: the zygote goes home */
        (void)cg_service_attach(r->rt->cg, r->zyg->r.box_id, r->zygote_host, NULL);
    r->zygote_host = 0;
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
    if (ok && agentc_fresh(r->ac, now_ms() + SETUP_TIMEOUT_MS) != 0) {
        log_msg(SBX_LOG_INFO, r->lang->name, "a zygote box on %s is closed: %s", r->backend->name,
                agentc_last_error(r->ac));
        ok = false;
    }
    r->zyg = NULL;
    r->box = NULL;
    r->ac = NULL;
    pthread_mutex_lock(&ps->lock);
    b->busy = false;
    for (struct pool *p = ps->head; p && !ok; p = p->next) {
        if (r->zyg_unplaced && !p->zyg_broken && zygote_has(p, b)) {
            /* the next would fail alike: the kind's runs go without */
            p->zyg_broken = true;
            log_msg(SBX_LOG_WARN, r->lang->name,
                    "no zygote box on %s: a run could not be moved into a cgroup of its own; "
                    "its runs use ready sandboxes or start cold",
                    r->backend->name);
        }
        zygote_unlink(p, b);
    }
    r->zyg_unplaced = false;
    pthread_cond_signal(&ps->wake);
    pthread_mutex_unlock(&ps->lock);
    if (!ok) {
        b->r.backend->desc->backend->box_kill(b->r.box);
        pbox_free(b);
    }
}
