/* SPDX-License-Identifier: MIT */
/*
 * prepare.c: the engine's first steps, before any box: pick the backend
 * and language plugins, check the request (sizes, staged files, library
 * names), resolve the policy and check it against what the backend
 * enforces here, and make the sandbox's environment. A request that fails
 * a check ends as status "refused" with the reason (engine_refuse); only
 * errors of the tool are errors (STYLE E5). Does no I/O but the backend's
 * probe (plugins/host_table.c), once per backend.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "plugins/host_table.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime_state.h"

void engine_mark(const struct run *r, const char *what)
{
    if (log_get_level() >= SBX_LOG_DEBUG)
        log_msg(SBX_LOG_DEBUG, NULL, "%s at %lld ms", what, (long long)(now_ms() - r->t0));
}

int engine_refuse(struct run *r, const char *fmt, ...)
{
    va_list ap;

    r->ex->status = SBX_STATUS_REFUSED;
    va_start(ap, fmt);
    if (vasprintf(&r->ex->message, fmt, ap) < 0)
        r->ex->message = NULL;
    va_end(ap);
    return 1;
}

static int engine_refuse_error(struct run *r, struct sbx_error *e)
{
    engine_refuse(r, "%s", e && e->msg ? e->msg : "refused");
    sbx_error_free(e);
    return 1;
}

/* Name the backend plugins found, usable or not, when the name is none. */
static int pick_backend(struct run *r)
{
    const char *name = r->req->backend ? r->req->backend : r->rt->settings->backend;
    cleanup_free char *avail = registry_names(r->rt, SBX_KIND_BACKEND);
    cleanup_free char *found = registry_names_found(r->rt, SBX_KIND_BACKEND);
    struct plugin *pl = registry_find_any(r->rt, SBX_KIND_BACKEND, name);

    if (pl && pl->state == PLUGIN_OK) {
        r->backend = pl;
        return 0;
    }
    if (pl && pl->state == PLUGIN_UNLOADED)
        return engine_refuse(r, "backend '%s': %s", name, pl->error ? pl->error : "not loaded");
    if (pl)
        return engine_refuse(r, "backend '%s' is installed but broken: %s; available: %s", name,
                pl->error ? pl->error : "unknown error", avail && *avail ? avail : "none");
    return engine_refuse(r,
            "no backend plugin named '%s' is installed here; installed: %s (a distribution may "
            "ship each backend as a package of its own)",
            name, found && *found ? found : "none");
}

static int pick_language(struct run *r)
{
    const char *name = r->req->language ? r->req->language : r->rt->settings->language;
    cleanup_free char *avail = registry_names(r->rt, SBX_KIND_LANGUAGE);
    struct plugin *pl = registry_find_any(r->rt, SBX_KIND_LANGUAGE, name);

    if (pl && pl->state == PLUGIN_OK) {
        r->lang = pl;
        return 0;
    }
    if (pl && pl->state == PLUGIN_DISABLED)
        return engine_refuse(r,
                "language '%s' is not offered here (the operator's LLM_SANDBOX_LANGUAGES);"
                " available: %s",
                name, avail && *avail ? avail : "none");
    if (pl)
        return engine_refuse(r, "language '%s' is installed but broken: %s", name,
                pl->error ? pl->error : "unknown error");
    return engine_refuse(
            r, "unknown language '%s'; available: %s", name, avail && *avail ? avail : "none");
}

/* Staged files: a bounded number and size, paths that stay beneath the
 * workspace, no duplicates. The collision with the source file is checked
 * once the plan names it. */
static int check_files(struct run *r)
{
    const struct sbx_request *q = r->req;
    uint64_t total = 0;

    if (q->n_files > SBX_MAX_FILES)
        return engine_refuse(r, "%zu files; at most %d may be staged", q->n_files, SBX_MAX_FILES);
    for (size_t i = 0; i < q->n_files; i++) {
        const struct sbx_file *f = &q->files[i];

        if (!rel_path_is_valid(f->path))
            return engine_refuse(r,
                    "file '%.200s': the path must be relative to the workspace, "
                    "without '..' or empty parts, each part at most 255 bytes",
                    f->path ? f->path : "");
        if (!f->data && f->len)
            return engine_refuse(r, "file '%.200s' has no data", f->path);
        total += f->len;
        for (size_t j = 0; j < i; j++)
            if (strcmp(q->files[j].path, f->path) == 0)
                return engine_refuse(r, "file '%.200s' is given twice", f->path);
    }
    if (total > r->rt->settings->max_stdin_bytes * 4)
        return engine_refuse(r,
                "the files add up to %" PRIu64 " bytes; the limit is %" PRIu64 " bytes", total,
                r->rt->settings->max_stdin_bytes * 4);
    return 0;
}

int engine_check_source_name(struct run *r)
{
    for (size_t i = 0; i < r->req->n_files; i++)
        if (strcmp(r->req->files[i].path, r->plan->source_name) == 0)
            return engine_refuse(r,
                    "file '%s' would overwrite the program itself; choose another name",
                    r->plan->source_name);
    return 0;
}

/* Each requirement must match its ecosystem's grammar (the language plugin
 * says), before anything else looks at it. */
static int check_libraries(struct run *r)
{
    const struct sbx_language_ops *ops = r->lang->desc ? r->lang->desc->language : NULL;

    for (size_t i = 0; i < r->req->n_libraries; i++) {
        const char *lib = r->req->libraries[i];
        struct sbx_err perr;

        sbx_err_init(&perr);
        if (!lib || !*lib || lib[0] == '-')
            return engine_refuse(r, "library '%.80s' is not a valid name", lib ? lib : "");
        if (!ops || !ops->check_library)
            return engine_refuse(r, "language '%s' cannot install libraries", r->lang->name);
        if (ops->check_library(r->lang->pstate, lib, &perr) < 0)
            return engine_refuse(r, "%s", perr.msg[0] ? perr.msg : "invalid library name");
    }
    if (r->req->n_libraries && !r->lang->m->lang->install)
        return engine_refuse(r, "language '%s' cannot install libraries", r->lang->name);
    return 0;
}

int engine_check_request(struct run *r)
{
    const struct settings *s = r->rt->settings;

    if (!r->req->code)
        return engine_refuse(r, "no code given");
    if (r->req->code_len > s->max_code_bytes)
        return engine_refuse(r, "code is %zu bytes; the limit is %" PRIu64 " bytes",
                r->req->code_len, s->max_code_bytes);
    if (r->req->stdin_data && r->req->stdin_len > s->max_stdin_bytes)
        return engine_refuse(r, "stdin is %zu bytes; the limit is %" PRIu64 " bytes",
                r->req->stdin_len, s->max_stdin_bytes);
    return check_files(r) || check_libraries(r);
}

/* The sandbox's whole environment: a fixed base, where the language's
 * manifest does not set the same variable (Go puts its toolchain on PATH),
 * then the language's, then the operator's allow-list. Nothing else of
 * ours leaks in. */
int engine_build_env(struct run *r, struct sbx_error **err)
{
    static const char *const base[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp",
            "LANG=C.UTF-8", "USER=sandbox", "LOGNAME=sandbox"};
    char **env = NULL;

    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        if (!strv_has_key(r->lang->m->lang->env, base[i]) && strv_push(&env, base[i]) < 0)
            goto oom;
    for (char **e = r->lang->m->lang->env; e && *e; e++)
        if (strv_push(&env, *e) < 0)
            goto oom;
    if (r->req->n_libraries)
        for (char **e = r->lang->m->lang->install->run_env; *e; e++)
            if (strv_setenv(&env, *e) < 0)
                goto oom;
    for (char **e = r->rt->settings->env_pass; e && *e; e++)
        if (strv_push(&env, *e) < 0)
            goto oom;
    r->env = env;
    return 0;
oom:
    strv_free(env);
    return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* Backend and language by name, and the request's own checks: 0, or 1
 * when refused. */
int engine_pick_plugins(struct run *r)
{
    return pick_backend(r) || pick_language(r);
}

int engine_choose(struct run *r)
{
    if (engine_pick_plugins(r) || engine_check_request(r))
        return 1;
    engine_mark(r, "plugins chosen");
    return 0;
}

/* The policy the request gets, checked against what the backend enforces
 * here: 0, or 1 when refused. */
int engine_policy(struct run *r)
{
    struct sbx_error *e = NULL;

    if (policy_resolve(r->rt->settings, &r->req->limits, &r->policy, &r->explicit_mask, &e) < 0 ||
            backend_probe(r->rt, r->backend, &e) < 0 ||
            policy_check(&r->policy, r->explicit_mask, &r->backend->caps, r->backend->name,
                    &r->ex->warnings, &e) < 0)
        return engine_refuse_error(r, e);
    for (char **w = r->ex->warnings; w && *w; w++) /* limits held only by a fallback */
        engine_notice(r, SBX_NOTICE_WARNING, "%s", *w);
    engine_mark(r, "probed and checked");
    return 0;
}

void engine_phase(const struct run *r, const char *name)
{
    engine_mark(r, name);
    if (r->req->on_phase)
        r->req->on_phase(r->req->userdata, name);
}

void engine_notice(const struct run *r, enum sbx_notice level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (!r->req->on_notice)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->req->on_notice(r->req->userdata, level, msg);
}
