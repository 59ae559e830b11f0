/* SPDX-License-Identifier: MIT */
/*
 * warm.c: the language's warm-up set (language.warm: Go's standard
 * library build cache, C++'s precompiled header), built once per
 * toolchain by its steps in a box of its own (builder.c) without network
 * and without anything of the request, then mounted read-only at /warm
 * for every run.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "cache/deps.h"
#include "cache/key.h"
#include "engine/engine.h"
#include "install/builder.h"
#include "install/install.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"

/*
 * The language's warm-up set (language.warm): built once per toolchain by
 * its steps, without network and without anything of the request, then
 * mounted read-only at /warm for every run, whose seed command links it
 * into the sandbox's own writable cache. Only toolchain code ever writes
 * the set, so sharing it shares nothing a request made. Returns 0 to go on
 * (with or without the set: a failed warm-up costs speed, not the run),
 * or < 0 for errors of the tool.
 */
int prepare_warm(struct run *r, struct sbx_error **err)
{
    const struct settings *s = r->rt->settings;
    const struct manifest_install *w = r->lang->m->lang->warm;
    int64_t uid = -1, gid = -1;
    struct sbx_policy wpol = r->policy;
    struct sbx_execution *saved = r->ex, scratch = {0};
    struct sbx_error *e = NULL;
    char key[65], tool[CACHE_TOOL_MAX], name[48];
    char **env = NULL;
    struct dynbuf log;
    bool ok = false;
    int rc = 0;

    if (!w || r->probe_argv || r->backend->desc->abi_minor < 2 ||
            r->backend->caps.level[SBX_CTL_HOST_MOUNTS] != SBX_ENF_FULL)
        return 0;
    if (recipe_env(r, w, &env) < 0)
        goto oom;
    cache_toolchain_id(r->lang->m, tool, sizeof(tool));
    if (install_key(r, w, tool, NULL, env, key) < 0)
        goto oom;
    snprintf(name, sizeof(name), "warm-%s", r->lang->name);
    if (engine_ids(r, &uid, &gid, &e) < 0 ||
            deps_open(s, name, key, uid, gid, (int64_t)s->install_timeout_ms, &r->warm, &e) < 0) {
        log_msg(SBX_LOG_WARN, r->lang->name, "no warm build cache: %s", e->msg);
        sbx_error_free(e);
        strv_free(env);
        return 0;
    }
    if (!r->warm->ready) {
        engine_phase(r, "warming up");
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
