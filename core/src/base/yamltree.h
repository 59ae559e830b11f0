/* SPDX-License-Identifier: MIT */
/*
 * yamltree.h: a small, strict YAML reader for the core's own files (plugin
 * manifests, the config file). libyaml's events become a tree of scalars,
 * sequences and mappings, each node with its 1-based line and column; a
 * schema is the caller's business. Refused with SBX_E_INVALID
 * "PATH:LINE:COLUMN: message": input over the byte cap, nesting over the
 * depth cap, collections over the item cap, aliases, anchors, tags, NUL
 * characters, invalid UTF-8, more than one document, and (on request)
 * duplicate mapping keys. Private to core/src.
 */
#ifndef SBX_YAMLTREE_H
#define SBX_YAMLTREE_H

#include <stddef.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

enum yamltree_type { YAMLTREE_SCALAR, YAMLTREE_SEQ, YAMLTREE_MAP };

struct yamltree_node {
    enum yamltree_type type;
    size_t line, col;                   /* 1-based, where the node starts */
    char *value;                        /* YAMLTREE_SCALAR: the text, NUL-free */
    struct yamltree_node *first, *last; /* children; a mapping alternates key, value */
    struct yamltree_node *next;         /* next sibling */
    size_t n;                           /* number of children (keys and values count apart) */
};

enum {
    /* Refuse a mapping key (scalar) that the same mapping already has. */
    YAMLTREE_UNIQUE_KEYS = 1u << 0,
    /* An empty stream (or comments only) is a NULL root, not an error. */
    YAMLTREE_ALLOW_EMPTY = 1u << 1,
};

struct yamltree_limits {
    size_t max_bytes;   /* input larger than this is refused */
    unsigned max_depth; /* collections nested deeper (the root is level 1) */
    size_t max_items;   /* children of one collection */
    unsigned flags;     /* YAMLTREE_* */
    const char *what;   /* the file in messages: "manifest", "config file" */
};

/*
 * Parse len bytes of UTF-8 YAML (data may be NULL when len is 0); path is
 * used in messages only. On success *ret_root is the one document's root
 * (transfer full), or NULL for an empty stream with YAMLTREE_ALLOW_EMPTY.
 * Errors: SBX_E_INVALID (with the location), SBX_E_NOMEM.
 */
int yamltree_parse(const char *path, const char *data, size_t len,
        const struct yamltree_limits *limits, struct yamltree_node **ret_root,
        struct sbx_error **err);
/* Frees n and its siblings and children; returns NULL. Accepts NULL. */
struct yamltree_node *yamltree_free(struct yamltree_node *n);

/* Set *err to SBX_E_INVALID "PATH:LINE:COLUMN: message" (message at most
 * 511 bytes); returns SBX_E_INVALID. */
int yamltree_error_at(struct sbx_error **err, const char *path, size_t line, size_t col,
        const char *fmt, ...) SBX_PRINTF(5, 6);
/* The same at node n's position. */
int yamltree_error(struct sbx_error **err, const char *path, const struct yamltree_node *n,
        const char *fmt, ...) SBX_PRINTF(4, 5);

/* "string", "sequence" or "mapping". */
const char *yamltree_type_name(enum yamltree_type t);
/* s made fit for a one-line message: printable ASCII, at most 40 bytes
 * then "...". Returns buf. */
const char *yamltree_shown(const char *s, char buf[static 48]);

/*
 * Read the regular file open at fd (path for messages) whole, at most
 * max_bytes. *ret_buf (transfer full) is NUL-terminated. Errors: SBX_E_IO
 * (read or fstat failed), SBX_E_INVALID (not a regular file, too large),
 * SBX_E_NOMEM.
 */
int yamltree_read_fd(int fd, const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len,
        struct sbx_error **err);

#endif
