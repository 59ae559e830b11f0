/* SPDX-License-Identifier: MIT */
/*
 * session_tools.c: the MCP tools of stateful sessions: create_session,
 * close_session, list_sessions, and a session's files: upload_file,
 * download_file, list_files (execute_code takes session_id, tools.c).
 * Wrong arguments, unknown sessions and refused paths come back as
 * results with isError and a message a model can act on.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "b64.h"
#include "jsonrpc.h"
#include "limits.h"
#include "mcp.h"
#include "schemas.h"

#define CREATE_MAX_LIBRARIES 64

static int fail(struct json_object **ret, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static int fail(struct json_object **ret, const char *fmt, ...)
{
    struct json_object *o = json_object_new_object();
    char buf[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_object_object_add(o, "status", json_object_new_string("refused"));
    json_object_object_add(o, "message", json_object_new_string(buf));
    *ret = mcp_structured_result(o, false);
    return *ret ? 0 : -1;
}

/* upload_file's content is a file's bytes: NUL is carried, by length. */
static const char *const upload_bytes[] = {"content", NULL};

/* Only these keys, and each a string where named in strings. */
static const char *check_keys(
        struct json_object *args, const char *const *keys, char *why, size_t n)
{
    if (args && !json_object_is_type(args, json_type_object))
        return "the arguments must be an object";
    json_object_object_foreach(args, key, val)
    {
        bool known = false;

        (void)val;
        for (const char *const *k = keys; *k; k++)
            known = known || strcmp(*k, key) == 0;
        if (!known)
            return snprintf(why, n, "unknown argument '%.60s'", key), why;
    }
    return exec_nul_check(args, upload_bytes, why, n);
}

/* A string argument: the value, NULL when absent, or "" with *bad set
 * (not a string, or one with a NUL byte, which C would cut short). */
static const char *str_arg(struct json_object *args, const char *key, bool *bad)
{
    struct json_object *v;
    const char *s;

    if (!args || !json_object_object_get_ex(args, key, &v) || !v)
        return NULL;
    s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    if (!s || strlen(s) != (size_t)json_object_get_string_len(v)) {
        *bad = true;
        return "";
    }
    return s;
}

/* ---- create, close, list ------------------------------------------------ */

struct phases {
    struct mcp_call *call; /* first: mcp_call_notice */
    double progress;
};

/* "installing", "starting": progress notifications, when asked for */
static void phase_progress(void *ud, const char *phase)
{
    struct phases *p = ud;

    p->progress += 1;
    mcp_call_progress(p->call, p->progress, 0, phase);
}

/* The session's limits: the controls execute_code takes (a call may then
 * change only its timeout and output cap), and memory_mb, the older
 * spelling of memory in whole MiB. */
static const char *create_limits(
        struct json_object *args, struct sbx_request *req, char *why, size_t n)
{
    struct json_object *v;
    const char *r = exec_controls_check(args, why, n);

    if (!r)
        r = mcp_limits_parse(args, &req->limits, why, n);
    if (!r && json_object_object_get_ex(args, "memory_mb", &v) && v) {
        int64_t mb = json_object_get_int64(v);
        char text[32];
        struct sbx_error *e = NULL;

        if (!json_object_is_type(v, json_type_int) || mb <= 0 || mb > (1 << 20))
            return "'memory_mb' must be a positive whole number of MiB";
        snprintf(text, sizeof(text), "%" PRId64 "M", mb);
        if (sbx_req_limit_parse(&req->limits, SBX_REQ_MEMORY, text, &e) < 0)
            r = "'memory_mb' must be a positive whole number of MiB";
        sbx_error_free(e);
    }
    return r;
}

static int t_create_session(
        struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    static const char *const keys[] = {"language", "libraries", "timeout", "memory", "cpus", "pids",
            "network", "memory_mb", NULL};
    struct sbx_request req = {0};
    struct sbx_execution *ex = NULL;
    struct sbx_error *err = NULL;
    const char **libs = NULL, *why;
    struct json_object *v;
    struct phases phases = {.call = call};
    bool bad = false;
    char buf[160];
    int rc = -1;

    why = check_keys(args, keys, buf, sizeof(buf));
    if (!why && !(req.language = str_arg(args, "language", &bad)))
        why = "'language' (a string) is required";
    if (!why && bad)
        why = "'language' must be a string";
    if (!why)
        why = create_limits(args, &req, buf, sizeof(buf));
    if (!why && json_object_object_get_ex(args, "libraries", &v) && v) {
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;

        libs = calloc(n + 1, sizeof(*libs));
        if (!json_object_is_type(v, json_type_array) || n > CREATE_MAX_LIBRARIES || !libs)
            why = "'libraries' must be an array of at most 64 strings";
        for (size_t i = 0; !why && i < n; i++) {
            struct json_object *e = json_object_array_get_idx(v, i);

            if (!json_object_is_type(e, json_type_string))
                why = "'libraries' must be an array of strings";
            else
                libs[req.n_libraries++] = json_object_get_string(e);
        }
        req.libraries = libs;
    }
    req.owner = mcp_call_owner(call);
    if (!why && !req.owner)
        why = "sessions need an MCP session: over HTTP, send initialize first and pass its "
              "Mcp-Session-Id (requests of revision 2026-07-28 have none)";
    if (why) {
        free(libs);
        return fail(ret, "%s", why);
    }
    req.cancel = mcp_call_cancel(call);
    req.userdata = &phases;
    req.on_notice = mcp_call_notice;
    if (mcp_call_wants_progress(call))
        req.on_phase = phase_progress;
    if (sbx_session_create(mcp_call_runtime(call), &req, &ex, &err) < 0)
        ex = sbx_execution_from_error(err);
    if (ex) {
        *ret = mcp_execution_result(call, ex);
        rc = *ret ? 0 : -1;
    }
    sbx_execution_free(ex);
    sbx_error_free(err);
    free(libs);
    return rc;
}

static int t_close_session(
        struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    static const char *const keys[] = {"session_id", NULL};
    struct sbx_error *err = NULL;
    struct sbx_session_ref ref;
    struct json_object *o;
    const char *id, *why;
    bool bad = false;
    char buf[160];

    why = check_keys(args, keys, buf, sizeof(buf));
    if (why)
        return fail(ret, "%s", why);
    id = str_arg(args, "session_id", &bad);
    if (!id || bad)
        return fail(ret, "'session_id' (a string) is required");
    ref = (struct sbx_session_ref){mcp_call_owner(call), id};
    if (sbx_session_close(mcp_call_runtime(call), &ref, &err) < 0) {
        int rc = fail(ret, "%s", err->msg);

        sbx_error_free(err);
        return rc;
    }
    o = json_object_new_object();
    json_object_object_add(o, "session_id", json_object_new_string(id));
    json_object_object_add(o, "closed", json_object_new_boolean(true));
    *ret = mcp_structured_result(o, true);
    return *ret ? 0 : -1;
}

static int t_list_sessions(
        struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    static const char *const keys[] = {NULL};
    struct json_object *o;
    const char *why;
    char buf[160];

    why = check_keys(args, keys, buf, sizeof(buf));
    if (why)
        return fail(ret, "%s", why);
    o = json_object_new_object();
    json_object_object_add(
            o, "sessions", sbx_sessions_json(mcp_call_runtime(call), mcp_call_owner(call)));
    *ret = mcp_structured_result(o, true);
    return *ret ? 0 : -1;
}

/* ---- files -------------------------------------------------------------- */

/* session_id and path, both strings; path may be optional. */
static const char *file_args(struct json_object *args, const char *const *keys, bool path_needed,
        const char **id, const char **path, char *buf, size_t n)
{
    const char *why = check_keys(args, keys, buf, n);
    bool bad = false;

    if (why)
        return why;
    *id = str_arg(args, "session_id", &bad);
    if (!*id || bad)
        return "'session_id' (a string) is required";
    *path = str_arg(args, "path", &bad);
    if (bad || (path_needed && !*path))
        return "'path' (a string, relative to the workspace) is required";
    return NULL;
}

static int t_upload_file(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    static const char *const keys[] = {"session_id", "path", "content", "encoding", NULL};
    struct sbx_error *err = NULL;
    const char *id, *path, *content, *enc, *why;
    struct json_object *v, *o;
    char buf[160], *data = NULL;
    size_t len;
    bool bad = false;
    int rc;

    why = file_args(args, keys, true, &id, &path, buf, sizeof(buf));
    if (why)
        return fail(ret, "%s", why);
    enc = str_arg(args, "encoding", &bad);
    content = json_object_object_get_ex(args, "content", &v) &&
                              json_object_is_type(v, json_type_string)
                      ? json_object_get_string(v)
                      : NULL;
    if (!content || bad)
        return fail(ret, "'content' (a string) is required; 'encoding' is a string");
    if (enc && strcmp(enc, "utf-8") != 0 && strcmp(enc, "base64") != 0)
        return fail(ret, "'encoding' must be \"utf-8\" (the default) or \"base64\"");
    json_object_object_get_ex(args, "content", &v);
    len = (size_t)json_object_get_string_len(v);
    if (enc && strcmp(enc, "base64") == 0) {
        if (b64_decode(content, len, &data, &len) < 0)
            return fail(ret, "'content' is not valid base64");
        content = data;
    }
    rc = sbx_session_upload(mcp_call_runtime(call),
            &(struct sbx_session_ref){mcp_call_owner(call), id}, path, content, len, &err);
    free(data);
    if (rc < 0) {
        rc = fail(ret, "%s", err->msg);
        sbx_error_free(err);
        return rc;
    }
    o = json_object_new_object();
    json_object_object_add(o, "path", json_object_new_string(path));
    json_object_object_add(o, "size", json_object_new_uint64(len));
    *ret = mcp_structured_result(o, true);
    return *ret ? 0 : -1;
}

static int t_download_file(
        struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    static const char *const keys[] = {"session_id", "path", NULL};
    struct sbx_error *err = NULL;
    const char *id, *path, *why;
    struct json_object *o;
    char buf[160], *data = NULL, *text = NULL;
    size_t len = 0;
    bool utf8;
    int rc;

    why = file_args(args, keys, true, &id, &path, buf, sizeof(buf));
    if (why)
        return fail(ret, "%s", why);
    if (sbx_session_download(mcp_call_runtime(call),
                &(struct sbx_session_ref){mcp_call_owner(call), id}, path, &data, &len, &err) < 0) {
        rc = fail(ret, "%s", err->msg);
        sbx_error_free(err);
        return rc;
    }
    utf8 = !memchr(data, 0, len) && jr_utf8_valid(data, len);
    if (!utf8 && !(text = b64_encode(data, len))) {
        free(data);
        return -1;
    }
    o = json_object_new_object();
    json_object_object_add(o, "path", json_object_new_string(path));
    json_object_object_add(o, "size", json_object_new_uint64(len));
    json_object_object_add(o, "encoding", json_object_new_string(utf8 ? "utf-8" : "base64"));
    json_object_object_add(o, "content",
            utf8 ? json_object_new_string_len(data, (int)len) : json_object_new_string(text));
    free(data);
    free(text);
    *ret = mcp_structured_result(o, true);
    return *ret ? 0 : -1;
}

static int t_list_files(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    static const char *const keys[] = {"session_id", "path", NULL};
    struct sbx_error *err = NULL;
    const char *id, *path, *why;
    struct json_object *o, *a;
    char buf[160], **files = NULL;
    int rc;

    why = file_args(args, keys, false, &id, &path, buf, sizeof(buf));
    if (why)
        return fail(ret, "%s", why);
    if (sbx_session_files(mcp_call_runtime(call),
                &(struct sbx_session_ref){mcp_call_owner(call), id}, path, &files, &err) < 0) {
        rc = fail(ret, "%s", err->msg);
        sbx_error_free(err);
        return rc;
    }
    a = json_object_new_array();
    for (char **f = files; *f; f++) {
        struct json_object *e = json_object_new_object();

        json_object_object_add(e, "path", json_object_new_string(*f));
        json_object_array_add(a, e);
        free(*f);
    }
    free(files);
    o = json_object_new_object();
    json_object_object_add(o, "files", a);
    *ret = mcp_structured_result(o, true);
    return *ret ? 0 : -1;
}

/* ---- artifacts ---------------------------------------------------------- */

/* sandbox://runs/{run_id}/files/{path} and sandbox://sessions/{id}/files/{path} */
static int r_artifact(
        struct mcp_server *s, const char *owner, const char *uri, struct json_object **ret)
{
    static const char runs[] = "sandbox://runs/", sessions[] = "sandbox://sessions/";
    struct sbx_error *err = NULL;
    struct json_object *c;
    const char *mime;
    char *data = NULL, *text = NULL;
    size_t len;
    bool utf8;
    int rc;

    if (strncmp(uri, runs, sizeof(runs) - 1) != 0 &&
            strncmp(uri, sessions, sizeof(sessions) - 1) != 0)
        return 1;
    rc = sbx_artifact_read(
            mcp_server_runtime(s), &(struct sbx_session_ref){owner, uri}, &data, &len, &mime, &err);
    sbx_error_free(err);
    if (rc != 0)
        return rc;
    utf8 = !memchr(data, 0, len) && jr_utf8_valid(data, len) &&
           (strncmp(mime, "text/", 5) == 0 || strstr(mime, "json") || strstr(mime, "xml") ||
                   strstr(mime, "yaml") || strcmp(mime, "application/octet-stream") == 0);
    if (!utf8 && !(text = b64_encode(data, len))) {
        free(data);
        return -1;
    }
    c = json_object_new_object();
    json_object_object_add(c, "uri", json_object_new_string(uri));
    json_object_object_add(c, "mimeType",
            json_object_new_string(
                    utf8 && strcmp(mime, "application/octet-stream") == 0 ? "text/plain" : mime));
    json_object_object_add(c, utf8 ? "text" : "blob",
            utf8 ? json_object_new_string_len(data, (int)len) : json_object_new_string(text));
    free(data);
    free(text);
    *ret = json_object_new_array();
    json_object_array_add(*ret, c);
    return 0;
}

static const struct mcp_resource artifact_resources[] = {
        {"sandbox://runs/{run_id}/files/{path}", "run-file",
                "A file a one-shot run wrote (kept for LLM_SANDBOX_ARTIFACT_TTL seconds).", NULL,
                true, r_artifact},
        {"sandbox://sessions/{session_id}/files/{path}", "session-file",
                "A file of an open session's workspace.", NULL, true, r_artifact},
};

/* ---- the table ---------------------------------------------------------- */

#define SESSION_ID_PROP                                                                            \
    "\"session_id\":{\"type\":\"string\",\"description\":\"An id from create_session.\"}"
#define PATH_PROP                                                                                  \
    "\"path\":{\"type\":\"string\",\"description\":\"Relative to the session's workspace.\"}"

static const char create_input[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"language\":{\"type\":\"string\",\"description\":\"A language from "
        "get_supported_languages.\"},"
        "\"libraries\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
        "\"Packages installed once, for every call of the session.\"}," MCP_LIMITS_SCHEMA ","
        "\"memory_mb\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
        "\"Memory for the whole session, in MiB (at most what the server allows).\"}},"
        "\"required\":[\"language\"],\"additionalProperties\":false}";

static const char id_input[] = "{\"type\":\"object\",\"properties\":{" SESSION_ID_PROP
                               "},\"required\":[\"session_id\"],\"additionalProperties\":false}";

static const char none_input[] =
        "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";

static const char upload_input[] =
        "{\"type\":\"object\",\"properties\":{" SESSION_ID_PROP "," PATH_PROP ","
        "\"content\":{\"type\":\"string\"},"
        "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],\"default\":\"utf-8\"}},"
        "\"required\":[\"session_id\",\"path\",\"content\"],\"additionalProperties\":false}";

static const char path_input[] = "{\"type\":\"object\",\"properties\":{" SESSION_ID_PROP
                                 "," PATH_PROP "},\"required\":[\"session_id\",\"path\"],"
                                 "\"additionalProperties\":false}";

static const char list_input[] = "{\"type\":\"object\",\"properties\":{" SESSION_ID_PROP
                                 "," PATH_PROP "},\"required\":[\"session_id\"],"
                                 "\"additionalProperties\":false}";

/* Each answers its fields, or (isError) the refusal's status and message:
 * no field is required. */
static const char closed_output[] =
        "{\"type\":\"object\",\"properties\":{" MCP_REFUSAL_PROPS ","
        "\"session_id\":{\"type\":\"string\"},\"closed\":{\"type\":\"boolean\"}}}";

static const char sessions_output[] =
        "{\"type\":\"object\",\"properties\":{" MCP_REFUSAL_PROPS ","
        "\"sessions\":{\"type\":\"array\",\"items\":"
        "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
        "\"language\":{\"type\":\"string\"},\"backend\":{\"type\":\"string\"},"
        "\"created_at\":{\"type\":\"string\"},\"last_used_at\":{\"type\":\"string\"},"
        "\"expires_at\":{\"type\":\"string\"},\"calls\":{\"type\":\"integer\"},"
        "\"busy\":{\"type\":\"boolean\"}},\"required\":[\"session_id\"]}}}}";

static const char upload_output[] =
        "{\"type\":\"object\",\"properties\":{" MCP_REFUSAL_PROPS ","
        "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}}}";

static const char download_output[] =
        "{\"type\":\"object\",\"properties\":{" MCP_REFUSAL_PROPS ","
        "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
        "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]},"
        "\"content\":{\"type\":\"string\"}}}";

static const char files_output[] =
        "{\"type\":\"object\",\"properties\":{" MCP_REFUSAL_PROPS ","
        "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        "{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}}}}";

static const struct mcp_tool session_tools[] = {
        {"create_session", "Create a session",
                "Open a sandbox that lives across calls: pass its session_id to execute_code, and "
                "variables (python, javascript, r, ruby) and files persist between calls; as in a "
                "notebook, a call's last bare expression is shown (`df.head()`). Close it with "
                "close_session; unused sessions expire.",
                create_input, MCP_EXEC_OUTPUT_SCHEMA, MCP_TOOL_WORKER | MCP_TOOL_OPEN_WORLD,
                t_create_session},
        {"close_session", "Close a session",
                "Close a session: its sandbox, processes and files are gone.", id_input,
                closed_output, MCP_TOOL_WORKER | MCP_TOOL_DESTRUCTIVE, t_close_session},
        {"list_sessions", "List sessions", "The open sessions, with their language and age.",
                none_input, sessions_output, MCP_TOOL_READ_ONLY, t_list_sessions},
        {"upload_file", "Upload a file",
                "Write a file into a session's workspace (text, or base64 for binary data).",
                upload_input, upload_output, MCP_TOOL_WORKER | MCP_TOOL_DESTRUCTIVE, t_upload_file},
        {"download_file", "Download a file",
                "Read a file of a session's workspace: text when it is UTF-8, else base64.",
                path_input, download_output, MCP_TOOL_WORKER | MCP_TOOL_READ_ONLY, t_download_file},
        {"list_files", "List files",
                "The regular files of a session's workspace (or of a directory in it).", list_input,
                files_output, MCP_TOOL_WORKER | MCP_TOOL_READ_ONLY, t_list_files},
};

void session_tools_register(struct mcp_server *s)
{
    mcp_add_tools(s, session_tools, sizeof(session_tools) / sizeof(session_tools[0]));
    mcp_add_resources(
            s, artifact_resources, sizeof(artifact_resources) / sizeof(artifact_resources[0]));
}
