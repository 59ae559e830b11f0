/* SPDX-License-Identifier: MIT */
/*
 * runtime.c: the runtime's life (settings, the audit log, the cgroup
 * service, the registries of sessions, pools and artifacts, the plugins),
 * and what a server checks before it answers anyone.
 * The runtime's state is in runtime_state.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "engine/artifacts.h"
#include "engine/engine.h"
#include "host/cgroup.h"
#include "host/owner.h"
#include "host/uidrange.h"
#include "plugins/host_table.h"
#include "plugins/loader.h"
#include "plugins/registry.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime_state.h"
#include "sessions/pool.h"
#include "sessions/session.h"
#ifdef _WIN32
#include "platform/win_base.h"
#endif

#define UIDRANGE_PARENT "/run/llm-sandbox"
#define UIDRANGE_DIR    UIDRANGE_PARENT "/uids"

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
#ifdef _WIN32
    return win_exe_dir();
#else
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
#endif
}

/* As root, the range each box takes its own host uid from (uidrange.h),
 * its leases locked under UIDRANGE_DIR so that every instance on the host
 * shares them. */
static int uid_range_open(struct sbx_runtime *rt, struct sbx_error **err)
{
#ifdef _WIN32
    (void)rt;
    (void)err;
    return 0; /* no uids to give out (uid ranges: not on Windows) */
#else
    const struct settings *s = rt->settings;

    if (geteuid() != 0 || s->uid_range_count == 0)
        return 0;
    if (mkdir(UIDRANGE_PARENT, 0755) < 0 && errno != EEXIST)
        return sbx_error_set(
                err, SBX_E_IO, errno, "cannot make %s: %s", UIDRANGE_PARENT, strerror(errno));
    if (uidrange_new(s->uid_range_first, s->uid_range_count, UIDRANGE_DIR, "/etc", &rt->uids, err) <
            0)
        return sbx_error_wrap(err, "LLM_SANDBOX_UID_RANGE");
    return 0;
#endif
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
    int ids_rc, cancel_rc;
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
    cancel_rc = sbx_cancel_new(&rt->probe_cancel, err);
    if (cancel_rc < 0) {
        sbx_runtime_free(rt);
        return cancel_rc;
    }
    ids_rc = uid_range_open(rt, err);
    if (ids_rc < 0) {
        sbx_runtime_free(rt);
        return ids_rc;
    }
    cgo.allow_v1 = rt->settings->cgroup_v1;
    cgo.allow_v2 = rt->settings->cgroup_v2;
    cgo.systemd_dir = "/run/systemd/system";
    cgo.owner = rt->owner;
    cgo.runtime_dir = rt->settings->runtime_dir;
    cgo.systemd = &cg_systemd_dbus;
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
    uidrange_free(rt->uids);
    sbx_cancel_free(rt->probe_cancel);
    settings_free(rt->settings);
    if (rt->audit_fd >= 0)
        close(rt->audit_fd);
    free(rt->plugin_dir);
    free(rt->agent_path);
    free(rt);
    return NULL;
}

void sbx_runtime_stop_probes(struct sbx_runtime *rt, bool cancel_running)
{
    atomic_store(&rt->probes_stopped, true);
    if (cancel_running)
        sbx_cancel_fire(rt->probe_cancel);
}

int sbx_runtime_check(struct sbx_runtime *rt, struct sbx_error **err)
{
    const struct sbx_request req = {.code = ""};
    struct sbx_execution ex = {0};
    struct run r = {.rt = rt, .req = &req, .ex = &ex, .t0 = now_ms()};
    struct sbx_error *e = NULL;
    int rc = 0;

    if (engine_pick_plugins(&r)) {
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
