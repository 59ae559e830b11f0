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
struct sbx_runtime;
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
/* The path of a URI's tail ("a%20b.png"), percent-decoded; NULL when
 * malformed or out of memory. (transfer full) */
char *artifact_uri_path(const char *s);
/* A kept one-shot run's file by the rest of its URI after
 * "sandbox://runs/" ("ID/files/PATH"), for the owner of the run's request
 * (NULL is ""): 0 with a copy, 1 when there is none (expired, never kept,
 * another owner's), or < 0. *ret_mime is static. */
int artifacts_read_run(struct sbx_runtime *rt, const char *owner, const char *rest, char **ret,
        size_t *ret_len, const char **ret_mime, struct sbx_error **err);

#endif
