/* SPDX-License-Identifier: MIT */
/*
 * runtime_state.h: the runtime object behind sbx.h, the state every part of the
 * core shares: the settings, the plugin registry (plugins/registry.h), the
 * cgroup service, this instance's name, and the registries of the parts
 * above the engine (sessions, pools, the artifact store), opaque here.
 * Made and freed by runtime/runtime.c; read-only once made, but for the
 * sequence number and what each registry guards with its own lock.
 */
#ifndef SBX_RUNTIME_STATE_H
#define SBX_RUNTIME_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct settings;
struct plugin;
struct cg_service;
struct sessions;
struct artifact_store;
struct pools;
struct uidrange;
struct sbx_cancel;

struct sbx_runtime {
    struct settings *settings;
    struct plugin **plugins;
    size_t n_plugins;
    struct cg_service *cg;
    char *plugin_dir; /* the compiled-in one, relative to the executable */
    char *agent_path;
    char owner[64]; /* "p<pid>t<starttime>h<scope>" (owner.h): names cgroups and boxes */
    atomic_uint_fast64_t seq;
    bool ltdl_ready;
    bool only_default_backend;        /* sbx_runtime_opts */
    int audit_fd;                     /* LLM_SANDBOX_AUDIT_LOG, opened for appending, or -1 */
    struct sessions *sessions;        /* sessions/session.c's registry */
    struct artifact_store *artifacts; /* engine/artifacts.c: one-shot runs' files, for a while */
    struct pools *pools;              /* sessions/pool.c: ready boxes for one-shot runs */
    struct uidrange *uids;            /* as root: each box's own host uid, or NULL */
    struct sbx_cancel *probe_cancel;  /* fired by sbx_runtime_stop_probes */
    atomic_bool probes_stopped;
};

#endif
