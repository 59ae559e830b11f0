/* SPDX-License-Identifier: MIT */
/*
 * session_call.c: a call in an open session (session.c has the design).
 * It passes the engine's checks as a one-shot does, under the session's
 * policy with the call's timeout, then runs through the session's box:
 * libraries it lacks are added first (session_libs.c), its files replace
 * earlier ones of the same name, and the code goes to
 * the warm interpreter when the language has one, else is staged, built
 * and run as a one-shot's is. A timeout or cancellation kills the call's
 * processes (and the interpreter, whose state is then lost), never the
 * box.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "channel/agentc.h"
#include "engine/artifacts.h"
#include "engine/buildcache.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime_state.h"
#include "sessions/session.h"

/* ---- the warm interpreter ----------------------------------------------- */

/* The call's code through the interpreter: 0 with *ret_end (and ex) as
 * the engine's programs would give them, 1 when decided, or < 0. */
static int repl_call(struct sbx_session *s, struct run *r, int *ret_end, struct agentc_exit *ex,
        struct sbx_error **err)
{
    const struct sbx_request *q = r->req;
    char head[48];
    size_t hlen, len;
    cleanup_free char *buf = NULL;
    int status = 0, end, rc;

    if (!s->repl_alive && (rc = repl_start(s, r, err)) != 0)
        return rc;
    hlen = (size_t)snprintf(head, sizeof(head), "%zu %zu\n", q->code_len, q->stdin_len);
    len = hlen + q->code_len + q->stdin_len;
    buf = malloc(len);
    if (!buf)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    memcpy(buf, head, hlen);
    memcpy(buf + hlen, q->code, q->code_len);
    if (q->stdin_len)
        memcpy(buf + hlen + q->code_len, q->stdin_data, q->stdin_len);
    r->ran = true;
    engine_phase(r, "running");
    end = agentc_converse(r->ac, s->head, buf, len, now_ms() + (int64_t)r->policy.wall_time_ms,
            &r->sink, &status, ex);
    if (end < 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
    if (end == AGENTC_MARKED) {
        *ex = (struct agentc_exit){.signaled = false, .code = status, .flags = 0};
        end = AGENTC_EXITED;
    } else if (end == AGENTC_EXITED) {
        s->repl_alive = false;
        strv_push(&r->ex->warnings, "the interpreter ended: the session's variables are gone "
                                    "(its files remain); the next call starts a new one");
    }
    *ret_end = end;
    return 0;
}

/* ---- calls -------------------------------------------------------------- */

/* The session's policy with the call's timeout and output cap, if given. */
static int call_policy(struct sbx_session *s, struct run *r)
{
    const struct sbx_req_limits *l = &r->req->limits;
    struct sbx_policy p;
    uint32_t mask;
    struct sbx_error *e = NULL;

    r->policy = s->base.policy;
    r->explicit_mask = s->base.explicit_mask;
    if (l->set & ~(uint32_t)(SBX_REQ_WALL_TIME | SBX_REQ_OUTPUT))
        return engine_refuse(r, "only the timeout and the output cap may change per call; memory, "
                                "CPU, processes, network and disk were set when the session was "
                                "created");
    if (!l->set)
        return 0;
    if (policy_resolve(r->rt->settings, l, &p, &mask, &e) < 0) {
        engine_refuse(r, "%s", e->msg);
        sbx_error_free(e);
        return 1;
    }
    if (l->set & SBX_REQ_WALL_TIME)
        r->policy.wall_time_ms = p.wall_time_ms;
    if (l->set & SBX_REQ_OUTPUT)
        r->policy.output_bytes = p.output_bytes;
    return 0;
}

/* The checks a call passes before it runs: 0, or 1 when refused. */
static int call_check(struct sbx_session *s, struct run *r)
{
    const struct sbx_request *q = r->req;
    const struct plugin *pl;

    if (s->dead)
        return engine_refuse(r,
                "session %s has no sandbox any more (it ended unexpectedly); close it "
                "and create another",
                s->id);
    if (q->language && (pl = registry_find(r->rt, SBX_KIND_LANGUAGE, q->language)) != s->base.lang)
        return engine_refuse(r, "session %s runs %s, not '%.60s'", s->id, s->language, q->language);
    if (q->backend && (pl = registry_find(r->rt, SBX_KIND_BACKEND, q->backend)) != s->base.backend)
        return engine_refuse(
                r, "session %s runs on %s, not '%.60s'", s->id, s->backend, q->backend);
    if (engine_check_request(r))
        return 1;
    return call_policy(s, r);
}

/* After a timeout or a cancellation: end the call's processes, keep the box. */
static void call_kill(struct sbx_session *s, struct run *r)
{
    struct agentc_exit ex;
    int end = agentc_kill(r->ac, now_ms() + KILL_WAIT_MS, &r->sink, &ex);

    if (end != AGENTC_EXITED) {
        s->dead = true;
        if (r->box)
            r->backend->desc->backend->box_kill(r->box);
    }
    if (s->repl_argv && s->repl_alive) {
        s->repl_alive = false;
        strv_push(&r->ex->warnings, "the call was stopped, and the interpreter with it: the "
                                    "session's variables are gone (its files remain)");
    }
}

static int call_run(struct sbx_session *s, struct run *r, struct sbx_error **err)
{
    struct agentc_exit ex = {0};
    struct sbx_box_stats st = {.size = sizeof(st), .oom_killed = -1, .pids_limited = -1};
    struct agentc_entry *before = NULL;
    size_t n_before = 0;
    int end = AGENTC_LOST, rc;

    if (agentc_take_idle_exit(r->ac) && s->repl_alive) {
        s->repl_alive = false;
        strv_push(&r->ex->warnings, "the interpreter had ended since the last call: this call "
                                    "starts a new one, without the earlier variables");
    }
    if (artifacts_snapshot(r, &before, &n_before) == AGENTC_LOST)
        end = AGENTC_LOST;
    else
        end = engine_stage(r, s->repl_argv == NULL, now_ms() + SETUP_TIMEOUT_MS);
    if (end == 0) {
        rc = s->repl_argv ? repl_call(s, r, &end, &ex, err) : engine_programs(r, &end, &ex, err);
    } else if (end == AGENTC_CANCELLED) {
        rc = 0;
    } else if (end == SBX_E_IO) {
        agentc_entries_free(before, n_before);
        engine_refuse(r, "%s", agentc_last_error(r->ac));
        return 0;
    } else {
        rc = sbx_error_set(err, SBX_E_BACKEND, 0, "staging the files failed: %s",
                end == AGENTC_TIMEOUT ? "timed out" : agentc_last_error(r->ac));
    }
    if (rc != 0) {
        agentc_entries_free(before, n_before);
        return rc < 0 ? rc : 0;
    }
    if (r->ran && (end == AGENTC_TIMEOUT || end == AGENTC_CANCELLED))
        call_kill(s, r);
    if (end == AGENTC_EXITED)
        artifacts_collect(r, before, n_before);
    agentc_entries_free(before, n_before);
    if (end == AGENTC_LOST)
        s->dead = true;
    engine_classify(r, end, &ex, &st);
    if (end == AGENTC_CANCELLED && !s->listed)
        r->ex->message = strdup("the session was closed during the call");
    else if (r->ex->status == SBX_STATUS_ERROR && end == AGENTC_LOST)
        r->ex->message = strdup(agentc_last_error(r->ac));
    return 0;
}

int session_call(struct run *r, struct sbx_error **err)
{
    struct sessions *ss = r->rt->sessions;
    struct sbx_session_ref ref = {r->req->owner, r->req->session_id};
    struct sbx_session *s = session_get(ss, &ref);
    int rc;

    if (!s) {
        engine_refuse(r, "no open session '%.80s' (it was closed, it expired, or it never existed)",
                r->req->session_id);
        return 0;
    }
    r->sess = s;
    r->backend = s->base.backend;
    r->lang = s->base.lang;
    r->ex->session_id = strdup(s->id);
    if (call_check(s, r)) {
        session_put(ss, s);
        return 0;
    }
    r->ex->policy = policy_to_text(&r->policy);
    r->env = s->base.env;
    r->deps = s->live ? s->live : s->base.deps; /* the newest set: the union */
    r->warm = s->base.warm;
    r->box = s->base.box;
    r->ac = s->base.ac;
    r->seeded = s->seeded;
    rc = plan_make(r->lang, r->req->code, r->req->code_len, &r->plan, err);
    if (rc == 0 && !engine_check_source_name(r)) {
        agentc_set_cancel(r->ac, r->req->cancel ? r->req->cancel->fd : -1, s->kill->fd);
        /* libraries the session lacks: copied in first (session_libs.c) */
        rc = session_add_libraries(s, r, err);
        if (rc == 0 && (rc = buildcache_open(r, err)) == 0) {
            capture_init(&r->sink.out, (size_t)r->policy.output_bytes);
            capture_init(&r->sink.err, (size_t)r->policy.output_bytes);
            r->sink.on_output = r->req->on_output;
            r->sink.userdata = r->req->userdata;
            rc = call_run(s, r, err);
            s->calls++;
        }
        agentc_set_cancel(r->ac, -1, -1);
        if (rc == 1) /* decided: r->ex says why */
            rc = 0;
    }
    session_put(ss, s);
    return rc;
}
