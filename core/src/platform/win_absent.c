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
#include "engine/artifacts.h"
#include "engine/engine.h"
#include "host/cgroup.h"
#include "host/owner.h"
#include "host/uidrange.h"
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

/* ---- artifacts: none is ever made here --------------------------------- */

struct artifact_store *artifact_store_new(void)
{
    static char none;
    return (struct artifact_store *)(void *)&none;
}

void artifact_store_free(struct artifact_store *st)
{
    (void)st;
}

void artifacts_free(struct sbx_artifact *a, size_t n)
{
    (void)n; /* always 0: a refused run has no artifacts */
    free(a);
}

/* ---- runs, sessions, pools: refused -------------------------------------- */

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

/* The same choice as on Linux (engine/prepare.c: the backend and language
 * named, found and usable), so the refusal names what is missing; a run
 * that passed it would still be refused: this build has no engine. */
int sbx_run(struct sbx_runtime *rt, const struct sbx_request *req, struct sbx_execution **ret,
        struct sbx_error **err)
{
    struct run r = {.rt = rt, .req = req, .t0 = now_ms()};

    if (!rt || !req || !ret)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "sbx_run: missing argument");
    r.ex = calloc(1, sizeof(*r.ex));
    if (!r.ex)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (req->session_id) {
        engine_refuse(&r, "sessions: " NOT_ON_WINDOWS " (%s)", NO_ENGINE);
    } else if (engine_choose(&r)) { /* its reason, and this build's */
        char *why = r.ex->message;

        r.ex->message = NULL;
        engine_refuse(&r, "%s; %s", why ? why : "refused", NO_ENGINE);
        free(why);
    } else {
        engine_refuse(&r, "backend '%s': %s", r.backend->name, NO_ENGINE);
    }
    r.ex->duration_ms = (uint64_t)(now_ms() - r.t0);
    *ret = r.ex;
    return 0;
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
