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
 * its kind's zygote box, lent (r->zyg, r->box, r->ac; the run forks its
 * program from it and gives it back), or false: the run opens its own. */
bool pool_take(struct run *r);
/* Give a lent zygote box back: with a fresh workspace for the next run
 * when ok and that works, else it is closed (the filler makes another).
 * Clears r->zyg, r->box and r->ac. */
void pool_zygote_return(struct run *r, bool ok);
/* Where cgroups hold the limits, a lent zygote box's run gets a group of
 * its own with its limits. Before the FORK, pool_zygote_enter makes it
 * (r->zyg_cg) and moves the zygote into it, so that the child is born
 * there (and takes a cgroup namespace rooted there); the FORK holds the
 * isolated child, and pool_zygote_place (the agentc_hold_fn that
 * pool_zygote_hold returns; NULL where no cgroup holds the limits) moves
 * the zygote home and checks the child is in the group before it runs.
 * A failure of either: SBX_E_BACKEND (the run is refused, nothing ran) and
 * the kind gets no zygote boxes any more. */
agentc_hold_fn pool_zygote_hold(const struct run *r);
int pool_zygote_enter(struct run *r, struct sbx_error **err);
int pool_zygote_place(void *userdata, int32_t box_pid, char *why, size_t why_len);
/* After the run: its group's OOM and pids reports into st, then the group
 * is removed (what is left in it killed first; the zygote, if the fork
 * never got as far, moved home before). */
void pool_zygote_cgroup_end(struct run *r, struct sbx_box_stats *st);

#endif
