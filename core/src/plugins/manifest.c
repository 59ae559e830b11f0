/* SPDX-License-Identifier: MIT */
/*
 * manifest.c: read a plugin manifest (NAME.yaml) into struct manifest.
 * yamltree.c turns the file into a small tree (scalars, sequences,
 * mappings, each with its 1-based line and column); a schema table per
 * mapping then checks keys, types and values and stores them. Anything
 * unknown or malformed is SBX_E_INVALID "FILE:LINE:COLUMN: message" (fail
 * closed, STYLE E6). Never opens a library and never follows a symlink.
 * Caps: manifest.h; format: docs/plugins.md; error convention: error.h.
 */
#include "plugins/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/util.h"
#include "base/yamltree.h"
#include "plugins/manifest_rules.h"
#include "plugins/manifest_schema.h"

#define DIGITS "0123456789"

/* Children of one sequence or mapping (keys and values count apart); keeps
 * every later pass linear or small-quadratic on hostile input. Duplicate
 * keys are the schema's to refuse, in the order it reads the keys. */
static const struct yamltree_limits manifest_limits = {
        .max_bytes = MANIFEST_MAX_BYTES,
        .max_depth = MANIFEST_MAX_DEPTH,
        .max_items = 1024,
        .flags = 0,
        .what = "manifest",
};

static void tree_freep(struct yamltree_node **pn)
{
    yamltree_free(*pn);
}

static void manifest_freep(struct manifest **m)
{
    manifest_free(*m);
}

#define cleanup_tree     __attribute__((cleanup(tree_freep)))
#define cleanup_manifest __attribute__((cleanup(manifest_freep)))

/* ---- schema ---- */

static int store_kind(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
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
static int store_abi(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
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
        {"name", YAMLTREE_SCALAR, KEY_REQUIRED, offsetof(struct manifest_binary, name), MR_COMMAND,
                NULL},
        {"min_version", YAMLTREE_SCALAR, 0, offsetof(struct manifest_binary, min_version),
                MR_DOTTED, NULL},
};

static int store_binaries(struct manifest_ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest *m = obj;
    size_t i = 0;

    if (seq->n == 0)
        return 0;
    m->binaries = calloc(seq->n, sizeof(*m->binaries));
    if (!m->binaries)
        return manifest_oom(c);
    m->n_binaries = seq->n;
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != YAMLTREE_MAP)
            return fail_at(c, e, "each entry of 'binaries' must be a mapping, not a %s",
                    yamltree_type_name(e->type));
        r = manifest_apply_schema(c, e, binary_keys, ARRAY_SIZE(binary_keys), &m->binaries[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static const struct key_desc requires_keys[] = {
        {"binaries", YAMLTREE_SEQ, 0, 0, MR_ANY, store_binaries},
        {"kernel", YAMLTREE_SEQ, 0, offsetof(struct manifest, kernel_features), MR_KERNEL, NULL},
        {"host", YAMLTREE_SEQ, 0, offsetof(struct manifest, host_services), MR_HOST, NULL},
};

static int store_requires(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    return manifest_apply_schema(c, n, requires_keys, ARRAY_SIZE(requires_keys), obj);
}

/* A setting's key, or a family of keys ("image_*"). */
static bool setting_key_ok(const char *k)
{
    size_t len = strlen(k);

    if (len > 2 && strcmp(k + len - 2, "_*") == 0)
        len -= 2;
    return len >= 1 && len <= 32 && k[0] >= 'a' && k[0] <= 'z' &&
           strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_") >= len;
}

/* A foreign variable name, with "_*" exactly when the key is a family.
 * Never one of ours: LLM_SANDBOX_<PLUGIN>_<KEY> is read anyway. */
static const char *setting_env_why(const char *name, bool family)
{
    size_t len = strlen(name), stem = len;

    if (family && (len < 3 || strcmp(name + len - 2, "_*") != 0))
        return "must end in '_*', as the key does";
    if (family)
        stem -= 2;
    if (stem < 1 || stem > 64 || name[0] < 'A' || name[0] > 'Z' ||
            strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != (family ? stem + 1 : len))
        return "must match [A-Z][A-Z0-9_]{0,63}";
    if (strncmp(name, "LLM_SANDBOX_", 12) == 0)
        return "must not start with LLM_SANDBOX_ (the plugin's own names are read anyway)";
    return NULL;
}

static int store_setting_env(struct manifest_ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_setting *st = obj;
    size_t i = 0, klen = strlen(st->key);
    bool family = klen > 2 && strcmp(st->key + klen - 2, "_*") == 0;
    char buf[48];

    st->env = calloc(seq->n + 1, sizeof(*st->env));
    if (!st->env)
        return manifest_oom(c);
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        const char *why =
                e->type == YAMLTREE_SCALAR ? setting_env_why(e->value, family) : "must be a string";

        if (why)
            return fail_at(c, e, "setting '%s': variable '%s' %s", st->key,
                    e->type == YAMLTREE_SCALAR ? yamltree_shown(e->value, buf) : "?", why);
        st->env[i] = strdup(e->value);
        if (!st->env[i])
            return manifest_oom(c);
    }
    return 0;
}

#define SETTING(field) offsetof(struct manifest_setting, field)
static const struct key_desc setting_keys[] = {
        {"env", YAMLTREE_SEQ, 0, 0, MR_ANY, store_setting_env},
        {"default", YAMLTREE_SCALAR, 0, SETTING(default_value), MR_DESCRIPTION, NULL},
};

/* settings: KEY: {env: [NAME, ...], default: VALUE} (ABI 1.4). */
static int store_settings(struct manifest_ctx *c, const struct yamltree_node *map, void *obj)
{
    struct manifest *m = obj;
    char buf[48];

    if (map->n / 2 > MANIFEST_MAX_SETTINGS)
        return fail_at(c, map, "at most %u settings", MANIFEST_MAX_SETTINGS);
    if (map->n == 0)
        return 0;
    m->settings = calloc(map->n / 2, sizeof(*m->settings));
    if (!m->settings)
        return manifest_oom(c);
    for (const struct yamltree_node *k = map->first; k; k = k->next->next) {
        struct manifest_setting *st = &m->settings[m->n_settings];
        const struct yamltree_node *v = k->next;
        int r;

        if (k->type != YAMLTREE_SCALAR || !setting_key_ok(k->value))
            return fail_at(c, k,
                    "a setting's key must match [a-z][a-z0-9_]{0,31}, or end in '_*' for a "
                    "family, not '%s'",
                    k->type == YAMLTREE_SCALAR ? yamltree_shown(k->value, buf) : "?");
        for (size_t i = 0; i < m->n_settings; i++)
            if (strcmp(m->settings[i].key, k->value) == 0)
                return fail_at(c, k, "duplicate setting '%s'", k->value);
        if (v->type != YAMLTREE_MAP)
            return fail_at(c, v, "setting '%s' must be a mapping, not a %s", k->value,
                    yamltree_type_name(v->type));
        m->n_settings++;
        st->key = strdup(k->value);
        if (!st->key)
            return manifest_oom(c);
        r = manifest_apply_schema(c, v, setting_keys, ARRAY_SIZE(setting_keys), st);
        if (r < 0)
            return r;
    }
    return 0;
}

const struct manifest_setting *manifest_setting_find(const struct manifest *m, const char *key)
{
    for (size_t i = 0; m && i < m->n_settings; i++) {
        const char *k = m->settings[i].key;
        size_t len = strlen(k);

        if (strcmp(k, key) == 0)
            return &m->settings[i];
        if (len > 2 && strcmp(k + len - 2, "_*") == 0 && strncmp(key, k, len - 1) == 0 &&
                key[len - 1] != '\0')
            return &m->settings[i];
    }
    return NULL;
}

#define TOP(field) offsetof(struct manifest, field)
static const struct key_desc top_keys[] = {
        {"name", YAMLTREE_SCALAR, KEY_REQUIRED, TOP(name), MR_NAME, NULL},
        {"kind", YAMLTREE_SCALAR, KEY_REQUIRED, 0, MR_ANY, store_kind},
        {"version", YAMLTREE_SCALAR, KEY_REQUIRED, TOP(version), MR_VERSION, NULL},
        {"abi", YAMLTREE_SCALAR, KEY_REQUIRED, 0, MR_ANY, store_abi},
        {"library", YAMLTREE_SCALAR, 0, TOP(library), MR_LIBRARY, NULL},
        {"description", YAMLTREE_SCALAR, KEY_REQUIRED, TOP(description), MR_DESCRIPTION, NULL},
        {"aliases", YAMLTREE_SEQ, 0, TOP(aliases), MR_NAME, NULL},
        {"requires", YAMLTREE_MAP, 0, 0, MR_ANY, store_requires},
        {"language", YAMLTREE_MAP, 0, 0, MR_ANY, manifest_store_language},
        {"settings", YAMLTREE_MAP, 0, 0, MR_ANY, store_settings},
};
_Static_assert(ARRAY_SIZE(top_keys) <= 32, "seen is 32 bits");

/* Rules across keys, checked once the whole mapping is read. */
static int check_kind_rules(
        struct manifest_ctx *c, const struct yamltree_node *root, const struct manifest *m)
{
    if (m->kind == SBX_KIND_LANGUAGE) {
        if (!m->lang)
            return fail_at(c, root, "missing required key 'language' (kind is language)");
        return 0;
    }
    if (!m->library)
        return fail_at(c, root, "missing required key 'library' (kind is backend)");
    if (m->lang) {
        for (const struct yamltree_node *k = root->first; k; k = k->next->next) {
            if (strcmp(k->value, "language") == 0)
                return fail_at(c, k, "key 'language' is not allowed when kind is backend");
        }
    }
    return 0;
}

/* Vectors the header calls "may be empty" are never NULL. */
static int fill_defaults(struct manifest_ctx *c, struct manifest *m)
{
    char ***v[] = {&m->aliases, &m->kernel_features, &m->host_services,
            m->lang ? &m->lang->extensions : NULL, m->lang ? &m->lang->env : NULL,
            m->lang ? &m->lang->host_paths : NULL, m->lang ? &m->lang->docs.use_cases : NULL,
            m->lang ? &m->lang->docs.plot_libraries : NULL};

    for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
        if (v[i] && !*v[i])
            *v[i] = calloc(1, sizeof(char *));
        if (v[i] && !*v[i])
            return manifest_oom(c);
    }
    return 0;
}

int manifest_parse(const char *path, const char *data, size_t len, struct manifest **ret,
        struct sbx_error **err)
{
    struct manifest_ctx c = {.path = path, .err = err};
    cleanup_tree struct yamltree_node *root = NULL;
    cleanup_manifest struct manifest *m = NULL;
    int r;

    if (!path || !ret || (!data && len > 0))
        return sbx_error_set(err, SBX_E_INVALID, 0, "manifest_parse: missing argument");
    r = yamltree_parse(path, data, len, &manifest_limits, &root, err);
    if (r < 0)
        return r;
    if (!root) /* without YAMLTREE_ALLOW_EMPTY there is a root; tells -Wnull-dereference */
        return sbx_error_set(err, SBX_E_INTERNAL, 0, "%s: no document", path);
    if (root->type != YAMLTREE_MAP)
        return fail_at(&c, root, "the top level must be a mapping, not a %s",
                yamltree_type_name(root->type));
    m = calloc(1, sizeof(*m));
    if (!m)
        return manifest_oom(&c);
    m->path = strdup(path);
    if (!m->path)
        return manifest_oom(&c);
    r = manifest_apply_schema(&c, root, top_keys, ARRAY_SIZE(top_keys), m);
    if (r == 0)
        r = check_kind_rules(&c, root, m);
    if (r == 0)
        r = fill_defaults(&c, m);
    if (r < 0)
        return r;
    *ret = steal_ptr(&m);
    return 0;
}

int manifest_load(
        const char *dir, const char *filename, struct manifest **ret, struct sbx_error **err)
{
    cleanup_close int dfd = -1;
    cleanup_close int fd = -1;
    cleanup_free char *path = NULL;
    cleanup_free char *buf = NULL;
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
#ifdef _WIN32
    /* no directory descriptors on Windows: the path (no FIFOs to fear) */
    (void)dfd;
    fd = open(path, O_RDONLY | O_BINARY);
#else
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", dir, strerror(errno));
    /* O_NONBLOCK: a FIFO must not hang the loader before fstat refuses it. */
    fd = openat(dfd, filename, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
#endif
    if (fd < 0 && errno == ELOOP)
        return sbx_error_set(err, SBX_E_IO, ELOOP, "%s: is a symbolic link (not followed)", path);
    if (fd < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", path, strerror(errno));
    r = yamltree_read_fd(fd, path, MANIFEST_MAX_BYTES, &buf, &len, err);
    if (r < 0)
        return r;
    return manifest_parse(path, buf, len, ret, err);
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
    strv_free(m->host_services);
    manifest_lang_free(m->lang);
    for (size_t i = 0; i < m->n_settings; i++) {
        free(m->settings[i].key);
        strv_free(m->settings[i].env);
        free(m->settings[i].default_value);
    }
    free(m->settings);
    free(m);
    return NULL;
}

int manifest_which(
        const struct manifest *m, const char *name, char *out, size_t len, struct stat *ret_st)
{
    const char *path = "/usr/bin:/bin";

    if (name[0] == '/') {
        snprintf(out, len, "%s", name);
        return stat(name, ret_st);
    }
    for (char **e = m->lang ? m->lang->env : NULL; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    while (*path) {
        size_t n = strcspn(path, ":");

        snprintf(out, len, "%.*s/%s", (int)n, path, name);
        if (stat(out, ret_st) == 0 && S_ISREG(ret_st->st_mode))
            return 0;
        path += n + (path[n] == ':');
    }
    errno = ENOENT;
    return -1;
}
