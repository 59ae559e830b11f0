/* SPDX-License-Identifier: MIT */
/*
 * pool.c: warm one-shot runs. A server keeps a few sandboxes ready per
 * kind (backend, language, the policy's box-level controls, and the
 * language's warm-up set, which a ready sandbox mounts at /warm as a cold
 * run's is), each opened through the engine's own steps (open_box,
 * engine_setup, the language's support files) and, for a language with
 * language.prestart, with its interpreter started and waiting. A one-shot
 * run of that kind takes one, stages its files and program, and says go;
 * the sandbox is closed after that run like any other, and a filler
 * thread makes another in the background. Nothing passes from one run to
 * the next: each run still has its own namespaces, tmpfs workspace, cgroup
 * and seccomp filter, only made before it was asked for. Sandboxes are
 * never reused.
 *
 * Sizing: a kind gets a pool when a run first asks for it (one sandbox),
 * which grows by one each time a run finds it empty, and by one when a
 * run takes its last ready sandbox (the next call of a burst would find
 * it empty: the refill starts ahead of it), up to LLM_SANDBOX_POOL; all
 * pools together hold at most LLM_SANDBOX_POOL_MAX ready sandboxes. Two
 * filler threads make sandboxes side by side (making one is mostly
 * waiting for processes to start), so that back-to-back calls find one
 * ready where one thread could not keep up. A kind unused for LLM_SANDBOX_POOL_IDLE is emptied,
 * and a sandbox that waited that long is replaced. Pooled sandboxes are
 * real ones: each has its memory, pids and disk limits, and the backend's
 * ties to the server (they die with it). A kind whose sandboxes cannot be
 * made (an interpreter that never says ready, a backend error) three times
 * in a row is logged once with the reason and runs cold until emptied.
 *
 * A pre-started interpreter (langs/<name>/prestart.*) is started as
 * language.prestart.run, "{driver}" being the driver's text, with the
 * run's environment. When it is ready it writes ESC "]sbx;ready;000" BEL
 * to stdout and to stderr. A line on its stdin, the program's file name
 * relative to the workspace, says go; the rest of stdin is the program's,
 * and from then on it behaves as `language.run` would (output, exit
 * status, stdin). End of stdin instead of a line: it exits 0. With
 * `feed: source` the interpreter reads its program from stdin (R's
 * --file): the driver's text is its first input, and a run sends the
 * program's text and end of input; such an interpreter's program cannot
 * also have stdin, so a run with stdin data ends it unused (run.c). An
 * interpreter that ended while it waited (its exit report came before the
 * run's staging replies) is not used: the run starts the program in that
 * sandbox as a cold run would. One that dies in the instant between the
 * staging and the go is reported as the run's outcome.
 */
#include "sessions/pool.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "cache/deps.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "host/cgroup.h"
#include "host/uidrange.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"
#include "sessions/pool_int.h"

#define READY_HEAD   "\033]sbx;ready;"
#define READY_OUTPUT 4096 /* what an interpreter that did not start said */
#define TRIM_EVERY   1000

/* The policy's box-level part: the wall time and output cap are the
 * core's to enforce per run, everything else is the sandbox's. */
static bool same_kind(const struct sbx_policy *a, const struct sbx_policy *b)
{
    struct sbx_policy x = *a, y = *b;

    x.wall_time_ms = y.wall_time_ms = 0;
    x.output_bytes = y.output_bytes = 0;
    return memcmp(&x, &y, sizeof(x)) == 0;
}

struct pools *pools_new(struct sbx_runtime *rt)
{
    struct pools *ps = calloc(1, sizeof(*ps));

    if (!ps)
        return NULL;
    pthread_mutex_init(&ps->lock, NULL);
    pthread_cond_init(&ps->wake, NULL);
    pthread_cond_init(&ps->zyg_ready, NULL);
    ps->rt = rt;
    return ps;
}

void pbox_free(struct pbox *b)
{
    engine_release(&b->r); /* closes the box when it still has one */
    b->cg = cg_group_free(b->cg);
    free(b->ex.message);
    strv_free(b->ex.warnings);
    free(b);
}

/* A new sandbox of the pool's kind, ready for a run: NULL with err set
 * when it could not be made. Runs without the lock. */
struct pbox *pbox_make(struct pools *ps, struct pool *p, bool zygote, struct sbx_error **err)
{
    struct pbox *b = calloc(1, sizeof(*b));
    const struct manifest_session *pre =
            zygote ? p->lang->m->lang->zygote : p->lang->m->lang->prestart;
    struct run *r;
    char **argv = NULL;
    int end, status;

    if (!b) {
        sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        return NULL;
    }
    b->req = (struct sbx_request){
            .language = p->lang->name, .backend = p->backend->name, .code = ""};
    r = &b->r;
    *r = (struct run){.rt = ps->rt, .req = &b->req, .ex = &b->ex, .t0 = now_ms()};
    r->backend = p->backend;
    r->lang = p->lang;
    r->policy = p->policy;
    r->zygote_box = zygote;
    if (p->warm) { /* as prepare_warm (install.c) mounts it for a cold run */
        if (!(r->warm = deps_share(p->warm))) {
            sbx_error_set(err, SBX_E_IO, errno, "the warm-up set: %s", strerror(errno));
            goto fail;
        }
        r->mounts[r->n_mounts++] = (struct sbx_mount){.source = r->warm->dir, .target = "/warm"};
    }
    /* it may wait for its run as long as the pool keeps it, then run */
    r->box_life_ms = ps->rt->settings->pool_idle_ms + ps->rt->settings->ceilings.wall_time_ms;
    capture_init(&r->sink.out, READY_OUTPUT);
    capture_init(&r->sink.err, READY_OUTPUT);
    if (engine_build_env(r, err) < 0 || engine_open_box(r, err) < 0 ||
            engine_setup(r, &end, err) < 0)
        goto fail;
    if (end != 0) {
        sbx_error_set(err, SBX_E_BACKEND, 0, "setting up the sandbox failed: %s",
                agentc_last_error(r->ac));
        goto fail;
    }
    end = engine_stage_support(r, now_ms() + SETUP_TIMEOUT_MS, err);
    if (end < 0)
        goto fail;
    if (pre) {
        struct agentc_exit ex = {0};
        size_t len;
        char *driver = plugin_file_read(p->lang, pre->driver, &len, err);

        if (!driver)
            goto fail;
        for (char **a = pre->run; *a; a++)
            if (strv_push(&argv, strcmp(*a, "{driver}") == 0 ? driver : *a) < 0) {
                free(driver);
                sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
                goto fail;
            }
        if (zygote) {
            free(driver);
            if (agentc_zygote(r->ac, argv, r->env, now_ms() + SETUP_TIMEOUT_MS) != 0) {
                sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
                goto fail;
            }
            strv_free(argv);
            argv = NULL;
            goto made;
        }
        end = agentc_start(r->ac, argv, r->env, now_ms() + SETUP_TIMEOUT_MS, &r->sink, &ex);
        /* feed: source reads its driver, then the program, from stdin */
        if (end == 0)
            end = agentc_converse(r->ac, READY_HEAD, pre->feed_source ? driver : NULL,
                    pre->feed_source ? len : 0, now_ms() + SETUP_TIMEOUT_MS, &r->sink, &status,
                    &ex);
        free(driver);
        if (end != AGENTC_MARKED) {
            size_t n = r->sink.err.buf.len;

            sbx_error_set(err, SBX_E_BACKEND, 0, "the %s interpreter did not start: %s%.*s",
                    p->lang->name,
                    end == AGENTC_EXITED            ? "it exited: "
                    : end < 0 || end == AGENTC_LOST ? agentc_last_error(r->ac)
                    : end == AGENTC_TIMEOUT         ? "no ready signal in time"
                                                    : "no ready signal",
                    end == AGENTC_EXITED ? (int)(n > 300 ? 300 : n) : 0,
                    r->sink.err.buf.buf ? r->sink.err.buf.buf : "");
            goto fail;
        }
        b->started = true;
        strv_free(argv);
    }
made:
    /* what it said while starting is not the run's */
    capture_done(&r->sink.out);
    capture_done(&r->sink.err);
    b->made_ms = now_ms();
    return b;
fail:
    strv_free(argv);
    if (r->box)
        r->backend->desc->backend->box_kill(r->box);
    pbox_free(b);
    return NULL;
}

/* A pool that wants another sandbox, room permitting; under the lock. */
static struct pool *wanting(struct pools *ps)
{
    const struct settings *set = ps->rt->settings;

    if (ps->n_ready + ps->filling >= set->pool_max)
        return NULL;
    for (struct pool *p = ps->head; p; p = p->next)
        if (!p->broken && p->n_ready + p->filling < p->want && now_ms() >= p->retry_ms)
            return p;
    return NULL;
}

/* Take the sandboxes that waited too long, and the pools unused too long,
 * out of the registry; under the lock. Returns the sandboxes to close. */
static struct pbox *trim(struct pools *ps)
{
    int64_t now = now_ms(), idle = (int64_t)ps->rt->settings->pool_idle_ms;
    struct pbox *gone = NULL;

    for (struct pool **pp = &ps->head; *pp;) {
        struct pool *p = *pp;
        bool unused = now - p->used_ms >= idle;

        while (p->head && (unused || now - p->head->made_ms >= idle)) {
            struct pbox *b = p->head;

            if (!(p->head = b->next))
                p->tail = &p->head;
            p->n_ready--;
            ps->n_ready--;
            b->next = gone;
            gone = b;
        }
        zygote_drop(ps, p, &gone);
        if (unused && p->filling == 0 && !p->zyg && p->zyg_filling == 0) {
            *pp = p->next;
            deps_close(p->warm);
            free(p);
            continue;
        }
        pp = &p->next;
    }
    return gone;
}

static void close_all(struct pbox *b)
{
    while (b) {
        struct pbox *next = b->next;

        pbox_free(b);
        b = next;
    }
}

/* The pool of r's kind, made (wanting one box) when missing (*made);
 * NULL when out of memory. Under the lock. */
static struct pool *pool_of(struct pools *ps, const struct run *r, bool *made)
{
    struct pool *p;

    *made = false;
    for (p = ps->head; p; p = p->next)
        if (p->backend == r->backend && p->lang == r->lang && same_kind(&p->policy, &r->policy) &&
                !p->warm == !r->warm && (!r->warm || strcmp(p->warm->dir, r->warm->dir) == 0))
            return p;
    *made = true;
    if (!(p = calloc(1, sizeof(*p))))
        return NULL;
    if (r->warm && !(p->warm = deps_share(r->warm))) {
        free(p);
        return NULL;
    }
    p->backend = r->backend;
    p->lang = r->lang;
    p->policy = r->policy;
    p->tail = &p->head;
    p->want = 1;
    p->zyg_want = 1;
    p->used_ms = now_ms();
    p->next = ps->head;
    ps->head = p;
    return p;
}

/* The default kind's pool, as a run with no options would use it. Probing
 * the backend takes a while: done here, never before the server answers. */
static void prime(struct pools *ps)
{
    const struct sbx_request req = {.code = ""};
    struct sbx_execution ex = {0};
    struct run r = {.rt = ps->rt, .req = &req, .ex = &ex, .t0 = now_ms()};

    if (engine_choose(&r) == 0 && engine_policy(&r) == 0) {
        bool made;

        pthread_mutex_lock(&ps->lock);
        pool_of(ps, &r, &made);
        pthread_mutex_unlock(&ps->lock);
    } else {
        log_msg(SBX_LOG_INFO, NULL, "no warm sandboxes for the defaults: %s",
                ex.message ? ex.message : "refused");
    }
    free(ex.message);
    strv_free(ex.warnings);
}

/*
 * A filler: FILLERS threads for the runtime's lifetime (a backend may tie a
 * sandbox to the thread that made it: bwrap's --die-with-parent is a
 * parent-death signal, sent when that thread ends).
 */
static void *filler(void *arg)
{
    struct pools *ps = arg;
    struct pbox *left;
    int64_t trimmed = 0;

    pthread_mutex_lock(&ps->lock);
    if (ps->prime) {
        ps->prime = false; /* one thread primes */
        pthread_mutex_unlock(&ps->lock);
        prime(ps);
        pthread_mutex_lock(&ps->lock);
    }
    while (!ps->stopping) {
        struct pool *p = wanting(ps);
        struct pbox *b;
        struct sbx_error *e = NULL;

        if (zygote_fill(ps)) /* a zygote box where a kind wants one; under the lock */
            continue;
        if (!p || now_ms() - trimmed >= TRIM_EVERY) {
            struct pbox *gone = trim(ps);

            trimmed = now_ms();
            if (gone) {
                pthread_mutex_unlock(&ps->lock);
                close_all(gone);
                pthread_mutex_lock(&ps->lock);
                continue;
            }
        }
        if (!p) {
            struct timespec ts;

            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&ps->wake, &ps->lock, &ts);
            continue;
        }
        p->filling++;
        ps->filling++;
        pthread_mutex_unlock(&ps->lock);
        b = pbox_make(ps, p, false, &e);
        pthread_mutex_lock(&ps->lock);
        p->filling--;
        ps->filling--;
        if (!b) {
            /* a few tries, a second apart and more, before giving up */
            p->retry_ms = now_ms() + 1000 * (int64_t)++p->failed;
            if (p->failed >= FAIL_MAX) {
                p->broken = true;
                log_msg(SBX_LOG_WARN, p->lang->name,
                        "no warm sandboxes on %s: %s; its runs start cold until the pool "
                        "empties",
                        p->backend->name, e && e->msg ? e->msg : "unknown error");
            } else {
                log_msg(SBX_LOG_INFO, p->lang->name, "a warm sandbox on %s failed: %s",
                        p->backend->name, e && e->msg ? e->msg : "unknown error");
            }
            sbx_error_free(e);
            continue;
        }
        p->failed = 0;
        b->next = NULL;
        *p->tail = b;
        p->tail = &b->next;
        p->n_ready++;
        ps->n_ready++;
    }
    /* Close the ready sandboxes here, before this thread ends: the kernel
     * sends a launcher's parent-death signal (SBX_SPAWN_PDEATHSIG) when the
     * thread that spawned it exits, not the process. A launcher killed so
     * can leave its sandbox starting up behind it (seen with nsjail: an
     * agent orphaned, with its pre-started interpreter, after the server
     * had exited). The first filler to stop closes every ready sandbox,
     * its own and the other's; one the other finishes later, that one
     * closes when it stops. */
    left = NULL;
    for (struct pool *p = ps->head; p; p = p->next) {
        while (p->head) {
            struct pbox *b = p->head;

            p->head = b->next;
            b->next = left;
            left = b;
        }
        p->tail = &p->head;
        p->n_ready = 0;
    }
    ps->n_ready = 0;
    pthread_mutex_unlock(&ps->lock);
    close_all(left);
    return NULL;
}

int pools_start(struct pools *ps, bool ready_default, struct sbx_error **err)
{
    int rc = 0;

    pthread_mutex_lock(&ps->lock);
    if (!ps->running && ps->rt->settings->pool_size > 0 && ps->rt->settings->pool_max > 0) {
        sigset_t all, old;
        int e = 0;

        ps->prime = ready_default;
        /* signals are the front end's (a server waits for SIGTERM in one
         * thread): none may be delivered to this one */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        while (ps->n_fillers < FILLERS &&
                (e = pthread_create(&ps->filler[ps->n_fillers], NULL, filler, ps)) == 0)
            ps->n_fillers++;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (ps->n_fillers > 0)
            ps->running = true;
        else
            rc = sbx_error_set(err, SBX_E_IO, e, "cannot start the pool's thread: %s", strerror(e));
    }
    pthread_mutex_unlock(&ps->lock);
    return rc;
}

int sbx_runtime_warm(struct sbx_runtime *rt, struct sbx_error **err)
{
    return pools_start(rt->pools, true, err);
}

void pools_free(struct pools *ps)
{
    struct pbox *gone = NULL;

    if (!ps)
        return;
    pthread_mutex_lock(&ps->lock);
    ps->stopping = true;
    pthread_cond_broadcast(&ps->wake);
    pthread_mutex_unlock(&ps->lock);
    for (unsigned i = 0; i < ps->n_fillers; i++)
        pthread_join(ps->filler[i], NULL);
    while (ps->head) {
        struct pool *p = ps->head;

        ps->head = p->next;
        while (p->zyg) { /* no run holds one: runs end before the runtime */
            struct pbox *b = p->zyg;

            p->zyg = b->next;
            b->next = gone;
            gone = b;
        }
        while (p->head) {
            struct pbox *b = p->head;

            p->head = b->next;
            b->next = gone;
            gone = b;
        }
        deps_close(p->warm);
        free(p);
    }
    close_all(gone);
    pthread_cond_destroy(&ps->wake);
    pthread_cond_destroy(&ps->zyg_ready);
    pthread_mutex_destroy(&ps->lock);
    free(ps);
}

/* Can this run use a pooled sandbox at all? A dependency set or a proxy
 * makes its sandbox unlike any other; the language's warm-up set, the same
 * for every run on one toolchain, is part of the kind. */
static bool poolable(const struct run *r)
{
    return !r->probe_argv && !r->sess && r->req->n_libraries == 0 &&
           r->n_mounts == (r->warm ? 1u : 0u) && !r->proxy_sock && !r->box_policy;
}

bool pool_take(struct run *r)
{
    struct pools *ps = r->rt->pools;
    struct pool *p;
    struct pbox *b = NULL;
    bool made;

    if (!ps || !poolable(r))
        return false;
    pthread_mutex_lock(&ps->lock);
    if (!ps->running || ps->stopping) {
        pthread_mutex_unlock(&ps->lock);
        return false;
    }
    /* the first run of a kind runs cold, and the next ones warm; a run
     * that finds its pool empty makes it bigger */
    p = pool_of(ps, r, &made);
    if (p && zygote_lend(ps, p, r)) {
        pthread_mutex_unlock(&ps->lock);
        return true;
    }
    if (p && !made && !p->head && !p->broken && p->want < ps->rt->settings->pool_size)
        p->want++;
    if (p) {
        p->used_ms = now_ms();
        if ((b = p->head)) {
            if (!(p->head = b->next))
                p->tail = &p->head;
            p->n_ready--;
            ps->n_ready--;
            /* its last one: refill ahead of the next call */
            if (!p->head && !p->broken && p->want < ps->rt->settings->pool_size)
                p->want++;
        }
        pthread_cond_broadcast(&ps->wake);
    }
    pthread_mutex_unlock(&ps->lock);
    if (!b)
        return false;
    r->box = b->r.box;
    r->ac = b->r.ac;
    r->prestarted = b->started;
    uid_lease_free(r->ids); /* the box's ids come with it */
    r->ids = b->r.ids;
    b->r.box = NULL;
    b->r.ac = NULL;
    b->r.ids = NULL;
    agentc_set_cancel(r->ac, r->req->cancel ? r->req->cancel->fd : -1, -1);
    pbox_free(b);
    return true;
}
