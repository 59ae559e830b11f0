/* SPDX-License-Identifier: MIT */
/*
 * loader.h: find, check and load every plugin into the runtime's registry
 * (loader.c has the rules), and unload them. Main thread only.
 */
#ifndef SBX_PLUGINS_LOADER_H
#define SBX_PLUGINS_LOADER_H

#include <llm-sandbox/sbx.h>

struct sbx_runtime;

/* Fills rt->plugins. A broken plugin is marked, never fatal: fails only
 * for errors of the tool (SBX_E_NOMEM) and bad configuration keys. */
int loader_load_all(struct sbx_runtime *rt, struct sbx_error **err);
void loader_unload_all(struct sbx_runtime *rt);

#endif
