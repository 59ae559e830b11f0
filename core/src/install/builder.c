/* SPDX-License-Identifier: MIT */
/*
 * builder.c: build a set in a box of its own, through the engine's steps
 * (engine_open_box, engine_greet, engine_close_box): the run's limits but
 * the install's time, the staging directory at /deps, for libraries the
 * filtering proxy relayed to the box's loopback and the language's files
 * for the steps (its prepare_install hook), then the recipe's steps in
 * order, their output kept as one capped log. A watch thread stops an
 * install that grows past LLM_SANDBOX_INSTALL_MAX. Also what keys a set
 * and the environment a recipe starts from.
 */
#include "install/builder.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/error.h"
#include "base/util.h"
#include "cache/deps.h"
#include "cache/key.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "plugins/manifest.h"
#include "plugins/plugin_settings.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "proto.h"
#include "runtime_state.h"

#define INSTALL_PORT 3128 /* the agent's relay to the proxy, on the box's loopback */

/* Files a language's prepare_install hook makes for its install steps. */
#define INSTALL_FILES_MAX 8

struct sbx_install {
    struct {
        char *name, *data;
        size_t len;
    } file[INSTALL_FILES_MAX];
    size_t n;
};

/* The install's output, interleaved as written, capped. */
void install_output(void *userdata, enum sbx_stream stream, const char *buf, size_t len)
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

/* A recipe's base environment: the run's without the operator's
 * pass-through variables (those are for programs, and would make every
 * set's key differ), then the recipe's own env on top. */
int recipe_env(const struct run *r, const struct manifest_install *in, char ***ret)
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
int install_box(struct run *r, const struct manifest_install *in, const struct deps_set *set,
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

/* The set's key: everything that decides what the install produces. */
int install_key(const struct run *r, const struct manifest_install *in, const char *tool,
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
    image = plugin_setting_value(r->rt->settings, r->backend->m, r->backend->name, image_key);
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
