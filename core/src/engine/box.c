/* SPDX-License-Identifier: MIT */
/*
 * box.c: a run's box, from open to release. Opening asks the backend for a
 * box (its policy, mounts and proxy as the run says) and wraps its channel
 * in the agent client; the greeting hands the agent the core's seccomp
 * filter when the backend applies none, and the rlimits every program
 * inherits; closing has the backend destroy the box and report its stats;
 * releasing frees what the run holds (a session's box stays the
 * session's).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "cache/deps.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "host/seccomp_policy.h"
#include "host/uidrange.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "proto.h"
#include "runtime_state.h"

int engine_ids(struct run *r, int64_t *ret_uid, int64_t *ret_gid, struct sbx_error **err)
{
    const struct settings *s = r->rt->settings;

    if (geteuid() != 0) {
        *ret_uid = *ret_gid = -1;
        return 0;
    }
    if (!r->rt->uids) { /* LLM_SANDBOX_UID_RANGE=off: every box the same */
        *ret_uid = s->sandbox_uid;
        *ret_gid = s->sandbox_gid;
        return 0;
    }
    if (!r->ids) {
        int rc = uidrange_take(r->rt->uids, &r->ids, err);

        if (rc < 0)
            return rc;
    }
    *ret_uid = r->ids->uid;
    *ret_gid = r->ids->gid;
    return 0;
}

int engine_open_box(struct run *r, struct sbx_error **err)
{
    char *id = r->box_id;
    struct sbx_box_spec spec;
    struct sbx_policy life;
    struct sbx_err perr;
    int64_t uid, gid;
    int rc = engine_ids(r, &uid, &gid, err);

    if (rc < 0)
        return rc;

    snprintf(id, sizeof(r->box_id), "%s-%" PRIuFAST64, r->rt->owner,
            atomic_fetch_add(&r->rt->seq, 1));
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
    if (r->zygote_box)
        spec.flags |= SBX_BOX_ZYGOTE;
    if (uid > 0) {
        spec.host_uid = (uint32_t)uid;
        spec.host_gid = (uint32_t)gid;
    }
    sbx_err_init(&perr);
    if (r->backend->desc->backend->box_open(r->backend->pstate, &spec, &r->box, &perr) < 0)
        return sbx_error_from_plugin(err, &perr, r->backend->name);
    r->ac = agentc_new(r->backend->desc->backend, r->box, spec.cancel_fd);
    if (!r->ac)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    return 0;
}

/*
 * The rlimits every program of the run inherits from the agent: the file
 * size limit, open files, no core dumps, the kernel's per-user quotas a
 * sandbox could otherwise drain for every other process of its host uid
 * (POSIX message-queue bytes, locked memory, queued signals: the kernel
 * charges them to the sandbox's own counter against these limits first,
 * so one sandbox takes at most this much of its user's), and the fallbacks for memory and
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
    l[n++] = (struct agentc_limit){AGENT_RLIMIT_MSGQUEUE, ENGINE_MSGQUEUE_BYTES};
    l[n++] = (struct agentc_limit){AGENT_RLIMIT_MEMLOCK, ENGINE_MEMLOCK_BYTES};
    l[n++] = (struct agentc_limit){AGENT_RLIMIT_SIGPENDING, ENGINE_SIGPENDING_MAX};
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

int engine_greet(struct run *r, int64_t deadline_ms)
{
    struct agentc_limit lims[AGENT_LIMITS_MAX];
    struct sbx_error *e = NULL;
    const void *bpf;
    size_t len;
    int end = agentc_hello(r->ac, deadline_ms);

    engine_mark(r, "agent ready");
    /* a zygote box: the agent hands the filter to the zygote for its children */
    if (end == 0 && (r->backend->agent_filter || r->zygote_box)) {
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

    engine_mark(r, "box opened");
    end = engine_greet(r, now_ms() + SETUP_TIMEOUT_MS);
    *ret_end = end;
    if (end == AGENTC_TIMEOUT || end == AGENTC_LOST || end == SBX_E_IO)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "setting up the sandbox failed: %s",
                end == AGENTC_TIMEOUT ? "timed out" : agentc_last_error(r->ac));
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
    uid_lease_free(r->ids); /* after the box: nothing runs as it now */
    r->ids = NULL;
    capture_done(&r->sink.out);
    capture_done(&r->sink.err);
}
