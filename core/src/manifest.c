/* SPDX-License-Identifier: MIT */
/*
 * manifest.c: read a plugin manifest (NAME.yaml) into struct manifest.
 * libyaml's event API builds a small tree (scalars, sequences, mappings, each
 * with its 1-based line and column); a schema table per mapping then checks
 * keys, types and values and stores them. Anything unknown or malformed is
 * SBX_E_INVALID "FILE:LINE:COLUMN: message" (fail closed, STYLE E6). Never
 * opens a library and never follows a symlink. Caps: manifest.h; format:
 * docs/plugins.md; error convention: error.h.
 */
#include "manifest.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "cleanup.h"
#include "error.h"
#include "util.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* Children of one sequence or mapping (keys and values count apart); keeps
 * every later pass linear or small-quadratic on hostile input. */
#define MAX_ITEMS  1024
#define FILE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-"
#define DIGITS     "0123456789"

enum node_type { NODE_SCALAR, NODE_SEQ, NODE_MAP };

struct node {
    enum node_type type;
    size_t line, col;
    char *value;               /* NODE_SCALAR */
    struct node *first, *last; /* children; a mapping alternates key and value */
    struct node *next;
    size_t n; /* number of children */
};

struct ctx {
    const char *path;
    const char *data;
    size_t len;
    struct sbx_error **err;
    yaml_parser_t parser;
    bool parser_ready;
};

/* Custom handling of a value; obj is the struct the schema fills. */
typedef int (*store_fn)(struct ctx *c, const struct node *n, void *obj);

enum rule {
    R_ANY,
    R_NAME,
    R_VERSION,
    R_DOTTED,
    R_LIBRARY,
    R_FILE,
    R_EXTENSION,
    R_DESCRIPTION,
    R_PATH,
    R_COMMAND,
    R_KERNEL,
    R_TEMPLATE,
    R_IMAGE,
    R_REGEX,
};

enum { KEY_REQUIRED = 1 << 0, KEY_NONEMPTY = 1 << 1 };

/* One key of a mapping. Without store, a scalar is checked and copied to
 * the char * at offset, a sequence of scalars to the char ** at offset. */
struct key_desc {
    const char *key;
    enum node_type type;
    unsigned flags;
    size_t offset;
    enum rule rule; /* for the scalar, or each entry of the sequence */
    store_fn store;
};

/* Frees *pn and its siblings; recursion is bounded by MANIFEST_MAX_DEPTH. */
static void node_freep(struct node **pn)
{
    for (struct node *n = *pn, *next; n; n = next) {
        next = n->next;
        node_freep(&n->first);
        free(n->value);
        free(n);
    }
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

static void manifest_freep(struct manifest **m)
{
    manifest_free(*m);
}

#define cleanup_tree     __attribute__((cleanup(node_freep)))
#define cleanup_event    __attribute__((cleanup(event_deletep)))
#define cleanup_ctx      __attribute__((cleanup(ctx_donep)))
#define cleanup_manifest __attribute__((cleanup(manifest_freep)))

SBX_PRINTF(4, 5) static int fail(struct ctx *c, size_t line, size_t col, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sbx_error_set(c->err, SBX_E_INVALID, 0, "%s:%zu:%zu: %s", c->path, line, col, msg);
}

#define fail_at(c, n, ...) fail((c), (n)->line, (n)->col, __VA_ARGS__)
#define fail_ev(c, ev, ...)                                                                        \
    fail((c), (ev)->start_mark.line + 1, (ev)->start_mark.column + 1, __VA_ARGS__)

static int oom(struct ctx *c)
{
    return sbx_error_set(c->err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* A user string fit for a one-line message: printable ASCII, 40 bytes. */
static const char *shown(const char *s, char buf[static 48])
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

static const char *type_name(enum node_type t)
{
    static const char *const names[] = {"string", "sequence", "mapping"};

    return names[t];
}

/* ---- YAML events -> tree ---- */

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

static int build_node(struct ctx *c, const yaml_event_t *ev, unsigned depth, struct node **ret);

/* Read the children of a collection up to its end event. */
static int build_children(struct ctx *c, struct node *n, yaml_event_type_t end, unsigned depth)
{
    for (;;) {
        cleanup_event yaml_event_t ev = {0};
        struct node *child = NULL;
        int r = next_event(c, &ev);

        if (r < 0)
            return r;
        if (ev.type == end)
            return 0;
        if (n->n >= MAX_ITEMS)
            return fail_ev(c, &ev, "more than %d entries in one sequence or mapping", MAX_ITEMS);
        r = build_node(c, &ev, depth + 1, &child);
        if (r < 0)
            return r;
        if (n->last)
            n->last->next = child;
        else
            n->first = child;
        n->last = child;
        n->n++;
    }
}

static int build_node(struct ctx *c, const yaml_event_t *ev, unsigned depth, struct node **ret)
{
    cleanup_tree struct node *n = NULL;
    enum node_type type = NODE_SCALAR;
    yaml_event_type_t end = YAML_NO_EVENT;
    char buf[48];
    int r;

    if (ev->type == YAML_SEQUENCE_START_EVENT) {
        type = NODE_SEQ;
        end = YAML_SEQUENCE_END_EVENT;
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        type = NODE_MAP;
        end = YAML_MAPPING_END_EVENT;
    } else if (ev->type != YAML_SCALAR_EVENT) { /* an alias */
        return fail_ev(c, ev, "aliases and anchors are not allowed");
    }
    /* anchor and tag open all three members of the union (C17 6.5.2.3p6) */
    if (ev->data.scalar.anchor)
        return fail_ev(c, ev, "aliases and anchors are not allowed");
    if (ev->data.scalar.tag)
        return fail_ev(c, ev, "tags are not allowed ('%s')",
                shown((const char *)ev->data.scalar.tag, buf));
    if (type != NODE_SCALAR && depth > MANIFEST_MAX_DEPTH)
        return fail_ev(c, ev, "nesting deeper than %d levels", MANIFEST_MAX_DEPTH);
    n = calloc(1, sizeof(*n));
    if (!n)
        return oom(c);
    n->type = type;
    n->line = ev->start_mark.line + 1;
    n->col = ev->start_mark.column + 1;
    if (type == NODE_SCALAR) {
        const char *v = (const char *)ev->data.scalar.value;

        if (strlen(v) != ev->data.scalar.length)
            return fail_at(c, n, "NUL characters are not allowed");
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
static int parse_tree(struct ctx *c, struct node **ret)
{
    cleanup_tree struct node *root = NULL;

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
    if (!root)
        return fail(c, 1, 1, "the manifest is empty");
    *ret = steal_ptr(&root);
    return 0;
}

/* ---- value checks ---- */

/* 1 to 4 dot-separated components of 1 to 9 digits; the end, or NULL. */
static const char *scan_dotted(const char *s)
{
    for (int i = 0; i < 4; i++) {
        size_t d = strspn(s, DIGITS);

        if (d == 0 || d > 9)
            return NULL;
        s += d;
        if (*s++ != '.')
            return s - 1;
    }
    return NULL;
}

/* min..max bytes of [A-Za-z0-9._+-]. */
static bool is_word(const char *s, size_t min, size_t max)
{
    size_t len = strlen(s);

    return len >= min && len <= max && strspn(s, FILE_CHARS) == len;
}

static bool is_version(const char *s)
{
    const char *e = scan_dotted(s);

    if (!e || strlen(s) > 64)
        return false;
    return *e == '\0' ||
           ((*e == '-' || *e == '+') && isalnum((unsigned char)e[1]) && is_word(e + 1, 1, 64));
}

/* One line of 1 to 500 characters (UTF-8 lead bytes). */
static bool is_description(const char *s)
{
    size_t chars = 0;

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return false;
        chars += (*p & 0xC0) != 0x80;
    }
    return chars >= 1 && chars <= 500;
}

static const char *check_path(const char *s)
{
    if (s[0] != '/' || strlen(s) > 4096)
        return "an absolute path";
    for (const char *p = s; p; p = strchr(p + 1, '/')) {
        if (strncmp(p, "/..", 3) == 0 && (p[3] == '/' || p[3] == '\0'))
            return "a path without '..' components";
    }
    return NULL;
}

/* Argv templates: every '{' opens a placeholder {name}, name [a-z_]+. */
static bool is_template(const char *s)
{
    for (const char *p = strchr(s, '{'); p; p = strchr(p, '{')) {
        size_t n = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_");

        if (n == 0 || p[n + 1] != '}')
            return false;
        p += n + 2;
    }
    return true;
}

static bool is_image(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= 0x20 || *p == 0x7f)
            return false;
    }
    return s[0] && strlen(s) <= 255;
}

static const char *check_regex(const char *s)
{
    regex_t re;
    size_t groups;

    if (strlen(s) > 256)
        return "a regular expression of at most 256 bytes";
    /* glibc expands nested {m,n} when compiling: ((a{1,255}){1,255}){1,255}
     * takes minutes and gigabytes. Version patterns do without them. */
    if (strchr(s, '{'))
        return "a regular expression without {m,n} intervals (use +, * or ?)";
    if (regcomp(&re, s, REG_EXTENDED) != 0)
        return "a valid POSIX extended regular expression";
    groups = re.re_nsub;
    regfree(&re);
    return groups >= 1 ? NULL : "a regular expression with at least one group, like ([0-9.]+)";
}

/* NULL when s is valid, else what it must be (the end of "key 'x' must be ..."). */
static const char *check_value(enum rule rule, const char *s)
{
    const char *e;

    switch (rule) {
    case R_ANY: return NULL;
    case R_NAME: return name_is_valid(s) ? NULL : "a name matching [a-z][a-z0-9_]{0,31}";
    case R_VERSION:
        return is_version(s) ? NULL : "a string like 1.2.3 (1 to 4 numbers, then -rc1 or +git)";
    case R_DOTTED: e = scan_dotted(s); return e && *e == '\0' ? NULL : "dotted numbers like 1.2.3";
    case R_LIBRARY:
        if (is_word(s, 4, 64) && s[0] != '.' && strcmp(s + strlen(s) - 3, ".so") == 0)
            return NULL;
        return "a file name ending in '.so' (no '/', not starting with '.', at most 64 bytes)";
    case R_FILE:
        if (is_word(s, 1, 64) && !strstr(s, "..") && strcmp(s, ".") != 0)
            return NULL;
        return "a file name of at most 64 bytes of [A-Za-z0-9._+-] (no '/', no '..')";
    case R_EXTENSION:
        return s[0] == '.' && is_word(s, 2, 16) ? NULL : "a file extension like '.py'";
    case R_DESCRIPTION: return is_description(s) ? NULL : "one line of 1 to 500 characters";
    case R_PATH: return check_path(s);
    case R_COMMAND:
        if (s[0] == '/')
            return check_path(s);
        if (is_word(s, 1, 255) && strcmp(s, ".") != 0 && strcmp(s, "..") != 0)
            return NULL;
        return "an absolute path or a command name of [A-Za-z0-9._+-]";
    case R_KERNEL:
        if (strcmp(s, "user_namespaces") == 0 || strcmp(s, "seccomp") == 0 ||
                strcmp(s, "cgroups") == 0)
            return NULL;
        return "one of user_namespaces, seccomp, cgroups";
    case R_TEMPLATE:
        return is_template(s) ? NULL : "an argument whose '{' starts a placeholder like {name}";
    case R_IMAGE: return is_image(s) ? NULL : "an image name of 1 to 255 bytes without spaces";
    case R_REGEX: return check_regex(s);
    }
    return "valid";
}

/* ---- schema ---- */

static int apply_schema(struct ctx *c, const struct node *map, const struct key_desc *keys,
        size_t n_keys, void *obj);

static int store_kind(struct ctx *c, const struct node *n, void *obj)
{
    struct manifest *m = obj;

    if (strcmp(n->value, "backend") == 0)
        m->kind = SBX_KIND_BACKEND;
    else if (strcmp(n->value, "language") == 0)
        m->kind = SBX_KIND_LANGUAGE;
    else
        return fail_at(c, n, "key 'kind' must be 'backend' or 'language'");
    return 0;
}

/* YAML may read 1.0 as a float; the scalar's text is what counts. The
 * strspn excludes the signs and spaces that sscanf would skip. */
static int store_abi(struct ctx *c, const struct node *n, void *obj)
{
    struct manifest *m = obj;
    unsigned major, minor;
    int end = 0;

    if (strspn(n->value, DIGITS ".") != strlen(n->value) ||
            sscanf(n->value, "%9u.%9u%n", &major, &minor, &end) != 2 || n->value[end] != '\0')
        return fail_at(c, n, "key 'abi' must be a string like \"1.0\" (MAJOR.MINOR)");
    m->abi_major = major;
    m->abi_minor = minor;
    return 0;
}

static const struct key_desc binary_keys[] = {
        {"name", NODE_SCALAR, KEY_REQUIRED, offsetof(struct manifest_binary, name), R_COMMAND,
                NULL},
        {"min_version", NODE_SCALAR, 0, offsetof(struct manifest_binary, min_version), R_DOTTED,
                NULL},
};

static int store_binaries(struct ctx *c, const struct node *seq, void *obj)
{
    struct manifest *m = obj;
    size_t i = 0;

    if (seq->n == 0)
        return 0;
    m->binaries = calloc(seq->n, sizeof(*m->binaries));
    if (!m->binaries)
        return oom(c);
    m->n_binaries = seq->n;
    for (const struct node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != NODE_MAP)
            return fail_at(c, e, "each entry of 'binaries' must be a mapping, not a %s",
                    type_name(e->type));
        r = apply_schema(c, e, binary_keys, ARRAY_SIZE(binary_keys), &m->binaries[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static const struct key_desc requires_keys[] = {
        {"binaries", NODE_SEQ, 0, 0, R_ANY, store_binaries},
        {"kernel", NODE_SEQ, 0, offsetof(struct manifest, kernel_features), R_KERNEL, NULL},
};

static int store_requires(struct ctx *c, const struct node *n, void *obj)
{
    return apply_schema(c, n, requires_keys, ARRAY_SIZE(requires_keys), obj);
}

static bool env_has(char *const *env, const char *key)
{
    size_t len = strlen(key);

    for (size_t i = 0; env[i]; i++) {
        if (strncmp(env[i], key, len) == 0 && env[i][len] == '=')
            return true;
    }
    return false;
}

/* env: KEY: value pairs, kept in order as "KEY=VALUE". */
static int store_env(struct ctx *c, const struct node *map, void *obj)
{
    struct manifest_lang *l = obj;
    size_t i = 0;
    char buf[48];

    l->env = calloc(map->n / 2 + 1, sizeof(*l->env));
    if (!l->env)
        return oom(c);
    for (const struct node *k = map->first; k; k = k->next->next, i++) {
        const struct node *v = k->next;

        if (k->type != NODE_SCALAR)
            return fail_at(c, k, "keys of 'env' must be strings, not a %s", type_name(k->type));
        if (!env_key_is_valid(k->value))
            return fail_at(c, k, "environment variable '%s' must match [A-Za-z_][A-Za-z0-9_]*",
                    shown(k->value, buf));
        if (env_has(l->env, k->value))
            return fail_at(c, k, "duplicate key '%s'", k->value);
        if (v->type != NODE_SCALAR)
            return fail_at(c, v, "environment variable '%s' must be a string, not a %s", k->value,
                    type_name(v->type));
        if (asprintf(&l->env[i], "%s=%s", k->value, v->value) < 0) {
            l->env[i] = NULL;
            return oom(c);
        }
    }
    return 0;
}

#define LANG(field) offsetof(struct manifest_lang, field)
static const struct key_desc lang_keys[] = {
        {"source_file", NODE_SCALAR, KEY_REQUIRED, LANG(source_file), R_FILE, NULL},
        {"extensions", NODE_SEQ, 0, LANG(extensions), R_EXTENSION, NULL},
        {"build", NODE_SEQ, KEY_NONEMPTY, LANG(build), R_TEMPLATE, NULL},
        {"run", NODE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, LANG(run), R_TEMPLATE, NULL},
        {"env", NODE_MAP, 0, 0, R_ANY, store_env},
        {"image", NODE_SCALAR, 0, LANG(image), R_IMAGE, NULL},
        {"package_manager", NODE_SCALAR, 0, LANG(package_manager), R_NAME, NULL},
        {"version_command", NODE_SEQ, KEY_NONEMPTY, LANG(version_command), R_ANY, NULL},
        {"version_pattern", NODE_SCALAR, 0, LANG(version_pattern), R_REGEX, NULL},
        {"host_paths", NODE_SEQ, 0, LANG(host_paths), R_PATH, NULL},
};

static int store_language(struct ctx *c, const struct node *n, void *obj)
{
    struct manifest *m = obj;

    m->lang = calloc(1, sizeof(*m->lang));
    if (!m->lang)
        return oom(c);
    return apply_schema(c, n, lang_keys, ARRAY_SIZE(lang_keys), m->lang);
}

#define TOP(field) offsetof(struct manifest, field)
static const struct key_desc top_keys[] = {
        {"name", NODE_SCALAR, KEY_REQUIRED, TOP(name), R_NAME, NULL},
        {"kind", NODE_SCALAR, KEY_REQUIRED, 0, R_ANY, store_kind},
        {"version", NODE_SCALAR, KEY_REQUIRED, TOP(version), R_VERSION, NULL},
        {"abi", NODE_SCALAR, KEY_REQUIRED, 0, R_ANY, store_abi},
        {"library", NODE_SCALAR, 0, TOP(library), R_LIBRARY, NULL},
        {"description", NODE_SCALAR, KEY_REQUIRED, TOP(description), R_DESCRIPTION, NULL},
        {"aliases", NODE_SEQ, 0, TOP(aliases), R_NAME, NULL},
        {"requires", NODE_MAP, 0, 0, R_ANY, store_requires},
        {"language", NODE_MAP, 0, 0, R_ANY, store_language},
};
_Static_assert(ARRAY_SIZE(top_keys) <= 32 && ARRAY_SIZE(lang_keys) <= 32, "seen is 32 bits");

/* A sequence of scalars into a fresh NULL-terminated vector at *dst. */
static int store_strv(struct ctx *c, const struct key_desc *d, const struct node *seq, char ***dst)
{
    size_t i = 0;

    if ((d->flags & KEY_NONEMPTY) && seq->n == 0)
        return fail_at(c, seq, "key '%s' must not be an empty sequence", d->key);
    *dst = calloc(seq->n + 1, sizeof(**dst)); /* owned by obj from here on */
    if (!*dst)
        return oom(c);
    for (const struct node *e = seq->first; e; e = e->next, i++) {
        const char *why;

        if (e->type != NODE_SCALAR)
            return fail_at(c, e, "each entry of '%s' must be a string, not a %s", d->key,
                    type_name(e->type));
        why = check_value(d->rule, e->value);
        if (why)
            return fail_at(c, e, "each entry of '%s' must be %s", d->key, why);
        (*dst)[i] = strdup(e->value);
        if (!(*dst)[i])
            return oom(c);
    }
    return 0;
}

static int store_value(struct ctx *c, const struct key_desc *d, const struct node *v, void *obj)
{
    void *dst = (char *)obj + d->offset;
    char **s = dst;
    const char *why;

    if (v->type != d->type)
        return fail_at(c, v, "key '%s' must be a %s, not a %s", d->key, type_name(d->type),
                type_name(v->type));
    if (d->store)
        return d->store(c, v, obj);
    if (d->type != NODE_SCALAR)
        return store_strv(c, d, v, dst);
    why = check_value(d->rule, v->value);
    if (why)
        return fail_at(c, v, "key '%s' must be %s", d->key, why);
    *s = strdup(v->value);
    return *s ? 0 : oom(c);
}

static int apply_schema(struct ctx *c, const struct node *map, const struct key_desc *keys,
        size_t n_keys, void *obj)
{
    uint32_t seen = 0; /* tables have fewer than 32 keys */
    char buf[48];

    for (const struct node *k = map->first; k; k = k->next->next) {
        size_t i = 0;
        int r;

        if (k->type != NODE_SCALAR)
            return fail_at(c, k, "mapping keys must be strings, not a %s", type_name(k->type));
        while (i < n_keys && strcmp(keys[i].key, k->value) != 0)
            i++;
        if (i == n_keys)
            return fail_at(c, k, "unknown key '%s'", shown(k->value, buf));
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

/* Rules across keys, checked once the whole mapping is read. */
static int check_kind_rules(struct ctx *c, const struct node *root, const struct manifest *m)
{
    if (m->kind == SBX_KIND_LANGUAGE) {
        if (!m->lang)
            return fail_at(c, root, "missing required key 'language' (kind is language)");
        return 0;
    }
    if (!m->library)
        return fail_at(c, root, "missing required key 'library' (kind is backend)");
    if (m->lang) {
        for (const struct node *k = root->first; k; k = k->next->next) {
            if (strcmp(k->value, "language") == 0)
                return fail_at(c, k, "key 'language' is not allowed when kind is backend");
        }
    }
    return 0;
}

/* Vectors the header calls "may be empty" are never NULL. */
static int fill_defaults(struct ctx *c, struct manifest *m)
{
    char ***v[] = {&m->aliases, &m->kernel_features, m->lang ? &m->lang->extensions : NULL,
            m->lang ? &m->lang->env : NULL, m->lang ? &m->lang->host_paths : NULL};

    for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
        if (v[i] && !*v[i])
            *v[i] = calloc(1, sizeof(char *));
        if (v[i] && !*v[i])
            return oom(c);
    }
    return 0;
}

int manifest_parse(const char *path, const char *data, size_t len, struct manifest **ret,
        struct sbx_error **err)
{
    cleanup_ctx struct ctx c = {.path = path, .data = data, .len = len, .err = err};
    cleanup_tree struct node *root = NULL;
    cleanup_manifest struct manifest *m = NULL;
    int r;

    if (!path || !ret || (!data && len > 0))
        return sbx_error_set(err, SBX_E_INVALID, 0, "manifest_parse: missing argument");
    if (len > MANIFEST_MAX_BYTES)
        return fail(&c, 1, 1, "the manifest is larger than %u bytes", MANIFEST_MAX_BYTES);
    if (!yaml_parser_initialize(&c.parser))
        return oom(&c);
    c.parser_ready = true;
    yaml_parser_set_encoding(&c.parser, YAML_UTF8_ENCODING);
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)(data ? data : ""), len);
    r = parse_tree(&c, &root);
    if (r < 0)
        return r;
    if (!root) /* parse_tree returns 0 only with a root; tells -Wnull-dereference */
        return sbx_error_set(err, SBX_E_INTERNAL, 0, "%s: no document", path);
    if (root->type != NODE_MAP)
        return fail_at(
                &c, root, "the top level must be a mapping, not a %s", type_name(root->type));
    m = calloc(1, sizeof(*m));
    if (!m)
        return oom(&c);
    m->path = strdup(path);
    if (!m->path)
        return oom(&c);
    r = apply_schema(&c, root, top_keys, ARRAY_SIZE(top_keys), m);
    if (r == 0)
        r = check_kind_rules(&c, root, m);
    if (r == 0)
        r = fill_defaults(&c, m);
    if (r < 0)
        return r;
    *ret = steal_ptr(&m);
    return 0;
}

/* Read up to cap bytes; -errno on failure. */
static int read_all(int fd, char *buf, size_t cap, size_t *ret_len)
{
    size_t len = 0;

    while (len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    *ret_len = len;
    return 0;
}

int manifest_load(
        const char *dir, const char *filename, struct manifest **ret, struct sbx_error **err)
{
    cleanup_close int dfd = -1;
    cleanup_close int fd = -1;
    cleanup_free char *path = NULL;
    cleanup_free char *buf = NULL;
    struct stat st;
    size_t len = 0;
    int r;

    if (!dir || !filename || !ret)
        return sbx_error_set(err, SBX_E_INVALID, 0, "manifest_load: missing argument");
    if (filename[0] == '\0' || strchr(filename, '/'))
        return sbx_error_set(err, SBX_E_INVALID, 0,
                "manifest file name '%s' must be a plain file name", filename);
    if (asprintf(&path, "%s/%s", dir, filename) < 0) {
        path = NULL;
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", dir, strerror(errno));
    /* O_NONBLOCK: a FIFO must not hang the loader before fstat refuses it. */
    fd = openat(dfd, filename, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && errno == ELOOP)
        return sbx_error_set(err, SBX_E_IO, ELOOP, "%s: is a symbolic link (not followed)", path);
    if (fd < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sbx_error_set(err, SBX_E_INVALID, 0, "%s: not a regular file", path);
    if (st.st_size > (off_t)MANIFEST_MAX_BYTES)
        return sbx_error_set(
                err, SBX_E_INVALID, 0, "%s: larger than %u bytes", path, MANIFEST_MAX_BYTES);
    buf = malloc(MANIFEST_MAX_BYTES + 1); /* one more byte shows the file grew */
    if (!buf)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    r = read_all(fd, buf, MANIFEST_MAX_BYTES + 1, &len);
    if (r < 0)
        return sbx_error_set(err, SBX_E_IO, -r, "%s: %s", path, strerror(-r));
    if (len > MANIFEST_MAX_BYTES)
        return sbx_error_set(
                err, SBX_E_INVALID, 0, "%s: larger than %u bytes", path, MANIFEST_MAX_BYTES);
    return manifest_parse(path, buf, len, ret, err);
}

static void lang_free(struct manifest_lang *l)
{
    if (!l)
        return;
    free(l->source_file);
    strv_free(l->extensions);
    strv_free(l->build);
    strv_free(l->run);
    strv_free(l->env);
    free(l->image);
    free(l->package_manager);
    strv_free(l->version_command);
    free(l->version_pattern);
    strv_free(l->host_paths);
    free(l);
}

struct manifest *manifest_free(struct manifest *m)
{
    if (!m)
        return NULL;
    free(m->path);
    free(m->name);
    free(m->version);
    free(m->library);
    free(m->description);
    strv_free(m->aliases);
    for (size_t i = 0; m->binaries && i < m->n_binaries; i++) {
        free(m->binaries[i].name);
        free(m->binaries[i].min_version);
    }
    free(m->binaries);
    strv_free(m->kernel_features);
    lang_free(m->lang);
    free(m);
    return NULL;
}
