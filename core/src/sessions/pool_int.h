/* SPDX-License-Identifier: MIT */
/*
 * pool_int.h: what pool.c (ready sandboxes) and pool_zygote.c (zygote
 * boxes) share: the registry of kinds and its boxes, all under
 * pools.lock. Private to core/src/sessions/.
 */
#ifndef SBX_SESSIONS_POOL_INT_H
#define SBX_SESSIONS_POOL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

#define FAIL_MAX 3 /* failures in a row that end a kind's warm path */
/* how long a run waits for a zygote box a filler is making ready (a fresh
 * workspace and its next child: a few ms) before it goes without */
#define ZYG_WAIT_MS 2000
#define FILLERS     2 /* threads that make sandboxes */

/* One ready sandbox: the engine state of the run that opened it. */
struct pbox {
    struct pbox *next;
    struct run r;
    struct sbx_request req;
    struct sbx_execution ex;
    bool started; /* its interpreter waits for the go */
    int64_t made_ms;
    /* a zygote box (pool_zygote.c): busy while lent to a run, and after it
     * until made ready again (stale: waiting for a filler; refreshing: one
     * is at it); cg: where cgroups hold the limits, the group its prepared
     * child is in, the next run's */
    bool busy, stale, refreshing;
    struct cg_group *cg;
};

/* The ready sandboxes of one kind. Only a filler thread frees a pool, and
 * only while no thread fills it. */
struct pool {
    struct pool *next;
    struct plugin *backend, *lang;
    struct sbx_policy policy; /* the first run's; kinds compare without time and output */
    struct deps_set *warm;    /* the language's warm-up set, mounted at /warm, or NULL */
    struct pbox *head, **tail;
    unsigned n_ready, filling, want;
    int64_t used_ms;
    unsigned failed;  /* sandboxes that could not be made in a row */
    int64_t retry_ms; /* after a failure: not before then */
    bool broken;      /* FAIL_MAX failed in a row: cold runs until emptied */
    /* its zygote boxes (LLM_SANDBOX_ZYGOTE, pool_zygote.c) */
    struct pbox *zyg; /* a list through next; lent ones stay on it, busy */
    unsigned n_zyg, zyg_filling, zyg_want, zyg_failed;
    bool zyg_broken;
    int64_t zyg_retry_ms;
};

struct pools {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t zyg_ready; /* a zygote box was made ready, or closed */
    struct pool *head;
    unsigned n_ready, filling; /* all pools */
    bool running, stopping, prime;
    pthread_t filler[FILLERS];
    unsigned n_fillers;
    struct sbx_runtime *rt;
};

/* pool.c */
/* A new sandbox of p's kind (a zygote box when zygote): NULL with err set
 * when it could not be made. Runs without the lock. */
struct pbox *pbox_make(struct pools *ps, struct pool *p, bool zygote, struct sbx_error **err);
void pbox_free(struct pbox *b);

/* pool_zygote.c, each under the lock */
/* Make one zygote box where a kind wants one more (the lock is dropped
 * meanwhile). True when it tried. */
bool zygote_fill(struct pools *ps);
/* The free zygote boxes of p that waited too long, or all free ones of a
 * kind no longer used, onto *gone. */
void zygote_drop(struct pools *ps, struct pool *p, struct pbox **gone);
/* Lend one of p's zygote boxes to r (r->zyg, r->box, r->ac): true when
 * one was free and the run fits. */
bool zygote_lend(struct pools *ps, struct pool *p, struct run *r);

#endif
