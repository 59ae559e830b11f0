/* SPDX-License-Identifier: MIT */
/*
 * pool.h: warm one-shot runs (pool.c has the design): sandboxes of a kind
 * made before a run asks for one.
 */
#ifndef SBX_SESSIONS_POOL_H
#define SBX_SESSIONS_POOL_H

#include <stdbool.h>

#include <llm-sandbox/sbx.h>

struct pools;
struct run;
struct sbx_runtime;

/* Made with the runtime, idle until pools_start (a server's
 * sbx_runtime_warm); freeing it closes every ready box. */
struct pools *pools_new(struct sbx_runtime *rt);
int pools_start(struct pools *ps, bool ready_default, struct sbx_error **err);
void pools_free(struct pools *ps);

/* A ready box of the run's kind into r (r->box, r->ac, r->prestarted), or
 * its kind's zygote box, lent (r->zyg, r->box, r->ac; the run forks its
 * program from it and gives it back), or false: the run opens its own. */
bool pool_take(struct run *r);
/* Give a lent zygote box back: with a fresh workspace for the next run
 * when ok and that works, else it is closed (the filler makes another).
 * Clears r->zyg, r->box and r->ac. */
void pool_zygote_return(struct run *r, bool ok);

#endif
