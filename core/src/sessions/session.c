/* SPDX-License-Identifier: MIT */
/*
 * session.c: stateful sessions. A session is one box of the engine kept
 * open between calls, so its workspace persists; for languages whose
 * manifest names a warm interpreter (language.session), one interpreter
 * process lives in the box and runs each call's code in the same global
 * namespace, so variables, imports and definitions persist too.
 *
 * Calls go through the engine's own steps (engine.h): the request is
 * checked as a one-shot's is, the session's policy applies (only the
 * timeout and the output cap may change per call), and the outcome is
 * classified the same way. What differs: the box is the session's, files
 * replace earlier ones of the same name, and a call that runs out of time
 * or is cancelled kills only its exec (the interpreter, and its state with
 * it), never the box.
 *
 * The interpreter protocol (langs/<name>/session.*): the driver is started
 * once with SBX_SESSION_NONCE (32 hex digits) in its environment, which it
 * removes. Each request on its stdin is "<code bytes> <stdin bytes>\n",
 * the code, then the stdin data. When the code has run, the driver writes
 * ESC "]sbx;" NONCE ";" three decimal digits (the status: 0, 1 for an
 * uncaught error, or the exit status asked for) BEL, to stdout after all
 * of the call's stdout and to stderr after all of its stderr. The nonce is
 * fresh per interpreter; code that learns it can only end its own call
 * early.
 *
 * Ownership: a session belongs to req->owner (the MCP layer's client) and
 * is found only by its id and that owner together: the lookup walks the
 * list the same way for another owner's id as for an absent one, so the
 * answer (and its timing) cannot tell them apart.
 *
 * Lifetime: a registry in the runtime holds the open sessions, with a
 * reference per caller; a reaper thread closes sessions idle for longer
 * than LLM_SANDBOX_SESSION_IDLE or older than LLM_SANDBOX_SESSION_LIFETIME
 * (a running call is cancelled); closing the runtime closes them all.
 * Boxes die with the server: every backend ties them to it (bwrap's
 * --die-with-parent, nsjail's PDEATHSIG, Docker's lifeline), and the
 * cgroups of a dead server are swept at the next start.
 */
#include "sessions/session.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "cache/deps.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "install/install.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime_state.h"

#define REAP_EVERY_MS 1000

/* ---- lifetime ----------------------------------------------------------- */

static void session_destroy(struct sbx_session *s)
{
    if (s->base.ac && !s->dead)
        agentc_quit(s->base.ac);
    s->base.sess = NULL;
    engine_release(&s->base); /* closes the box, frees channel, sets, environment */
    s->live = deps_close(s->live);
    free(s->base_ex.message);
    strv_free(s->base_ex.warnings);
    free(s->base_ex.policy);
    free(s->base_ex.install_log);
    strv_free(s->repl_argv);
    strv_free(s->repl_env);
    strv_free(s->libs);
    free(s->language);
    free(s->backend);
    free(s->owner);
    sbx_cancel_free(s->kill);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void session_release(struct sessions *ss, struct sbx_session *s)
{
    bool last;

    pthread_mutex_lock(&ss->lock);
    last = --s->refs == 0;
    pthread_mutex_unlock(&ss->lock);
    if (last)
        session_destroy(s);
}

/* Take it off the list (the caller holds ss->lock); the registry's
 * reference becomes the caller's. A running call is cancelled. */
static void unlist(struct sessions *ss, struct sbx_session *s)
{
    for (struct sbx_session **p = &ss->head; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    s->listed = false;
    ss->n--;
    sbx_cancel_fire(s->kill);
}

/* The listed session ref names (the caller holds ss->lock), or NULL. */
static struct sbx_session *find(struct sessions *ss, const struct sbx_session_ref *ref)
{
    const char *owner = ref->owner ? ref->owner : "";
    struct sbx_session *s;

    for (s = ss->head; s; s = s->next)
        if (ref->id && strcmp(s->id, ref->id) == 0 && strcmp(s->owner, owner) == 0)
            break;
    return s;
}

struct sbx_session *session_get(struct sessions *ss, const struct sbx_session_ref *ref)
{
    return session_get_timed(ss, ref, -1);
}

struct sbx_session *session_get_timed(
        struct sessions *ss, const struct sbx_session_ref *ref, int wait_ms)
{
    struct sbx_session *s;
    struct timespec until;

    pthread_mutex_lock(&ss->lock);
    s = find(ss, ref);
    if (s)
        s->refs++;
    pthread_mutex_unlock(&ss->lock);
    if (!s)
        return NULL;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (wait_ms < 0) {
        pthread_mutex_lock(&s->lock);
    } else if (pthread_mutex_timedlock(&s->lock, &until) != 0) {
        session_release(ss, s); /* busy for longer than the caller waits */
        return NULL;
    }
    pthread_mutex_lock(&ss->lock);
    if (!s->listed) { /* closed while we waited */
        pthread_mutex_unlock(&ss->lock);
        pthread_mutex_unlock(&s->lock);
        session_release(ss, s);
        return NULL;
    }
    s->busy = true;
    pthread_mutex_unlock(&ss->lock);
    return s;
}

void session_put(struct sessions *ss, struct sbx_session *s)
{
    pthread_mutex_lock(&ss->lock);
    s->busy = false;
    s->used_ms = now_ms();
    s->used_wall = time(NULL);
    pthread_mutex_unlock(&ss->lock);
    pthread_mutex_unlock(&s->lock);
    session_release(ss, s);
}

static void *reaper(void *arg)
{
    struct sessions *ss = arg;
    const struct settings *set = ss->rt->settings;

    pthread_mutex_lock(&ss->lock);
    while (!ss->stopping) {
        struct timespec ts;
        struct sbx_session *done = NULL, *next;
        int64_t now = now_ms();

        for (struct sbx_session *s = ss->head; s; s = next) {
            next = s->next;
            if ((s->busy || now - s->used_ms < (int64_t)set->session_idle_ms) &&
                    now - s->created_ms < (int64_t)set->session_lifetime_ms)
                continue;
            log_msg(SBX_LOG_INFO, NULL, "session %s %s", s->id,
                    now - s->created_ms >= (int64_t)set->session_lifetime_ms
                            ? "reached its maximum lifetime"
                            : "expired unused");
            unlist(ss, s);
            s->next = done;
            done = s;
        }
        pthread_mutex_unlock(&ss->lock);
        for (; done; done = next) {
            next = done->next;
            session_release(ss, done);
        }
        pthread_mutex_lock(&ss->lock);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += REAP_EVERY_MS / 1000;
        if (!ss->stopping)
            pthread_cond_timedwait(&ss->wake, &ss->lock, &ts);
    }
    pthread_mutex_unlock(&ss->lock);
    return NULL;
}

struct sessions *sessions_new(void)
{
    struct sessions *ss = calloc(1, sizeof(*ss));

    if (!ss)
        return NULL;
    pthread_mutex_init(&ss->lock, NULL);
    pthread_cond_init(&ss->wake, NULL);
    return ss;
}

void sessions_free(struct sessions *ss)
{
    struct sbx_session *s;

    if (!ss)
        return;
    pthread_mutex_lock(&ss->lock);
    ss->stopping = true;
    pthread_cond_signal(&ss->wake);
    pthread_mutex_unlock(&ss->lock);
    if (ss->reaping)
        pthread_join(ss->reaper, NULL);
    for (;;) {
        pthread_mutex_lock(&ss->lock);
        s = ss->head;
        if (s)
            unlist(ss, s);
        pthread_mutex_unlock(&ss->lock);
        if (!s)
            break;
        session_release(ss, s);
    }
    pthread_cond_destroy(&ss->wake);
    pthread_mutex_destroy(&ss->lock);
    free(ss);
}

/* ---- the warm interpreter ----------------------------------------------- */

/* argv (the element "{driver}" replaced), the environment with a fresh
 * nonce, and the marker head that goes with it. */
int repl_prepare(struct sbx_session *s, struct sbx_error **err)
{
    const struct plugin *lang = s->base.lang;
    size_t driver_len;
    cleanup_free char *driver =
            plugin_file_read(lang, lang->m->lang->session->driver, &driver_len, err);
    char nonce[2 * NONCE_BYTES + 1], *kv = NULL;

    if (!driver)
        return (*err)->rc;
    for (char **a = lang->m->lang->session->run; *a; a++)
        if (strv_push(&s->repl_argv, strcmp(*a, "{driver}") == 0 ? driver : *a) < 0)
            goto oom;
    for (char **e = s->base.env; e && *e; e++)
        if (strv_push(&s->repl_env, *e) < 0)
            goto oom;
    if (random_hex(nonce, NONCE_BYTES) < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "getrandom: %s", strerror(errno));
    if (asprintf(&kv, "SBX_SESSION_NONCE=%s", nonce) < 0)
        goto oom;
    if (strv_push(&s->repl_env, kv) < 0) {
        free(kv);
        goto oom;
    }
    free(kv);
    snprintf(s->head, sizeof(s->head), "\033]sbx;%s;", nonce);
    return 0;
oom:
    return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* Start the interpreter: 0, 1 when it did not start (r->ex says why), or
 * < 0. A new one gets a new nonce. */
int repl_start(struct sbx_session *s, struct run *r, struct sbx_error **err)
{
    char nonce[2 * NONCE_BYTES + 1];
    struct agentc_exit ex = {0};
    char **kv;
    int end;

    if (random_hex(nonce, NONCE_BYTES) < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "getrandom: %s", strerror(errno));
    for (kv = s->repl_env; *kv && strncmp(*kv, "SBX_SESSION_NONCE=", 18) != 0; kv++) {
    }
    if (!*kv)
        return sbx_error_set(err, SBX_E_INTERNAL, 0, "the session's nonce went missing");
    memcpy(*kv + 18, nonce, sizeof(nonce));
    snprintf(s->head, sizeof(s->head), "\033]sbx;%s;", nonce);
    end = agentc_start(
            r->ac, s->repl_argv, s->repl_env, now_ms() + SETUP_TIMEOUT_MS, &r->sink, &ex);
    if (end == 0) {
        s->repl_alive = true;
        return 0;
    }
    if (end == AGENTC_LOST) {
        s->dead = true;
    } else if (end == AGENTC_TIMEOUT || end == AGENTC_CANCELLED) {
        /* it may be running without our knowing: end it, or the next
         * start would find the agent busy */
        struct agentc_exit kx;

        if (agentc_kill(r->ac, now_ms() + KILL_WAIT_MS, &r->sink, &kx) != AGENTC_EXITED)
            s->dead = true;
    }
    r->ex->status = SBX_STATUS_ERROR;
    (void)!asprintf(&r->ex->message, "the %s interpreter did not start: %s", s->language,
            end == AGENTC_EXITED ? "it exited at once (see stderr)" : agentc_last_error(r->ac));
    return 1;
}

/* ---- create, close, list ------------------------------------------------ */

static struct sbx_session *session_new(const struct sbx_request *req, struct sbx_error **err)
{
    struct sbx_session *s = calloc(1, sizeof(*s));

    if (!s)
        goto oom;
    pthread_mutex_init(&s->lock, NULL);
    s->refs = 1;
    s->id[0] = 's';
    s->id[1] = '-';
    if (random_hex(s->id + 2, ID_BYTES) < 0) {
        sbx_error_set(err, SBX_E_IO, errno, "getrandom: %s", strerror(errno));
        session_destroy(s);
        return NULL;
    }
    s->owner = strdup(req->owner ? req->owner : "");
    if (!s->owner)
        goto oom;
    if (sbx_cancel_new(&s->kill, err) < 0) {
        session_destroy(s);
        return NULL;
    }
    s->language = req->language ? strdup(req->language) : NULL;
    s->backend = req->backend ? strdup(req->backend) : NULL;
    for (size_t i = 0; i < req->n_libraries; i++)
        if (strv_push(&s->libs, req->libraries[i]) < 0)
            goto oom;
    if ((req->language && !s->language) || (req->backend && !s->backend))
        goto oom;
    s->req = (struct sbx_request){.language = s->language,
            .backend = s->backend,
            .code = "",
            .limits = req->limits,
            .libraries = (const char *const *)s->libs,
            .n_libraries = req->n_libraries,
            .on_phase = req->on_phase,
            .on_output = req->on_output,
            .on_notice = req->on_notice,
            .userdata = req->userdata,
            .cancel = req->cancel};
    s->base.req = &s->req;
    s->base.ex = &s->base_ex;
    return s;
oom:
    if (s)
        session_destroy(s);
    sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    return NULL;
}

/* Everything a call needs that lasts: 0 (r->ex ok, or refused), or < 0. */
static int session_open(struct sbx_session *s, struct sbx_error **err)
{
    struct run *r = &s->base;
    int end, rc;

    if (engine_choose(r) || engine_policy(r))
        return 0;
    free(s->language);
    free(s->backend);
    s->language = strdup(r->lang->name);
    s->backend = strdup(r->backend->name);
    if (!s->language || !s->backend)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    s->req.language = s->language;
    s->req.backend = s->backend;
    r->ex->policy = policy_to_text(&r->policy);
    if (engine_build_env(r, err) < 0)
        return (*err)->rc;
    if (s->req.n_libraries && (rc = prepare_libraries(r, err)) != 0)
        return rc < 0 ? rc : 0;
    if (prepare_warm(r, err) < 0)
        return (*err)->rc;
    if (r->lang->m->lang->session && repl_prepare(s, err) < 0)
        return (*err)->rc;
    engine_phase(r, "starting");
    /* the box lives on after this request: bound to neither its
     * cancellation nor its callbacks */
    s->req.cancel = NULL;
    s->req.on_phase = NULL;
    s->req.on_output = NULL;
    s->req.on_notice = NULL;
    s->req.userdata = NULL;
    capture_init(&r->sink.out, START_OUTPUT);
    capture_init(&r->sink.err, START_OUTPUT);
    /* the box lives as long as the session may, and a last call in it */
    r->box_life_ms = r->rt->settings->session_lifetime_ms + r->rt->settings->ceilings.wall_time_ms;
    if (engine_open_box(r, err) < 0 || engine_setup(r, &end, err) < 0)
        return (*err)->rc;
    if (end != 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "setting up the sandbox failed: %s",
                agentc_last_error(r->ac));
    if ((rc = engine_stage_support(r, now_ms() + SETUP_TIMEOUT_MS, err)) < 0)
        return rc;
    if (r->warm && r->lang->m->lang->warm->seed) {
        struct agentc_exit ex;

        /* once per box, as a one-shot run does before its build */
        end = agentc_exec(r->ac, r->lang->m->lang->warm->seed, r->env, NULL, 0,
                now_ms() + SETUP_TIMEOUT_MS, &r->sink, &ex);
        if (end == AGENTC_EXITED && !ex.signaled && ex.code == 0)
            s->seeded = true;
        else
            log_msg(SBX_LOG_WARN, s->language, "session %s builds without the warm cache", s->id);
    }
    if (s->repl_argv && (rc = repl_start(s, r, err)) != 0)
        return rc < 0 ? rc : 0;
    r->ex->status = SBX_STATUS_OK;
    return 0;
}

/* A place in the registry, reserved before the box is made. */
static int reserve(struct sessions *ss, struct sbx_runtime *rt)
{
    int rc = 0;

    pthread_mutex_lock(&ss->lock);
    ss->rt = rt;
    if (ss->n + ss->pending >= rt->settings->sessions_max)
        rc = -1;
    else
        ss->pending++;
    if (rc == 0 && !ss->reaping && pthread_create(&ss->reaper, NULL, reaper, ss) == 0)
        ss->reaping = true;
    pthread_mutex_unlock(&ss->lock);
    return rc;
}

int sbx_session_create(struct sbx_runtime *rt, const struct sbx_request *req,
        struct sbx_execution **ret, struct sbx_error **err)
{
    struct sessions *ss = rt->sessions;
    struct sbx_execution *ex = calloc(1, sizeof(*ex));
    struct sbx_session *s = NULL;
    int64_t t0 = now_ms();
    int rc = 0;

    if (!ex)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (reserve(ss, rt) < 0) {
        ex->status = SBX_STATUS_REFUSED;
        (void)!asprintf(&ex->message,
                "%" PRIu64 " sessions are open, the most this server allows "
                "(LLM_SANDBOX_SESSIONS_MAX); close one first",
                rt->settings->sessions_max);
        goto done;
    }
    s = session_new(req, err);
    if (s) {
        s->base.rt = rt;
        s->base.t0 = t0;
        s->base_ex.status = SBX_STATUS_ERROR;
        rc = session_open(s, err);
    } else {
        rc = (*err)->rc;
    }
    pthread_mutex_lock(&ss->lock);
    ss->pending--;
    if (rc == 0 && s->base_ex.status == SBX_STATUS_OK) {
        s->created_ms = s->used_ms = now_ms();
        s->created_wall = s->used_wall = time(NULL);
        s->listed = true;
        s->next = ss->head;
        ss->head = s;
        ss->n++;
    }
    pthread_mutex_unlock(&ss->lock);
    if (rc < 0) {
        if (s)
            session_destroy(s);
        sbx_execution_free(ex);
        return rc;
    }
    /* the outcome: the session's id, or why it was refused */
    ex->status = s->base_ex.status;
    ex->message = s->base_ex.message;
    ex->warnings = s->base_ex.warnings;
    ex->policy = s->base_ex.policy;
    ex->has_install = s->base_ex.has_install;
    ex->install_cached = s->base_ex.install_cached;
    ex->install_ms = s->base_ex.install_ms;
    ex->install_log = s->base_ex.install_log;
    ex->install_log_truncated = s->base_ex.install_log_truncated;
    s->base_ex = (struct sbx_execution){0};
    ex->backend = s->base.backend ? strdup(s->base.backend->name) : NULL;
    ex->language = s->base.lang ? strdup(s->base.lang->name) : NULL;
    if (ex->status == SBX_STATUS_OK) {
        ex->session_id = strdup(s->id);
    } else {
        size_t n;

        /* an interpreter that did not start says why on stderr */
        ex->stderr_buf = dynbuf_take(&s->base.sink.err.buf, &n);
        ex->stderr_len = n;
        ex->stderr_bytes = n;
        ex->stdout_buf = strdup("");
        session_destroy(s);
    }
done:
    ex->duration_ms = (uint64_t)(now_ms() - t0);
    *ret = ex;
    return 0;
}

int sbx_session_close(
        struct sbx_runtime *rt, const struct sbx_session_ref *ref, struct sbx_error **err)
{
    struct sessions *ss = rt->sessions;
    struct sbx_session *s;

    pthread_mutex_lock(&ss->lock);
    s = find(ss, ref);
    if (s)
        unlist(ss, s);
    pthread_mutex_unlock(&ss->lock);
    if (!s)
        return sbx_error_set(err, SBX_E_INVALID, 0,
                "no open session '%.80s' (it was closed, it expired, or it never existed)",
                ref->id ? ref->id : "");
    session_release(ss, s);
    return 0;
}

size_t sbx_sessions_close_owner(struct sbx_runtime *rt, const char *owner)
{
    struct sessions *ss = rt->sessions;
    size_t n = 0;

    for (;;) {
        struct sbx_session *s;

        pthread_mutex_lock(&ss->lock);
        for (s = ss->head; s && strcmp(s->owner, owner ? owner : "") != 0; s = s->next) {
        }
        if (s)
            unlist(ss, s);
        pthread_mutex_unlock(&ss->lock);
        if (!s)
            return n;
        session_release(ss, s);
        n++;
    }
}

static struct json_object *iso_time(time_t t)
{
    char buf[32];
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_object_new_string(buf);
}

struct json_object *sbx_sessions_json(struct sbx_runtime *rt, const char *owner)
{
    struct sessions *ss = rt->sessions;
    const struct settings *set = rt->settings;
    struct json_object *a = json_object_new_array();

    pthread_mutex_lock(&ss->lock);
    for (struct sbx_session *s = ss->head; a && s; s = s->next) {
        struct json_object *o;
        time_t idle_end = s->used_wall + (time_t)(set->session_idle_ms / 1000);
        time_t life_end = s->created_wall + (time_t)(set->session_lifetime_ms / 1000);

        if (strcmp(s->owner, owner ? owner : "") != 0)
            continue;
        o = json_object_new_object();
        json_object_object_add(o, "session_id", json_object_new_string(s->id));
        json_object_object_add(o, "language", json_object_new_string(s->language));
        json_object_object_add(o, "backend", json_object_new_string(s->backend));
        json_object_object_add(o, "created_at", iso_time(s->created_wall));
        json_object_object_add(o, "last_used_at", iso_time(s->used_wall));
        json_object_object_add(
                o, "expires_at", iso_time(idle_end < life_end ? idle_end : life_end));
        json_object_object_add(o, "calls", json_object_new_uint64(s->calls));
        json_object_object_add(o, "busy", json_object_new_boolean(s->busy));
        json_object_object_add(o, "interpreter", json_object_new_boolean(s->repl_argv != NULL));
        json_object_object_add(o, "libraries", json_object_new_array());
        for (char **l = s->libs; l && *l; l++)
            json_object_array_add(
                    json_object_object_get(o, "libraries"), json_object_new_string(*l));
        json_object_array_add(a, o);
    }
    pthread_mutex_unlock(&ss->lock);
    return a;
}
