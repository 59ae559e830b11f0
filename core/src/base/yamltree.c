/* SPDX-License-Identifier: MIT */
/*
 * yamltree.c: libyaml events -> a small tree of scalars, sequences and
 * mappings with line and column, for manifest.c and config.c. Knows no
 * schema: it refuses only what no file of ours may contain (aliases,
 * anchors, tags, NUL, invalid UTF-8, several documents, input or nesting
 * over the caller's caps). Every failure is SBX_E_INVALID
 * "PATH:LINE:COLUMN: message" or SBX_E_NOMEM. Contract: yamltree.h; error
 * convention: error.h.
 */
#include "base/yamltree.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "base/cleanup.h"
#include "base/error.h"

struct ctx {
    const char *path;
    const char *data;
    size_t len;
    const struct yamltree_limits *lim;
    struct sbx_error **err;
    yaml_parser_t parser;
    bool parser_ready;
};

static void tree_freep(struct yamltree_node **pn)
{
    yamltree_free(*pn);
}

static void event_deletep(yaml_event_t *ev)
{
    yaml_event_delete(ev);
}

static void ctx_donep(struct ctx *c)
{
    if (c->parser_ready)
        yaml_parser_delete(&c->parser);
}

#define cleanup_tree  __attribute__((cleanup(tree_freep)))
#define cleanup_event __attribute__((cleanup(event_deletep)))
#define cleanup_ctx   __attribute__((cleanup(ctx_donep)))

/* Recursion is bounded by the depth cap the tree was built with. */
struct yamltree_node *yamltree_free(struct yamltree_node *n)
{
    for (struct yamltree_node *next; n; n = next) {
        next = n->next;
        yamltree_free(n->first);
        free(n->value);
        free(n);
    }
    return NULL;
}

SBX_PRINTF(5, 0)
static int error_va(struct sbx_error **err, const char *path, size_t line, size_t col,
        const char *fmt, va_list ap)
{
    char msg[512];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    return sbx_error_set(err, SBX_E_INVALID, 0, "%s:%zu:%zu: %s", path, line, col, msg);
}

int yamltree_error_at(
        struct sbx_error **err, const char *path, size_t line, size_t col, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = error_va(err, path, line, col, fmt, ap);
    va_end(ap);
    return r;
}

int yamltree_error(struct sbx_error **err, const char *path, const struct yamltree_node *n,
        const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = error_va(err, path, n->line, n->col, fmt, ap);
    va_end(ap);
    return r;
}

const char *yamltree_type_name(enum yamltree_type t)
{
    static const char *const names[] = {"string", "sequence", "mapping"};

    return (unsigned)t < 3 ? names[t] : "node";
}

const char *yamltree_shown(const char *s, char buf[static 48])
{
    size_t i = 0;

    for (; s[i] && i < 40; i++)
        buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    if (s[i]) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

#define fail(c, line, col, ...) yamltree_error_at((c)->err, (c)->path, (line), (col), __VA_ARGS__)
#define node_fail(c, n, ...)    yamltree_error((c)->err, (c)->path, (n), __VA_ARGS__)
#define fail_ev(c, ev, ...)                                                                        \
    fail((c), (ev)->start_mark.line + 1, (ev)->start_mark.column + 1, __VA_ARGS__)

static int oom(struct ctx *c)
{
    return sbx_error_set(c->err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

static int syntax_error(struct ctx *c)
{
    const yaml_parser_t *p = &c->parser;
    size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;
    const char *problem = p->problem ? p->problem : "malformed input";

    if (p->error == YAML_MEMORY_ERROR)
        return oom(c);
    if (p->error == YAML_READER_ERROR) { /* reader errors carry a byte offset */
        size_t off = p->problem_offset < c->len ? p->problem_offset : c->len;

        line = 1;
        col = 1;
        for (size_t i = 0; i < off; i++) {
            col++;
            if (c->data[i] == '\n') {
                line++;
                col = 1;
            }
        }
    }
    if (p->context)
        return fail(c, line, col, "YAML syntax error: %s (%s)", problem, p->context);
    return fail(c, line, col, "YAML syntax error: %s", problem);
}

static int next_event(struct ctx *c, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&c->parser, ev))
        return syntax_error(c);
    return 0;
}

/* With YAMLTREE_UNIQUE_KEYS: a scalar key the mapping already holds. The
 * item cap keeps this small-quadratic. */
static int check_unique(
        struct ctx *c, const struct yamltree_node *map, const struct yamltree_node *key)
{
    char buf[48];

    if (!(c->lim->flags & YAMLTREE_UNIQUE_KEYS) || key->type != YAMLTREE_SCALAR)
        return 0;
    for (const struct yamltree_node *k = map->first; k && k->next; k = k->next->next) {
        if (k->type == YAMLTREE_SCALAR && strcmp(k->value, key->value) == 0)
            return node_fail(c, key, "duplicate key '%s'", yamltree_shown(key->value, buf));
    }
    return 0;
}

static int build_node(
        struct ctx *c, const yaml_event_t *ev, unsigned depth, struct yamltree_node **ret);

/* Read the children of a collection up to its end event. */
static int build_children(
        struct ctx *c, struct yamltree_node *n, yaml_event_type_t end, unsigned depth)
{
    for (;;) {
        cleanup_event yaml_event_t ev = {0};
        struct yamltree_node *child = NULL;
        int r = next_event(c, &ev);

        if (r < 0)
            return r;
        if (ev.type == end)
            return 0;
        if (n->n >= c->lim->max_items)
            return fail_ev(
                    c, &ev, "more than %zu entries in one sequence or mapping", c->lim->max_items);
        r = build_node(c, &ev, depth + 1, &child);
        if (r < 0)
            return r;
        if (n->type == YAMLTREE_MAP && n->n % 2 == 0)
            r = check_unique(c, n, child);
        if (r < 0) {
            yamltree_free(child);
            return r;
        }
        if (n->last)
            n->last->next = child;
        else
            n->first = child;
        n->last = child;
        n->n++;
    }
}

static int build_node(
        struct ctx *c, const yaml_event_t *ev, unsigned depth, struct yamltree_node **ret)
{
    cleanup_tree struct yamltree_node *n = NULL;
    enum yamltree_type type = YAMLTREE_SCALAR;
    yaml_event_type_t end = YAML_NO_EVENT;
    char buf[48];
    int r;

    if (ev->type == YAML_SEQUENCE_START_EVENT) {
        type = YAMLTREE_SEQ;
        end = YAML_SEQUENCE_END_EVENT;
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        type = YAMLTREE_MAP;
        end = YAML_MAPPING_END_EVENT;
    } else if (ev->type != YAML_SCALAR_EVENT) { /* an alias */
        return fail_ev(c, ev, "aliases and anchors are not allowed");
    }
    /* anchor and tag open all three members of the union (C17 6.5.2.3p6) */
    if (ev->data.scalar.anchor)
        return fail_ev(c, ev, "aliases and anchors are not allowed");
    if (ev->data.scalar.tag)
        return fail_ev(c, ev, "tags are not allowed ('%s')",
                yamltree_shown((const char *)ev->data.scalar.tag, buf));
    if (type != YAMLTREE_SCALAR && depth > c->lim->max_depth)
        return fail_ev(c, ev, "nesting deeper than %u levels", c->lim->max_depth);
    n = calloc(1, sizeof(*n));
    if (!n)
        return oom(c);
    n->type = type;
    n->line = ev->start_mark.line + 1;
    n->col = ev->start_mark.column + 1;
    if (type == YAMLTREE_SCALAR) {
        const char *v = (const char *)ev->data.scalar.value;

        if (strlen(v) != ev->data.scalar.length)
            return node_fail(c, n, "NUL characters are not allowed");
        n->value = strdup(v);
        if (!n->value)
            return oom(c);
    } else {
        r = build_children(c, n, end, depth);
        if (r < 0)
            return r;
    }
    *ret = steal_ptr(&n);
    return 0;
}

/* Exactly one document; the stream is read to its end, so trailing
 * garbage is a syntax error rather than ignored. */
static int parse_tree(struct ctx *c, struct yamltree_node **ret)
{
    cleanup_tree struct yamltree_node *root = NULL;

    for (;;) {
        cleanup_event yaml_event_t ev = {0};
        int r = next_event(c, &ev);

        if (r < 0)
            return r;
        if (ev.type == YAML_STREAM_END_EVENT)
            break;
        if (ev.type == YAML_DOCUMENT_START_EVENT && root)
            return fail_ev(c, &ev, "only one YAML document is allowed");
        if (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
                ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_ALIAS_EVENT) {
            r = build_node(c, &ev, 1, &root);
            if (r < 0)
                return r;
        }
    }
    if (!root && !(c->lim->flags & YAMLTREE_ALLOW_EMPTY))
        return fail(c, 1, 1, "the %s is empty", c->lim->what);
    *ret = steal_ptr(&root);
    return 0;
}

int yamltree_parse(const char *path, const char *data, size_t len,
        const struct yamltree_limits *limits, struct yamltree_node **ret_root,
        struct sbx_error **err)
{
    cleanup_ctx struct ctx c = {.path = path, .data = data, .len = len, .lim = limits, .err = err};

    if (!path || !limits || !ret_root || (!data && len > 0))
        return sbx_error_set(err, SBX_E_INVALID, 0, "yamltree_parse: missing argument");
    if (len > limits->max_bytes)
        return fail(&c, 1, 1, "the %s is larger than %zu bytes", limits->what, limits->max_bytes);
    if (!yaml_parser_initialize(&c.parser))
        return oom(&c);
    c.parser_ready = true;
    yaml_parser_set_encoding(&c.parser, YAML_UTF8_ENCODING);
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)(data ? data : ""), len);
    return parse_tree(&c, ret_root);
}

int yamltree_read_fd(int fd, const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len,
        struct sbx_error **err)
{
    cleanup_free char *buf = NULL;
    struct stat st;
    size_t len = 0;

    if (fstat(fd, &st) < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sbx_error_set(err, SBX_E_INVALID, 0, "%s: not a regular file", path);
    if ((uintmax_t)st.st_size > max_bytes)
        return sbx_error_set(err, SBX_E_INVALID, 0, "%s: larger than %zu bytes", path, max_bytes);
    buf = malloc(max_bytes + 1); /* one more byte shows the file grew */
    if (!buf)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    while (len < max_bytes + 1) {
        ssize_t n = read(fd, buf + len, max_bytes + 1 - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", path, strerror(errno));
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > max_bytes)
        return sbx_error_set(err, SBX_E_INVALID, 0, "%s: larger than %zu bytes", path, max_bytes);
    buf[len] = '\0';
    *ret_buf = steal_ptr(&buf);
    *ret_len = len;
    return 0;
}
