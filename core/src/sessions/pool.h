/* SPDX-License-Identifier: MIT */
/*
 * pool.h: warm one-shot runs (pool.c has the design): sandboxes of a kind
 * made before a run asks for one.
 */
#ifndef SBX_SESSIONS_POOL_H
#define SBX_SESSIONS_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

#include "channel/agentc.h"

struct pools;
struct run;
struct sbx_runtime;
struct sbx_error;

/* Made with the runtime, idle until pools_start (a server's
 * sbx_runtime_warm); freeing it closes every ready box. */
struct pools *pools_new(struct sbx_runtime *rt);
int pools_start(struct pools *ps, bool ready_default, struct sbx_error **err);
void pools_free(struct pools *ps);

/* A ready box of the run's kind into r (r->box, r->ac, r->prestarted), or
 * its kind's zygote box, lent (r->zyg, r->box, r->ac, and where cgroups
 * hold the limits r->zyg_cg, the run's group with its prepared child in
 * it; the run forks its program from it and gives it back), or false: the
 * run opens its own. */
bool pool_take(struct run *r);
/* Give a lent zygote box back: when ok a filler makes it ready for the
 * next run (a fresh workspace, a child prepared), else it is closed (the
 * filler makes another). Clears r->zyg, r->box and r->ac. */
void pool_zygote_return(struct run *r, bool ok);
/* Before the run's FORK: a lent zygote box that no filler had made ready
 * yet (it was given back moments ago), made ready by the run itself: a
 * fresh workspace, the run's child prepared (and placed). 0 when it was
 * ready, or is now; else *err says why (nothing of the run ran). */
int pool_zygote_ready(struct run *r, struct sbx_error **err);
/* After the run: its group's OOM and pids reports into st, then the group
 * is removed (what is left in it killed first). */
void pool_zygote_cgroup_end(struct run *r, struct sbx_box_stats *st);

#endif
