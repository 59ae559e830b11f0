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

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DIGITS        "0123456789"

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

struct ctx {
    const char *path;
    struct sbx_error **err;
};

/* Custom handling of a value; obj is the struct the schema fills. */
typedef int (*store_fn)(struct ctx *c, const struct yamltree_node *n, void *obj);

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

#define fail_at(c, n, ...) yamltree_error((c)->err, (c)->path, (n), __VA_ARGS__)

static int oom(struct ctx *c)
{
    return sbx_error_set(c->err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* ---- schema ---- */

static int apply_schema(struct ctx *c, const struct yamltree_node *map, const struct key_desc *keys,
        size_t n_keys, void *obj);

static int store_kind(struct ctx *c, const struct yamltree_node *n, void *obj)
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
static int store_abi(struct ctx *c, const struct yamltree_node *n, void *obj)
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

static int store_binaries(struct ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest *m = obj;
    size_t i = 0;

    if (seq->n == 0)
        return 0;
    m->binaries = calloc(seq->n, sizeof(*m->binaries));
    if (!m->binaries)
        return oom(c);
    m->n_binaries = seq->n;
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != YAMLTREE_MAP)
            return fail_at(c, e, "each entry of 'binaries' must be a mapping, not a %s",
                    yamltree_type_name(e->type));
        r = apply_schema(c, e, binary_keys, ARRAY_SIZE(binary_keys), &m->binaries[i]);
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

static int store_requires(struct ctx *c, const struct yamltree_node *n, void *obj)
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

/* KEY: value pairs, kept in order as "KEY=VALUE" in *dst. */
static int env_into(struct ctx *c, const struct yamltree_node *map, const char *what, char ***dst)
{
    size_t i = 0;
    char buf[48];
    char **env = *dst = calloc(map->n / 2 + 1, sizeof(char *));

    if (!env)
        return oom(c);
    for (const struct yamltree_node *k = map->first; k; k = k->next->next, i++) {
        const struct yamltree_node *v = k->next;

        if (k->type != YAMLTREE_SCALAR)
            return fail_at(c, k, "keys of '%s' must be strings, not a %s", what,
                    yamltree_type_name(k->type));
        if (!env_key_is_valid(k->value))
            return fail_at(c, k, "environment variable '%s' must match [A-Za-z_][A-Za-z0-9_]*",
                    yamltree_shown(k->value, buf));
        if (env_has(env, k->value))
            return fail_at(c, k, "duplicate key '%s'", k->value);
        if (v->type != YAMLTREE_SCALAR)
            return fail_at(c, v, "environment variable '%s' must be a string, not a %s", k->value,
                    yamltree_type_name(v->type));
        if (asprintf(&env[i], "%s=%s", k->value, v->value) < 0) {
            env[i] = NULL;
            return oom(c);
        }
    }
    return 0;
}

static int store_env(struct ctx *c, const struct yamltree_node *map, void *obj)
{
    return env_into(c, map, "env", &((struct manifest_lang *)obj)->env);
}

#define EXAMPLE(field) offsetof(struct manifest_example, field)
static const struct key_desc example_keys[] = {
        {"title", YAMLTREE_SCALAR, KEY_REQUIRED, EXAMPLE(title), MR_DESCRIPTION, NULL},
        {"description", YAMLTREE_SCALAR, 0, EXAMPLE(description), MR_DESCRIPTION, NULL},
        {"code", YAMLTREE_SCALAR, KEY_REQUIRED, EXAMPLE(code), MR_ANY, NULL},
};

static int store_examples(struct ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_docs *d = obj;
    size_t i = 0;

    if (seq->n == 0)
        return 0;
    d->examples = calloc(seq->n, sizeof(*d->examples));
    if (!d->examples)
        return oom(c);
    d->n_examples = seq->n;
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != YAMLTREE_MAP)
            return fail_at(c, e, "each entry of 'examples' must be a mapping, not a %s",
                    yamltree_type_name(e->type));
        r = apply_schema(c, e, example_keys, ARRAY_SIZE(example_keys), &d->examples[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int store_visualization(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_docs *d = obj;

    if (strcmp(n->value, "true") == 0)
        d->visualization = true;
    else if (strcmp(n->value, "false") == 0)
        d->visualization = false;
    else
        return fail_at(c, n, "key 'visualization' must be true or false");
    return 0;
}

#define DOCS(field) offsetof(struct manifest_docs, field)
static const struct key_desc docs_keys[] = {
        {"use_cases", YAMLTREE_SEQ, 0, DOCS(use_cases), MR_DESCRIPTION, NULL},
        {"preinstalled", YAMLTREE_SEQ, 0, DOCS(preinstalled), MR_DESCRIPTION, NULL},
        {"visualization", YAMLTREE_SCALAR, 0, 0, MR_ANY, store_visualization},
        {"examples", YAMLTREE_SEQ, 0, 0, MR_ANY, store_examples},
};

static int store_docs(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;

    return apply_schema(c, n, docs_keys, ARRAY_SIZE(docs_keys), &l->docs);
}

#define MODE(field) offsetof(struct manifest_mode, field)
static const struct key_desc mode_keys[] = {
        {"source_file", YAMLTREE_SCALAR, 0, MODE(source_file), MR_FILE, NULL},
        {"build", YAMLTREE_SEQ, KEY_NONEMPTY, MODE(build), MR_TEMPLATE, NULL},
        {"run", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, MODE(run), MR_TEMPLATE, NULL},
};

/* modes: NAME: {source_file, build, run}, each replacing the language's. */
static int store_modes(struct ctx *c, const struct yamltree_node *map, void *obj)
{
    struct manifest_lang *l = obj;
    size_t i = 0;
    char buf[48];

    if (map->n == 0)
        return 0;
    l->modes = calloc(map->n / 2, sizeof(*l->modes));
    if (!l->modes)
        return oom(c);
    for (const struct yamltree_node *k = map->first; k; k = k->next->next, i++) {
        const struct yamltree_node *v = k->next;
        int r;

        if (k->type != YAMLTREE_SCALAR || !name_is_valid(k->value))
            return fail_at(c, k, "a mode's name must match [a-z][a-z0-9_]{0,31}, not '%s'",
                    k->type == YAMLTREE_SCALAR ? yamltree_shown(k->value, buf) : "?");
        if (v->type != YAMLTREE_MAP)
            return fail_at(c, v, "mode '%s' must be a mapping, not a %s", k->value,
                    yamltree_type_name(v->type));
        l->n_modes = i + 1;
        l->modes[i].name = strdup(k->value);
        if (!l->modes[i].name)
            return oom(c);
        r = apply_schema(c, v, mode_keys, ARRAY_SIZE(mode_keys), &l->modes[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int store_address_space(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;

    if (parse_size(n->value, &l->address_space) < 0 || l->address_space > (64ull << 30))
        return fail_at(c, n, "key 'address_space' must be a size like 512M or 2G, at most 64G");
    return 0;
}

#define INSTALL(field) offsetof(struct manifest_install, field)
static const struct key_desc step_keys[] = {
        /* not a template: only an element that is exactly {libraries} is
         * replaced, so scripts in the arguments may use braces */
        {"run", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, offsetof(struct manifest_step, run),
                MR_ANY, NULL},
};

static int store_steps(struct ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_install *in = obj;
    size_t i = 0;

    if (seq->n == 0)
        return fail_at(c, seq, "key 'steps' must list at least one step");
    in->steps = calloc(seq->n, sizeof(*in->steps));
    if (!in->steps)
        return oom(c);
    in->n_steps = seq->n;
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != YAMLTREE_MAP)
            return fail_at(c, e, "each entry of 'steps' must be a mapping, not a %s",
                    yamltree_type_name(e->type));
        r = apply_schema(c, e, step_keys, ARRAY_SIZE(step_keys), &in->steps[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int store_hosts(struct ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_install *in = obj;
    size_t i = 0;
    char buf[48];

    in->hosts = calloc(seq->n + 1, sizeof(char *));
    if (!in->hosts)
        return oom(c);
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        if (e->type != YAMLTREE_SCALAR || !host_pattern_is_valid(e->value))
            return fail_at(c, e,
                    "each entry of 'hosts' must be a host name like pypi.org or "
                    "*.example.org, not '%s'",
                    e->type == YAMLTREE_SCALAR ? yamltree_shown(e->value, buf) : "?");
        in->hosts[i] = strdup(e->value);
        if (!in->hosts[i])
            return oom(c);
    }
    return 0;
}

static int store_install_env(struct ctx *c, const struct yamltree_node *map, void *obj)
{
    return env_into(c, map, "env", &((struct manifest_install *)obj)->env);
}

static int store_run_env(struct ctx *c, const struct yamltree_node *map, void *obj)
{
    return env_into(c, map, "run_env", &((struct manifest_install *)obj)->run_env);
}

static int store_repo_var(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_install *in = obj;
    char buf[48];

    if (!env_key_is_valid(n->value))
        return fail_at(c, n, "key 'repo_var' must be an environment variable name, not '%s'",
                yamltree_shown(n->value, buf));
    in->repo_var = strdup(n->value);
    return in->repo_var ? 0 : oom(c);
}

static const struct key_desc install_keys[] = {
        {"hosts", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, 0, MR_ANY, store_hosts},
        {"steps", YAMLTREE_SEQ, KEY_REQUIRED, 0, MR_ANY, store_steps},
        {"env", YAMLTREE_MAP, 0, 0, MR_ANY, store_install_env},
        {"run_env", YAMLTREE_MAP, 0, 0, MR_ANY, store_run_env},
        {"stage", YAMLTREE_SEQ, 0, INSTALL(stage), MR_FILE, NULL},
        {"workspace_dir", YAMLTREE_SCALAR, 0, INSTALL(workspace_dir), MR_FILE, NULL},
        {"repo_var", YAMLTREE_SCALAR, 0, 0, MR_ANY, store_repo_var},
};

/* the vectors the header calls "may be empty" are never NULL */
static int recipe_defaults(struct ctx *c, struct manifest_install *in)
{
    if (!in->env)
        in->env = calloc(1, sizeof(char *));
    if (!in->run_env)
        in->run_env = calloc(1, sizeof(char *));
    if (!in->stage)
        in->stage = calloc(1, sizeof(char *));
    return in->env && in->run_env && in->stage ? 0 : oom(c);
}

static int store_install(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;
    struct manifest_install *in = l->install = calloc(1, sizeof(*l->install));
    int r;

    if (!in)
        return oom(c);
    r = apply_schema(c, n, install_keys, ARRAY_SIZE(install_keys), in);
    return r < 0 ? r : recipe_defaults(c, in);
}

static const struct key_desc warm_keys[] = {
        {"steps", YAMLTREE_SEQ, KEY_REQUIRED, 0, MR_ANY, store_steps},
        {"env", YAMLTREE_MAP, 0, 0, MR_ANY, store_install_env},
        {"seed", YAMLTREE_SEQ, KEY_NONEMPTY, INSTALL(seed), MR_ANY, NULL},
};

static int store_warm(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;
    struct manifest_install *in = l->warm = calloc(1, sizeof(*l->warm));
    int r;

    if (!in)
        return oom(c);
    r = apply_schema(c, n, warm_keys, ARRAY_SIZE(warm_keys), in);
    return r < 0 ? r : recipe_defaults(c, in);
}

/* build_outputs: plain file names, or NAME/ for a directory */
static int store_build_outputs(struct ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_lang *l = obj;
    size_t i = 0;
    char buf[48];

    l->build_outputs = calloc(seq->n + 1, sizeof(char *));
    if (!l->build_outputs)
        return oom(c);
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        size_t n = e->type == YAMLTREE_SCALAR ? strlen(e->value) : 0;
        char *name = n ? strndup(e->value, e->value[n - 1] == '/' ? n - 1 : n) : NULL;
        bool ok = name && name[0] && !strchr(name, '/') && rel_path_is_valid(name);

        free(name);
        if (!ok)
            return fail_at(c, e,
                    "each entry of 'build_outputs' must be a file name or NAME/ for a "
                    "directory, not '%s'",
                    e->type == YAMLTREE_SCALAR ? yamltree_shown(e->value, buf) : "?");
        l->build_outputs[i] = strdup(e->value);
        if (!l->build_outputs[i])
            return oom(c);
    }
    return 0;
}

#define SESSION(field) offsetof(struct manifest_session, field)
static const struct key_desc session_keys[] = {
        {"run", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, SESSION(run), MR_ANY, NULL},
        {"driver", YAMLTREE_SCALAR, KEY_REQUIRED, SESSION(driver), MR_FILE, NULL},
};

static int store_driver(struct ctx *c, const struct yamltree_node *n, struct manifest_session **ret)
{
    *ret = calloc(1, sizeof(**ret));
    if (!*ret)
        return oom(c);
    return apply_schema(c, n, session_keys, ARRAY_SIZE(session_keys), *ret);
}

static int store_session(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    return store_driver(c, n, &((struct manifest_lang *)obj)->session);
}

static int store_feed(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_session *d = obj;

    if (strcmp(n->value, "source") == 0)
        d->feed_source = true;
    else if (strcmp(n->value, "name") != 0)
        return fail_at(c, n, "key 'feed' must be 'name' or 'source'");
    return 0;
}

static const struct key_desc prestart_keys[] = {
        {"run", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, SESSION(run), MR_ANY, NULL},
        {"driver", YAMLTREE_SCALAR, KEY_REQUIRED, SESSION(driver), MR_FILE, NULL},
        {"feed", YAMLTREE_SCALAR, 0, 0, MR_ANY, store_feed},
};

static int store_prestart(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;

    l->prestart = calloc(1, sizeof(*l->prestart));
    if (!l->prestart)
        return oom(c);
    return apply_schema(c, n, prestart_keys, ARRAY_SIZE(prestart_keys), l->prestart);
}

static int store_support_path(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_support *sp = obj;
    char buf[48];

    if (strncmp(n->value, "/tmp/.sbx/", 10) != 0 || !rel_path_is_valid(n->value + 5))
        return fail_at(c, n, "a support file's path must lie beneath /tmp/.sbx/, not '%s'",
                yamltree_shown(n->value, buf));
    sp->path = strdup(n->value);
    return sp->path ? 0 : oom(c);
}

static const struct key_desc support_keys[] = {
        {"path", YAMLTREE_SCALAR, KEY_REQUIRED, 0, MR_ANY, store_support_path},
        {"file", YAMLTREE_SCALAR, KEY_REQUIRED, offsetof(struct manifest_support, file), MR_FILE,
                NULL},
};

static int store_support(struct ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_lang *l = obj;
    size_t i = 0;

    l->support = calloc(seq->n ? seq->n : 1, sizeof(*l->support));
    if (!l->support)
        return oom(c);
    l->n_support = seq->n;
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != YAMLTREE_MAP)
            return fail_at(c, e, "each entry of 'support' must be a mapping, not a %s",
                    yamltree_type_name(e->type));
        r = apply_schema(c, e, support_keys, ARRAY_SIZE(support_keys), &l->support[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

#define LANG(field) offsetof(struct manifest_lang, field)
static const struct key_desc lang_keys[] = {
        {"source_file", YAMLTREE_SCALAR, KEY_REQUIRED, LANG(source_file), MR_FILE, NULL},
        {"extensions", YAMLTREE_SEQ, 0, LANG(extensions), MR_EXTENSION, NULL},
        {"build", YAMLTREE_SEQ, KEY_NONEMPTY, LANG(build), MR_TEMPLATE, NULL},
        {"run", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, LANG(run), MR_TEMPLATE, NULL},
        {"env", YAMLTREE_MAP, 0, 0, MR_ANY, store_env},
        {"image", YAMLTREE_SCALAR, 0, LANG(image), MR_IMAGE, NULL},
        {"package_manager", YAMLTREE_SCALAR, 0, LANG(package_manager), MR_NAME, NULL},
        {"version_command", YAMLTREE_SEQ, KEY_NONEMPTY, LANG(version_command), MR_ANY, NULL},
        {"version_pattern", YAMLTREE_SCALAR, 0, LANG(version_pattern), MR_REGEX, NULL},
        {"host_paths", YAMLTREE_SEQ, 0, LANG(host_paths), MR_PATH, NULL},
        {"docs", YAMLTREE_MAP, 0, 0, MR_ANY, store_docs},
        {"modes", YAMLTREE_MAP, 0, 0, MR_ANY, store_modes},
        {"address_space", YAMLTREE_SCALAR, 0, 0, MR_ANY, store_address_space},
        {"install", YAMLTREE_MAP, 0, 0, MR_ANY, store_install},
        {"warm", YAMLTREE_MAP, 0, 0, MR_ANY, store_warm},
        {"build_outputs", YAMLTREE_SEQ, KEY_NONEMPTY, 0, MR_ANY, store_build_outputs},
        {"session", YAMLTREE_MAP, 0, 0, MR_ANY, store_session},
        {"prestart", YAMLTREE_MAP, 0, 0, MR_ANY, store_prestart},
        {"support", YAMLTREE_SEQ, 0, 0, MR_ANY, store_support},
};

static int store_language(struct ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest *m = obj;

    m->lang = calloc(1, sizeof(*m->lang));
    if (!m->lang)
        return oom(c);
    return apply_schema(c, n, lang_keys, ARRAY_SIZE(lang_keys), m->lang);
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

static int store_setting_env(struct ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_setting *st = obj;
    size_t i = 0, klen = strlen(st->key);
    bool family = klen > 2 && strcmp(st->key + klen - 2, "_*") == 0;
    char buf[48];

    st->env = calloc(seq->n + 1, sizeof(*st->env));
    if (!st->env)
        return oom(c);
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        const char *why =
                e->type == YAMLTREE_SCALAR ? setting_env_why(e->value, family) : "must be a string";

        if (why)
            return fail_at(c, e, "setting '%s': variable '%s' %s", st->key,
                    e->type == YAMLTREE_SCALAR ? yamltree_shown(e->value, buf) : "?", why);
        st->env[i] = strdup(e->value);
        if (!st->env[i])
            return oom(c);
    }
    return 0;
}

#define SETTING(field) offsetof(struct manifest_setting, field)
static const struct key_desc setting_keys[] = {
        {"env", YAMLTREE_SEQ, 0, 0, MR_ANY, store_setting_env},
        {"default", YAMLTREE_SCALAR, 0, SETTING(default_value), MR_DESCRIPTION, NULL},
};

/* settings: KEY: {env: [NAME, ...], default: VALUE} (ABI 1.4). */
static int store_settings(struct ctx *c, const struct yamltree_node *map, void *obj)
{
    struct manifest *m = obj;
    char buf[48];

    if (map->n / 2 > MANIFEST_MAX_SETTINGS)
        return fail_at(c, map, "at most %u settings", MANIFEST_MAX_SETTINGS);
    if (map->n == 0)
        return 0;
    m->settings = calloc(map->n / 2, sizeof(*m->settings));
    if (!m->settings)
        return oom(c);
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
            return oom(c);
        r = apply_schema(c, v, setting_keys, ARRAY_SIZE(setting_keys), st);
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
        {"language", YAMLTREE_MAP, 0, 0, MR_ANY, store_language},
        {"settings", YAMLTREE_MAP, 0, 0, MR_ANY, store_settings},
};
_Static_assert(ARRAY_SIZE(top_keys) <= 32 && ARRAY_SIZE(lang_keys) <= 32, "seen is 32 bits");

/* A sequence of scalars into a fresh NULL-terminated vector at *dst. */
static int store_strv(
        struct ctx *c, const struct key_desc *d, const struct yamltree_node *seq, char ***dst)
{
    size_t i = 0;

    if ((d->flags & KEY_NONEMPTY) && seq->n == 0)
        return fail_at(c, seq, "key '%s' must not be an empty sequence", d->key);
    *dst = calloc(seq->n + 1, sizeof(**dst)); /* owned by obj from here on */
    if (!*dst)
        return oom(c);
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
            return oom(c);
    }
    return 0;
}

static int store_value(
        struct ctx *c, const struct key_desc *d, const struct yamltree_node *v, void *obj)
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
    return *s ? 0 : oom(c);
}

static int apply_schema(struct ctx *c, const struct yamltree_node *map, const struct key_desc *keys,
        size_t n_keys, void *obj)
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

/* Rules across keys, checked once the whole mapping is read. */
static int check_kind_rules(
        struct ctx *c, const struct yamltree_node *root, const struct manifest *m)
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
static int fill_defaults(struct ctx *c, struct manifest *m)
{
    char ***v[] = {&m->aliases, &m->kernel_features, &m->host_services,
            m->lang ? &m->lang->extensions : NULL, m->lang ? &m->lang->env : NULL,
            m->lang ? &m->lang->host_paths : NULL, m->lang ? &m->lang->docs.use_cases : NULL,
            m->lang ? &m->lang->docs.preinstalled : NULL};

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
    struct ctx c = {.path = path, .err = err};
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
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", dir, strerror(errno));
    /* O_NONBLOCK: a FIFO must not hang the loader before fstat refuses it. */
    fd = openat(dfd, filename, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && errno == ELOOP)
        return sbx_error_set(err, SBX_E_IO, ELOOP, "%s: is a symbolic link (not followed)", path);
    if (fd < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "%s: %s", path, strerror(errno));
    r = yamltree_read_fd(fd, path, MANIFEST_MAX_BYTES, &buf, &len, err);
    if (r < 0)
        return r;
    return manifest_parse(path, buf, len, ret, err);
}

static void recipe_free(struct manifest_install *in)
{
    if (!in)
        return;
    strv_free(in->hosts);
    for (size_t i = 0; in->steps && i < in->n_steps; i++)
        strv_free(in->steps[i].run);
    free(in->steps);
    strv_free(in->env);
    strv_free(in->run_env);
    strv_free(in->stage);
    strv_free(in->seed);
    free(in->workspace_dir);
    free(in->repo_var);
    free(in);
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
    strv_free(l->docs.use_cases);
    strv_free(l->docs.preinstalled);
    for (size_t i = 0; i < l->docs.n_examples; i++) {
        free(l->docs.examples[i].title);
        free(l->docs.examples[i].description);
        free(l->docs.examples[i].code);
    }
    free(l->docs.examples);
    for (size_t i = 0; i < l->n_modes; i++) {
        free(l->modes[i].name);
        free(l->modes[i].source_file);
        strv_free(l->modes[i].build);
        strv_free(l->modes[i].run);
    }
    free(l->modes);
    strv_free(l->build_outputs);
    recipe_free(l->install);
    recipe_free(l->warm);
    for (size_t i = 0; l->support && i < l->n_support; i++) {
        free(l->support[i].path);
        free(l->support[i].file);
    }
    free(l->support);
    for (int i = 0; i < 2; i++) {
        struct manifest_session *d = i ? l->prestart : l->session;

        if (d) {
            strv_free(d->run);
            free(d->driver);
            free(d);
        }
    }
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
    strv_free(m->host_services);
    lang_free(m->lang);
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
