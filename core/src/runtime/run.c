/* SPDX-License-Identifier: MIT */
/*
 * run.c: sbx_run(), the one path every one-shot run takes, top down:
 *
 *   a session's call (sessions/session_call.c), or: choose the plugins and
 *   check the request -> resolve the policy and check it against the
 *   backend -> plan (language templates) -> the libraries' and the
 *   warm-up's sets (install/) -> the compile cache -> a pooled box
 *   (sessions/pool.c) or a new one -> greet the agent, stage, build, run
 *   with the deadline -> collect the artifacts -> close the box (kill,
 *   clean up, read stats) -> classify the outcome.
 *
 * The steps are the engine's (engine/engine.h). Invalid requests and
 * policies that cannot be enforced end as status "refused" before anything
 * runs; outcomes of the user's code are results, never errors (STYLE E5).
 * Thread-safe: the registry is read-only here.
 */
#include "runtime/run.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "channel/agentc.h"
#include "engine/artifacts.h"
#include "engine/buildcache.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "host/cgroup.h"
#include "install/install.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/policy.h"
#include "runtime_state.h"
#include "sessions/pool.h"
#include "sessions/session.h"

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
    engine_mark(r, "staged");
    engine_phase(r, "running");
    end = agentc_finish(r->ac, feed, len, now_ms() + (int64_t)r->policy.wall_time_ms, &r->sink, ex);
    if (end < 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
    engine_mark(r, "program ended");
    *ret_end = end;
    return 0;
}

/* A zygote box (pool.c): staged, then the program forked from its zygote.
 * SBX_E_BACKEND before anything ran when the child could not be isolated
 * (the run then opens a box of its own). */
static int zygote_phases(
        struct run *r, int *ret_end, struct agentc_exit *ex, struct sbx_error **err)
{
    const struct sbx_request *q = r->req;
    int end;

    r->ex->warm = true;
    r->ex->origin = SBX_ORIGIN_ZYGOTE;
    if (pool_zygote_ready(r, err) < 0)
        return (*err)->rc;
    if ((end = stage_all(r, err)) < 0)
        return end;
    if (end == AGENTC_CANCELLED) {
        *ret_end = end;
        return 0;
    }
    engine_mark(r, "staged");
    engine_phase(r, "running");
    end = agentc_fork(r->ac, r->plan->run, r->env, q->stdin_data ? q->stdin_data : "",
            q->stdin_data ? q->stdin_len : 0, now_ms() + (int64_t)r->policy.wall_time_ms, &r->sink,
            ex);
    if (end == SBX_E_BACKEND) /* refused: nothing of the program ran */
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
    r->ran = true;
    if (end < 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
    engine_mark(r, "program ended");
    *ret_end = end;
    return 0;
}

/* After a zygote run: its artifacts, its cgroup's reports (where it had
 * a group of its own; the box's would not be the run's), then the box goes
 * back with a fresh workspace (or is closed, when the program did not end
 * on its own). */
static int zygote_end(
        struct run *r, int rc, int end, const struct agentc_exit *ex, struct sbx_error **err)
{
    struct sbx_box_stats st;

    memset(&st, 0, sizeof(st));
    st.size = sizeof(st);
    st.oom_killed = st.pids_limited = -1;
    if (rc == 0 && end == AGENTC_EXITED)
        artifacts_collect(r, NULL, 0);
    pool_zygote_cgroup_end(r, &st);
    pool_zygote_return(r, rc == 0 && end == AGENTC_EXITED);
    if (rc < 0)
        return (*err)->rc;
    engine_classify(r, end, ex, &st);
    if (r->ex->status == SBX_STATUS_ERROR && end == AGENTC_LOST)
        r->ex->message = strdup("the sandbox agent was lost");
    return 0;
}

/* No group of its own (a unit without Delegate=yes): an OOM kill in the
 * unit's cgroup during the run that ended the program (SIGKILL) or the
 * server's unit (systemd's OOMPolicy=stop cancels the run) was the
 * kernel's OOM killer, and is reported so. */
static void unit_oom(struct run *r, bool had, uint64_t before, int end,
        const struct agentc_exit *ex, struct sbx_box_stats *st)
{
    uint64_t after;

    if (!had || st->oom_killed == 1 || cg_service_unit_oom_kills(r->rt->cg, &after) < 0 ||
            after <= before)
        return;
    if (end != AGENTC_CANCELLED && !(end == AGENTC_EXITED && ex->signaled && ex->code == SIGKILL))
        return;
    st->oom_killed = 1;
    (void)strv_pushf(&r->ex->warnings,
            "the kernel's OOM killer ended the program in this server's cgroup (%s), which is "
            "not delegated: no memory limit of its own held it",
            cg_service_describe(r->rt->cg));
}

/* Everything after the request and policy were accepted. */
static int run_box(struct run *r, struct sbx_error **err)
{
    struct agentc_exit ex = {0};
    struct sbx_box_stats st;
    uint64_t oom0 = 0;
    bool had = cg_service_unit_oom_kills(r->rt->cg, &oom0) == 0;
    int end = AGENTC_LOST, rc;

    rc = 1;
    if (pool_take(r)) {
        rc = r->zyg ? zygote_phases(r, &end, &ex, err) : pooled_phases(r, &end, &ex, err);
        if (rc < 0 && !r->ran) {
            /* a ready box that died while it waited, or a zygote that could
             * not isolate the run: the run opens its own, and says so */
            const char *what = r->zyg ? "a zygote box" : "a ready sandbox";

            log_msg(SBX_LOG_WARN, r->backend->name, "%s was unusable (%s)", what, (*err)->msg);
            engine_notice(r, SBX_NOTICE_WARNING, "%s was unusable (%s); the run starts a new one",
                    what, (*err)->msg);
            (void)strv_pushf(&r->ex->warnings,
                    "%s was unusable (%s); the run started a new sandbox", what, (*err)->msg);
            *err = sbx_error_free(*err);
            if (r->zyg) {
                struct sbx_box_stats unused;

                pool_zygote_cgroup_end(r, &unused);
                pool_zygote_return(r, false);
            } else {
                r->backend->desc->backend->box_kill(r->box);
                engine_release_box(r);
            }
            r->ex->warm = r->prestarted = false;
            r->ex->origin = SBX_ORIGIN_COLD;
            rc = 1;
        } else if (!r->zyg) {
            r->ex->origin = SBX_ORIGIN_READY;
        }
    }
    if (r->zyg)
        return zygote_end(r, rc, end, &ex, err);
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
    engine_mark(r, "box closed");
    if (rc < 0 && end == AGENTC_EXITED)
        log_msg(SBX_LOG_WARN, r->backend->name, "cleanup failed: %s", (*err)->msg);
    if (rc < 0 && end == AGENTC_EXITED)
        *err = sbx_error_free(*err);
    else if (rc < 0)
        return rc;
    unit_oom(r, had, oom0, end, &ex, &st);
    engine_classify(r, end, &ex, &st);
    if (r->ex->status == SBX_STATUS_ERROR && end == AGENTC_LOST)
        r->ex->message = strdup(agentc_last_error(r->ac));
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
    if (prepare_warm(r, err) < 0 || buildcache_open(r, err) < 0)
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

int run_probe(struct sbx_runtime *rt, const char *language, char **argv, size_t output_bytes,
        struct sbx_execution **ret, struct sbx_error **err)
{
    struct sbx_request req = {.language = language, .code = "", .code_len = 0};

    req.limits.set = SBX_REQ_OUTPUT;
    req.limits.output_bytes = output_bytes;
    req.cancel = rt->probe_cancel; /* sbx_runtime_stop_probes */
    return run_one(rt, &req, argv, ret, err);
}
