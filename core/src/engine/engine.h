/* SPDX-License-Identifier: MIT */
/*
 * engine.h: one run's state (struct run) and the engine's steps, in the
 * order a run takes them: prepare (choose the plugins, check the request,
 * resolve the policy, make the environment: prepare.c), the box (open,
 * greet, close, release: box.c), staging (stage.c), the programs (seed,
 * build with the compile cache, run; classify the end: program.c), and
 * the artifacts (artifacts.c). sbx_run (runtime/run.c), sessions and
 * pools (sessions/) and the set builders (install/) drive these steps;
 * the engine calls none of them.
 */
#ifndef SBX_ENGINE_H
#define SBX_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

#include "base/cancel.h"
#include "base/error.h"
#include "channel/agentc.h"

#define SETUP_TIMEOUT_MS 15000
#define STAGE_FILE_MAX   (1u << 20) /* a file staged from a set or by a language hook */

struct sbx_runtime;
struct sbx_session;
struct plugin;
struct sbx_plan;
struct deps_set;
struct uid_lease;
struct pbox;
struct cg_group;

/* Everything one run holds; released by engine_release. */
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
    /* the compile cache: ready, the build's outputs to reuse; else ours to
     * fill after a successful build (exclusively locked until then) */
    struct deps_set *build;
    /* a session's call: the box, channel, environment and sets are the
     * session's (engine_release leaves them) */
    struct sbx_session *sess;
    bool seeded;        /* the warm-up set was linked in already (a session's box) */
    bool staged_source; /* the program is a file of the workspace (not an artifact) */
    /* a box that outlives one run (a session's, a pooled one): how long the
     * backend's own backstop must let it live, or 0: the run's wall time */
    uint64_t box_life_ms;
    bool prestarted;  /* a pooled box whose interpreter waits for the go (pool.c) */
    bool zygote_box;  /* open the box as a zygote box (plugin.h SBX_BOX_ZYGOTE; pool.c) */
    struct pbox *zyg; /* a zygote box lent to this run (pool.c): r->box and r->ac are its */
    /* where cgroups hold the limits: the forked run's own group; whether
     * the run must make its box ready first (pool_zygote.c) */
    struct cg_group *zyg_cg;
    bool zyg_unready;
    char box_id[96]; /* the id of the box engine_open_box opened (its cgroup's name) */
    /* as root: the host uid this run's boxes (and the files they write)
     * are, its own while the run or the session's box lives; or NULL */
    struct uid_lease *ids;
};

/* The phase timings at debug level: where a run's milliseconds go. */
void engine_mark(const struct run *r, const char *what);
/* status refused with a message; returns 1 (the result is decided). */
int engine_refuse(struct run *r, const char *fmt, ...) SBX_PRINTF(2, 3);
/* Announce a phase ("installing", "compiling", ...) to the front end. */
void engine_phase(const struct run *r, const char *name);
/* A notice to the caller (sbx_request.on_notice), when it wants them. */
void engine_notice(const struct run *r, enum sbx_notice level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* The host ids the run's boxes run as and its staged files belong to:
 * as root the run's own (taken on first use), else -1 (the server's). 0,
 * or SBX_E_LIMIT (the range is used up), SBX_E_IO, SBX_E_NOMEM. */
int engine_ids(struct run *r, int64_t *ret_uid, int64_t *ret_gid, struct sbx_error **err);
/* Open a box for the run (r->box_policy and r->box_mounts when building a
 * set) and wrap its channel in r->ac. */
int engine_open_box(struct run *r, struct sbx_error **err);
/* Close r->box, reporting its stats; err may be NULL. */
int engine_close_box(struct run *r, struct sbx_box_stats *st, struct sbx_error **err);
/* The per-user kernel quotas one sandbox may take (the kernel's defaults,
 * 8 MiB of locked memory and of message queues, and tens of thousands of
 * queued signals, let one sandbox drain its host user's). */
#define ENGINE_MSGQUEUE_BYTES (64u * 1024u)
#define ENGINE_MEMLOCK_BYTES  (64u * 1024u)
#define ENGINE_SIGPENDING_MAX 256u
/* The rlimits the agent applies (at most AGENT_LIMITS_MAX). */
size_t engine_limits(const struct run *r, struct agentc_limit *l);

/* The engine's steps, in order. engine_pick_plugins, engine_choose and
 * engine_policy return 1 when the request was refused (r->ex says why). */
int engine_pick_plugins(struct run *r);
int engine_choose(struct run *r);
int engine_check_request(struct run *r);
int engine_policy(struct run *r);
int engine_build_env(struct run *r, struct sbx_error **err);
/* Check that no staged file takes the program's name: 0, or 1 (refused). */
int engine_check_source_name(struct run *r);
/* A new box's agent: its greeting, the core's seccomp filter when the
 * backend applies none itself (plugin.agent_filter), and the limits every
 * exec inherits. 0, an enum agentc_end, or SBX_E_IO. */
int engine_greet(struct run *r, int64_t deadline_ms);
/* engine_greet, with a failure as err; *ret_end: 0 or an enum agentc_end. */
int engine_setup(struct run *r, int *ret_end, struct sbx_error **err);
/* Stage the language's support files (language.support): 0,
 * AGENTC_CANCELLED, or < 0 with err set. */
int engine_stage_support(struct run *r, int64_t deadline, struct sbx_error **err);
/* Stage the request's files (and the program, with_source): 0, an enum
 * agentc_end, or SBX_E_IO. */
int engine_stage(struct run *r, bool with_source, int64_t deadline);
/* Seed, build and run under the policy's wall time. */
int engine_programs(struct run *r, int *ret_end, struct agentc_exit *ex, struct sbx_error **err);
void engine_classify(
        struct run *r, int end, const struct agentc_exit *ex, const struct sbx_box_stats *st);
int engine_output(struct run *r, struct sbx_error **err);
void engine_release(struct run *r);
/* Close the run's box, unreported, and free its channel. */
void engine_release_box(struct run *r);

#endif
