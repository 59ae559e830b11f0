/* SPDX-License-Identifier: MIT */
/*
 * buildcache.h: the compile cache (buildcache.c), used by the build step.
 */
#ifndef SBX_ENGINE_BUILDCACHE_H
#define SBX_ENGINE_BUILDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/sbx.h>

struct run;

/* Look the run's build up: 0, with r->build set (and r->ex->build_cached
 * when ready) where the cache applies; < 0 for errors of the tool. An
 * entry not ready is exclusively locked until buildcache_save keeps or
 * drops it. */
int buildcache_open(struct run *r, struct sbx_error **err);
/* Put a ready entry's outputs and diagnostics in place instead of
 * building: 0, an enum agentc_end, or SBX_E_IO (the entry is unusable:
 * build after all). */
int buildcache_replay(struct run *r, int64_t deadline);
/* Keep a successful build's outputs (out0/err0: where its output began in
 * the sink); a failure only loses the entry. */
void buildcache_save(struct run *r, size_t out0, size_t err0, int64_t deadline);

#endif
