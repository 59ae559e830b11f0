/* SPDX-License-Identifier: MIT */
/*
 * artifacts.h: the files a run leaves in its workspace (artifacts.c), and
 * the store that keeps a one-shot run's for a while. Private to the core.
 */
#ifndef SBX_ARTIFACTS_H
#define SBX_ARTIFACTS_H

#include <stddef.h>

#include <llm-sandbox/sbx.h>

struct run;
struct agentc_entry;
struct artifact_store;

struct artifact_store *artifact_store_new(void);
void artifact_store_free(struct artifact_store *st);
/* A MIME type by the file name's extension (static). */
const char *artifact_mime(const char *path);
void artifacts_free(struct sbx_artifact *a, size_t n);
/* The workspace before a session's call (0, or an enum agentc_end). */
int artifacts_snapshot(struct run *r, struct agentc_entry **ret, size_t *ret_n);
/* After the program ended: the new or changed files into r->ex (a
 * failure only loses them). */
void artifacts_collect(struct run *r, const struct agentc_entry *before, size_t n_before);

#endif
