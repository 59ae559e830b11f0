/* SPDX-License-Identifier: MIT */
/*
 * describe.c: what the runtime offers, as JSON for front ends: usable
 * languages (from their manifests, with the toolchain version probed once
 * in a real sandbox, never typed by hand), usable backends with their
 * capabilities, and the effective policy. Front ends never read manifests
 * themselves; everything here is generated from the loaded plugins.
 */
#include <json-c/json.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/util.h"
#include "plugins/host_table.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime/run.h"
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

/* The version from a probe's output: the pattern's first group, else the
 * first line. (transfer full) */
static char *version_from(const char *pattern, const char *text)
{
    regmatch_t m[2];
    regex_t re;
    size_t n;

    if (pattern && regcomp(&re, pattern, REG_EXTENDED) == 0) {
        char *v = NULL;

        if (regexec(&re, text, 2, m, 0) == 0 && m[1].rm_so >= 0)
            v = strndup(text + m[1].rm_so, (size_t)(m[1].rm_eo - m[1].rm_so));
        regfree(&re);
        if (v)
            return v;
    }
    n = strcspn(text, "\n");
    return n ? strndup(text, n > 80 ? 80 : n) : NULL;
}

/* Run the language's version command once, in a sandbox of the default
 * backend, and keep the answer (or the lack of one) for this runtime. */
static void probe_version(struct sbx_runtime *rt, struct plugin *pl)
{
    const struct manifest_lang *ml = pl->m->lang;
    struct sbx_execution *ex = NULL;
    struct sbx_error *e = NULL;

    pthread_mutex_lock(&pl->probe_lock);
    if (!pl->version_probed && ml->version_command) {
        if (run_probe(rt, pl->name, ml->version_command, &ex, &e) == 0 &&
                (ex->status == SBX_STATUS_OK || ex->status == SBX_STATUS_ERROR)) {
            cleanup_free char *text = NULL;

            if (asprintf(&text, "%s%s", ex->stdout_buf, ex->stderr_buf) >= 0)
                pl->version = version_from(ml->version_pattern, text);
        }
        sbx_execution_free(ex);
        sbx_error_free(e);
    }
    pl->version_probed = true;
    pthread_mutex_unlock(&pl->probe_lock);
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
    const char *version;

    if (probe)
        probe_version(rt, pl);
    pthread_mutex_lock(&pl->probe_lock);
    version = pl->version;
    json_object_object_add(o, "version", str_or_null(version));
    pthread_mutex_unlock(&pl->probe_lock);
    json_object_object_add(o, "name", json_object_new_string(pl->name));
    json_object_object_add(o, "description", json_object_new_string(pl->m->description));
    json_object_object_add(o, "aliases", strv_json(pl->m->aliases));
    json_object_object_add(o, "package_manager", str_or_null(ml->package_manager));
    json_object_object_add(o, "source_file", json_object_new_string(ml->source_file));
    json_object_object_add(o, "extensions", strv_json(ml->extensions));
    json_object_object_add(o, "image", str_or_null(ml->image));
    /* the reference server's fields, from the manifest's docs */
    json_object_object_add(o, "preinstalled_libraries", strv_json(ml->docs.preinstalled));
    json_object_object_add(o, "use_cases", strv_json(ml->docs.use_cases));
    json_object_object_add(
            o, "visualization_support", json_object_new_boolean(ml->docs.visualization));
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
