/* SPDX-License-Identifier: MIT */
/*
 * run.c: the runtime (settings, cgroup service, plugins) and the engine,
 * sbx_run(): the one path every front end, session and pool uses.
 *
 *   resolve backend and language -> validate the request -> resolve the
 *   policy -> probe the backend and check the policy against it -> plan
 *   (language templates) -> open a box -> agent: stage the source, build,
 *   run with the deadline -> close the box (kill, clean up, read stats) ->
 *   classify the outcome.
 *
 * Invalid requests and policies that cannot be enforced end as status
 * "refused" before anything runs; outcomes of the user's code are results,
 * never errors (STYLE E5). Thread-safe: the registry is read-only here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
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

#include "agentc.h"
#include "cgroup.h"
#include "cleanup.h"
#include "deps.h"
#include "error.h"
#include "exec.h"
#include "log.h"
#include "manifest.h"
#include "plan.h"
#include "policy.h"
#include "proto.h"
#include "proxy.h"
#include "runtime.h"
#include "settings.h"
#include "util.h"

#define SETUP_TIMEOUT_MS 15000
#define INSTALL_LOG_MAX  (64u * 1024u)
#define INSTALL_PORT     3128 /* the agent's relay to the proxy, on the box's loopback */
#define STAGE_FILE_MAX   (1u << 20)

/* Canonical backend names and their aliases, installed or not. */
static const char *const known_backends[][2] = {
        {"bwrap", "bubblewrap"},
        {"nsjail", NULL},
        {"docker", NULL},
        {"podman", NULL},
        {"kubernetes", "k8s"},
        {"mxc", NULL},
        {"wsl2", NULL},
};

struct sbx_cancel {
    int fd;
};

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
static void make_owner(char *out, size_t len)
{
    char buf[1024];
    unsigned long long start = 0;
    ssize_t n;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n > 0) {
            char *p = strrchr((buf[n] = '\0', buf), ')');

            /* field 22 (starttime) is the 20th after the ") " */
            for (int field = 2; p && *p && field < 22; p++)
                if (*p == ' ')
                    field++;
            if (p)
                start = strtoull(p, NULL, 10);
        }
    }
    snprintf(out, len, "p%dt%llu", (int)getpid(), start);
}

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
    make_owner(rt->owner, sizeof(rt->owner));
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

/* Everything one run holds; released by run_done. */
struct run {
    struct sbx_runtime *rt;
    const struct sbx_request *req;
    struct sbx_execution *ex;
    struct plugin *backend, *lang;
    struct sbx_policy policy;
    uint32_t explicit_mask;
    struct sbx_plan *plan;
    char **env;
    void *box;
    struct agentc *ac;
    struct agentc_sink sink;
    int64_t t0;
    bool ran;          /* an exec was sent: an exit code exists */
    char **probe_argv; /* instead of staging and the plan: run this (version probes) */
    /* libraries: the set, mounted read-only at /deps (and a directory of it
     * in the workspace); while installing, the staging mount and the proxy */
    struct deps_set *deps;
    struct deps_set *warm; /* the language's warm-up set (Go's build cache), at /warm */
    struct sbx_mount mounts[4];
    size_t n_mounts;
    char *ws_mount_src, *ws_mount_dst;
    const struct sbx_policy *box_policy; /* a set's build, or NULL: the run's */
    struct sbx_mount box_mounts[2];      /* a set's build: its staging, a local repository */
    size_t n_box_mounts;
    const char *proxy_sock;
};

static int refuse(struct run *r, const char *fmt, ...) SBX_PRINTF(2, 3);

/* Phase timings at debug level: where a run's milliseconds go. */
static void mark(const struct run *r, const char *phase)
{
    if (log_get_level() >= SBX_LOG_DEBUG)
        log_msg(SBX_LOG_DEBUG, NULL, "%s at %lld ms", phase, (long long)(now_ms() - r->t0));
}

static int refuse(struct run *r, const char *fmt, ...)
{
    va_list ap;

    r->ex->status = SBX_STATUS_REFUSED;
    va_start(ap, fmt);
    if (vasprintf(&r->ex->message, fmt, ap) < 0)
        r->ex->message = NULL;
    va_end(ap);
    return 1;
}

static int refuse_error(struct run *r, struct sbx_error *e)
{
    refuse(r, "%s", e && e->msg ? e->msg : "refused");
    sbx_error_free(e);
    return 1;
}

/* Name the backends we know of but that are not installed or usable. */
static int pick_backend(struct run *r)
{
    const char *name = r->req->backend ? r->req->backend : r->rt->settings->backend;
    cleanup_free char *avail = registry_names(r->rt, SBX_KIND_BACKEND);
    struct plugin *pl = registry_find_any(r->rt, SBX_KIND_BACKEND, name);

    if (pl && pl->state == PLUGIN_OK) {
        r->backend = pl;
        return 0;
    }
    if (pl)
        return refuse(r, "backend '%s' is installed but broken: %s; available: %s", name,
                pl->error ? pl->error : "unknown error", avail && *avail ? avail : "none");
    for (size_t i = 0; i < sizeof(known_backends) / sizeof(known_backends[0]); i++) {
        if (strcmp(name, known_backends[i][0]) == 0 ||
                (known_backends[i][1] && strcmp(name, known_backends[i][1]) == 0))
            return refuse(r,
                    "backend '%s' is not installed here (no plugin found); "
                    "available: %s",
                    known_backends[i][0], avail && *avail ? avail : "none");
    }
    return refuse(r, "unknown backend '%s'; available: %s", name, avail && *avail ? avail : "none");
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
        return refuse(r,
                "language '%s' is not offered here (the operator's LLM_SANDBOX_LANGUAGES);"
                " available: %s",
                name, avail && *avail ? avail : "none");
    if (pl)
        return refuse(r, "language '%s' is installed but broken: %s", name,
                pl->error ? pl->error : "unknown error");
    return refuse(
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
        return refuse(r, "%zu files; at most %d may be staged", q->n_files, SBX_MAX_FILES);
    for (size_t i = 0; i < q->n_files; i++) {
        const struct sbx_file *f = &q->files[i];

        if (!rel_path_is_valid(f->path))
            return refuse(r,
                    "file '%.200s': the path must be relative to the workspace, "
                    "without '..' or empty parts, each part at most 255 bytes",
                    f->path ? f->path : "");
        if (!f->data && f->len)
            return refuse(r, "file '%.200s' has no data", f->path);
        total += f->len;
        for (size_t j = 0; j < i; j++)
            if (strcmp(q->files[j].path, f->path) == 0)
                return refuse(r, "file '%.200s' is given twice", f->path);
    }
    if (total > r->rt->settings->max_stdin_bytes * 4)
        return refuse(r, "the files add up to %" PRIu64 " bytes; the limit is %" PRIu64 " bytes",
                total, r->rt->settings->max_stdin_bytes * 4);
    return 0;
}

static int check_source_name(struct run *r)
{
    for (size_t i = 0; i < r->req->n_files; i++)
        if (strcmp(r->req->files[i].path, r->plan->source_name) == 0)
            return refuse(r, "file '%s' would overwrite the program itself; choose another name",
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
            return refuse(r, "library '%.80s' is not a valid name", lib ? lib : "");
        if (!ops || !ops->check_library)
            return refuse(r, "language '%s' cannot install libraries", r->lang->name);
        if (ops->check_library(r->lang->pstate, lib, &perr) < 0)
            return refuse(r, "%s", perr.msg[0] ? perr.msg : "invalid library name");
    }
    if (r->req->n_libraries && !r->lang->m->lang->install)
        return refuse(r, "language '%s' cannot install libraries", r->lang->name);
    return 0;
}

static int check_request(struct run *r)
{
    const struct settings *s = r->rt->settings;

    if (!r->req->code)
        return refuse(r, "no code given");
    if (r->req->code_len > s->max_code_bytes)
        return refuse(r, "code is %zu bytes; the limit is %" PRIu64 " bytes", r->req->code_len,
                s->max_code_bytes);
    if (r->req->stdin_data && r->req->stdin_len > s->max_stdin_bytes)
        return refuse(r, "stdin is %zu bytes; the limit is %" PRIu64 " bytes", r->req->stdin_len,
                s->max_stdin_bytes);
    return check_files(r) || check_libraries(r);
}

/* The sandbox's whole environment: a fixed base, the language's, and the
 * operator's pass-through list. Nothing else of ours leaks in. */
/* Does env (KEY=VALUE strings) set the key of entry? */
static bool env_sets(char *const *env, const char *entry)
{
    size_t n = strcspn(entry, "=");

    for (; env && *env; env++)
        if (strncmp(*env, entry, n) == 0 && (*env)[n] == '=')
            return true;
    return false;
}

/* The fixed base, where the language's manifest does not set the same
 * variable (Go puts its toolchain on PATH), then the language's, then the
 * operator's allow-list. */
static int build_env(struct run *r, struct sbx_error **err)
{
    static const char *const base[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp",
            "LANG=C.UTF-8", "USER=sandbox", "LOGNAME=sandbox"};
    char **env = NULL;

    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        if (!env_sets(r->lang->m->lang->env, base[i]) && strv_push(&env, base[i]) < 0)
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

static int open_box(struct run *r, struct sbx_error **err)
{
    char id[96];
    struct sbx_box_spec spec;
    struct sbx_err perr;

    snprintf(id, sizeof(id), "%s-%" PRIuFAST64, r->rt->owner, atomic_fetch_add(&r->rt->seq, 1));
    memset(&spec, 0, sizeof(spec));
    spec.size = sizeof(spec);
    spec.policy = r->box_policy ? r->box_policy : &r->policy;
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
    sbx_err_init(&perr);
    if (r->backend->desc->backend->box_open(r->backend->pstate, &spec, &r->box, &perr) < 0)
        return sbx_error_from_plugin(err, &perr, r->backend->name);
    r->ac = agentc_new(r->backend->desc->backend, r->box, spec.cancel_fd);
    if (!r->ac)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    return 0;
}

/* Map how the last exec ended onto status, exit code and limit. */
static void classify(
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
static size_t run_limits(const struct run *r, struct agentc_limit *l)
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

static void phase(const struct run *r, const char *name)
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
        end = agentc_put(r->ac, *f, 0644, data, len, deadline);
        free(data);
    }
    return end;
}

/* The request's files, then the program, beneath the workspace. */
static int stage(struct run *r, int64_t deadline)
{
    int end = r->deps ? stage_from_set(r, deadline) : 0;

    for (size_t i = 0; end == 0 && i < r->req->n_files; i++) {
        const struct sbx_file *f = &r->req->files[i];

        end = agentc_put(r->ac, f->path, 0644, f->data, f->len, deadline);
    }
    if (end == 0 && !r->probe_argv)
        end = agentc_put(
                r->ac, r->plan->source_name, 0644, r->req->code, r->req->code_len, deadline);
    return end;
}

static int exec_phases(struct run *r, int *ret_end, struct agentc_exit *ex, struct sbx_error **err)
{
    int64_t deadline = now_ms() + SETUP_TIMEOUT_MS;
    struct agentc_limit lims[AGENT_LIMITS_MAX];
    int end;

    mark(r, "box opened");
    end = agentc_hello(r->ac, deadline);
    mark(r, "agent ready");
    if (end == 0)
        end = agentc_limits(r->ac, lims, run_limits(r, lims), deadline);
    if (end == 0)
        end = stage(r, deadline);
    if (end == AGENTC_TIMEOUT || end == AGENTC_LOST || end == SBX_E_IO)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "setting up the sandbox failed: %s",
                end == AGENTC_TIMEOUT ? "timed out" : agentc_last_error(r->ac));
    if (end == AGENTC_CANCELLED) {
        *ret_end = end;
        return 0;
    }
    deadline = now_ms() + (int64_t)r->policy.wall_time_ms;
    r->ran = true;
    mark(r, "staged");
    if (r->probe_argv) {
        end = agentc_exec(r->ac, r->probe_argv, r->env, NULL, 0, deadline, &r->sink, ex);
        *ret_end = end;
        return end < 0 ? sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac)) : 0;
    }
    if (r->warm) {
        /* link the warm-up set into the sandbox's own cache; quietly, and
         * only its failure is reported (as the build's would be) */
        end = agentc_exec(
                r->ac, r->lang->m->lang->warm->seed, r->env, NULL, 0, deadline, &r->sink, ex);
        if (end < 0)
            return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
        if (end != AGENTC_EXITED || ex->signaled || ex->code != 0) {
            *ret_end = end;
            return 0;
        }
    }
    if (r->plan->build) {
        phase(r, "compiling");
        end = agentc_exec(r->ac, r->plan->build, r->env, NULL, 0, deadline, &r->sink, ex);
        if (end < 0)
            return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
        if (end != AGENTC_EXITED || ex->signaled || ex->code != 0) {
            *ret_end = end;
            return 0;
        }
    }
    phase(r, "running");
    end = agentc_exec(r->ac, r->plan->run, r->env, r->req->stdin_data ? r->req->stdin_data : "",
            r->req->stdin_data ? r->req->stdin_len : 0, deadline, &r->sink, ex);
    if (end < 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
    mark(r, "program ended");
    *ret_end = end;
    return 0;
}

static int close_box(struct run *r, struct sbx_box_stats *st, struct sbx_error **err)
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

/* Everything after the request and policy were accepted. */
static int run_box(struct run *r, struct sbx_error **err)
{
    struct agentc_exit ex = {0};
    struct sbx_box_stats st;
    int end = AGENTC_LOST, rc;

    rc = open_box(r, err);
    if (rc == 0)
        rc = exec_phases(r, &end, &ex, err);
    if (r->box && end != AGENTC_EXITED)
        r->backend->desc->backend->box_kill(r->box);
    if (r->ac && end == AGENTC_EXITED)
        agentc_quit(r->ac);
    if (rc < 0) {
        struct sbx_error *close_err = NULL;

        /* The backend's own account (e.g. bwrap's stderr) says more. */
        if (close_box(r, &st, &close_err) < 0 && close_err) {
            sbx_error_free(*err);
            *err = close_err;
        }
        return (*err)->rc;
    }
    rc = close_box(r, &st, err);
    mark(r, "box closed");
    if (rc < 0 && end == AGENTC_EXITED)
        log_msg(SBX_LOG_WARN, r->backend->name, "cleanup failed: %s", (*err)->msg);
    if (rc < 0 && end == AGENTC_EXITED)
        *err = sbx_error_free(*err);
    else if (rc < 0)
        return rc;
    classify(r, end, &ex, &st);
    if (r->ex->status == SBX_STATUS_ERROR && end == AGENTC_LOST)
        r->ex->message = strdup(agentc_last_error(r->ac));
    return 0;
}

static void run_done(struct run *r)
{
    if (r->box) {
        struct sbx_box_stats st;
        struct sbx_error *e = NULL;

        close_box(r, &st, &e);
        sbx_error_free(e);
    }
    agentc_free(r->ac);
    r->deps = deps_close(r->deps);
    r->warm = deps_close(r->warm);
    free(r->ws_mount_src);
    free(r->ws_mount_dst);
    plan_free(r->plan);
    strv_free(r->env);
    capture_done(&r->sink.out);
    capture_done(&r->sink.err);
}

/* ---- libraries ---------------------------------------------------------- */

/* What identifies the toolchain without running it: the language's first
 * required binary, found along the language's PATH, by device, inode, size
 * and modification time (an upgrade changes them). */
static void toolchain_id(const struct run *r, char *out, size_t len)
{
    const struct manifest *m = r->lang->m;
    const char *name = m->n_binaries              ? m->binaries[0].name
                       : m->lang->version_command ? m->lang->version_command[0]
                                                  : "";
    const char *path = "/usr/bin:/bin";
    struct stat st;
    char buf[PATH_MAX];

    for (char **e = m->lang->env; *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    snprintf(out, len, "%s (not found)", name);
    if (name[0] == '/') {
        if (stat(name, &st) == 0)
            snprintf(out, len, "%s %ju:%ju %jd %jd", name, (uintmax_t)st.st_dev,
                    (uintmax_t)st.st_ino, (intmax_t)st.st_size, (intmax_t)st.st_mtime);
        return;
    }
    while (*path) {
        size_t n = strcspn(path, ":");

        snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
            snprintf(out, len, "%s %ju:%ju %jd %jd", buf, (uintmax_t)st.st_dev,
                    (uintmax_t)st.st_ino, (intmax_t)st.st_size, (intmax_t)st.st_mtime);
            return;
        }
        path += n + (path[n] == ':');
    }
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
    const char *v = settings_plugin_value(r->rt->settings, r->lang->name, "install_hosts");
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
    const char *v = settings_plugin_value(r->rt->settings, r->lang->name, "install_env");
    char **env = NULL;

    /* the run's environment without the operator's pass-through variables:
     * those are for programs, and would make every set's key differ */
    for (char **e = r->env; e && *e; e++)
        if (!env_sets(r->rt->settings->env_pass, *e) && strv_push(&env, *e) < 0)
            goto oom;
    for (char **e = r->lang->m->lang->install->env; *e; e++)
        if (strv_setenv(&env, *e) < 0)
            goto oom;
    /* the reference's variables (R_REPO) replace what the manifest names */
    for (char **e = r->rt->settings->install_env; e && *e; e++)
        if (env_sets(r->lang->m->lang->install->env, *e) && strv_setenv(&env, *e) < 0)
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
    struct agentc_limit lims[AGENT_LIMITS_MAX];
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
    rc = open_box(r, err);
    if (rc == 0) {
        watch = deps_watch_start(set->staging, r->rt->settings->install_max_bytes, install_kill, r);
        end = agentc_hello(r->ac, deadline);
        if (end == 0)
            end = agentc_limits(r->ac, lims, run_limits(r, lims), deadline);
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
    if (deps_watch_stop(watch)) {
        r->ex->status = SBX_STATUS_ERROR;
        r->ex->limit = SBX_LIMIT_WORKSPACE;
        (void)!asprintf(&r->ex->message,
                "%s stopped: it grew past LLM_SANDBOX_INSTALL_MAX (%" PRIu64 " bytes)", what,
                r->rt->settings->install_max_bytes);
        end = 1;
    }
    if (close_box(r, &st, rc < 0 ? NULL : err) < 0 && rc == 0)
        rc = (*err)->rc;
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

/* The set's key: everything that decides what the install produces. */
static int install_key(const struct run *r, const struct manifest_install *in, const char *tool,
        char *const *hosts, char *const *env, char *key)
{
    const struct manifest_lang *ml = r->lang->m->lang;
    struct dynbuf id;
    int rc = 0;

    dynbuf_init(&id, 1u << 20);
    rc |= dynbuf_printf(&id, "%s|%s %s|%s|%s", r->backend->name, r->lang->name, r->lang->m->version,
            ml->image ? ml->image : "", tool);
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
static int prepare_libraries(struct run *r, struct sbx_error **err)
{
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
        return refuse(
                r, "backend '%s' predates dependency installs (plugin ABI 1.2)", r->backend->name);
    if (r->backend->caps.level[SBX_CTL_NET_REGISTRIES] == SBX_ENF_NONE)
        return refuse(r, "backend '%s' cannot install libraries here: %s", r->backend->name,
                r->backend->caps.note[SBX_CTL_NET_REGISTRIES]);
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
        return refuse(r,
                rc == SBX_E_INVALID ? "LLM_SANDBOX_%s_INSTALL_HOSTS or _INSTALL_ENV is malformed"
                                    : "the %s repository must be https:// or a file:// directory",
                r->lang->name);
    }
    r->ex->has_install = true;
    phase(r, "installing");
    if (deps_open(s, r->lang->name, key, uid, gid, (int64_t)s->install_timeout_ms, &r->deps, &e) <
            0) {
        r->ex->status = SBX_STATUS_ERROR;
        r->ex->message = strdup(e->msg);
        sbx_error_free(e);
        strv_free(hosts);
        strv_free(env);
        free(repo);
        return 1;
    }
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
static int prepare_warm(struct run *r, struct sbx_error **err)
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

    if (!w || r->probe_argv || r->backend->desc->abi_minor < 2)
        return 0;
    for (char **v = r->env; v && *v; v++)
        if (!env_sets(s->env_pass, *v) && strv_push(&env, *v) < 0)
            goto oom;
    for (char **v = w->env; *v; v++)
        if (strv_setenv(&env, *v) < 0)
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
        phase(r, "warming up");
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

static int run_checked(struct run *r, struct sbx_error **err)
{
    struct sbx_error *e = NULL;

    if (pick_backend(r) || pick_language(r) || check_request(r))
        return 0;
    mark(r, "plugins chosen");
    if (policy_resolve(r->rt->settings, &r->req->limits, &r->policy, &r->explicit_mask, &e) < 0 ||
            backend_probe(r->rt, r->backend, &e) < 0 ||
            policy_check(&r->policy, r->explicit_mask, &r->backend->caps, r->backend->name,
                    &r->ex->warnings, &e) < 0) {
        refuse_error(r, e);
        return 0;
    }
    mark(r, "probed and checked");
    r->ex->policy = policy_to_text(&r->policy);
    if (plan_make(r->lang, r->req->code, r->req->code_len, &r->plan, err) < 0 ||
            build_env(r, err) < 0)
        return (*err)->rc;
    if (check_source_name(r))
        return 0;
    if (r->req->n_libraries) {
        int rc = prepare_libraries(r, err);

        if (rc != 0)
            return rc < 0 ? rc : 0;
    }
    if (prepare_warm(r, err) < 0)
        return (*err)->rc;
    phase(r, "preparing");
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
    rc = run_checked(&r, err);
    if (rc == 0) {
        ex->backend = r.backend ? strdup(r.backend->name) : NULL;
        ex->language = r.lang ? strdup(r.lang->name) : NULL;
        if (take_capture(&r.sink.out, &ex->stdout_buf, &ex->stdout_len, &ex->stdout_bytes,
                    &ex->stdout_truncated) < 0 ||
                take_capture(&r.sink.err, &ex->stderr_buf, &ex->stderr_len, &ex->stderr_bytes,
                        &ex->stderr_truncated) < 0)
            rc = sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    run_done(&r);
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
