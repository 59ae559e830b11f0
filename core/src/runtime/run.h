/* SPDX-License-Identifier: MIT */
/*
 * run.h: what the runtime's other files take from run.c besides sbx_run.
 */
#ifndef SBX_RUNTIME_RUN_H
#define SBX_RUNTIME_RUN_H

#include <llm-sandbox/sbx.h>

struct sbx_runtime;

/* Run argv (instead of a program) in a fresh sandbox of the default
 * backend with the language's environment; output capped at output_bytes
 * per stream (a language's version and libraries probes). */
int run_probe(struct sbx_runtime *rt, const char *language, char **argv, size_t output_bytes,
        struct sbx_execution **ret, struct sbx_error **err);

#endif
