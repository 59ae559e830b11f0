/* SPDX-License-Identifier: MIT */
/*
 * program.c: after staging, the run's programs under its deadline: the
 * warm-up seed, the build (or the compile cache's replay of an identical
 * one), and the program itself; then how the last one ended as status,
 * exit code and limit, and the captured output into the execution.
 * Outcomes of the user's code are results, never errors (STYLE E5).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "cache/deps.h"
#include "channel/agentc.h"
#include "engine/buildcache.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "proto.h"

/* After staging: the warm-up seed, the build (or the cached build) and the
 * program, under the run's deadline. */
int engine_programs(struct run *r, int *ret_end, struct agentc_exit *ex, struct sbx_error **err)
{
    int64_t deadline = now_ms() + (int64_t)r->policy.wall_time_ms;
    int end;

    r->ran = true;
    engine_mark(r, "staged");
    if (r->probe_argv) {
        end = agentc_exec(r->ac, r->probe_argv, r->env, NULL, 0, deadline, &r->sink, ex);
        *ret_end = end;
        return end < 0 ? sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac)) : 0;
    }
    if (r->plan->build && r->build && r->build->ready) {
        end = buildcache_replay(r, deadline); /* nothing to compile */
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
        buildcache_save(r, out0, err0, deadline);
    }
    engine_phase(r, "running");
    end = agentc_exec(r->ac, r->plan->run, r->env, r->req->stdin_data ? r->req->stdin_data : "",
            r->req->stdin_data ? r->req->stdin_len : 0, deadline, &r->sink, ex);
    if (end < 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "%s", agentc_last_error(r->ac));
    engine_mark(r, "program ended");
    *ret_end = end;
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
    /* An OOM kill beats a cancellation: systemd stops a unit whose process
     * was OOM-killed (OOMPolicy=stop), which cancels what still runs. */
    if (end == AGENTC_TIMEOUT) {
        e->status = SBX_STATUS_TIMEOUT;
        e->limit = SBX_LIMIT_WALL_TIME;
    } else if (st->oom_killed == 1) {
        e->status = SBX_STATUS_OOM;
        e->limit = SBX_LIMIT_MEMORY;
    } else if (end == AGENTC_CANCELLED) {
        e->status = SBX_STATUS_CANCELLED;
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
