/* SPDX-License-Identifier: MIT */
/*
 * tools.c: the tools and resources llm-sandbox offers over MCP, compatible
 * with the reference server (execute_code, get_supported_languages,
 * get_language_details, sandbox://languages) plus list_backends and the
 * sandbox://backends and sandbox://policy resources. Every answer is made
 * from llm-sandbox/sbx.h (the loaded plugins), never from a kept table.
 * Argument values that are wrong (types, unknown names, a bad timeout)
 * come back as results with status "refused" and isError, so a model can
 * correct itself; only protocol faults are JSON-RPC errors (server.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "limits.h"
#include "mcp.h"
#include "schemas.h"

#define PROGRESS_EVERY_MS 250 /* output progress at most this often */
#define PROGRESS_TAIL     200 /* bytes of latest output in a progress message */

/* ---- execute_code ------------------------------------------------------ */

struct live {
    struct mcp_call *call; /* first: mcp_call_notice */
    double progress;
    long long last_ms;
    char tail[PROGRESS_TAIL + 1];
    size_t tail_len;
};

static long long mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_phase(void *ud, const char *phase)
{
    struct live *l = ud;

    l->progress += 1;
    mcp_call_progress(l->call, l->progress, 0, phase);
}

/* Keep the latest output; report it now and then as progress. */
static void on_output(void *ud, enum sbx_stream stream, const char *buf, size_t len)
{
    struct live *l = ud;
    size_t keep = len < PROGRESS_TAIL ? len : PROGRESS_TAIL;
    long long now = mono_ms();

    (void)stream;
    if (l->tail_len + keep > PROGRESS_TAIL) {
        size_t drop = l->tail_len + keep - PROGRESS_TAIL;

        memmove(l->tail, l->tail + drop, l->tail_len - drop);
        l->tail_len -= drop;
    }
    memcpy(l->tail + l->tail_len, buf + len - keep, keep);
    l->tail_len += keep;
    l->tail[l->tail_len] = '\0';
    if (now - l->last_ms >= PROGRESS_EVERY_MS) {
        l->last_ms = now;
        l->progress += 1;
        mcp_call_progress(l->call, l->progress, 0, l->tail);
    }
}

static void audit(struct sbx_runtime *rt, const char *tool, const struct sbx_execution *ex)
{
    struct json_object *a = json_object_new_object();
    time_t now = time(NULL);
    char when[32];

    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    json_object_object_add(a, "time", json_object_new_string(when));
    json_object_object_add(a, "tool", json_object_new_string(tool));
    json_object_object_add(
            a, "language", ex->language ? json_object_new_string(ex->language) : NULL);
    json_object_object_add(a, "backend", ex->backend ? json_object_new_string(ex->backend) : NULL);
    json_object_object_add(a, "policy", ex->policy ? json_tokener_parse(ex->policy) : NULL);
    json_object_object_add(a, "status", json_object_new_string(sbx_status_str(ex->status)));
    json_object_object_add(a, "limit",
            sbx_limit_str(ex->limit) ? json_object_new_string(sbx_limit_str(ex->limit)) : NULL);
    json_object_object_add(
            a, "exit_code", ex->has_exit_code ? json_object_new_int(ex->exit_code) : NULL);
    json_object_object_add(a, "duration_ms", json_object_new_uint64(ex->duration_ms));
    json_object_object_add(a, "stdout_bytes", json_object_new_uint64(ex->stdout_bytes));
    json_object_object_add(a, "stderr_bytes", json_object_new_uint64(ex->stderr_bytes));
    json_object_object_add(
            a, "truncated", json_object_new_boolean(ex->stdout_truncated || ex->stderr_truncated));
    json_object_object_add(a, "artifacts", json_object_new_uint64(ex->n_artifacts));
    sbx_runtime_audit(rt, a);
    json_object_put(a);
}

static int t_execute_code(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    struct sbx_runtime *rt = mcp_call_runtime(call);
    struct exec_args a = {0};
    struct live live = {.call = call};
    struct sbx_request req = {0};
    struct sbx_execution *ex = NULL;
    struct sbx_error *err = NULL;
    const char *why;
    char buf[160];

    why = exec_args_parse(args, &a, buf, sizeof(buf));
    if (why) {
        /* audited too: a stream of refusals is worth an operator's eye */
        ex = sbx_execution_refused(why);
        goto done;
    }
    /* no language: the server's default (LLM_SANDBOX_DEFAULT_LANGUAGE), as
     * for the CLI, or a session's own */
    req = (struct sbx_request){.language = a.language,
            .session_id = a.session_id,
            .owner = mcp_call_owner(call),
            .keep_artifacts = true,
            .code = a.code,
            .code_len = a.code_len,
            .stdin_data = a.stdin_data,
            .stdin_len = a.stdin_len,
            .files = a.files,
            .n_files = a.n_files,
            .libraries = a.libs,
            .n_libraries = a.n_libs,
            .userdata = &live,
            .on_notice = mcp_call_notice,
            .cancel = mcp_call_cancel(call)};
    if (mcp_call_wants_progress(call)) {
        req.on_phase = on_phase;
        req.on_output = on_output;
    }
    why = mcp_limits_parse(args, &req.limits, buf, sizeof(buf));
    if (why)
        ex = sbx_execution_refused(why);
    else if (sbx_run(rt, &req, &ex, &err) < 0)
        ex = sbx_execution_from_error(err);
done:
    if (!ex) {
        sbx_error_free(err);
        exec_args_done(&a);
        return -1;
    }
    audit(rt, "execute_code", ex);
    *ret = mcp_execution_result(call, ex);
    sbx_execution_free(ex);
    sbx_error_free(err);
    exec_args_done(&a);
    return *ret ? 0 : -1;
}

/* ---- languages and backends -------------------------------------------- */

static struct json_object *json_result(struct json_object *structured, struct json_object *text)
{
    struct json_object *r = json_object_new_object(), *c = json_object_new_array(),
                       *t = json_object_new_object();

    json_object_object_add(t, "type", json_object_new_string("text"));
    json_object_object_add(t, "text",
            json_object_new_string(json_object_to_json_string_ext(text ? text : structured,
                    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE)));
    json_object_array_add(c, t);
    json_object_object_add(r, "content", c);
    if (structured)
        json_object_object_add(r, "structuredContent", structured);
    json_object_object_add(r, "isError", json_object_new_boolean(false));
    json_object_put(text);
    return r;
}

static int t_supported_languages(
        struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    struct json_object *langs = sbx_runtime_languages_json(mcp_call_runtime(call), false);
    struct json_object *names = json_object_new_array(), *o = json_object_new_object();

    (void)args;
    for (size_t i = 0; i < json_object_array_length(langs); i++) {
        struct json_object *n;

        if (json_object_object_get_ex(json_object_array_get_idx(langs, i), "name", &n))
            json_object_array_add(names, json_object_get(n));
    }
    json_object_put(langs);
    /* the text mirrors the reference: a JSON array of names */
    json_object_object_add(o, "languages", json_object_get(names));
    *ret = json_result(o, names);
    return 0;
}

/* One language's entry, with its version probed in a sandbox. */
static struct json_object *language_details(struct sbx_runtime *rt, const char *name)
{
    const char *canon = sbx_runtime_language_name(rt, name);
    struct json_object *all, *found = NULL;

    if (!canon)
        return NULL;
    all = sbx_runtime_languages_json(rt, true);
    for (size_t i = 0; i < json_object_array_length(all) && !found; i++) {
        struct json_object *e = json_object_array_get_idx(all, i), *n;

        if (json_object_object_get_ex(e, "name", &n) &&
                strcmp(json_object_get_string(n), canon) == 0)
            found = json_object_get(e);
    }
    json_object_put(all);
    return found;
}

static int t_language_details(
        struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    struct json_object *v = NULL, *d;

    if (!args || !json_object_object_get_ex(args, "language", &v) ||
            !json_object_is_type(v, json_type_string)) {
        *ret = mcp_error_result("'language' (a string) is required");
        return 0;
    }
    d = language_details(mcp_call_runtime(call), json_object_get_string(v));
    if (!d) {
        *ret = mcp_error_result("Unsupported language: %s (see get_supported_languages)",
                json_object_get_string(v));
        return 0;
    }
    *ret = json_result(d, NULL);
    return 0;
}

static int t_list_backends(
        struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    struct json_object *o = json_object_new_object();

    (void)args;
    json_object_object_add(o, "backends", sbx_runtime_backends_json(mcp_call_runtime(call)));
    json_object_object_add(o, "default",
            json_object_new_string(sbx_runtime_default_backend(mcp_call_runtime(call))));
    *ret = json_result(o, NULL);
    return 0;
}

/* ---- resources --------------------------------------------------------- */

static struct json_object *json_contents(const char *uri, struct json_object *value)
{
    struct json_object *a = json_object_new_array(), *c = json_object_new_object();

    json_object_object_add(c, "uri", json_object_new_string(uri));
    json_object_object_add(c, "mimeType", json_object_new_string("application/json"));
    json_object_object_add(c, "text",
            json_object_new_string(json_object_to_json_string_ext(
                    value, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE)));
    json_object_array_add(a, c);
    json_object_put(value);
    return a;
}

static int r_languages(
        struct mcp_server *s, const char *owner, const char *uri, struct json_object **ret)
{
    struct json_object *all = sbx_runtime_languages_json(mcp_server_runtime(s), true);
    struct json_object *by_name = json_object_new_object();

    (void)owner;
    /* keyed by name, as the reference's resource is */
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        struct json_object *e = json_object_array_get_idx(all, i), *n;

        if (json_object_object_get_ex(e, "name", &n))
            json_object_object_add(by_name, json_object_get_string(n), json_object_get(e));
    }
    json_object_put(all);
    *ret = json_contents(uri, by_name);
    return 0;
}

static int r_backends(
        struct mcp_server *s, const char *owner, const char *uri, struct json_object **ret)
{
    (void)owner;
    *ret = json_contents(uri, sbx_runtime_backends_json(mcp_server_runtime(s)));
    return 0;
}

static int r_policy(
        struct mcp_server *s, const char *owner, const char *uri, struct json_object **ret)
{
    (void)owner;
    *ret = json_contents(uri, sbx_runtime_policy_json(mcp_server_runtime(s)));
    return 0;
}

/* ---- the tables -------------------------------------------------------- */

static const char exec_input[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"code\":{\"type\":\"string\",\"description\":\"The program to run.\"},"
        "\"language\":{\"type\":\"string\",\"description\":"
        "\"A language from get_supported_languages (python, javascript, go, cpp, java, r, ruby "
        "when installed); without it, the server's default language.\"},"
        "\"libraries\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
        "\"description\":\"Packages to install before running (names in the language's "
        "package manager's grammar); in a session, added to its libraries while its "
        "variables stay.\"}," MCP_LIMITS_SCHEMA ","
        "\"stdin\":{\"type\":\"string\",\"description\":\"Standard input for the program.\"},"
        "\"files\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
        "\"description\":\"Files to stage in the working directory: relative path -> text.\"},"
        "\"session_id\":{\"type\":\"string\",\"description\":\"Run in this session (from "
        "create_session): its files and variables persist; the language may be left out.\"}},"
        "\"required\":[\"code\"],\"additionalProperties\":false}";

static const char languages_output[] =
        "{\"type\":\"object\",\"properties\":{\"languages\":{\"type\":\"array\","
        "\"items\":{\"type\":\"string\"}}},\"required\":[\"languages\"]}";

/* The manifest's details and the probed version (null when the probe
 * failed); the keys a language's manifest adds are allowed. */
static const char details_output[] =
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
        "\"version\":" MCP_NULLABLE_STRING ",\"description\":{\"type\":\"string\"},"
        "\"aliases\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
        "\"package_manager\":" MCP_NULLABLE_STRING "},\"required\":[\"name\"]}";

static const char backends_output[] =
        "{\"type\":\"object\",\"properties\":{\"backends\":{\"type\":\"array\","
        "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
        "\"status\":{\"type\":\"string\"},\"error\":" MCP_NULLABLE_STRING ","
        "\"probe_error\":" MCP_NULLABLE_STRING "},\"required\":[\"name\"]}},"
        "\"default\":{\"type\":\"string\"}},\"required\":[\"backends\",\"default\"]}";

static const char no_input[] =
        "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";

static const char language_input[] =
        "{\"type\":\"object\",\"properties\":{\"language\":{\"type\":\"string\","
        "\"description\":\"A name from get_supported_languages.\"}},"
        "\"required\":[\"language\"],\"additionalProperties\":false}";

static const struct mcp_tool tools[] = {
        {"execute_code", "Execute code",
                "Run a program in an isolated sandbox (no network by default) and return what it "
                "printed, its exit code and how it ended (status, and the limit that stopped it). "
                "The limits may be narrowed, never widened past what the server allows "
                "(sandbox://policy).",
                exec_input, MCP_EXEC_OUTPUT_SCHEMA, MCP_TOOL_WORKER | MCP_TOOL_OPEN_WORLD,
                t_execute_code},
        {"get_supported_languages", "Supported languages",
                "List the languages this server can run.", no_input, languages_output,
                MCP_TOOL_READ_ONLY, t_supported_languages},
        {"get_language_details", "Language details",
                "Details of one language: the toolchain's real version, its package manager and "
                "how code is run.",
                language_input, details_output, MCP_TOOL_READ_ONLY | MCP_TOOL_WORKER,
                t_language_details},
        {"list_backends", "Sandbox backends",
                "The isolation backends available here and which limits each can enforce on this "
                "host.",
                no_input, backends_output, MCP_TOOL_READ_ONLY | MCP_TOOL_WORKER, t_list_backends},
};

static const struct mcp_resource resources[] = {
        {"sandbox://languages", "languages", "The supported languages with their details.",
                "application/json", false, r_languages},
        {"sandbox://backends", "backends", "The backends and the controls each enforces here.",
                "application/json", false, r_backends},
        {"sandbox://policy", "policy",
                "The effective default policy and the ceilings requests may reach.",
                "application/json", false, r_policy},
};

void tools_register(struct mcp_server *s)
{
    mcp_add_tools(s, tools, sizeof(tools) / sizeof(tools[0]));
    mcp_add_resources(s, resources, sizeof(resources) / sizeof(resources[0]));
}
