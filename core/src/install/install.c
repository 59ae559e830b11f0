/* SPDX-License-Identifier: MIT */
/*
 * install.c: building and using sets for a run (see deps.h for the cache).
 *
 * prepare_libraries(): the request's libraries as the language's install
 * recipe says: find the dependency set, or build it in a box of its own
 * whose only network is the filtering proxy (proxy.h), then mount it
 * read-only for the run. prepare_warm(): the language's warm-up set (Go's
 * standard library build cache), built once per toolchain without network.
 */
#include "install/install.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <nettle/sha2.h>
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
#include "engine/engine.h"
#include "engine/plan.h"
#include "host/exec.h"
#include "net/proxy.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "proto.h"
#include "runtime_state.h"

#define INSTALL_LOG_MAX (64u * 1024u)
#define INSTALL_PORT    3128 /* the agent's relay to the proxy, on the box's loopback */

/* What identifies the toolchain without running it: the language's first
 * required binary, found along the language's PATH, by device, inode, size
 * and modification time (an upgrade changes them). */
static void toolchain_id(const struct run *r, char *out, size_t len)
{
    const struct manifest *m = r->lang->m;
    const char *name = m->n_binaries              ? m->binaries[0].name
                       : m->lang->version_command ? m->lang->version_command[0]
                                                  : "";
    struct stat st;
    char buf[PATH_MAX];

    if (manifest_which(m, name, buf, sizeof(buf), &st) == 0)
        snprintf(out, len, "%s %ju:%ju %jd %jd", buf, (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                (intmax_t)st.st_size, (intmax_t)st.st_mtime);
    else
        snprintf(out, len, "%s (not found)", name);
}

/* The install's output, interleaved as written, capped. */
static void install_output(void *userdata, enum sbx_stream stream, const char *buf, size_t len)
{
    struct dynbuf *log = userdata;

    (void)stream;
    if (log->len + len > log->cap)
        len = log->cap > log->len ? log->cap - log->len : 0;
    if (len)
        (void)dynbuf_append(log, buf, len);
}

static void install_kill(void *arg)
{
    struct run *r = arg;

    r->backend->desc->backend->box_kill(r->box);
}

/* The registry hosts: the operator's LLM_SANDBOX_<LANG>_INSTALL_HOSTS
 * (comma-separated) instead of the manifest's, when set. */
static int install_hosts(const struct run *r, char ***ret)
{
    const char *v =
            settings_plugin_value(r->rt->settings, r->lang->m, r->lang->name, "install_hosts");
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

/* A recipe's base environment: the run's without the operator's
 * pass-through variables (those are for programs, and would make every
 * set's key differ), then the recipe's own env on top. */
static int recipe_env(const struct run *r, const struct manifest_install *in, char ***ret)
{
    char **env = NULL;

    for (char **e = r->env; e && *e; e++)
        if (!strv_has_key(r->rt->settings->env_pass, *e) && strv_push(&env, *e) < 0)
            goto oom;
    for (char **e = in->env; *e; e++)
        if (strv_setenv(&env, *e) < 0)
            goto oom;
    *ret = env;
    return 0;
oom:
    strv_free(env);
    return SBX_E_NOMEM;
}

/* The install's environment: the run's (but not LLM_SANDBOX_ENV_ALLOW's
 * variables), the recipe's, the reference's R_REPO, the operator's
 * LLM_SANDBOX_<LANG>_INSTALL_ENV ("K=V K=V"), and the proxy. */
static int install_env(const struct run *r, char ***ret)
{
    static const char *const proxy[] = {"HTTPS_PROXY=http://127.0.0.1:3128",
            "https_proxy=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128",
            "http_proxy=http://127.0.0.1:3128", "NO_PROXY=", "no_proxy="};
    const char *v =
            settings_plugin_value(r->rt->settings, r->lang->m, r->lang->name, "install_env");
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

/* One step's argv: "{libraries}" becomes every library, in request order. */
static int step_argv(const struct run *r, char *const *tmpl, char ***ret)
{
    char **argv = NULL;

    for (; *tmpl; tmpl++) {
        if (strcmp(*tmpl, "{libraries}") == 0) {
            for (size_t i = 0; i < r->req->n_libraries; i++)
                if (strv_push(&argv, r->req->libraries[i]) < 0)
                    goto oom;
        } else if (strv_push(&argv, *tmpl) < 0) {
            goto oom;
        }
    }
    *ret = argv;
    return 0;
oom:
    strv_free(argv);
    return SBX_E_NOMEM;
}

/* Files a language's prepare_install hook makes for its install steps. */
#define INSTALL_FILES_MAX 8

struct sbx_install {
    struct {
        char *name, *data;
        size_t len;
    } file[INSTALL_FILES_MAX];
    size_t n;
};

static int install_add_file(struct sbx_install *in, const char *name, const char *data, size_t len)
{
    if (!name || !rel_path_is_valid(name) || strchr(name, '/') || (!data && len))
        return SBX_E_INVALID;
    if (in->n == INSTALL_FILES_MAX || len > STAGE_FILE_MAX)
        return SBX_E_LIMIT;
    in->file[in->n].name = strdup(name);
    in->file[in->n].data = malloc(len + 1);
    if (!in->file[in->n].name || !in->file[in->n].data) {
        free(in->file[in->n].name);
        free(in->file[in->n].data);
        return SBX_E_NOMEM;
    }
    if (len)
        memcpy(in->file[in->n].data, data, len);
    in->file[in->n++].len = len;
    return 0;
}

static void install_files_free(struct sbx_install *in)
{
    for (size_t i = 0; i < in->n; i++) {
        free(in->file[i].name);
        free(in->file[i].data);
    }
    in->n = 0;
}

/* The language's files for the install steps (ABI 1.2 hook), staged in
 * the install box's workspace. 0, > 0 (enum agentc_end), or < 0. */
static int install_files(struct run *r, int64_t deadline, struct sbx_error **err)
{
    const struct sbx_plugin *d = r->lang->desc;
    const struct sbx_language_ops *lo = d ? d->language : NULL;
    static const struct sbx_install_ops iops = {
            .size = sizeof(struct sbx_install_ops), .add_file = install_add_file};
    struct sbx_install in = {.n = 0};
    struct sbx_err perr;
    int end = 0;

    if (!lo || d->abi_minor < 2 || !SBX_HAS_FIELD(struct sbx_language_ops, lo, prepare_install) ||
            !lo->prepare_install)
        return 0;
    sbx_err_init(&perr);
    if (lo->prepare_install(
                r->lang->pstate, r->req->libraries, r->req->n_libraries, &iops, &in, &perr) < 0) {
        install_files_free(&in);
        return sbx_error_from_plugin(err, &perr, r->lang->name);
    }
    for (size_t i = 0; end == 0 && i < in.n; i++)
        end = agentc_put(r->ac, in.file[i].name, 0644, in.file[i].data, in.file[i].len, deadline);
    install_files_free(&in);
    return end;
}

/* Build a set in a box of its own: the run's limits but the install's
 * time, the staging directory at /deps, and for libraries network only
 * through the proxy (a warm-up recipe has no hosts and no network). what
 * names the work in messages. 0 with ok set when it was built; 0 with ok
 * unset when it failed (r->ex says why); < 0 for errors of the tool. */
static int install_box(struct run *r, const struct manifest_install *in, const struct deps_set *set,
        const char *what, char **env, struct dynbuf *log, bool *ok, struct sbx_error **err)
{
    int64_t deadline = now_ms() + SETUP_TIMEOUT_MS;
    struct agentc_sink sink = {.on_output = install_output, .userdata = log};
    struct agentc_exit ex = {0};
    struct sbx_box_stats st;
    struct deps_watch *watch = NULL;
    char why[256] = "";
    int end = 0, rc;

    /* the captures only gate on_output, which keeps one interleaved log */
    capture_init(&sink.out, INSTALL_LOG_MAX);
    capture_init(&sink.err, INSTALL_LOG_MAX);
    *ok = false;
    rc = engine_open_box(r, err);
    if (rc == 0) {
        watch = deps_watch_start(set->staging, r->rt->settings->install_max_bytes, install_kill, r);
        end = engine_greet(r, deadline);
        if (end == 0 && in->hosts)
            end = agentc_relay(r->ac, INSTALL_PORT, SBX_PROXY_SOCKET, deadline);
        if (end == 0 && in->hosts)
            end = install_files(r, deadline, err);
        if (end < 0 && end != SBX_E_IO)
            rc = end;
        deadline = now_ms() + (int64_t)r->rt->settings->install_timeout_ms;
        for (size_t i = 0; end == 0 && i < in->n_steps; i++) {
            char **argv = NULL;

            if (step_argv(r, in->steps[i].run, &argv) < 0) {
                rc = sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
                break;
            }
            end = agentc_exec(r->ac, argv, env, NULL, 0, deadline, &sink, &ex);
            if (end == AGENTC_EXITED && (ex.signaled || ex.code != 0))
                end = -100 - (int)i; /* this step failed */
            strv_free(argv);
        }
        snprintf(why, sizeof(why), "%s", agentc_last_error(r->ac));
        if (end == 0)
            agentc_quit(r->ac);
        else if (r->box)
            r->backend->desc->backend->box_kill(r->box);
    }
    bool over = deps_watch_stop(watch);

    if (engine_close_box(r, &st, rc < 0 ? NULL : err) < 0 && rc == 0)
        rc = (*err)->rc;
    /* A container backend copies the set into the staging directory only
     * as it closes the box (plugins/docker/volume.c): measure it again. */
    if (!over && rc == 0 && end == 0)
        over = deps_tree_bytes(set->staging, r->rt->settings->install_max_bytes) >
               r->rt->settings->install_max_bytes;
    if (over) {
        r->ex->status = SBX_STATUS_ERROR;
        r->ex->limit = SBX_LIMIT_WORKSPACE;
        (void)!asprintf(&r->ex->message,
                "%s stopped: it grew past LLM_SANDBOX_INSTALL_MAX (%" PRIu64 " bytes)", what,
                r->rt->settings->install_max_bytes);
        end = 1;
    }
    r->ac = agentc_free(r->ac);
    capture_done(&sink.out);
    capture_done(&sink.err);
    if (rc < 0 || r->ex->message)
        return rc;
    if (end == 0) {
        *ok = true;
        return 0;
    }
    r->ex->status = end == AGENTC_TIMEOUT     ? SBX_STATUS_TIMEOUT
                    : end == AGENTC_CANCELLED ? SBX_STATUS_CANCELLED
                    : st.oom_killed == 1      ? SBX_STATUS_OOM
                                              : SBX_STATUS_ERROR;
    if (end == AGENTC_TIMEOUT)
        r->ex->limit = SBX_LIMIT_WALL_TIME;
    else if (st.oom_killed == 1)
        r->ex->limit = SBX_LIMIT_MEMORY;
    if (end <= -100)
        (void)!asprintf(&r->ex->message, "%s failed: step %d (%s) %s %d; see install.log", what,
                -end - 99, in->steps[-end - 100].run[0],
                ex.signaled ? "was killed by signal" : "exited with", ex.code);
    else
        (void)!asprintf(&r->ex->message, "%s %s", what,
                end == AGENTC_TIMEOUT     ? "took longer than LLM_SANDBOX_INSTALL_TIMEOUT"
                : end == AGENTC_CANCELLED ? "was cancelled"
                : end == SBX_E_IO         ? why
                                          : "failed: the sandbox ended unexpectedly");
    return 0;
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

static void md_str(struct sha256_ctx *md, const char *tag, const void *data, size_t len);

/* A container backend's image, by its ID (the backend's image_id, ABI
 * 1.3), folded into the set's key: the image's toolchain is the one that
 * installs, and a name can be re-tagged to another image. */
static int key_image(const struct run *r, char key[65], struct sbx_error **err)
{
    const struct sbx_backend_ops *ops = r->backend->desc->backend;
    struct sbx_box_spec spec;
    struct sbx_err perr;
    uint8_t dig[SHA256_DIGEST_SIZE];
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
    md_str(&md, "set", key, strlen(key));
    md_str(&md, "image", id, strlen(id));
    sha256_digest(&md, sizeof(dig), dig);
    for (size_t i = 0; i < sizeof(dig); i++)
        snprintf(key + 2 * i, 3, "%02x", dig[i]);
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

/* The set's key: everything that decides what the install produces. */
static int install_key(const struct run *r, const struct manifest_install *in, const char *tool,
        char *const *hosts, char *const *env, char *key)
{
    const struct manifest_lang *ml = r->lang->m->lang;
    struct dynbuf id;
    int rc = 0;

    char image_key[64];
    const char *image;

    /* a container backend's image for the language, as the operator set it
     * (LLM_SANDBOX_<BACKEND>_IMAGE_<LANG>, or a name its manifest declares
     * for image_<lang>): its toolchain
     * is the one that installs */
    snprintf(image_key, sizeof(image_key), "image_%s", r->lang->name);
    image = settings_plugin_value(r->rt->settings, r->backend->m, r->backend->name, image_key);
    dynbuf_init(&id, 1u << 20);
    rc |= dynbuf_printf(&id, "%s|%s %s|%s|%s", r->backend->name, r->lang->name, r->lang->m->version,
            image       ? image
            : ml->image ? ml->image
                        : "",
            tool);
    for (char *const *h = hosts; h && *h; h++)
        rc |= dynbuf_printf(&id, "|host=%s", *h);
    for (char *const *e = env; e && *e; e++)
        rc |= dynbuf_printf(&id, "|env=%s", *e);
    if (rc == 0)
        rc = deps_key(r->lang->name, id.buf, in, (char *const *)r->req->libraries,
                in->hosts ? r->req->n_libraries : 0, key);
    dynbuf_done(&id);
    return rc < 0 ? SBX_E_NOMEM : 0;
}

/* A JSON record of what a set holds. (transfer full) */
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
    char key[65], tool[PATH_MAX + 96];
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
    if (geteuid() == 0) {
        uid = s->sandbox_uid;
        gid = s->sandbox_gid;
    }
    rc = install_hosts(r, &hosts);
    if (rc == 0)
        rc = install_env(r, &env);
    toolchain_id(r, tool, sizeof(tool));
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

/*
 * The language's warm-up set (language.warm): built once per toolchain by
 * its steps, without network and without anything of the request, then
 * mounted read-only at /warm for every run, whose seed command links it
 * into the sandbox's own writable cache. Only toolchain code ever writes
 * the set, so sharing it shares nothing a request made. Returns 0 to go on
 * (with or without the set: a failed warm-up costs speed, not the run),
 * or < 0 for errors of the tool.
 */
int prepare_warm(struct run *r, struct sbx_error **err)
{
    const struct settings *s = r->rt->settings;
    const struct manifest_install *w = r->lang->m->lang->warm;
    int64_t uid = geteuid() == 0 ? (int64_t)s->sandbox_uid : -1;
    int64_t gid = geteuid() == 0 ? (int64_t)s->sandbox_gid : -1;
    struct sbx_policy wpol = r->policy;
    struct sbx_execution *saved = r->ex, scratch = {0};
    struct sbx_error *e = NULL;
    char key[65], tool[PATH_MAX + 96], name[48];
    char **env = NULL;
    struct dynbuf log;
    bool ok = false;
    int rc = 0;

    if (!w || r->probe_argv || r->backend->desc->abi_minor < 2 ||
            r->backend->caps.level[SBX_CTL_HOST_MOUNTS] != SBX_ENF_FULL)
        return 0;
    if (recipe_env(r, w, &env) < 0)
        goto oom;
    toolchain_id(r, tool, sizeof(tool));
    if (install_key(r, w, tool, NULL, env, key) < 0)
        goto oom;
    snprintf(name, sizeof(name), "warm-%s", r->lang->name);
    if (deps_open(s, name, key, uid, gid, (int64_t)s->install_timeout_ms, &r->warm, &e) < 0) {
        log_msg(SBX_LOG_WARN, r->lang->name, "no warm build cache: %s", e->msg);
        sbx_error_free(e);
        strv_free(env);
        return 0;
    }
    if (!r->warm->ready) {
        engine_phase(r, "warming up");
        dynbuf_init(&log, INSTALL_LOG_MAX);
        wpol.network = SBX_NET_OFF;
        wpol.wall_time_ms = s->install_timeout_ms;
        r->box_policy = &wpol;
        r->box_mounts[0] = (struct sbx_mount){
                .source = r->warm->staging, .target = "/deps", .flags = SBX_MOUNT_RW};
        r->n_box_mounts = 1;
        r->ex = &scratch; /* how the warm-up ended is not the run's result */
        rc = install_box(r, w, r->warm, "warming up the build cache", env, &log, &ok, err);
        r->ex = saved;
        r->box_policy = NULL;
        if (rc == 0 && ok) {
            rc = deps_commit(r->warm, "{\"warm\":true}", err);
        } else if (rc == 0) {
            log_msg(SBX_LOG_WARN, r->lang->name, "no warm build cache: %s: %s",
                    scratch.message ? scratch.message : "failed", log.buf ? log.buf : "");
        }
        free(scratch.message);
        dynbuf_done(&log);
    }
    strv_free(env);
    if (rc < 0)
        return rc;
    if (!r->warm->ready) {
        r->warm = deps_close(r->warm);
        return 0;
    }
    r->mounts[r->n_mounts++] = (struct sbx_mount){.source = r->warm->dir, .target = "/warm"};
    return 0;
oom:
    strv_free(env);
    return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* ---- the compile cache --------------------------------------------------- */

#define BUILD_OUTPUT_MAX (64u << 20) /* larger outputs are not cached */

static void md_str(struct sha256_ctx *md, const char *tag, const void *data, size_t len)
{
    uint64_t n = len;

    sha256_update(md, strlen(tag) + 1, (const uint8_t *)tag);
    sha256_update(md, sizeof(n), (const uint8_t *)&n);
    sha256_update(md, len, data);
}

/* Everything a build's outputs depend on: the toolchain, the expanded
 * build command and its environment, the program, every staged file, and
 * the libraries' set. */
static int build_key(const struct run *r, char out[65])
{
    const struct manifest_lang *ml = r->lang->m->lang;
    struct sha256_ctx ctx, *md = &ctx;
    uint8_t dig[SHA256_DIGEST_SIZE];
    char tool[PATH_MAX + 96];

    toolchain_id(r, tool, sizeof(tool));
    sha256_init(md);
    md_str(md, "format", "llm-sandbox build 1", 19);
    md_str(md, "backend", r->backend->name, strlen(r->backend->name));
    md_str(md, "language", r->lang->name, strlen(r->lang->name));
    md_str(md, "version", r->lang->m->version, strlen(r->lang->m->version));
    md_str(md, "image", ml->image ? ml->image : "", ml->image ? strlen(ml->image) : 0);
    md_str(md, "toolchain", tool, strlen(tool));
    for (char **a = r->plan->build; *a; a++)
        md_str(md, "arg", *a, strlen(*a));
    for (char **e = r->env; e && *e; e++)
        if (!strv_has_key(r->rt->settings->env_pass, *e))
            md_str(md, "env", *e, strlen(*e));
    md_str(md, "source", r->plan->source_name, strlen(r->plan->source_name));
    md_str(md, "code", r->req->code, r->req->code_len);
    for (size_t i = 0; i < r->req->n_files; i++) {
        md_str(md, "file", r->req->files[i].path, strlen(r->req->files[i].path));
        md_str(md, "data", r->req->files[i].data, r->req->files[i].len);
    }
    md_str(md, "deps", r->deps ? r->deps->dir : "", r->deps ? strlen(r->deps->dir) : 0);
    sha256_digest(md, sizeof(dig), dig);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", dig[i]);
    return 0;
}

int prepare_build_cache(struct run *r, struct sbx_error **err)
{
    const struct settings *s = r->rt->settings;
    struct sbx_error *e = NULL;
    char key[65], name[48];

    if (!r->lang->m->lang->build_outputs || !r->plan->build || r->probe_argv)
        return 0;
    if (build_key(r, key) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    snprintf(name, sizeof(name), "build-%s", r->lang->name);
    /* owned by the server: only the host writes a build's outputs there */
    if (deps_open(s, name, key, -1, -1, (int64_t)s->install_timeout_ms, &r->build, &e) < 0) {
        log_msg(SBX_LOG_WARN, r->lang->name, "no compile cache: %s", e->msg);
        sbx_error_free(e);
        return 0;
    }
    r->ex->has_build_cache = true;
    r->ex->build_cached = r->build->ready;
    return 0;
}

/* The set's list of outputs: "MODE PATH" lines (octal mode, a path
 * relative to the workspace), written by build_cache_save(). */
#define BUILD_FILES ".build-files"

int build_cache_replay(struct run *r, int64_t deadline)
{
    static const char *const streams[] = {".build-stdout", ".build-stderr"};
    struct sbx_error *e = NULL;
    char *list = NULL, *save = NULL;
    size_t llen = 0;
    int end = 0;

    if (deps_read_file(r->build, BUILD_FILES, STAGE_FILE_MAX, &list, &llen, &e) < 0) {
        log_msg(SBX_LOG_WARN, r->lang->name, "%s", e->msg);
        sbx_error_free(e);
        return SBX_E_IO;
    }
    for (char *line = strtok_r(list, "\n", &save); end == 0 && line;
            line = strtok_r(NULL, "\n", &save)) {
        char *path = strchr(line, ' '), *data = NULL;
        unsigned long mode = strtoul(line, NULL, 8);
        size_t len = 0;

        if (!path || !rel_path_is_valid(path + 1) ||
                deps_read_file(r->build, path + 1, BUILD_OUTPUT_MAX, &data, &len, &e) < 0) {
            log_msg(SBX_LOG_WARN, r->lang->name, "compile cache: %s",
                    e ? e->msg : "a bad list of outputs");
            sbx_error_free(e);
            free(list);
            return SBX_E_IO;
        }
        end = agentc_put(r->ac, path + 1, (uint32_t)(mode & 0755), data, len, deadline);
        free(data);
    }
    free(list);
    for (int i = 0; end == 0 && i < 2; i++) { /* the compiler's diagnostics, as it wrote them */
        char *data = NULL;
        size_t len = 0;

        if (deps_read_file(r->build, streams[i], BUILD_OUTPUT_MAX, &data, &len, &e) == 0)
            agentc_sink_write(&r->sink, i == 0 ? SBX_STREAM_STDOUT : SBX_STREAM_STDERR, data, len);
        e = sbx_error_free(e);
        free(data);
    }
    return end;
}

/* Create dir/name (name may have directories, made as needed). */
static int write_new(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
    char path[PATH_MAX];
    int fd, rc = 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    if (len && write(fd, data, len) != (ssize_t)len)
        rc = -1;
    if (close(fd) < 0)
        rc = -1;
    return rc;
}

/* The build's outputs as files: a directory output ("classes/") is listed
 * by the agent. (transfer full) */
static int output_files(struct run *r, int64_t deadline, char ***ret)
{
    char **files = NULL;
    int rc = 0;

    for (char **o = r->lang->m->lang->build_outputs; rc == 0 && *o; o++) {
        size_t n = strlen(*o);
        char **listed = NULL;

        if ((*o)[n - 1] != '/') {
            rc = strv_push(&files, *o);
            continue;
        }
        char *dir = strndup(*o, n - 1);

        rc = dir ? agentc_list(r->ac, dir, &listed, deadline) : SBX_E_NOMEM;
        free(dir);
        for (char **l = listed; rc == 0 && l && *l; l++)
            rc = rel_path_is_valid(*l) ? strv_push(&files, *l) : SBX_E_IO;
        strv_free(listed);
    }
    if (rc != 0) {
        strv_free(files);
        return rc;
    }
    *ret = files;
    return 0;
}

void build_cache_save(struct run *r, size_t out0, size_t err0, int64_t deadline)
{
    struct sbx_error *e = NULL;
    struct dynbuf list;
    char **files = NULL;
    int rc;

    if (!r->build || r->build->ready)
        return;
    dynbuf_init(&list, STAGE_FILE_MAX);
    /* fetched from the box before the program runs: nothing the program
     * does can change what is cached */
    rc = output_files(r, deadline, &files);
    for (char **f = files; rc == 0 && f && *f; f++) {
        char *data = NULL;
        size_t len = 0;
        uint32_t mode = 0;

        rc = agentc_get(r->ac, *f, BUILD_OUTPUT_MAX, &data, &len, &mode, deadline);
        if (rc == 0)
            rc = write_new(r->build->staging, *f, data, len, 0644) < 0 ||
                                 dynbuf_printf(&list, "%o %s\n", mode & 0755, *f) < 0
                         ? -1
                         : 0;
        free(data);
    }
    strv_free(files);
    if (rc == 0 && (write_new(r->build->staging, BUILD_FILES, list.buf ? list.buf : "", list.len,
                            0644) < 0 ||
                           write_new(r->build->staging, ".build-stdout", r->sink.out.buf.buf + out0,
                                   r->sink.out.buf.len - out0, 0644) < 0 ||
                           write_new(r->build->staging, ".build-stderr", r->sink.err.buf.buf + err0,
                                   r->sink.err.buf.len - err0, 0644) < 0))
        rc = -1;
    dynbuf_done(&list);
    if (rc == 0 && deps_commit(r->build, "{\"build\":true}", &e) == 0)
        return;
    log_msg(SBX_LOG_DEBUG, r->lang->name, "the build is not cached: %s",
            e ? e->msg : agentc_last_error(r->ac));
    sbx_error_free(e);
    r->build = deps_close(r->build); /* let a waiting identical build go on */
}
