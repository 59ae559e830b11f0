/* SPDX-License-Identifier: MIT */
/*
 * config.c: read the optional YAML config file into a key -> value table.
 * yamltree.c builds the tree (caps: config.h); this file checks its shape
 * against the caller's idea of the keys and flattens each value to the
 * text the environment variable of that name would hold. It gives no value
 * a meaning (settings.c does, with the variable's own messages) and does no
 * I/O besides reading the one file. Error convention: error.h.
 */
#include "policy/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/dynbuf.h"
#include "base/error.h"
#include "base/util.h"
#include "base/yamltree.h"

static const struct yamltree_limits config_limits = {
        .max_bytes = CONFIG_MAX_BYTES,
        .max_depth = CONFIG_MAX_DEPTH,
        .max_items = 1024,
        .flags = YAMLTREE_UNIQUE_KEYS | YAMLTREE_ALLOW_EMPTY,
        .what = "config file",
};

static void tree_freep(struct yamltree_node **pn)
{
    yamltree_free(*pn);
}

static void config_freep(struct config **c)
{
    config_free(*c);
}

#define cleanup_tree   __attribute__((cleanup(tree_freep)))
#define cleanup_config __attribute__((cleanup(config_freep)))

static int oom(struct sbx_error **err)
{
    return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* An unknown key, with the spelling that would be known when only the
 * case is wrong ("backend" for BACKEND). */
static int unknown_key(const char *path, const struct yamltree_node *k, config_key_fn key_kind,
        struct sbx_error **err)
{
    char upper[64], buf[48];
    size_t i = 0;

    for (; k->value[i] && i + 1 < sizeof(upper); i++)
        upper[i] = (char)toupper((unsigned char)k->value[i]);
    upper[i] = '\0';
    if (!k->value[i] && strcmp(upper, k->value) != 0 && key_kind(upper) != CONFIG_KEY_UNKNOWN)
        return yamltree_error(err, path, k, "unknown key '%s' (keys are upper case: '%s')",
                yamltree_shown(k->value, buf), upper);
    return yamltree_error(err, path, k,
            "unknown key '%s' (keys are the environment variables listed in the README)",
            yamltree_shown(k->value, buf));
}

/* Values become one-line messages and environment-like text: no line
 * breaks (a quoted "\n" or a blank line in a plain scalar), tabs or other
 * control characters. */
static bool has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return true;
    }
    return false;
}

/* A sequence of non-empty one-line strings, joined with sep, none holding
 * sep. */
static int join_seq(const char *path, const char *key, const struct yamltree_node *seq, char sep,
        char **ret, struct sbx_error **err)
{
    struct dynbuf b;
    char buf[48];

    dynbuf_init(&b, CONFIG_MAX_BYTES);
    for (const struct yamltree_node *e = seq->first; e; e = e->next) {
        int r = 0;

        if (e->type != YAMLTREE_SCALAR)
            r = yamltree_error(err, path, e, "each entry of '%s' must be a string, not a %s", key,
                    yamltree_type_name(e->type));
        else if (!e->value[0] || strchr(e->value, sep) || has_control(e->value))
            r = yamltree_error(err, path, e,
                    "each entry of '%s' must be a non-empty line without '%c' ('%s')", key, sep,
                    yamltree_shown(e->value, buf));
        else if ((e != seq->first && dynbuf_append(&b, &sep, 1) < 0) ||
                 dynbuf_append_str(&b, e->value) < 0)
            r = oom(err);
        if (r < 0) {
            dynbuf_done(&b);
            return r;
        }
    }
    *ret = dynbuf_take(&b, NULL);
    return *ret ? 0 : oom(err);
}

/* Check one key and its value; fill e. */
static int read_entry(const char *path, const struct yamltree_node *k, config_key_fn key_kind,
        struct config_entry *e, struct sbx_error **err)
{
    const struct yamltree_node *v = k->next;
    int kind;

    if (k->type != YAMLTREE_SCALAR)
        return yamltree_error(
                err, path, k, "keys must be strings, not a %s", yamltree_type_name(k->type));
    kind = env_key_is_valid(k->value) ? key_kind(k->value) : CONFIG_KEY_UNKNOWN;
    if (kind == CONFIG_KEY_UNKNOWN)
        return unknown_key(path, k, key_kind, err);
    if (v->type == YAMLTREE_MAP || (v->type == YAMLTREE_SEQ && kind == CONFIG_KEY_SCALAR))
        return yamltree_error(err, path, v, "key '%s' must be %s, not a %s", k->value,
                kind == CONFIG_KEY_SCALAR ? "a string, number or boolean"
                                          : "a string or a sequence of strings",
                yamltree_type_name(v->type));
    if (v->type == YAMLTREE_SCALAR && !v->value[0])
        return yamltree_error(
                err, path, v, "key '%s' has no value (give one or remove the key)", k->value);
    if (v->type == YAMLTREE_SCALAR && has_control(v->value))
        return yamltree_error(err, path, v,
                "the value of '%s' must be one line without control characters", k->value);
    e->line = k->line;
    e->col = k->col;
    e->key = strdup(k->value);
    if (!e->key)
        return oom(err);
    if (v->type == YAMLTREE_SEQ)
        return join_seq(path, k->value, v, (char)kind, &e->value, err);
    e->value = strdup(v->value);
    return e->value ? 0 : oom(err);
}

int config_parse(const char *path, const char *data, size_t len, config_key_fn key_kind,
        struct config **ret, struct sbx_error **err)
{
    cleanup_tree struct yamltree_node *root = NULL;
    cleanup_config struct config *c = NULL;
    int r;

    if (!path || !key_kind || !ret || (!data && len > 0))
        return sbx_error_set(err, SBX_E_INVALID, 0, "config_parse: missing argument");
    r = yamltree_parse(path, data, len, &config_limits, &root, err);
    if (r < 0)
        return r;
    if (root && root->type != YAMLTREE_MAP)
        return yamltree_error(err, path, root, "the top level must be a mapping, not a %s",
                yamltree_type_name(root->type));
    c = calloc(1, sizeof(*c));
    if (!c || !(c->path = strdup(path)))
        return oom(err);
    if (root && root->n > 0) {
        c->entries = calloc(root->n / 2, sizeof(*c->entries));
        if (!c->entries)
            return oom(err);
        for (const struct yamltree_node *k = root->first; k; k = k->next->next) {
            r = read_entry(path, k, key_kind, &c->entries[c->n++], err);
            if (r < 0)
                return r;
        }
    }
    *ret = steal_ptr(&c);
    return 0;
}

int config_load(
        const char *path, config_key_fn key_kind, struct config **ret, struct sbx_error **err)
{
    cleanup_close int fd = -1;
    cleanup_free char *buf = NULL;
    size_t len = 0;
    int r;

    if (!path || !path[0])
        return sbx_error_set(err, SBX_E_INVALID, 0, "config file: empty path");
    /* O_NONBLOCK: a FIFO must not hang start-up before fstat refuses it. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return sbx_error_set(
                err, SBX_E_IO, errno, "cannot read config file '%s': %s", path, strerror(errno));
    r = yamltree_read_fd(fd, path, CONFIG_MAX_BYTES, &buf, &len, err);
    if (r < 0)
        return r;
    return config_parse(path, buf, len, key_kind, ret, err);
}

const struct config_entry *config_find(const struct config *c, const char *key)
{
    for (size_t i = 0; c && i < c->n; i++) {
        if (strcmp(c->entries[i].key, key) == 0)
            return &c->entries[i];
    }
    return NULL;
}

struct config *config_free(struct config *c)
{
    if (!c)
        return NULL;
    for (size_t i = 0; i < c->n; i++) {
        free(c->entries[i].key);
        free(c->entries[i].value);
    }
    free(c->entries);
    free(c->path);
    free(c);
    return NULL;
}
