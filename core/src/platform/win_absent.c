/* SPDX-License-Identifier: MIT */
/*
 * win_absent.c: what the Windows build answers for the parts of the core it
 * leaves out (cmake/SbxWindowsCore.cmake lists them): the Linux host
 * services (cgroups, seccomp, user namespaces, uid ranges), the engine's
 * sandbox steps, sessions, pools, installs and HTTP for plugins. Each
 * answer is the truth about this build: the service is absent, and anything
 * that would need it is refused with a message that says so. Nothing here
 * pretends to run code. Windows build only.
 */
#include <errno.h>
#include <json-c/json.h>
#include <process.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "cache/deps.h"
#include "engine/artifacts.h"
#include "engine/buildcache.h"
#include "engine/engine.h"
#include "host/cgroup.h"
#include "host/owner.h"
#include "host/seccomp_policy.h"
#include "host/uidrange.h"
#include "install/install.h"
#include "net/http.h"
#include "plugins/registry.h"
#include "runtime/details.h"
#include "runtime_state.h"
#include "sessions/pool.h"
#include "sessions/session.h"

#define NOT_ON_WINDOWS "not on Windows"
#define NO_ENGINE                                                                                  \
    "this Windows build of llm-sandbox has no sandbox engine yet (issue 28): "                     \
    "it runs no code"

/* ---- host services: absent ---------------------------------------------- */

const struct cg_systemd cg_systemd_dbus = {0};

int cg_service_new(const struct cg_options *opt, struct cg_service **ret, struct sbx_error **err)
{
    (void)opt;
    (void)err;
    *ret = NULL; /* no service: every query below says CG_NONE */
    return 0;
}

struct cg_service *cg_service_free(struct cg_service *s)
{
    (void)s;
    return NULL;
}

enum cg_mode cg_service_mode(const struct cg_service *s)
{
    (void)s;
    return CG_NONE;
}

int cg_service_sweep(struct cg_service *s)
{
    (void)s;
    return 0;
}

struct uidrange *uidrange_free(struct uidrange *u)
{
    (void)u;
    return NULL;
}

void owner_make(char *out, size_t len)
{
    /* names cgroups and boxes on Linux; here only this process */
    snprintf(out, len, "p%lu", (unsigned long)_getpid());
}

/* ---- plugins: no HTTP (the host table: win_host.c) ---------------------- */

int http_open(struct sbx_err *err)
{
    err->rc = SBX_E_UNSUPPORTED;
    snprintf(err->msg, sizeof(err->msg), "HTTP for plugins: " NOT_ON_WINDOWS " yet");
    return -1;
}

void details_refresh(struct sbx_runtime *rt, struct plugin *pl)
{
    /* versions and libraries are probed in a sandbox: none on Windows */
    (void)rt;
    (void)pl;
}

/* ---- the engine's Linux-only parts: absent ------------------------------ */

const char *cg_service_describe(const struct cg_service *s)
{
    (void)s;
    return "cgroups: " NOT_ON_WINDOWS;
}

int cg_service_unit_oom_kills(const struct cg_service *s, uint64_t *ret)
{
    (void)s;
    (void)ret;
    return -1; /* none to read */
}

/* No uid range is ever opened here (runtime.c), so no box takes one. */
int uidrange_take(struct uidrange *u, struct uid_lease **ret, struct sbx_error **err)
{
    (void)u;
    (void)ret;
    return sbx_error_set(err, SBX_E_UNSUPPORTED, 0, "uid ranges: " NOT_ON_WINDOWS);
}

void uid_lease_free(struct uid_lease *l)
{
    (void)l;
}

/* Dependency sets, the compile cache and the warm-up set live in the
 * cache directory with Linux's locks and mounts: none on Windows yet. A
 * run that asks for libraries is refused; every build compiles afresh. */
int prepare_libraries(struct run *r, struct sbx_error **err)
{
    (void)err;
    engine_refuse(r, "libraries: installing them is " NOT_ON_WINDOWS " yet");
    return 1;
}

int prepare_warm(struct run *r, struct sbx_error **err)
{
    (void)r;
    (void)err;
    return 0; /* no warm-up set: the run goes on without one */
}

int buildcache_open(struct run *r, struct sbx_error **err)
{
    (void)r;
    (void)err;
    return 0; /* r->build stays NULL: no cache applies */
}

int buildcache_replay(struct run *r, int64_t deadline)
{
    (void)r;
    (void)deadline;
    return SBX_E_IO; /* never reached without an entry: build after all */
}

void buildcache_save(struct run *r, size_t out0, size_t err0, int64_t deadline)
{
    (void)r;
    (void)out0;
    (void)err0;
    (void)deadline;
}

struct deps_set *deps_close(struct deps_set *d)
{
    (void)d; /* never one: nothing above makes a set */
    return NULL;
}

int deps_read_file(const struct deps_set *d, const char *name, size_t max, char **ret_data,
        size_t *ret_len, struct sbx_error **err)
{
    (void)d;
    (void)max;
    (void)ret_data;
    (void)ret_len;
    return sbx_error_set(err, SBX_E_IO, 0, "%s: dependency sets: " NOT_ON_WINDOWS, name);
}

/* No pool fills boxes ahead here: every run opens its own. */
bool pool_take(struct run *r)
{
    (void)r;
    return false;
}

void pool_zygote_return(struct run *r, bool ok)
{
    (void)r;
    (void)ok;
}

int pool_zygote_ready(struct run *r, struct sbx_error **err)
{
    (void)r;
    (void)err;
    return 0;
}

void pool_zygote_cgroup_end(struct run *r, struct sbx_box_stats *st)
{
    (void)r;
    (void)st;
}

int session_call(struct run *r, struct sbx_error **err)
{
    (void)err;
    engine_refuse(r, "sessions: " NOT_ON_WINDOWS " yet");
    return 0;
}

/* ---- sessions: refused ----------------------------------------------------- */

struct sessions *sessions_new(void)
{
    static char none; /* a non-NULL token: the runtime checks it was made */
    return (struct sessions *)(void *)&none;
}

void sessions_free(struct sessions *ss)
{
    (void)ss;
}

struct pools *pools_new(struct sbx_runtime *rt)
{
    static char none;
    (void)rt;
    return (struct pools *)(void *)&none;
}

void pools_free(struct pools *ps)
{
    (void)ps;
}

int sbx_runtime_warm(struct sbx_runtime *rt, struct sbx_error **err)
{
    (void)rt;
    (void)err;
    return 0; /* no pool to fill: nothing is started ahead */
}

int sbx_session_create(struct sbx_runtime *rt, const struct sbx_request *req,
        struct sbx_execution **ret, struct sbx_error **err)
{
    struct sbx_request one = req ? *req : (struct sbx_request){0};

    one.session_id = "";
    return sbx_run(rt, &one, ret, err);
}

static int no_session(struct sbx_error **err)
{
    return sbx_error_set(err, SBX_E_INVALID, 0, "no such session (sessions: " NOT_ON_WINDOWS ")");
}

int sbx_session_close(
        struct sbx_runtime *rt, const struct sbx_session_ref *ref, struct sbx_error **err)
{
    (void)rt;
    (void)ref;
    return no_session(err);
}

size_t sbx_sessions_close_owner(struct sbx_runtime *rt, const char *owner)
{
    (void)rt;
    (void)owner;
    return 0;
}

struct json_object *sbx_sessions_json(struct sbx_runtime *rt, const char *owner)
{
    (void)rt;
    (void)owner;
    return json_object_new_array();
}

int sbx_session_upload(struct sbx_runtime *rt, const struct sbx_session_ref *ref, const char *path,
        const void *data, size_t len, struct sbx_error **err)
{
    (void)rt;
    (void)ref;
    (void)path;
    (void)data;
    (void)len;
    return no_session(err);
}

int sbx_session_download(struct sbx_runtime *rt, const struct sbx_session_ref *ref,
        const char *path, char **ret_data, size_t *ret_len, struct sbx_error **err)
{
    (void)rt;
    (void)ref;
    (void)path;
    (void)ret_data;
    (void)ret_len;
    return no_session(err);
}

int sbx_session_files(struct sbx_runtime *rt, const struct sbx_session_ref *ref, const char *path,
        char ***ret_files, struct sbx_error **err)
{
    (void)rt;
    (void)ref;
    (void)path;
    (void)ret_files;
    return no_session(err);
}

int sbx_artifact_read(struct sbx_runtime *rt, const struct sbx_session_ref *ref, char **ret,
        size_t *ret_len, const char **ret_mime, struct sbx_error **err)
{
    (void)rt;
    (void)ref;
    (void)ret;
    (void)ret_len;
    (void)ret_mime;
    (void)err;
    return 1; /* none: no run made any */
}
