/* SPDX-License-Identifier: MIT */
/*
 * session_files.c: a session's files: upload, download, list. Paths are
 * checked here (relative, no "..", no empty parts); the agent inside the
 * box then opens them beneath the workspace without following a symlink,
 * reads only regular files and checks sizes on the open descriptor, so
 * nothing the sandboxed code planted can point us at a host file: the
 * host never opens a path of the workspace itself.
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
#include "engine/engine.h"
#include "engine/plan.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime_state.h"
#include "sessions/session.h"

#define READ_WAIT_MS 2000 /* resources/read on a session busy with a call */

uint64_t sbx_runtime_file_max(const struct sbx_runtime *rt)
{
    return rt->settings->file_max_bytes;
}

/* The session for a file operation, or NULL with err set. */
static struct sbx_session *file_session(struct sbx_runtime *rt, const struct sbx_session_ref *ref,
        const char *path, struct sbx_error **err)
{
    struct sbx_session *s;

    if (path && !rel_path_is_valid(path)) {
        sbx_error_set(err, SBX_E_INVALID, 0,
                "path '%.200s' must be relative to the workspace, without '..' or empty parts",
                path);
        return NULL;
    }
    s = ref->id ? session_get(rt->sessions, ref) : NULL;
    if (!s) {
        sbx_error_set(err, SBX_E_INVALID, 0,
                "no open session '%.80s' (it was closed, it expired, or it never existed)",
                ref->id ? ref->id : "");
        return NULL;
    }
    if (s->dead) {
        sbx_error_set(err, SBX_E_BACKEND, 0, "session %s has no sandbox any more", s->id);
        session_put(rt->sessions, s);
        return NULL;
    }
    agentc_set_cancel(s->base.ac, -1, s->kill->fd);
    return s;
}

/* An agent's answer to a file operation as an error of ours: "cannot
 * read 'x': why". */
static int file_error(
        struct sbx_session *s, int end, const char *what, const char *path, struct sbx_error **err)
{
    if (end == SBX_E_IO) {
        const char *msg = agentc_last_error(s->base.ac), *why = strrchr(msg, ':');

        why = why ? why + 2 : msg;
        if (strstr(why, "symbolic links"))
            why = "it is a symbolic link, or leads through one (never followed)";
        else if (strstr(why, "not a regular file") || strstr(why, "Invalid argument"))
            why = "it is not a regular file";
        return sbx_error_set(err, SBX_E_INVALID, 0, "cannot %s '%.200s': %s", what, path, why);
    }
    if (end == SBX_E_NOMEM)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (end == AGENTC_LOST)
        s->dead = true;
    return sbx_error_set(err, SBX_E_BACKEND, 0, "the session's sandbox did not answer: %s",
            end == AGENTC_TIMEOUT     ? "timed out"
            : end == AGENTC_CANCELLED ? "the session was closed"
                                      : agentc_last_error(s->base.ac));
}

int sbx_session_upload(struct sbx_runtime *rt, const struct sbx_session_ref *ref, const char *path,
        const void *data, size_t len, struct sbx_error **err)
{
    struct sbx_session *s;
    int end;

    if (len > rt->settings->file_max_bytes)
        return sbx_error_set(err, SBX_E_LIMIT, 0,
                "the file is %zu bytes; the limit is %" PRIu64 " (LLM_SANDBOX_FILE_MAX)", len,
                rt->settings->file_max_bytes);
    s = file_session(rt, ref, path ? path : "", err);
    if (!s)
        return (*err)->rc;
    end = agentc_put_file(
            s->base.ac, path, 0644, data, len, AGENTC_PUT_REPLACE, now_ms() + SETUP_TIMEOUT_MS);
    if (end != 0)
        file_error(s, end, "write", path, err);
    session_put(rt->sessions, s);
    return end != 0 ? (*err)->rc : 0;
}

int sbx_session_download(struct sbx_runtime *rt, const struct sbx_session_ref *ref,
        const char *path, char **ret_data, size_t *ret_len, struct sbx_error **err)
{
    struct sbx_session *s = file_session(rt, ref, path ? path : "", err);
    uint32_t mode;
    int end;

    if (!s)
        return (*err)->rc;
    end = agentc_get(s->base.ac, path, (size_t)rt->settings->file_max_bytes, ret_data, ret_len,
            &mode, now_ms() + SETUP_TIMEOUT_MS);
    if (end == SBX_E_IO && strstr(agentc_last_error(s->base.ac), "too big"))
        sbx_error_set(err, SBX_E_LIMIT, 0,
                "'%.200s' is larger than %" PRIu64 " bytes (LLM_SANDBOX_FILE_MAX)", path,
                rt->settings->file_max_bytes);
    else if (end != 0)
        file_error(s, end, "read", path, err);
    session_put(rt->sessions, s);
    return end != 0 ? (*err)->rc : 0;
}

int sbx_session_files(struct sbx_runtime *rt, const struct sbx_session_ref *ref, const char *path,
        char ***ret_files, struct sbx_error **err)
{
    bool whole = !path || !*path || strcmp(path, ".") == 0;
    struct sbx_session *s = file_session(rt, ref, whole ? NULL : path, err);
    int end;

    if (!s)
        return (*err)->rc;
    end = agentc_list(s->base.ac, whole ? "." : path, ret_files, now_ms() + SETUP_TIMEOUT_MS);
    if (end != 0)
        file_error(s, end, "list", whole ? "." : path, err);
    session_put(rt->sessions, s);
    if (end != 0)
        return (*err)->rc;
    for (char **f = *ret_files; whole && *f; f++)
        if (strncmp(*f, "./", 2) == 0)
            memmove(*f, *f + 2, strlen(*f + 2) + 1);
    return 0;
}

/* A file for resources/read, waiting at most a moment for a running
 * call: 0, 1 when there is no such session or file, or < 0. */
static int session_read_timed(struct sbx_runtime *rt, const struct sbx_session_ref *ref,
        const char *path, char **ret, size_t *ret_len, struct sbx_error **err)
{
    struct sbx_session *s;
    uint32_t mode;
    int end;

    if (!rel_path_is_valid(path))
        return 1;
    s = session_get_timed(rt->sessions, ref, READ_WAIT_MS);
    if (!s)
        return 1;
    agentc_set_cancel(s->base.ac, -1, s->kill->fd);
    end = s->dead ? AGENTC_LOST
                  : agentc_get(s->base.ac, path, (size_t)rt->settings->file_max_bytes, ret, ret_len,
                            &mode, now_ms() + SETUP_TIMEOUT_MS);
    session_put(rt->sessions, s);
    if (end == SBX_E_IO)
        return 1;
    if (end != 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "the session's sandbox did not answer");
    return 0;
}

/* A run's files from the store (engine/artifacts.c), a session's from
 * its workspace. */
int sbx_artifact_read(struct sbx_runtime *rt, const struct sbx_session_ref *ref, char **ret,
        size_t *ret_len, const char **ret_mime, struct sbx_error **err)
{
    static const char runs[] = "sandbox://runs/", sessions[] = "sandbox://sessions/";
    const char *uri = ref->id;
    int rc = 1;

    if (strncmp(uri, runs, sizeof(runs) - 1) == 0) {
        rc = artifacts_read_run(
                rt, ref->owner, uri + sizeof(runs) - 1, ret, ret_len, ret_mime, err);
    } else if (strncmp(uri, sessions, sizeof(sessions) - 1) == 0) {
        const char *rest = uri + sizeof(sessions) - 1, *slash = strchr(rest, '/');
        cleanup_free char *id = slash ? strndup(rest, (size_t)(slash - rest)) : NULL;
        cleanup_free char *path =
                slash && strncmp(slash, "/files/", 7) == 0 ? artifact_uri_path(slash + 7) : NULL;

        if (id && path) {
            struct sbx_session_ref sref = {ref->owner, id};

            rc = session_read_timed(rt, &sref, path, ret, ret_len, err);
            *ret_mime = artifact_mime(path);
        }
    }
    return rc;
}
