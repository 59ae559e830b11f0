/* SPDX-License-Identifier: MIT */
/*
 * install.h: the sets a run mounts, built on demand in boxes of their own
 * through the engine's steps: the request's libraries (install.c) and the
 * language's warm-up set (warm.c). The sets themselves live in the cache
 * (cache/deps.h).
 */
#ifndef SBX_INSTALL_INSTALL_H
#define SBX_INSTALL_INSTALL_H

#include <llm-sandbox/sbx.h>

struct run;

/* The request's libraries: 0 to go on with the set mounted; 1 when the
 * result is decided (the install failed or was refused: r->ex says why);
 * < 0 for errors of the tool. */
int prepare_libraries(struct run *r, struct sbx_error **err);
/* The language's warm-up set: 0 with or without it (a failed warm-up
 * costs speed, not the run); < 0 for errors of the tool. */
int prepare_warm(struct run *r, struct sbx_error **err);

#endif
