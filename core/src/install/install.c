/* SPDX-License-Identifier: MIT */
/*
 * install.c: the request's libraries as the language's install recipe
 * says (prepare_libraries): find their dependency set in the cache
 * (cache/deps.h), or build it in a box of its own (builder.c) whose only
 * network is the filtering proxy (net/proxy.h), then mount it read-only
 * for the run. The operator may name other registry hosts, install
 * variables and a file:// repository; the set's key covers them all, and
 * a container backend's image by its ID.
 */
#include "install/install.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/log.h"
#include "base/util.h"
#include "cache/deps.h"
#include "cache/key.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "install/builder.h"
#include "net/proxy.h"
#include "plugins/manifest.h"
#include "plugins/plugin_settings.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "proto.h"
#include "runtime_state.h"

/* The registry hosts: the operator's LLM_SANDBOX_<LANG>_INSTALL_HOSTS
 * (comma-separated) instead of the manifest's, when set. */
static int install_hosts(const struct run *r, char ***ret)
{
    const char *v =
            plugin_setting_value(r->rt->settings, r->lang->m, r->lang->name, "install_hosts");
    char **hosts = NULL;

    if (!v)
        return strv_dup(r->lang->m->lang->install->hosts, ret);
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        char *h = strndup(p, n);

        if (!h || !host_pattern_is_valid(h)) {
            free(h);
            strv_free(hosts);
            return SBX_E_INVALID;
        }
        if (strv_push(&hosts, h) < 0) {
            free(h);
            strv_free(hosts);
            return SBX_E_NOMEM;
        }
        free(h);
        p += n + (p[n] == ',');
    }
    *ret = hosts;
    return 0;
}

/* The install's environment: the run's (but not LLM_SANDBOX_ENV_ALLOW's
 * variables), the recipe's, the reference's R_REPO, the operator's
 * LLM_SANDBOX_<LANG>_INSTALL_ENV ("K=V K=V"), and the proxy. */
static int install_env(const struct run *r, char ***ret)
{
    static const char *const proxy[] = {"HTTPS_PROXY=http://127.0.0.1:3128",
            "https_proxy=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128",
            "http_proxy=http://127.0.0.1:3128", "NO_PROXY=", "no_proxy="};
    const char *v = plugin_setting_value(r->rt->settings, r->lang->m, r->lang->name, "install_env");
    char **env = NULL;

    if (recipe_env(r, r->lang->m->lang->install, &env) < 0)
        return SBX_E_NOMEM;
    /* the reference's variables (R_REPO) replace what the manifest names */
    for (char **e = r->rt->settings->install_env; e && *e; e++)
        if (strv_has_key(r->lang->m->lang->install->env, *e) && strv_setenv(&env, *e) < 0)
            goto oom;
    for (const char *p = v; p && *p;) {
        size_t n = strcspn(p, " ");
        char *kv = strndup(p, n), *eq = kv ? strchr(kv, '=') : NULL;

        if (n && (!eq || (*eq = '\0', !env_key_is_valid(kv)))) {
            free(kv);
            strv_free(env);
            return SBX_E_INVALID;
        }
        if (n)
            *eq = '=';
        if (n && strv_setenv(&env, kv) < 0) {
            free(kv);
            goto oom;
        }
        free(kv);
        p += n + (p[n] == ' ');
    }
    for (size_t i = 0; i < sizeof(proxy) / sizeof(proxy[0]); i++)
        if (strv_setenv(&env, proxy[i]) < 0)
            goto oom;
    *ret = env;
    return 0;
oom:
    strv_free(env);
    return SBX_E_NOMEM;
}

/* A repository named by the recipe's repo_var: https:// stays as it is; a
 * file:// directory is mounted read-only at /repo for the steps, and the
 * variable rewritten to point there. *ret_dir is that directory, or NULL.
 * SBX_E_UNSUPPORTED for anything else. */
static int install_repo(const struct run *r, char ***env, char **ret_dir)
{
    const char *key = r->lang->m->lang->install->repo_var;
    size_t klen = key ? strlen(key) : 0;
    struct stat st;

    *ret_dir = NULL;
    for (char **e = *env; key && e && *e; e++) {
        const char *v = *e + klen + 1;
        char *kv = NULL;

        if (strncmp(*e, key, klen) != 0 || (*e)[klen] != '=')
            continue;
        if (strncmp(v, "https://", 8) == 0)
            return 0;
        if (strncmp(v, "file://", 7) != 0 || v[7] != '/' || strstr(v, "/..") ||
                stat(v + 7, &st) < 0 || !S_ISDIR(st.st_mode))
            return SBX_E_UNSUPPORTED;
        if (!(*ret_dir = strdup(v + 7)) || asprintf(&kv, "%s=file:///repo", key) < 0)
            return SBX_E_NOMEM;
        free(*e);
        *e = kv;
        return 0;
    }
    return 0;
}

/* A container backend's image, by its ID (the backend's image_id, ABI
 * 1.3), folded into the set's key: the image's toolchain is the one that
 * installs, and a name can be re-tagged to another image. */
static int key_image(const struct run *r, char key[65], struct sbx_error **err)
{
    const struct sbx_backend_ops *ops = r->backend->desc->backend;
    struct sbx_box_spec spec;
    struct sbx_err perr;
    struct sha256_ctx md;
    char id[160];

    if (ops->size < offsetof(struct sbx_backend_ops, image_id) + sizeof(ops->image_id) ||
            !ops->image_id)
        return 0;
    memset(&spec, 0, sizeof(spec));
    spec.size = sizeof(spec);
    spec.policy = &r->policy;
    spec.id = "image-id";
    spec.language = r->lang->name;
    spec.image = r->lang->m->lang->image;
    spec.cancel_fd = r->req->cancel ? r->req->cancel->fd : -1;
    sbx_err_init(&perr);
    if (ops->image_id(r->backend->pstate, &spec, id, sizeof(id), &perr) < 0)
        return sbx_error_from_plugin(err, &perr, r->backend->name);
    id[sizeof(id) - 1] = '\0';
    sha256_init(&md);
    cache_key_field(&md, "set", key, strlen(key));
    cache_key_field(&md, "image", id, strlen(id));
    cache_key_hex(&md, key);
    return 0;
}

/* An install that could not start is the run's error: say why, free what
 * was gathered for it. */
static int install_error(struct run *r, struct sbx_error *e, char **hosts, char **env, char *repo)
{
    r->ex->status = SBX_STATUS_ERROR;
    r->ex->message = strdup(e->msg);
    sbx_error_free(e);
    strv_free(hosts);
    strv_free(env);
    free(repo);
    return 1;
}

/* A JSON record of what a set holds. (transfer full) */
/* "installing numpy, pandas (python) ..." or "... from the cache". */
static void install_notice(const struct run *r)
{
    char libs[256] = "";
    size_t len = 0;

    for (size_t i = 0; i < r->req->n_libraries && len < sizeof(libs); i++) {
        int n = snprintf(
                libs + len, sizeof(libs) - len, "%s%s", i ? ", " : "", r->req->libraries[i]);

        len += n > 0 ? (size_t)n : 0;
    }
    if (r->deps->ready)
        engine_notice(r, SBX_NOTICE_INFO, "libraries %s (%s) from the cache", libs, r->lang->name);
    else
        engine_notice(r, SBX_NOTICE_INFO,
                "installing %s (%s) in a sandbox that reaches only the package registries", libs,
                r->lang->name);
}

static char *set_record(const struct run *r, const char *tool)
{
    struct json_object *o = json_object_new_object(), *libs = json_object_new_array();
    char *out;

    for (size_t i = 0; i < r->req->n_libraries; i++)
        json_object_array_add(libs, json_object_new_string(r->req->libraries[i]));
    json_object_object_add(o, "language", json_object_new_string(r->lang->name));
    json_object_object_add(o, "backend", json_object_new_string(r->backend->name));
    json_object_object_add(o, "toolchain", json_object_new_string(tool));
    json_object_object_add(o, "libraries", libs);
    json_object_object_add(o, "created", json_object_new_int64((int64_t)time(NULL)));
    out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return out;
}

/*
 * Libraries: find their set in the cache, or build it. Returns 0 to go on
 * and run with the set mounted, 1 when the result is already decided (the
 * install failed, or was refused), or < 0 for errors of the tool.
 */
int prepare_libraries(struct run *r, struct sbx_error **err)
{
    /* the install's network, and the set mounted into boxes */
    static const enum sbx_control needed[] = {SBX_CTL_NET_REGISTRIES, SBX_CTL_HOST_MOUNTS};
    const struct settings *s = r->rt->settings;
    const struct manifest_install *in = r->lang->m->lang->install;
    int64_t t0 = now_ms(), uid = -1, gid = -1;
    struct sbx_policy ipol = r->policy;
    struct proxy *px = NULL;
    struct dynbuf log;
    char key[65], tool[CACHE_TOOL_MAX];
    char **hosts = NULL, **env = NULL, *repo = NULL;
    struct sbx_error *e = NULL;
    bool ok = false;
    int rc = 0;

    if (r->backend->desc->abi_minor < 2)
        return engine_refuse(
                r, "backend '%s' predates dependency installs (plugin ABI 1.2)", r->backend->name);
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        enum sbx_control c = needed[i];

        if (r->backend->caps.level[c] != SBX_ENF_FULL)
            return engine_refuse(r, "backend '%s' cannot install libraries here: %s",
                    r->backend->name,
                    r->backend->caps.note[c][0] ? r->backend->caps.note[c] : "not supported");
    }
    rc = engine_ids(r, &uid, &gid, err); /* the staging and the proxy are the box's */
    if (rc < 0)
        return rc;
    rc = install_hosts(r, &hosts);
    if (rc == 0)
        rc = install_env(r, &env);
    cache_toolchain_id(r->lang->m, tool, sizeof(tool));
    if (rc == 0) /* the key sees the repository as named, before install_repo() */
        rc = install_key(r, in, tool, hosts, env, key);
    if (rc == 0)
        rc = install_repo(r, &env, &repo);
    if (rc < 0) {
        strv_free(hosts);
        strv_free(env);
        free(repo);
        if (rc == SBX_E_NOMEM)
            return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        return engine_refuse(r,
                rc == SBX_E_INVALID ? "LLM_SANDBOX_%s_INSTALL_HOSTS or _INSTALL_ENV is malformed"
                                    : "the %s repository must be https:// or a file:// directory",
                r->lang->name);
    }
    /* after the request's own refusals: resolving may pull the image */
    if (key_image(r, key, &e) < 0)
        return install_error(r, e, hosts, env, repo);
    r->ex->has_install = true;
    engine_phase(r, "installing");
    if (deps_open(s, r->lang->name, key, uid, gid, (int64_t)s->install_timeout_ms, &r->deps, &e) <
            0)
        return install_error(r, e, hosts, env, repo);
    r->ex->install_cached = r->deps->ready;
    install_notice(r);
    if (!r->deps->ready) {
        rc = proxy_start(r->deps->sock, hosts, uid, gid, &px, err);
        if (rc < 0) {
            strv_free(hosts);
            strv_free(env);
            free(repo);
            return rc;
        }
        dynbuf_init(&log, INSTALL_LOG_MAX);
        ipol.network = SBX_NET_REGISTRIES;
        ipol.wall_time_ms = s->install_timeout_ms;
        r->box_policy = &ipol;
        r->proxy_sock = r->deps->sock;
        r->box_mounts[0] = (struct sbx_mount){
                .source = r->deps->staging, .target = "/deps", .flags = SBX_MOUNT_RW};
        r->box_mounts[1] = (struct sbx_mount){.source = repo, .target = "/repo"};
        r->n_box_mounts = repo ? 2 : 1;
        rc = install_box(r, in, r->deps, "installing the libraries", env, &log, &ok, err);
        r->box_policy = NULL;
        r->proxy_sock = NULL;
        {
            char *refused = proxy_refusals(px);

            if (refused) {
                install_output(&log, SBX_STREAM_STDERR, "\nllm-sandbox proxy:\n", 20);
                install_output(&log, SBX_STREAM_STDERR, refused, strlen(refused));
            }
            free(refused);
        }
        px = proxy_stop(px);
        engine_notice(r, SBX_NOTICE_INFO, "%s installing the libraries after %.1f s",
                rc == 0 && ok ? "finished" : "failed", (double)(now_ms() - t0) / 1000.0);
        r->ex->install_log_truncated = log.len >= log.cap;
        r->ex->install_log = dynbuf_take(&log, NULL);
        dynbuf_done(&log);
        if (rc == 0 && ok) {
            char *rec = set_record(r, tool);

            rc = rec ? deps_commit(r->deps, rec, err)
                     : sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
            free(rec);
            if (rc == 0)
                deps_evict(s);
        }
    }
    strv_free(hosts);
    strv_free(env);
    free(repo);
    r->ex->install_ms = (uint64_t)(now_ms() - t0);
    if (rc < 0)
        return rc;
    if (!r->deps->ready)
        return 1;
    r->mounts[r->n_mounts++] = (struct sbx_mount){.source = r->deps->dir, .target = "/deps"};
    if (in->workspace_dir) {
        if (asprintf(&r->ws_mount_src, "%s/%s", r->deps->dir, in->workspace_dir) < 0 ||
                asprintf(&r->ws_mount_dst, "/workspace/%s", in->workspace_dir) < 0)
            return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        r->mounts[r->n_mounts++] =
                (struct sbx_mount){.source = r->ws_mount_src, .target = r->ws_mount_dst};
    }
    return 0;
}
