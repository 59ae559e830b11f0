/* SPDX-License-Identifier: MIT */
/*
 * manifest_schema.c: the table-driven reading of one manifest mapping
 * (manifest_schema.h): known keys only, each once, of the right type,
 * scalars checked against their rule (manifest_rules.c) and copied, or
 * handed to the key's own store function.
 */
#include "plugins/manifest_schema.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/yamltree.h"
#include "plugins/manifest_rules.h"

int manifest_oom(struct manifest_ctx *c)
{
    return sbx_error_set(c->err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* A sequence of scalars into a fresh NULL-terminated vector at *dst. */
static int store_strv(struct manifest_ctx *c, const struct key_desc *d,
        const struct yamltree_node *seq, char ***dst)
{
    size_t i = 0;

    if ((d->flags & KEY_NONEMPTY) && seq->n == 0)
        return fail_at(c, seq, "key '%s' must not be an empty sequence", d->key);
    *dst = calloc(seq->n + 1, sizeof(**dst)); /* owned by obj from here on */
    if (!*dst)
        return manifest_oom(c);
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        const char *why;

        if (e->type != YAMLTREE_SCALAR)
            return fail_at(c, e, "each entry of '%s' must be a string, not a %s", d->key,
                    yamltree_type_name(e->type));
        why = manifest_check_value(d->rule, e->value);
        if (why)
            return fail_at(c, e, "each entry of '%s' must be %s", d->key, why);
        (*dst)[i] = strdup(e->value);
        if (!(*dst)[i])
            return manifest_oom(c);
    }
    return 0;
}

static int store_value(
        struct manifest_ctx *c, const struct key_desc *d, const struct yamltree_node *v, void *obj)
{
    void *dst = (char *)obj + d->offset;
    char **s = dst;
    const char *why;

    if (v->type != d->type)
        return fail_at(c, v, "key '%s' must be a %s, not a %s", d->key, yamltree_type_name(d->type),
                yamltree_type_name(v->type));
    if (d->store)
        return d->store(c, v, obj);
    if (d->type != YAMLTREE_SCALAR)
        return store_strv(c, d, v, dst);
    why = manifest_check_value(d->rule, v->value);
    if (why)
        return fail_at(c, v, "key '%s' must be %s", d->key, why);
    *s = strdup(v->value);
    return *s ? 0 : manifest_oom(c);
}

int manifest_apply_schema(struct manifest_ctx *c, const struct yamltree_node *map,
        const struct key_desc *keys, size_t n_keys, void *obj)
{
    uint32_t seen = 0; /* tables have fewer than 32 keys */
    char buf[48];

    for (const struct yamltree_node *k = map->first; k; k = k->next->next) {
        size_t i = 0;
        int r;

        if (k->type != YAMLTREE_SCALAR)
            return fail_at(
                    c, k, "mapping keys must be strings, not a %s", yamltree_type_name(k->type));
        while (i < n_keys && strcmp(keys[i].key, k->value) != 0)
            i++;
        if (i == n_keys)
            return fail_at(c, k, "unknown key '%s'", yamltree_shown(k->value, buf));
        if (seen & (UINT32_C(1) << i))
            return fail_at(c, k, "duplicate key '%s'", keys[i].key);
        seen |= UINT32_C(1) << i;
        r = store_value(c, &keys[i], k->next, obj);
        if (r < 0)
            return r;
    }
    for (size_t i = 0; i < n_keys; i++) {
        if ((keys[i].flags & KEY_REQUIRED) && !(seen & (UINT32_C(1) << i)))
            return fail_at(c, map, "missing required key '%s'", keys[i].key);
    }
    return 0;
}
