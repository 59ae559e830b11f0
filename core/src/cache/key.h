/* SPDX-License-Identifier: MIT */
/*
 * key.h: what the cache's keys are made of. Every entry (a dependency set,
 * a warm-up set, a compile-cache entry) is named by the SHA-256 of
 * everything that decides its contents, each field tagged and
 * length-prefixed so no two field lists hash alike. The toolchain is
 * identified without running it (cache_toolchain_id).
 */
#ifndef SBX_CACHE_KEY_H
#define SBX_CACHE_KEY_H

#include <limits.h>
#include <nettle/sha2.h>
#include <stddef.h>

struct manifest;
struct manifest_install;

#define CACHE_TOOL_MAX (PATH_MAX + 96) /* room for cache_toolchain_id */

/* Add one tagged field of len bytes to a key being made. */
void cache_key_field(struct sha256_ctx *md, const char *tag, const void *data, size_t len);
/* Finish a key: 64 lowercase hex digits and a NUL into out. */
void cache_key_hex(struct sha256_ctx *md, char out[65]);

/* The language's toolchain without running it: its first required binary
 * (else its version command), found along the language's PATH, by path,
 * device, inode, size and modification time (an upgrade changes them), or
 * "NAME (not found)". */
void cache_toolchain_id(const struct manifest *m, char *out, size_t len);

/* A dependency set's key: the language, its version, its install recipe
 * and the libraries, sorted and de-duplicated first. 0, or SBX_E_NOMEM. */
int deps_key(const char *lang, const char *version, const struct manifest_install *in,
        char *const *libs, size_t n_libs, char out[65]);

#endif
