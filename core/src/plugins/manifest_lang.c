/* SPDX-License-Identifier: MIT */
/*
 * manifest_lang.c: the language: section of a manifest (manifest.h's
 * struct manifest_lang), one schema table per mapping as manifest.c reads
 * the rest: templates, environment, docs and modes, the install and
 * warm-up recipes, the compile cache's outputs, the session and prestart
 * drivers, support files. Fails closed like the rest (STYLE E6).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "base/yamltree.h"
#include "plugins/manifest.h"
#include "plugins/manifest_rules.h"
#include "plugins/manifest_schema.h"

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
static int env_into(
        struct manifest_ctx *c, const struct yamltree_node *map, const char *what, char ***dst)
{
    size_t i = 0;
    char buf[48];
    char **env = *dst = calloc(map->n / 2 + 1, sizeof(char *));

    if (!env)
        return manifest_oom(c);
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
            return manifest_oom(c);
        }
    }
    return 0;
}

static int store_env(struct manifest_ctx *c, const struct yamltree_node *map, void *obj)
{
    return env_into(c, map, "env", &((struct manifest_lang *)obj)->env);
}

#define EXAMPLE(field) offsetof(struct manifest_example, field)
static const struct key_desc example_keys[] = {
        {"title", YAMLTREE_SCALAR, KEY_REQUIRED, EXAMPLE(title), MR_DESCRIPTION, NULL},
        {"description", YAMLTREE_SCALAR, 0, EXAMPLE(description), MR_DESCRIPTION, NULL},
        {"code", YAMLTREE_SCALAR, KEY_REQUIRED, EXAMPLE(code), MR_ANY, NULL},
};

static int store_examples(struct manifest_ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_docs *d = obj;
    size_t i = 0;

    if (seq->n == 0)
        return 0;
    d->examples = calloc(seq->n, sizeof(*d->examples));
    if (!d->examples)
        return manifest_oom(c);
    d->n_examples = seq->n;
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != YAMLTREE_MAP)
            return fail_at(c, e, "each entry of 'examples' must be a mapping, not a %s",
                    yamltree_type_name(e->type));
        r = manifest_apply_schema(c, e, example_keys, ARRAY_SIZE(example_keys), &d->examples[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

/* docs.preinstalled and docs.visualization were written by hand before
 * language.libraries_command probed what is there: a manifest that still
 * has them loads (they are checked and not used). */
static int ignore_preinstalled(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    (void)obj;
    for (const struct yamltree_node *e = n->first; e; e = e->next) {
        if (e->type != YAMLTREE_SCALAR)
            return fail_at(c, e, "key 'preinstalled' must list strings");
    }
    return 0;
}

static int ignore_visualization(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    (void)obj;
    if (strcmp(n->value, "true") != 0 && strcmp(n->value, "false") != 0)
        return fail_at(c, n, "key 'visualization' must be true or false");
    return 0;
}

#define DOCS(field) offsetof(struct manifest_docs, field)
static const struct key_desc docs_keys[] = {
        {"use_cases", YAMLTREE_SEQ, 0, DOCS(use_cases), MR_DESCRIPTION, NULL},
        {"plot_libraries", YAMLTREE_SEQ, 0, DOCS(plot_libraries), MR_DESCRIPTION, NULL},
        {"preinstalled", YAMLTREE_SEQ, 0, 0, MR_ANY, ignore_preinstalled},
        {"visualization", YAMLTREE_SCALAR, 0, 0, MR_ANY, ignore_visualization},
        {"examples", YAMLTREE_SEQ, 0, 0, MR_ANY, store_examples},
};

static int store_docs(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;

    return manifest_apply_schema(c, n, docs_keys, ARRAY_SIZE(docs_keys), &l->docs);
}

#define MODE(field) offsetof(struct manifest_mode, field)
static const struct key_desc mode_keys[] = {
        {"source_file", YAMLTREE_SCALAR, 0, MODE(source_file), MR_FILE, NULL},
        {"build", YAMLTREE_SEQ, KEY_NONEMPTY, MODE(build), MR_TEMPLATE, NULL},
        {"run", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, MODE(run), MR_TEMPLATE, NULL},
};

/* modes: NAME: {source_file, build, run}, each replacing the language's. */
static int store_modes(struct manifest_ctx *c, const struct yamltree_node *map, void *obj)
{
    struct manifest_lang *l = obj;
    size_t i = 0;
    char buf[48];

    if (map->n == 0)
        return 0;
    l->modes = calloc(map->n / 2, sizeof(*l->modes));
    if (!l->modes)
        return manifest_oom(c);
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
            return manifest_oom(c);
        r = manifest_apply_schema(c, v, mode_keys, ARRAY_SIZE(mode_keys), &l->modes[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int store_address_space(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
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

static int store_steps(struct manifest_ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_install *in = obj;
    size_t i = 0;

    if (seq->n == 0)
        return fail_at(c, seq, "key 'steps' must list at least one step");
    in->steps = calloc(seq->n, sizeof(*in->steps));
    if (!in->steps)
        return manifest_oom(c);
    in->n_steps = seq->n;
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != YAMLTREE_MAP)
            return fail_at(c, e, "each entry of 'steps' must be a mapping, not a %s",
                    yamltree_type_name(e->type));
        r = manifest_apply_schema(c, e, step_keys, ARRAY_SIZE(step_keys), &in->steps[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int store_hosts(struct manifest_ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_install *in = obj;
    size_t i = 0;
    char buf[48];

    in->hosts = calloc(seq->n + 1, sizeof(char *));
    if (!in->hosts)
        return manifest_oom(c);
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        if (e->type != YAMLTREE_SCALAR || !host_pattern_is_valid(e->value))
            return fail_at(c, e,
                    "each entry of 'hosts' must be a host name like pypi.org or "
                    "*.example.org, not '%s'",
                    e->type == YAMLTREE_SCALAR ? yamltree_shown(e->value, buf) : "?");
        in->hosts[i] = strdup(e->value);
        if (!in->hosts[i])
            return manifest_oom(c);
    }
    return 0;
}

static int store_install_env(struct manifest_ctx *c, const struct yamltree_node *map, void *obj)
{
    return env_into(c, map, "env", &((struct manifest_install *)obj)->env);
}

static int store_run_env(struct manifest_ctx *c, const struct yamltree_node *map, void *obj)
{
    return env_into(c, map, "run_env", &((struct manifest_install *)obj)->run_env);
}

static int store_repo_var(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_install *in = obj;
    char buf[48];

    if (!env_key_is_valid(n->value))
        return fail_at(c, n, "key 'repo_var' must be an environment variable name, not '%s'",
                yamltree_shown(n->value, buf));
    in->repo_var = strdup(n->value);
    return in->repo_var ? 0 : manifest_oom(c);
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
static int recipe_defaults(struct manifest_ctx *c, struct manifest_install *in)
{
    if (!in->env)
        in->env = calloc(1, sizeof(char *));
    if (!in->run_env)
        in->run_env = calloc(1, sizeof(char *));
    if (!in->stage)
        in->stage = calloc(1, sizeof(char *));
    return in->env && in->run_env && in->stage ? 0 : manifest_oom(c);
}

static int store_install(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;
    struct manifest_install *in = l->install = calloc(1, sizeof(*l->install));
    int r;

    if (!in)
        return manifest_oom(c);
    r = manifest_apply_schema(c, n, install_keys, ARRAY_SIZE(install_keys), in);
    return r < 0 ? r : recipe_defaults(c, in);
}

static const struct key_desc warm_keys[] = {
        {"steps", YAMLTREE_SEQ, KEY_REQUIRED, 0, MR_ANY, store_steps},
        {"env", YAMLTREE_MAP, 0, 0, MR_ANY, store_install_env},
        {"seed", YAMLTREE_SEQ, KEY_NONEMPTY, INSTALL(seed), MR_ANY, NULL},
};

static int store_warm(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;
    struct manifest_install *in = l->warm = calloc(1, sizeof(*l->warm));
    int r;

    if (!in)
        return manifest_oom(c);
    r = manifest_apply_schema(c, n, warm_keys, ARRAY_SIZE(warm_keys), in);
    return r < 0 ? r : recipe_defaults(c, in);
}

/* build_outputs: plain file names, or NAME/ for a directory */
static int store_build_outputs(struct manifest_ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_lang *l = obj;
    size_t i = 0;
    char buf[48];

    l->build_outputs = calloc(seq->n + 1, sizeof(char *));
    if (!l->build_outputs)
        return manifest_oom(c);
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
            return manifest_oom(c);
    }
    return 0;
}

#define SESSION(field) offsetof(struct manifest_session, field)
static const struct key_desc session_keys[] = {
        {"run", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, SESSION(run), MR_ANY, NULL},
        {"driver", YAMLTREE_SCALAR, KEY_REQUIRED, SESSION(driver), MR_FILE, NULL},
        {"libraries", YAMLTREE_SCALAR, 0, SESSION(libraries), MR_ANY, NULL},
};

static int store_driver(
        struct manifest_ctx *c, const struct yamltree_node *n, struct manifest_session **ret)
{
    *ret = calloc(1, sizeof(**ret));
    if (!*ret)
        return manifest_oom(c);
    return manifest_apply_schema(c, n, session_keys, ARRAY_SIZE(session_keys), *ret);
}

static int store_session(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    return store_driver(c, n, &((struct manifest_lang *)obj)->session);
}

static int store_feed(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
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

static int store_prestart(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;

    l->prestart = calloc(1, sizeof(*l->prestart));
    if (!l->prestart)
        return manifest_oom(c);
    return manifest_apply_schema(c, n, prestart_keys, ARRAY_SIZE(prestart_keys), l->prestart);
}

static int store_holds(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_session *d = obj;

    if (strcmp(n->value, "true") != 0 && strcmp(n->value, "false") != 0)
        return fail_at(c, n, "key 'holds' must be true or false");
    d->holds = strcmp(n->value, "true") == 0;
    return 0;
}

static const struct key_desc zygote_keys[] = {
        {"run", YAMLTREE_SEQ, KEY_REQUIRED | KEY_NONEMPTY, SESSION(run), MR_ANY, NULL},
        {"driver", YAMLTREE_SCALAR, KEY_REQUIRED, SESSION(driver), MR_FILE, NULL},
        {"holds", YAMLTREE_SCALAR, 0, 0, MR_ANY, store_holds},
};

static int store_zygote(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_lang *l = obj;

    l->zygote = calloc(1, sizeof(*l->zygote));
    if (!l->zygote)
        return manifest_oom(c);
    return manifest_apply_schema(c, n, zygote_keys, ARRAY_SIZE(zygote_keys), l->zygote);
}

static int store_support_path(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest_support *sp = obj;
    char buf[48];

    if (strncmp(n->value, "/tmp/.sbx/", 10) != 0 || !rel_path_is_valid(n->value + 5))
        return fail_at(c, n, "a support file's path must lie beneath /tmp/.sbx/, not '%s'",
                yamltree_shown(n->value, buf));
    sp->path = strdup(n->value);
    return sp->path ? 0 : manifest_oom(c);
}

static const struct key_desc support_keys[] = {
        {"path", YAMLTREE_SCALAR, KEY_REQUIRED, 0, MR_ANY, store_support_path},
        {"file", YAMLTREE_SCALAR, KEY_REQUIRED, offsetof(struct manifest_support, file), MR_FILE,
                NULL},
};

static int store_support(struct manifest_ctx *c, const struct yamltree_node *seq, void *obj)
{
    struct manifest_lang *l = obj;
    size_t i = 0;

    l->support = calloc(seq->n ? seq->n : 1, sizeof(*l->support));
    if (!l->support)
        return manifest_oom(c);
    l->n_support = seq->n;
    for (const struct yamltree_node *e = seq->first; e; e = e->next, i++) {
        int r;

        if (e->type != YAMLTREE_MAP)
            return fail_at(c, e, "each entry of 'support' must be a mapping, not a %s",
                    yamltree_type_name(e->type));
        r = manifest_apply_schema(c, e, support_keys, ARRAY_SIZE(support_keys), &l->support[i]);
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
        {"libraries_command", YAMLTREE_SEQ, KEY_NONEMPTY, LANG(libraries_command), MR_ANY, NULL},
        {"host_paths", YAMLTREE_SEQ, 0, LANG(host_paths), MR_PATH, NULL},
        {"docs", YAMLTREE_MAP, 0, 0, MR_ANY, store_docs},
        {"modes", YAMLTREE_MAP, 0, 0, MR_ANY, store_modes},
        {"address_space", YAMLTREE_SCALAR, 0, 0, MR_ANY, store_address_space},
        {"install", YAMLTREE_MAP, 0, 0, MR_ANY, store_install},
        {"warm", YAMLTREE_MAP, 0, 0, MR_ANY, store_warm},
        {"build_outputs", YAMLTREE_SEQ, KEY_NONEMPTY, 0, MR_ANY, store_build_outputs},
        {"session", YAMLTREE_MAP, 0, 0, MR_ANY, store_session},
        {"prestart", YAMLTREE_MAP, 0, 0, MR_ANY, store_prestart},
        {"zygote", YAMLTREE_MAP, 0, 0, MR_ANY, store_zygote},
        {"support", YAMLTREE_SEQ, 0, 0, MR_ANY, store_support},
};

int manifest_store_language(struct manifest_ctx *c, const struct yamltree_node *n, void *obj)
{
    struct manifest *m = obj;

    m->lang = calloc(1, sizeof(*m->lang));
    if (!m->lang)
        return manifest_oom(c);
    return manifest_apply_schema(c, n, lang_keys, ARRAY_SIZE(lang_keys), m->lang);
}

_Static_assert(ARRAY_SIZE(lang_keys) <= 32, "seen is 32 bits");

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

void manifest_lang_free(struct manifest_lang *l)
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
    strv_free(l->libraries_command);
    strv_free(l->host_paths);
    strv_free(l->docs.use_cases);
    strv_free(l->docs.plot_libraries);
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
    for (int i = 0; i < 3; i++) {
        struct manifest_session *d = i == 2 ? l->zygote : i ? l->prestart : l->session;

        if (d) {
            strv_free(d->run);
            free(d->driver);
            free(d->libraries);
            free(d);
        }
    }
    free(l);
}
