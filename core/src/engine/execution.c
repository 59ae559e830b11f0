/* SPDX-License-Identifier: MIT */
/*
 * execution.c: the result of a run and its JSON form, shared by
 * `llm-sandbox run --json` and MCP execute_code so both say the same thing.
 * Output is repaired to valid UTF-8 (invalid bytes become U+FFFD) so the
 * JSON is always valid; the byte counts still count what the program wrote.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "engine/artifacts.h"

static const char *const status_names[] = {
        [SBX_STATUS_OK] = "ok",
        [SBX_STATUS_ERROR] = "error",
        [SBX_STATUS_TIMEOUT] = "timeout",
        [SBX_STATUS_OOM] = "oom",
        [SBX_STATUS_KILLED] = "killed",
        [SBX_STATUS_CANCELLED] = "cancelled",
        [SBX_STATUS_REFUSED] = "refused",
};

static const char *const limit_names[] = {
        [SBX_LIMIT_NONE] = NULL,
        [SBX_LIMIT_WALL_TIME] = "wall_time",
        [SBX_LIMIT_MEMORY] = "memory",
        [SBX_LIMIT_PIDS] = "pids",
        [SBX_LIMIT_FILE_SIZE] = "file_size",
        [SBX_LIMIT_WORKSPACE] = "workspace",
};

const char *sbx_status_str(enum sbx_status s)
{
    return (unsigned)s <= SBX_STATUS_REFUSED ? status_names[s] : "error";
}

const char *sbx_limit_str(enum sbx_limit l)
{
    return (unsigned)l <= SBX_LIMIT_WORKSPACE ? limit_names[l] : NULL;
}

struct sbx_execution *sbx_execution_free(struct sbx_execution *ex)
{
    if (ex) {
        free(ex->stdout_buf);
        free(ex->stderr_buf);
        free(ex->backend);
        free(ex->language);
        free(ex->message);
        strv_free(ex->warnings);
        free(ex->policy);
        free(ex->install_log);
        free(ex->session_id);
        artifacts_free(ex->artifacts, ex->n_artifacts);
        free(ex);
    }
    return NULL;
}

static struct sbx_execution *execution_with(enum sbx_status status, const char *message)
{
    struct sbx_execution *ex = calloc(1, sizeof(*ex));

    if (!ex)
        return NULL;
    ex->status = status;
    ex->message = strdup(message);
    ex->stdout_buf = strdup("");
    ex->stderr_buf = strdup("");
    if (!ex->message || !ex->stdout_buf || !ex->stderr_buf)
        return sbx_execution_free(ex);
    return ex;
}

struct sbx_execution *sbx_execution_from_error(const struct sbx_error *e)
{
    return execution_with(SBX_STATUS_ERROR, e && e->msg ? e->msg : "internal error");
}

struct sbx_execution *sbx_execution_refused(const char *message)
{
    return execution_with(SBX_STATUS_REFUSED, message);
}

static struct json_object *text(const char *buf, size_t len)
{
    struct json_object *o;
    size_t n = 0;
    char *clean;

    if (!buf)
        return json_object_new_string("");
    if (utf8_is_valid(buf, len))
        return json_object_new_string_len(buf, (int)len);
    clean = utf8_sanitize(buf, len, &n);
    if (!clean)
        return NULL;
    o = json_object_new_string_len(clean, (int)n);
    free(clean);
    return o;
}

static struct json_object *str_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

struct json_object *sbx_execution_to_json(const struct sbx_execution *ex)
{
    struct json_object *o = json_object_new_object(), *w, *a;

    if (!o)
        return NULL;
    json_object_object_add(o, "status", json_object_new_string(sbx_status_str(ex->status)));
    json_object_object_add(
            o, "exit_code", ex->has_exit_code ? json_object_new_int(ex->exit_code) : NULL);
    json_object_object_add(o, "limit", str_or_null(sbx_limit_str(ex->limit)));
    json_object_object_add(o, "stdout", text(ex->stdout_buf, ex->stdout_len));
    json_object_object_add(o, "stderr", text(ex->stderr_buf, ex->stderr_len));
    json_object_object_add(o, "stdout_truncated", json_object_new_boolean(ex->stdout_truncated));
    json_object_object_add(o, "stderr_truncated", json_object_new_boolean(ex->stderr_truncated));
    json_object_object_add(o, "stdout_bytes", json_object_new_uint64(ex->stdout_bytes));
    json_object_object_add(o, "stderr_bytes", json_object_new_uint64(ex->stderr_bytes));
    json_object_object_add(o, "duration_ms", json_object_new_uint64(ex->duration_ms));
    json_object_object_add(o, "backend", str_or_null(ex->backend));
    json_object_object_add(o, "language", str_or_null(ex->language));
    json_object_object_add(o, "message", str_or_null(ex->message));
    a = json_object_new_array();
    for (size_t i = 0; a && i < ex->n_artifacts; i++) {
        const struct sbx_artifact *f = &ex->artifacts[i];
        struct json_object *e = json_object_new_object();

        json_object_object_add(e, "path", json_object_new_string(f->path));
        json_object_object_add(e, "size", json_object_new_uint64(f->size));
        json_object_object_add(e, "mime_type", json_object_new_string(f->mime_type));
        if (f->uri)
            json_object_object_add(e, "uri", json_object_new_string(f->uri));
        json_object_array_add(a, e);
    }
    json_object_object_add(o, "artifacts", a);
    if (ex->artifacts_truncated)
        json_object_object_add(o, "artifacts_truncated", json_object_new_boolean(true));
    w = json_object_new_array();
    for (char **s = ex->warnings; w && s && *s; s++)
        json_object_array_add(w, json_object_new_string(*s));
    json_object_object_add(o, "warnings", w);
    if (ex->has_install) {
        struct json_object *in = json_object_new_object();

        json_object_object_add(in, "cached", json_object_new_boolean(ex->install_cached));
        json_object_object_add(in, "duration_ms", json_object_new_uint64(ex->install_ms));
        json_object_object_add(in, "log",
                ex->install_log ? text(ex->install_log, strlen(ex->install_log))
                                : json_object_new_string(""));
        json_object_object_add(
                in, "log_truncated", json_object_new_boolean(ex->install_log_truncated));
        json_object_object_add(o, "install", in);
    }
    if (ex->session_id)
        json_object_object_add(o, "session_id", json_object_new_string(ex->session_id));
    if (ex->warm)
        json_object_object_add(o, "warm", json_object_new_boolean(true));
    if (!ex->session_id && ex->status != SBX_STATUS_REFUSED)
        json_object_object_add(o, "sandbox",
                json_object_new_string(ex->origin == SBX_ORIGIN_ZYGOTE  ? "zygote"
                                       : ex->origin == SBX_ORIGIN_READY ? "ready"
                                                                        : "cold"));
    if (ex->has_build_cache) {
        struct json_object *b = json_object_new_object();

        json_object_object_add(b, "cached", json_object_new_boolean(ex->build_cached));
        json_object_object_add(o, "build", b);
    }
    return o;
}
