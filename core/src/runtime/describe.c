/* SPDX-License-Identifier: MIT */
/*
 * describe.c: what the runtime offers, as JSON for front ends: usable
 * languages (from their manifests, with the toolchain's version and its
 * preinstalled libraries probed in a real sandbox, never typed by hand:
 * details.c), usable backends with their
 * capabilities, and the effective policy. Front ends never read manifests
 * themselves; everything here is generated from the loaded plugins.
 */
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/util.h"
#include "plugins/host_table.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime/details.h"
#include "runtime_state.h"

static struct json_object *strv_json(char *const *v)
{
    struct json_object *a = json_object_new_array();

    for (size_t i = 0; a && v && v[i]; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

static struct json_object *str_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

/* Plots come back as images when one of the manifest's plot libraries is
 * among the probed ones ("matplotlib 3.6.3"). */
static bool plots_captured(const struct manifest_docs *d, char *const *libs)
{
    for (size_t i = 0; d->plot_libraries[i]; i++) {
        size_t n = strlen(d->plot_libraries[i]);

        for (size_t j = 0; libs && libs[j]; j++)
            if (strncasecmp(libs[j], d->plot_libraries[i], n) == 0 && libs[j][n] == ' ')
                return true;
    }
    return false;
}

static struct json_object *examples_json(const struct manifest_docs *d)
{
    struct json_object *a = json_object_new_array();

    for (size_t i = 0; a && i < d->n_examples; i++) {
        struct json_object *e = json_object_new_object();

        json_object_object_add(e, "title", json_object_new_string(d->examples[i].title));
        json_object_object_add(e, "description", str_or_null(d->examples[i].description));
        json_object_object_add(e, "code", json_object_new_string(d->examples[i].code));
        json_object_array_add(a, e);
    }
    return a;
}

static struct json_object *language_json(struct sbx_runtime *rt, struct plugin *pl, bool probe)
{
    const struct manifest_lang *ml = pl->m->lang;
    struct json_object *o = json_object_new_object();

    if (probe)
        details_refresh(rt, pl);
    pthread_mutex_lock(&pl->probe_lock);
    json_object_object_add(o, "version", str_or_null(pl->version));
    /* the reference server's fields, probed where programs run */
    json_object_object_add(o, "preinstalled_libraries", strv_json(pl->libraries));
    json_object_object_add(o, "visualization_support",
            json_object_new_boolean(plots_captured(&ml->docs, pl->libraries)));
    pthread_mutex_unlock(&pl->probe_lock);
    json_object_object_add(o, "name", json_object_new_string(pl->name));
    json_object_object_add(o, "description", json_object_new_string(pl->m->description));
    json_object_object_add(o, "aliases", strv_json(pl->m->aliases));
    json_object_object_add(o, "package_manager", str_or_null(ml->package_manager));
    json_object_object_add(o, "source_file", json_object_new_string(ml->source_file));
    json_object_object_add(o, "extensions", strv_json(ml->extensions));
    json_object_object_add(o, "image", str_or_null(ml->image));
    json_object_object_add(o, "use_cases", strv_json(ml->docs.use_cases));
    json_object_object_add(o, "examples", examples_json(&ml->docs));
    return o;
}

struct json_object *sbx_runtime_languages_json(struct sbx_runtime *rt, bool probe)
{
    struct json_object *a = json_object_new_array();

    for (size_t i = 0; a && i < rt->n_plugins; i++) {
        struct plugin *pl = rt->plugins[i];

        if (pl->state == PLUGIN_OK && pl->m->kind == SBX_KIND_LANGUAGE)
            json_object_array_add(a, language_json(rt, pl, probe));
    }
    return a;
}

const char *sbx_runtime_language_name(struct sbx_runtime *rt, const char *name)
{
    struct plugin *pl = registry_find(rt, SBX_KIND_LANGUAGE, name);

    return pl ? pl->name : NULL;
}

struct json_object *sbx_runtime_backends_json(struct sbx_runtime *rt)
{
    struct json_object *all = sbx_runtime_plugins_json(rt), *a = json_object_new_array();

    for (size_t i = 0; all && a && i < json_object_array_length(all); i++) {
        struct json_object *p = json_object_array_get_idx(all, i), *kind, *status;

        if (json_object_object_get_ex(p, "kind", &kind) &&
                strcmp(json_object_get_string(kind), "backend") == 0 &&
                json_object_object_get_ex(p, "status", &status) &&
                (strcmp(json_object_get_string(status), "ok") == 0 ||
                        strcmp(json_object_get_string(status), "unusable") == 0 ||
                        strcmp(json_object_get_string(status), "unloaded") == 0))
            json_object_array_add(a, json_object_get(p));
    }
    json_object_put(all);
    return a;
}

struct json_object *sbx_runtime_policy_json(struct sbx_runtime *rt)
{
    struct json_object *o = json_object_new_object();

    json_object_object_add(o, "default_backend", json_object_new_string(rt->settings->backend));
    json_object_object_add(o, "default_language", json_object_new_string(rt->settings->language));
    json_object_object_add(o, "defaults", policy_to_json(&rt->settings->defaults));
    json_object_object_add(o, "ceilings", policy_to_json(&rt->settings->ceilings));
    return o;
}

/* One JSON line per record. O_APPEND and a single write keep lines whole
 * even with several calls, or several servers, writing at once. */
void sbx_runtime_audit(struct sbx_runtime *rt, struct json_object *record)
{
    cleanup_free char *line = NULL;
    size_t len;

    if (rt->audit_fd < 0 || !record)
        return;
    if (asprintf(&line, "%s\n", json_object_to_json_string_ext(record, JSON_C_TO_STRING_PLAIN)) < 0)
        return;
    len = strlen(line);
    if (write(rt->audit_fd, line, len) != (ssize_t)len)
        log_msg(SBX_LOG_WARN, NULL, "writing the audit log failed");
}

const char *sbx_runtime_http_token(const struct sbx_runtime *rt)
{
    return rt->settings->http_token;
}

void sbx_runtime_result_options(const struct sbx_runtime *rt, struct sbx_result_options *ret)
{
    *ret = (struct sbx_result_options){.text_json = rt->settings->result_text_json,
            .inline_images_max = rt->settings->inline_images_max,
            .inline_image_bytes = rt->settings->inline_image_bytes};
}

unsigned sbx_runtime_max_concurrent(const struct sbx_runtime *rt)
{
    return rt->settings->max_concurrent;
}

bool sbx_runtime_network_open(const struct sbx_runtime *rt)
{
    return rt->settings->ceilings.network != SBX_NET_OFF;
}
