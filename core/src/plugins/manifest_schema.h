/* SPDX-License-Identifier: MIT */
/*
 * manifest_schema.h: how a manifest's mappings are read, private to
 * manifest.c and manifest_lang.c: a table of key descriptions per mapping
 * (manifest_schema.c applies one), each key's value checked by its rule
 * or stored by its own function, every failure "FILE:LINE:COLUMN:
 * message".
 */
#ifndef SBX_PLUGINS_MANIFEST_SCHEMA_H
#define SBX_PLUGINS_MANIFEST_SCHEMA_H

#include <stddef.h>

#include <llm-sandbox/sbx.h>

#include "base/yamltree.h"
#include "plugins/manifest_rules.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct manifest_lang;

struct manifest_ctx {
    const char *path;
    struct sbx_error **err;
};

/* Custom handling of a value; obj is the struct the schema fills. */
typedef int (*store_fn)(struct manifest_ctx *c, const struct yamltree_node *n, void *obj);

enum { KEY_REQUIRED = 1 << 0, KEY_NONEMPTY = 1 << 1 };

/* One key of a mapping. Without store, a scalar is checked and copied to
 * the char * at offset, a sequence of scalars to the char ** at offset. */
struct key_desc {
    const char *key;
    enum yamltree_type type;
    unsigned flags;
    size_t offset;
    enum manifest_rule rule; /* for the scalar, or each entry of the sequence */
    store_fn store;
};

#define fail_at(c, n, ...) yamltree_error((c)->err, (c)->path, (n), __VA_ARGS__)

/* SBX_E_NOMEM, set in c's error. */
int manifest_oom(struct manifest_ctx *c);
/* Read mapping map into obj by keys (fewer than 32): unknown, duplicate,
 * mistyped or missing required keys and bad values fail. */
int manifest_apply_schema(struct manifest_ctx *c, const struct yamltree_node *map,
        const struct key_desc *keys, size_t n_keys, void *obj);

/* manifest_lang.c: the language: mapping into ((struct manifest *)obj)->lang,
 * and freeing it. */
int manifest_store_language(struct manifest_ctx *c, const struct yamltree_node *n, void *obj);
void manifest_lang_free(struct manifest_lang *l);

#endif
