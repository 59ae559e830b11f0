/* SPDX-License-Identifier: MIT */
/*
 * config.h: the optional YAML config file (--config FILE or
 * LLM_SANDBOX_CONFIG), read into a small key -> value table before any
 * plugin loads. Its keys are the environment variable names settings.c
 * reads, with scalar values; a list variable may also be a sequence, kept
 * as the joined text the variable would hold. settings.c decides which keys
 * exist and what their values mean; this file checks only the shape:
 * unknown keys, wrong types, empty values, duplicates, and everything
 * yamltree.h refuses, each as SBX_E_INVALID "FILE:LINE:COLUMN: message".
 * Private to core/src.
 */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stddef.h>

#include <llm-sandbox/sbx.h>

#define CONFIG_MAX_BYTES (64u * 1024u)
#define CONFIG_MAX_DEPTH 3

struct config_entry {
    char *key;
    char *value;      /* the scalar, or the sequence's entries joined */
    size_t line, col; /* of the key, for messages */
};

struct config {
    char *path; /* as given, for messages */
    struct config_entry *entries;
    size_t n;
};

/* What a key is, as the caller knows it: CONFIG_KEY_UNKNOWN, or
 * CONFIG_KEY_SCALAR, or a list variable whose value may also be a sequence
 * joined with the character returned (',' or ':'). */
enum { CONFIG_KEY_UNKNOWN = -1, CONFIG_KEY_SCALAR = 0 };
typedef int (*config_key_fn)(const char *key);

/* Parse len bytes (path is used in messages). (transfer full) Errors:
 * SBX_E_INVALID with the location, SBX_E_NOMEM. */
int config_parse(const char *path, const char *data, size_t len, config_key_fn key_kind,
        struct config **ret, struct sbx_error **err);
/* Read path (a regular file of at most CONFIG_MAX_BYTES; symlinks are
 * followed) and parse it. Adds SBX_E_IO when it cannot be read. */
int config_load(
        const char *path, config_key_fn key_kind, struct config **ret, struct sbx_error **err);
/* The entry for key, or NULL (also when c is NULL). (transfer none) */
const struct config_entry *config_find(const struct config *c, const char *key);
struct config *config_free(struct config *c); /* returns NULL */

#endif
