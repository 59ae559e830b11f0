/* SPDX-License-Identifier: MIT */
/*
 * deps.h: the dependency cache. A dependency set is what one language's
 * install steps put in /deps for one list of libraries, kept in
 * CACHE_DIR/deps/LANG-KEY, where KEY is the SHA-256 of the language, its
 * probed toolchain version, its install recipe and the sorted, de-duplicated
 * library list: the same request on the same toolchain finds the same set,
 * and no chosen list can name another's. Sets are built once (an exclusive
 * flock on LANG-KEY.lock; a second caller waits, then finds the set), used
 * under a shared lock (eviction takes the exclusive lock without waiting,
 * so a set in use is never removed), mounted read-only into sandboxes, and
 * owned by root when the server is root, so sandboxed code can never write
 * one. The least recently used sets are evicted past LLM_SANDBOX_CACHE_MAX.
 *
 * Everything in a set was written by untrusted code: the core walks it with
 * openat(O_NOFOLLOW) and never follows a link in it.
 */
#ifndef SBX_DEPS_H
#define SBX_DEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/sbx.h>

struct settings;

struct deps_set {
    char *dir;     /* CACHE/deps/LANG-KEY: the finished set */
    char *staging; /* CACHE/deps/.build-LANG-KEY, while this caller builds it */
    char *sock;    /* CACHE/deps/.proxy-KEY.sock: the install proxy's socket */
    int lock_fd;
    bool ready; /* dir is complete: mount it, install nothing */
};

/* Find the set or take the right to build it: ready with a shared lock, or
 * not ready with the exclusive lock and an empty staging directory owned
 * by uid/gid (the sandbox's, when root; -1: leave as is). Waits for a
 * concurrent builder up to wait_ms. (transfer full) */
int deps_open(const struct settings *s, const char *lang, const char *key, int64_t uid, int64_t gid,
        int64_t wait_ms, struct deps_set **ret, struct sbx_error **err);
/* The staging directory is complete: make it read-only to the sandbox
 * (root: owned by root, nothing group- or world-writable), record what it
 * holds, move it into place, keep a shared lock. */
int deps_commit(struct deps_set *d, const char *info_json, struct sbx_error **err);
/* A second handle on a ready set, for a sandbox made before its run: the
 * same shared lock (a duplicate of its descriptor), held until this one is
 * closed too. NULL when d is not ready or out of memory or descriptors. */
struct deps_set *deps_share(const struct deps_set *d);
/* Release the lock; remove the staging directory if the build failed. */
struct deps_set *deps_close(struct deps_set *d);

/* Bytes a directory tree takes (files' blocks), without following links;
 * stops counting past limit. */
uint64_t deps_tree_bytes(const char *path, uint64_t limit);
/* Read a regular file of the set (no links, at most max bytes). */
int deps_read_file(const struct deps_set *d, const char *name, size_t max, char **ret_data,
        size_t *ret_len, struct sbx_error **err);
/* Remove least recently used sets not in use until all of them fit in
 * s->cache_max_bytes. Returns how many were removed. */
int deps_evict(const struct settings *s);

/* A thread that kills an install (through kill(arg)) once its staging
 * directory grows past limit bytes. */
struct deps_watch;
struct deps_watch *deps_watch_start(
        const char *dir, uint64_t limit, void (*kill)(void *arg), void *arg);
/* Stop it; true when it had to kill. */
bool deps_watch_stop(struct deps_watch *w);

#endif
