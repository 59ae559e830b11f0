/* SPDX-License-Identifier: MIT */
/*
 * host_table.h: the host table (struct sbx_host) the core lends each
 * plugin (host_table.c), and the backend probe made once through it.
 */
#ifndef SBX_PLUGINS_HOST_TABLE_H
#define SBX_PLUGINS_HOST_TABLE_H

#include <llm-sandbox/sbx.h>

struct host_ctx;
struct plugin;
struct sbx_runtime;

/* Fill hc for plugin pl of runtime rt. */
void host_init(struct host_ctx *hc, struct sbx_runtime *rt, struct plugin *pl);
/* Run the backend's probe once (pl->caps, pl->agent_filter); later calls
 * return the cached result. Thread-safe. (registry.c, for every platform) */
int backend_probe(struct sbx_runtime *rt, struct plugin *pl, struct sbx_error **err);
/* What this platform's host adds to a backend's controls after its probe
 * succeeded, under pl->probe_lock: host_table.c the agent's seccomp filter,
 * platform/win_host.c nothing. */
void host_probe_caps(struct plugin *pl);

#endif
