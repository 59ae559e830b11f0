/* SPDX-License-Identifier: MIT */
/*
 * run.c: the runtime (settings, cgroup service, plugins) and the engine,
 * sbx_run(): the one path every front end, session and pool uses.
 *
 *   resolve backend and language -> validate the request -> resolve the
 *   policy -> probe the backend and check the policy against it -> plan
 *   (language templates) -> the libraries' and the warm-up's sets
 *   (install.c) -> open a box -> agent: stage the source, build, run with
 *   the deadline -> close the box (kill, clean up, read stats) -> classify
 *   the outcome.
 *
 * Invalid requests and policies that cannot be enforced end as status
 * "refused" before anything runs; outcomes of the user's code are results,
 * never errors (STYLE E5). Thread-safe: the registry is read-only here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "cache/deps.h"
#include "channel/agentc.h"
#include "engine/artifacts.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "host/cgroup.h"
#include "host/exec.h"
#include "host/owner.h"
#include "host/seccomp_policy.h"
#include "net/http.h"
#include "plugins/manifest.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "proto.h"
#include "runtime.h"

int sbx_cancel_new(struct sbx_cancel **ret, struct sbx_error **err)
{
    struct sbx_cancel *c = calloc(1, sizeof(*c));

    if (!c)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->fd < 0) {
        free(c);
        return sbx_error_set(err, SBX_E_IO, errno, "eventfd: %s", strerror(errno));
    }
    *ret = c;
    return 0;
}

void sbx_cancel_fire(struct sbx_cancel *c)
{
    uint64_t one = 1;

    if (c)
        (void)!write(c->fd, &one, sizeof(one));
}

struct sbx_cancel *sbx_cancel_free(struct sbx_cancel *c)
{
    if (c) {
        close(c->fd);
        free(c);
    }
    return NULL;
}

const char *sbx_version(void)
{
    return SBX_VERSION;
}

const char *sbx_runtime_default_backend(const struct sbx_runtime *rt)
{
    return rt->settings->backend;
}

/* Directory of the running executable, for the relocatable layout. */
static char *exe_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    char *slash;

    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return strdup(buf);
}

/* "p<pid>t<starttime>", unique for this process across pid reuse. */
int sbx_runtime_new(struct sbx_runtime **ret_rt, struct sbx_error **err)
{
    return sbx_runtime_new_opts(NULL, ret_rt, err);
}

int sbx_runtime_new_opts(
        const struct sbx_runtime_opts *opts, struct sbx_runtime **ret_rt, struct sbx_error **err)
{
    struct sbx_runtime *rt = calloc(1, sizeof(*rt));
    cleanup_free char *dir = NULL;
    struct cg_options cgo = {.mount_root = "/sys/fs/cgroup", .self_cgroup = "/proc/self/cgroup"};

    if (!rt)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    rt->audit_fd = -1;
    rt->only_default_backend = opts && opts->only_default_backend;
    if (settings_load_file(opts ? opts->config_path : NULL, &rt->settings, err) < 0) {
        sbx_runtime_free(rt);
        return sbx_error_wrap(err, "configuration");
    }
    log_set_level(rt->settings->log_level);
    if (rt->settings->audit_log) {
        rt->audit_fd = open(rt->settings->audit_log,
                O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (rt->audit_fd < 0) {
            int e = errno, rc = sbx_error_set(err, SBX_E_IO, e, "LLM_SANDBOX_AUDIT_LOG '%s': %s",
                                   rt->settings->audit_log, strerror(e));

            sbx_runtime_free(rt);
            return rc;
        }
    }
    dir = exe_dir();
    if (!dir || asprintf(&rt->plugin_dir, "%s/%s", dir, SBX_BIN_TO_PLUGINDIR) < 0 ||
            asprintf(&rt->agent_path, "%s/%s", dir, SBX_BIN_TO_AGENT) < 0) {
        sbx_runtime_free(rt);
        return sbx_error_set(err, SBX_E_IO, errno, "cannot locate the llm-sandbox executable");
    }
    owner_make(rt->owner, sizeof(rt->owner));
    rt->sessions = sessions_new();
    rt->artifacts = artifact_store_new();
    rt->pools = pools_new(rt);
    if (!rt->sessions || !rt->artifacts || !rt->pools) {
        sbx_runtime_free(rt);
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    cgo.allow_v1 = rt->settings->cgroup_v1;
    cgo.allow_v2 = rt->settings->cgroup_v2;
    if (cg_service_new(&cgo, &rt->cg, err) < 0 || loader_load_all(rt, err) < 0) {
        sbx_runtime_free(rt);
        return err && *err ? (*err)->rc : SBX_E_INTERNAL;
    }
    if (cg_service_mode(rt->cg) != CG_NONE && cg_service_sweep(rt->cg) > 0)
        log_msg(SBX_LOG_INFO, NULL, "removed cgroups left by a dead llm-sandbox instance");
    *ret_rt = rt;
    return 0;
}

struct sbx_runtime *sbx_runtime_free(struct sbx_runtime *rt)
{
    if (!rt)
        return NULL;
    pools_free(rt->pools); /* their boxes, before the plugins go */
    sessions_free(rt->sessions);
    artifact_store_free(rt->artifacts);
    loader_unload_all(rt);
    cg_service_free(rt->cg);
    settings_free(rt->settings);
    if (rt->audit_fd >= 0)
        close(rt->audit_fd);
    free(rt->plugin_dir);
    free(rt->agent_path);
    free(rt);
    return NULL;
}

/* ------------------------------------------------------------------------ */

/* Phase timings at debug level: where a run's milliseconds go. */
static void mark(const struct run *r, const char *phase)
{
    if (log_get_level() >= SBX_LOG_DEBUG)
        log_msg(SBX_LOG_DEBUG, NULL, "%s at %lld ms", phase, (long long)(now_ms() - r->t0));
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

int engine_open_box(struct run *r, struct sbx_error **err)
{
    char id[96];
    struct sbx_box_spec spec;
    struct sbx_policy life;
    struct sbx_err perr;

    snprintf(id, sizeof(id), "%s-%" PRIuFAST64, r->rt->owner, atomic_fetch_add(&r->rt->seq, 1));
    memset(&spec, 0, sizeof(spec));
    spec.size = sizeof(spec);
    spec.policy = r->box_policy ? r->box_policy : &r->policy;
    if (r->box_life_ms) { /* a backend's own time limit is a backstop for the box */
        life = *spec.policy;
        life.wall_time_ms = r->box_life_ms;
        spec.policy = &life;
    }
    spec.id = id;
    spec.language = r->lang->name;
    spec.image = r->lang->m->lang->image;
    spec.envp = (const char *const *)r->env;
    spec.ro_paths = (const char *const *)r->lang->m->lang->host_paths;
    spec.cancel_fd = r->req->cancel ? r->req->cancel->fd : -1;
    if (r->box_policy) { /* a box that builds a set */
        spec.mounts = r->box_mounts;
        spec.n_mounts = r->n_box_mounts;
    } else {
        spec.mounts = r->n_mounts ? r->mounts : NULL;
        spec.n_mounts = r->n_mounts;
    }
    spec.proxy_socket = r->proxy_sock;
    spec.flags = r->probe_argv ? SBX_BOX_PROBE : 0; /* probing pulls no image */
    sbx_err_init(&perr);
    if (r->backend->desc->backend->box_open(r->backend->pstate, &spec, &r->box, &perr) < 0)
        return sbx_error_from_plugin(err, &perr, r->backend->name);
    r->ac = agentc_new(r->backend->desc->backend, r->box, spec.cancel_fd);
    if (!r->ac)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    return 0;
}

/* Map how the last exec ended onto status, exit code and limit. */
void engine_classify(
        struct run *r, int end, const struct agentc_exit *ex, const struct sbx_box_stats *st)
{
    struct sbx_execution *e = r->ex;

    if (end == AGENTC_EXITED) {
        e->has_exit_code = true;
        e->exit_code = ex->signaled ? 128 + ex->code : ex->code;
    } else if (r->ran && (end == AGENTC_TIMEOUT || end == AGENTC_CANCELLED)) {
        e->has_exit_code = true;
        e->exit_code = 128 + SIGKILL;
    }
    if (end == AGENTC_CANCELLED) {
        e->status = SBX_STATUS_CANCELLED;
    } else if (end == AGENTC_TIMEOUT) {
        e->status = SBX_STATUS_TIMEOUT;
        e->limit = SBX_LIMIT_WALL_TIME;
    } else if (st->oom_killed == 1) {
        e->status = SBX_STATUS_OOM;
        e->limit = SBX_LIMIT_MEMORY;
    } else if (end != AGENTC_EXITED) {
        e->status = SBX_STATUS_ERROR;
    } else if (ex->signaled) {
        e->status = SBX_STATUS_KILLED;
    } else {
        e->status = ex->code == 0 ? SBX_STATUS_OK : SBX_STATUS_ERROR;
    }
    if (e->limit != SBX_LIMIT_NONE || e->status == SBX_STATUS_OK || end != AGENTC_EXITED)
        return;
    if (ex->flags & AGENT_EXIT_FILE_SIZE)
        e->limit = SBX_LIMIT_FILE_SIZE;
    else if (ex->flags & AGENT_EXIT_WORKSPACE_FULL)
        e->limit = SBX_LIMIT_WORKSPACE;
    else if (st->pids_limited == 1)
        e->limit = SBX_LIMIT_PIDS;
}

/*
 * The rlimits every program of the run inherits from the agent: the file
 * size limit, open files, no core dumps, and the fallbacks for memory and
 * processes when the backend has no cgroup to enforce them (weaker: per
 * process and per uid; the result carries a warning).
 */
size_t engine_limits(const struct run *r, struct agentc_limit *l)
{
    const struct sbx_caps *caps = &r->backend->caps;
    size_t n = 0;

    l[n++] = (struct agentc_limit){AGENT_RLIMIT_FSIZE, r->policy.file_size_bytes};
    l[n++] = (struct agentc_limit){AGENT_RLIMIT_NOFILE, r->policy.open_files_max};
    l[n++] = (struct agentc_limit){AGENT_RLIMIT_CORE, 0};
    /* Runtimes that reserve address space up front (V8, the JVM, Go's
     * compiler) declare how much beyond what they use: the fallback is
     * weaker for them, but they start. */
    if (caps->level[SBX_CTL_MEMORY] != SBX_ENF_FULL)
        l[n++] = (struct agentc_limit){
                AGENT_RLIMIT_AS, r->policy.memory_bytes + r->lang->m->lang->address_space};
    if (caps->level[SBX_CTL_PIDS] != SBX_ENF_FULL)
        l[n++] = (struct agentc_limit){AGENT_RLIMIT_NPROC, r->policy.pids_max};
    return n;
}

void engine_phase(const struct run *r, const char *name)
{
    mark(r, name);
    if (r->req->on_phase)
        r->req->on_phase(r->req->userdata, name);
}

/* The files the language takes from its dependency set (Go's go.mod). */
static int stage_from_set(struct run *r, int64_t deadline)
{
    int end = 0;

    for (char **f = r->lang->m->lang->install->stage; end == 0 && *f; f++) {
        struct sbx_error *e = NULL;
        char *data = NULL;
        size_t len = 0;

        if (deps_read_file(r->deps, *f, STAGE_FILE_MAX, &data, &len, &e) < 0) {
            log_msg(SBX_LOG_WARN, NULL, "%s", e->msg);
            sbx_error_free(e);
            return SBX_E_IO;
        }
        end = agentc_put_file(
                r->ac, *f, 0644, data, len, r->sess ? AGENTC_PUT_REPLACE : 0, deadline);
        free(data);
    }
    return end;
}

char *lang_file_read(
        const struct plugin *lang, const char *name, size_t *ret_len, struct sbx_error **err)
{
    cleanup_free char *path = NULL;
    cleanup_close int fd = -1;
    char *buf;
    size_t len = 0;

    if (asprintf(&path, "%s/%s", lang->dir, name) < 0) {
        sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        return NULL;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    buf = fd >= 0 ? malloc(LANG_FILE_MAX + 1) : NULL;
    while (buf && len < LANG_FILE_MAX) {
        ssize_t n = read(fd, buf + len, LANG_FILE_MAX - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (!buf || len == 0 || len == LANG_FILE_MAX || memchr(buf, 0, len)) {
        free(buf);
        sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "language '%s': its file %s is %s", lang->name,
                path, fd < 0 ? "missing" : "unreadable, empty or too big");
        return NULL;
    }
    buf[len] = '\0';
    *ret_len = len;
    return buf;
}

int engine_stage_support(struct run *r, int64_t deadline, struct sbx_error **err)
{
    const struct manifest_lang *l = r->lang->m->lang;
    int end = 0;

    for (size_t i = 0; end == 0 && i < l->n_support; i++) {
        size_t len;
        char *data = lang_file_read(r->lang, l->support[i].file, &len, err);

        if (!data)
            return (*err)->rc;
        /* "/tmp/X" goes beneath the sandbox's /tmp as X */
        end = agentc_put_file(r->ac, l->support[i].path + 5, 0644, data, len,
                AGENTC_PUT_REPLACE | AGENTC_PUT_TMP, deadline);
        free(data);
    }
    if (end == AGENTC_TIMEOUT || end == AGENTC_LOST || end == SBX_E_IO)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "staging the language's files failed: %s",
                end == AGENTC_TIMEOUT ? "timed out" : agentc_last_error(r->ac));
    return end == AGENTC_CANCELLED ? AGENTC_CANCELLED : 0;
}

/* The request's files, then the program (unless a session's interpreter
 * takes it), beneath the workspace; a session's call replaces earlier
 * files of the same names. 0, an enum agentc_end, or SBX_E_IO. */
int engine_stage(struct run *r, bool with_source, int64_t deadline)
{
    unsigned replace = r->sess ? AGENTC_PUT_REPLACE : 0;
    int end = r->deps ? stage_from_set(r, deadline) : 0;

    for (size_t i = 0; end == 0 && i < r->req->n_files; i++) {
        const struct sbx_file *f = &r->req->files[i];

        end = agentc_put_file(r->ac, f->path, 0644, f->data, f->len, replace, deadline);
    }
    if (end == 0 && with_source && !r->probe_argv) {
        end = agentc_put_file(r->ac, r->plan->source_name, 0644, r->req->code, r->req->code_len,
                replace, deadline);
        r->staged_source = true;
    }
    return end;
}

int engine_greet(struct run *r, int64_t deadline_ms)
{
    struct agentc_limit lims[AGENT_LIMITS_MAX];
    struct sbx_error *e = NULL;
    const void *bpf;
    size_t len;
    int end = agentc_hello(r->ac, deadline_ms);

    mark(r, "agent ready");
    if (end == 0 && r->backend->agent_filter) {
        if (seccomp_bpf_get(&bpf, &len, &e) < 0) { /* the probe compiled it: not reached */
            sbx_error_free(e);
            return SBX_E_IO;
        }
        end = agentc_filter(r->ac, bpf, len, deadline_ms);
    }
    if (end == 0)
        end = agentc_limits(r->ac, lims, engine_limits(r, lims), deadline_ms);
    return end;
}

int engine_setup(struct run *r, int *ret_end, struct sbx_error **err)
{
    int end;

    mark(r, "box opened");
    end = engine_greet(r, now_ms() + SETUP_TIMEOUT_MS);
    *ret_end = end;
    if (end == AGENTC_TIMEOUT || end == AGENTC_LOST || end == SBX_E_IO)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "setting up the sandbox failed: %s",
                end == AGENTC_TIMEOUT ? "timed out" : agentc_last_error(r->ac));
    return 0;
}

/* The request's files and the program: 0, AGENTC_CANCELLED, or < 0 with
 * err set when the box failed. */
static int stage_all(struct run *r, struct sbx_error **err)
{
    int end = engine_stage(r, true, now_ms() + SETUP_TIMEOUT_MS);

    if (end == AGENTC_TIMEOUT || end == AGENTC_LOST || end == SBX_E_IO)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "setting up the sandbox failed: %s",
                end == AGENTC_TIMEOUT ? "timed out" : agentc_last_error(r->ac));
    return end;
}

static int exec_phases(struct run *r, int *ret_end, struct agentc_exit *ex, struct sbx_error **err)
{
    int end;

    if (engine_setup(r, &end, err) < 0)
        return (*err)->rc;
    if (end == 0 && !r->probe_argv &&
            (end = engine_stage_support(r, now_ms() + SETUP_TIMEOUT_MS, err)) < 0)
        return end;
    if (end == 0 && (end = stage_all(r, err)) < 0)
        return end;
    if (end == AGENTC_CANCELLED) {
        *ret_end = end;
        return 0;
    }
    return engine_programs(r, ret_end, ex, err);
}

/* After staging: the warm-up seed, the build (or the cached build) and the
 * program, under the run's deadline. */
int engine_programs(struct run *r, int *ret_end, struct agentc_exit *ex, struct sbx_error **err)
{
    int64_t deadline = now_ms() + (int64_t)r->policy.wall_time_ms;
    int end;

    r->ran = true;
    mark(r, "staged");
    if (r->probe_argv) {
        end = agentc_exec(r->ac, r->probe_argv, r->env, NULL, 0, deadline, &r->sink, ex);
        *ret_end = end;
        return end < 0 ? sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac)) : 0;
    }
    if (r->plan->build && r->build && r->build->ready) {
        end = build_cache_replay(r, deadline); /* nothing to compile */
        if (end > 0) {
            *ret_end = end;
            return 0;
        }
        if (end < 0) { /* an unusable entry: build after all */
            log_msg(SBX_LOG_WARN, r->lang->name, "compile cache entry unusable; building");
            r->ex->build_cached = false;
        }
    }
    /* link the warm-up set into the sandbox's own cache, for the compiler
     * (a replayed build needs none: Go's link farm alone takes ~30 ms);
     * quietly, and only its failure is reported (as the build's would be) */
    if (r->warm && r->lang->m->lang->warm->seed && !r->seeded &&
            !(r->plan->build && r->ex->build_cached)) {
        end = agentc_exec(
                r->ac, r->lang->m->lang->warm->seed, r->env, NULL, 0, deadline, &r->sink, ex);
        if (end < 0)
            return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
        if (end != AGENTC_EXITED || ex->signaled || ex->code != 0) {
            *ret_end = end;
            return 0;
        }
    }
    if (r->plan->build && !r->ex->build_cached) {
        size_t out0 = r->sink.out.buf.len, err0 = r->sink.err.buf.len;

        engine_phase(r, "compiling");
        end = agentc_exec(r->ac, r->plan->build, r->env, NULL, 0, deadline, &r->sink, ex);
        if (end < 0)
            return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
        if (end != AGENTC_EXITED || ex->signaled || ex->code != 0) {
            *ret_end = end;
            return 0;
        }
        build_cache_save(r, out0, err0, deadline);
    }
    engine_phase(r, "running");
    end = agentc_exec(r->ac, r->plan->run, r->env, r->req->stdin_data ? r->req->stdin_data : "",
            r->req->stdin_data ? r->req->stdin_len : 0, deadline, &r->sink, ex);
    if (end < 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
    mark(r, "program ended");
    *ret_end = end;
    return 0;
}

int engine_close_box(struct run *r, struct sbx_box_stats *st, struct sbx_error **err)
{
    struct sbx_err perr;
    int rc;

    memset(st, 0, sizeof(*st));
    st->size = sizeof(*st);
    st->oom_killed = st->pids_limited = -1;
    if (!r->box)
        return 0;
    sbx_err_init(&perr);
    rc = r->backend->desc->backend->box_close(r->box, st, &perr);
    r->box = NULL;
    if (rc < 0)
        return sbx_error_from_plugin(err, &perr, r->backend->name);
    return 0;
}

static int take_capture(
        struct capture *c, char **ret_buf, size_t *ret_len, uint64_t *ret_total, bool *ret_trunc)
{
    *ret_buf = dynbuf_take(&c->buf, ret_len);
    *ret_total = c->total;
    *ret_trunc = c->truncated;
    return *ret_buf ? 0 : SBX_E_NOMEM;
}

/* The names and captured output into the execution. */
int engine_output(struct run *r, struct sbx_error **err)
{
    struct sbx_execution *ex = r->ex;

    ex->backend = r->backend ? strdup(r->backend->name) : NULL;
    ex->language = r->lang ? strdup(r->lang->name) : NULL;
    if (take_capture(&r->sink.out, &ex->stdout_buf, &ex->stdout_len, &ex->stdout_bytes,
                &ex->stdout_truncated) < 0 ||
            take_capture(&r->sink.err, &ex->stderr_buf, &ex->stderr_len, &ex->stderr_bytes,
                    &ex->stderr_truncated) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    return 0;
}

/* A pooled box (pool.c): staged, then the program; a pre-started
 * interpreter is told its name and fed stdin (or, feed: source, given the
 * program's text), unless this run's plan is not the one it was started
 * for (a build, a mode, stdin data it could not tell from its program). */
static int pooled_phases(
        struct run *r, int *ret_end, struct agentc_exit *ex, struct sbx_error **err)
{
    const struct sbx_request *q = r->req;
    size_t nlen = strlen(r->plan->source_name), len;
    const struct manifest_session *pre;
    cleanup_free char *buf = NULL;
    const char *feed;
    int end;

    r->ex->warm = true;
    if ((end = stage_all(r, err)) < 0)
        return end;
    if (end == AGENTC_CANCELLED) {
        *ret_end = end;
        return 0;
    }
    if (r->prestarted && agentc_take_idle_exit(r->ac))
        r->prestarted = false; /* it ended while it waited: the box is still good */
    pre = r->lang->m->lang->prestart;
    if (r->prestarted &&
            (r->plan->build || r->plan->mode || r->warm || (pre->feed_source && q->stdin_len))) {
        struct agentc_exit kx;

        /* not this run's program: end the interpreter, run as a cold box would */
        end = agentc_finish(r->ac, "", 0, now_ms() + SETUP_TIMEOUT_MS, &r->sink, &kx);
        if (end != AGENTC_EXITED)
            return sbx_error_set(err, SBX_E_BACKEND, 0, "the pre-started interpreter: %s",
                    agentc_last_error(r->ac));
        r->prestarted = false;
    }
    if (!r->prestarted)
        return engine_programs(r, ret_end, ex, err);
    if (pre->feed_source) {
        feed = q->code, len = q->code_len;
        goto go;
    }
    len = nlen + 1 + q->stdin_len;
    if (!(buf = malloc(len)))
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    memcpy(buf, r->plan->source_name, nlen);
    buf[nlen] = '\n';
    if (q->stdin_len)
        memcpy(buf + nlen + 1, q->stdin_data, q->stdin_len);
    feed = buf;
go:
    r->ran = true;
    mark(r, "staged");
    engine_phase(r, "running");
    end = agentc_finish(r->ac, feed, len, now_ms() + (int64_t)r->policy.wall_time_ms, &r->sink, ex);
    if (end < 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
    mark(r, "program ended");
    *ret_end = end;
    return 0;
}

/* Everything after the request and policy were accepted. */
static int run_box(struct run *r, struct sbx_error **err)
{
    struct agentc_exit ex = {0};
    struct sbx_box_stats st;
    int end = AGENTC_LOST, rc;

    rc = 1;
    if (pool_take(r)) {
        rc = pooled_phases(r, &end, &ex, err);
        if (rc < 0 && !r->ran) {
            /* a ready box that died while it waited: the run opens its own */
            log_msg(SBX_LOG_WARN, r->backend->name, "a ready sandbox was unusable (%s)",
                    (*err)->msg);
            *err = sbx_error_free(*err);
            r->backend->desc->backend->box_kill(r->box);
            engine_release_box(r);
            r->ex->warm = r->prestarted = false;
            rc = 1;
        }
    }
    if (rc == 1) {
        rc = engine_open_box(r, err);
        if (rc == 0)
            rc = exec_phases(r, &end, &ex, err);
    }
    if (rc == 0 && end == AGENTC_EXITED && !r->probe_argv)
        artifacts_collect(r, NULL, 0);
    if (r->box && end != AGENTC_EXITED)
        r->backend->desc->backend->box_kill(r->box);
    if (r->ac && end == AGENTC_EXITED)
        agentc_quit(r->ac);
    if (rc < 0) {
        struct sbx_error *close_err = NULL;

        /* The backend's own account (e.g. bwrap's stderr) says more. */
        if (engine_close_box(r, &st, &close_err) < 0 && close_err) {
            sbx_error_free(*err);
            *err = close_err;
        }
        return (*err)->rc;
    }
    rc = engine_close_box(r, &st, err);
    mark(r, "box closed");
    if (rc < 0 && end == AGENTC_EXITED)
        log_msg(SBX_LOG_WARN, r->backend->name, "cleanup failed: %s", (*err)->msg);
    if (rc < 0 && end == AGENTC_EXITED)
        *err = sbx_error_free(*err);
    else if (rc < 0)
        return rc;
    engine_classify(r, end, &ex, &st);
    if (r->ex->status == SBX_STATUS_ERROR && end == AGENTC_LOST)
        r->ex->message = strdup(agentc_last_error(r->ac));
    return 0;
}

void engine_release_box(struct run *r)
{
    if (r->box) {
        struct sbx_box_stats st;
        struct sbx_error *e = NULL;

        engine_close_box(r, &st, &e);
        sbx_error_free(e);
    }
    r->ac = agentc_free(r->ac);
}

/* What the run holds; a session's call leaves the session's box, channel,
 * environment and sets alone. */
void engine_release(struct run *r)
{
    if (!r->sess) {
        engine_release_box(r);
        r->deps = deps_close(r->deps);
        r->warm = deps_close(r->warm);
        strv_free(r->env);
        free(r->ws_mount_src);
        free(r->ws_mount_dst);
    }
    r->ac = NULL;
    r->box = NULL;
    r->env = NULL;
    r->build = deps_close(r->build);
    r->plan = plan_free(r->plan);
    capture_done(&r->sink.out);
    capture_done(&r->sink.err);
}

/* Backend and language by name, and the request's own checks: 0, or 1
 * when refused. */
int engine_choose(struct run *r)
{
    if (pick_backend(r) || pick_language(r) || engine_check_request(r))
        return 1;
    mark(r, "plugins chosen");
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
    mark(r, "probed and checked");
    return 0;
}

static int run_checked(struct run *r, struct sbx_error **err)
{
    if (engine_choose(r) || engine_policy(r))
        return 0;
    r->ex->policy = policy_to_text(&r->policy);
    if (plan_make(r->lang, r->req->code, r->req->code_len, &r->plan, err) < 0 ||
            engine_build_env(r, err) < 0)
        return (*err)->rc;
    if (engine_check_source_name(r))
        return 0;
    if (r->req->n_libraries) {
        int rc = prepare_libraries(r, err);

        if (rc != 0)
            return rc < 0 ? rc : 0;
    }
    if (prepare_warm(r, err) < 0 || prepare_build_cache(r, err) < 0)
        return (*err)->rc;
    engine_phase(r, "preparing");
    capture_init(&r->sink.out, (size_t)r->policy.output_bytes);
    capture_init(&r->sink.err, (size_t)r->policy.output_bytes);
    r->sink.on_output = r->req->on_output;
    r->sink.userdata = r->req->userdata;
    return run_box(r, err);
}

static int run_one(struct sbx_runtime *rt, const struct sbx_request *req, char **probe_argv,
        struct sbx_execution **ret, struct sbx_error **err)
{
    struct run r = {.rt = rt, .req = req, .t0 = now_ms(), .probe_argv = probe_argv};
    struct sbx_execution *ex;
    int rc;

    if (!rt || !req || !ret)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "sbx_run: missing argument");
    ex = r.ex = calloc(1, sizeof(*ex));
    if (!ex)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    capture_init(&r.sink.out, 0);
    capture_init(&r.sink.err, 0);
    rc = req->session_id ? session_call(&r, err) : run_checked(&r, err);
    if (rc == 0)
        rc = engine_output(&r, err);
    engine_release(&r);
    ex->duration_ms = (uint64_t)(now_ms() - r.t0);
    if (rc < 0) {
        sbx_execution_free(ex);
        return rc;
    }
    *ret = ex;
    return 0;
}

int sbx_run(struct sbx_runtime *rt, const struct sbx_request *req, struct sbx_execution **ret,
        struct sbx_error **err)
{
    return run_one(rt, req, NULL, ret, err);
}

int sbx_runtime_check(struct sbx_runtime *rt, struct sbx_error **err)
{
    const struct sbx_request req = {.code = ""};
    struct sbx_execution ex = {0};
    struct run r = {.rt = rt, .req = &req, .ex = &ex, .t0 = now_ms()};
    struct sbx_error *e = NULL;
    int rc = 0;

    if (pick_backend(&r) || pick_language(&r)) {
        rc = sbx_error_set(err, SBX_E_UNSUPPORTED, 0, "%s", ex.message ? ex.message : "refused");
    } else if (policy_resolve(rt->settings, NULL, &r.policy, &r.explicit_mask, &e) < 0 ||
               backend_probe(rt, r.backend, &e) < 0 ||
               policy_check(&r.policy, r.explicit_mask, &r.backend->caps, r.backend->name,
                       &ex.warnings, &e) < 0) {
        rc = e->rc;
        *err = e;
    }
    for (char **w = ex.warnings; rc == 0 && w && *w; w++)
        log_msg(SBX_LOG_WARN, NULL, "%s", *w);
    free(ex.message);
    strv_free(ex.warnings);
    return rc;
}

int run_probe(struct sbx_runtime *rt, const char *language, char **argv, struct sbx_execution **ret,
        struct sbx_error **err)
{
    struct sbx_request req = {.language = language, .code = "", .code_len = 0};

    req.limits.set = SBX_REQ_OUTPUT;
    req.limits.output_bytes = 4096;
    return run_one(rt, &req, argv, ret, err);
}
