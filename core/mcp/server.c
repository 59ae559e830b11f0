/* SPDX-License-Identifier: MIT */
/*
 * server.c: the MCP server's protocol core. Lifecycle (initialize and
 * version negotiation), the method table, tools/list, tools/call on a
 * bounded worker pool, resources, prompts, logging level, cancellation
 * (notifications/cancelled fires the call's sbx_cancel, which kills the
 * run) and progress. Answers every malformed message with the right
 * JSON-RPC error and keeps serving. Transport-free: see mcp.h.
 *
 * Two eras share the method table. Revisions 2025-03-26 to 2025-11-25
 * start with initialize (the gate, ping, logging/setLevel and the
 * subscriptions are here). Revision 2026-07-28 has no handshake: a request
 * that carries its version in params._meta goes through modern.c, which
 * judges the envelope, answers server/discover and shapes the results;
 * server_priv.h is what the two files share.
 *
 * Threads: the transport's thread calls mcp_handle(); quick methods answer
 * inline; tool calls flagged MCP_TOOL_WORKER run on the pool. A
 * connection's in-flight calls are listed under its mutex so a cancel can
 * find them; the pool's queue has its own mutex. Nothing else is shared.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jsonrpc.h"
#include "mcp.h"
#include "server_priv.h"

#define MAX_QUEUED 256 /* tool calls waiting for a worker */

static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
const char server_instructions[] =
        "Runs code in an isolated sandbox and returns what it printed. Call "
        "get_supported_languages first; execute_code runs one program in a fresh sandbox with "
        "no network by default.";
static const char *const log_levels[] = {
        "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

struct mcp_server {
    struct sbx_runtime *rt;
    struct mcp_tool *tools;
    struct json_object **tool_json; /* tools/list entries, built once */
    size_t n_tools;
    struct mcp_resource *res;
    size_t n_res;
    struct mcp_prompt *prompts;
    size_t n_prompts;
    int (*complete)(struct json_object *params, struct json_object **ret);
    bool subscriptions;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct mcp_call *head, *tail; /* queue of calls for the workers */
    size_t queued;
    pthread_t *threads;
    unsigned n_threads;
    bool stopping;
};

struct mcp_conn {
    struct mcp_server *s;
    pthread_mutex_t lock;
    pthread_cond_t idle;
    char protocol[16];
    int log_level;
    struct mcp_call *calls; /* in flight, for cancellation */
};

struct mcp_call {
    struct mcp_conn *conn;
    struct json_object *root; /* owns the request: id, params */
    struct json_object *id, *args, *token;
    const struct mcp_tool *tool;
    struct mcp_sink sink;
    unsigned flags;
    int log_level; /* the envelope's (LOG_NONE without one); -1: the connection's */
    struct sbx_cancel *cancel;
    atomic_bool cancelled;
    struct mcp_call *next_queued, *next_in_conn;
};

/* ---- sending ----------------------------------------------------------- */

void server_send(const struct mcp_sink *sink, struct json_object *o)
{
    size_t len;
    const char *text;

    if (!o)
        return;
    text = jr_text(o, &len);
    if (jr_utf8_valid(text, len)) {
        sink->send(sink->ud, text, len);
    } else {
        /* json-c passes bytes >= 0x80 through as they are: what a program
         * printed, or a message cut mid-character, must not put invalid
         * UTF-8 on the wire (it only ever sits inside JSON strings) */
        char *fixed = jr_utf8_fix(text, len, &len);

        if (fixed)
            sink->send(sink->ud, fixed, len);
        free(fixed);
    }
    json_object_put(o);
}

struct json_object *server_info(void)
{
    struct json_object *info = json_object_new_object();

    json_object_object_add(info, "name", json_object_new_string("llm-sandbox"));
    json_object_object_add(info, "title", json_object_new_string("LLM Sandbox"));
    json_object_object_add(info, "version", json_object_new_string(sbx_version()));
    return info;
}

void server_answer(const struct req *r, struct json_object *result)
{
    if (r->flags & R_MODERN)
        result = modern_result(result, r->flags & R_CACHEABLE);
    server_send(r->sink, jr_result(r->id, result));
}

static void answer_error(const struct req *r, int code, const char *msg)
{
    server_send(r->sink, jr_error(r->id, code, msg, NULL));
}

struct json_object *mcp_text_result(const char *text, bool is_error)
{
    struct json_object *r = json_object_new_object(), *c = json_object_new_array(),
                       *t = json_object_new_object();

    json_object_object_add(t, "type", json_object_new_string("text"));
    json_object_object_add(t, "text", json_object_new_string(text));
    json_object_array_add(c, t);
    json_object_object_add(r, "content", c);
    json_object_object_add(r, "isError", json_object_new_boolean(is_error));
    return r;
}

struct json_object *mcp_error_result(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return mcp_text_result(msg, true);
}

/* ---- calls ------------------------------------------------------------- */

struct sbx_runtime *mcp_call_runtime(const struct mcp_call *call)
{
    return call->conn->s->rt;
}

bool mcp_call_protocol_at_least(const struct mcp_call *call, const char *version)
{
    /* versions are dates, YYYY-MM-DD: they sort as strings */
    return (call->flags & R_MODERN) || strcmp(call->conn->protocol, version) >= 0;
}

struct sbx_runtime *mcp_server_runtime(const struct mcp_server *s)
{
    return s->rt;
}

struct sbx_cancel *mcp_call_cancel(const struct mcp_call *call)
{
    return call->cancel;
}

bool mcp_call_cancelled(const struct mcp_call *call)
{
    return atomic_load(&call->cancelled);
}

bool mcp_call_wants_progress(const struct mcp_call *call)
{
    return call->token != NULL;
}

void mcp_call_progress(struct mcp_call *call, double progress, double total, const char *message)
{
    struct json_object *p;

    if (!call->token || mcp_call_cancelled(call))
        return;
    p = json_object_new_object();
    json_object_object_add(p, "progressToken", json_object_get(call->token));
    json_object_object_add(p, "progress", json_object_new_double(progress));
    if (total > 0)
        json_object_object_add(p, "total", json_object_new_double(total));
    if (message)
        json_object_object_add(p, "message", json_object_new_string(message));
    server_send(&call->sink, jr_notification("notifications/progress", p));
}

int server_level_index(const char *level)
{
    for (int i = 0; i < 8; i++)
        if (level && strcmp(level, log_levels[i]) == 0)
            return i;
    return -1;
}

void mcp_call_log(struct mcp_call *call, const char *level, struct json_object *data)
{
    struct json_object *p;
    int lv = server_level_index(level);

    if (lv < 0 || lv < (call->log_level >= 0 ? call->log_level : call->conn->log_level)) {
        json_object_put(data);
        return;
    }
    p = json_object_new_object();
    json_object_object_add(p, "level", json_object_new_string(level));
    json_object_object_add(p, "logger", json_object_new_string("llm-sandbox"));
    json_object_object_add(p, "data", data);
    server_send(&call->sink, jr_notification("notifications/message", p));
}

static void call_free(struct mcp_call *call)
{
    json_object_put(call->root);
    sbx_cancel_free(call->cancel);
    free(call);
}

/* Run the tool and answer (unless the client cancelled: then no answer is
 * sent, as the specification asks), then retire the call. */
static void call_run(struct mcp_call *call)
{
    struct mcp_conn *c = call->conn;
    struct json_object *result = NULL;
    int r = 0;

    if (!mcp_call_cancelled(call))
        r = call->tool->fn(call, call->args, &result);
    if (!mcp_call_cancelled(call)) {
        struct req to = {call->id, &call->sink, call->flags};

        if (r < 0 || !result)
            answer_error(&to, JR_INTERNAL_ERROR, "the tool failed internally");
        else
            server_answer(&to, json_object_get(result));
    }
    json_object_put(result);
    pthread_mutex_lock(&c->lock);
    for (struct mcp_call **pp = &c->calls; *pp; pp = &(*pp)->next_in_conn) {
        if (*pp == call) {
            *pp = call->next_in_conn;
            break;
        }
    }
    pthread_cond_broadcast(&c->idle);
    pthread_mutex_unlock(&c->lock);
    call->sink.done(call->sink.ud);
    call_free(call);
}

static void *worker(void *arg)
{
    struct mcp_server *s = arg;

    for (;;) {
        struct mcp_call *call;

        pthread_mutex_lock(&s->lock);
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->wake, &s->lock);
        if (!s->head) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        call = s->head;
        s->head = call->next_queued;
        if (!s->head)
            s->tail = NULL;
        s->queued--;
        pthread_mutex_unlock(&s->lock);
        call_run(call);
    }
}

/* json_object_equal compares strings by length and bytes (an id may hold
 * a NUL) and integers over the whole int64 and uint64 range, where
 * json_object_get_int64 would clamp 2^63 and above to 2^63-1 and make two
 * ids one. */
static bool ids_equal(struct json_object *a, struct json_object *b)
{
    return a && b && json_object_equal(a, b);
}

static void cancel_request(struct mcp_conn *c, struct json_object *params)
{
    struct json_object *id;

    if (!params || !json_object_object_get_ex(params, "requestId", &id))
        return;
    pthread_mutex_lock(&c->lock);
    for (struct mcp_call *call = c->calls; call; call = call->next_in_conn) {
        if (ids_equal(call->id, id)) {
            atomic_store(&call->cancelled, true);
            sbx_cancel_fire(call->cancel);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/* ---- methods ----------------------------------------------------------- */

bool mcp_protocol_supported(const char *version)
{
    for (size_t i = 0; version && i < sizeof(protocol_versions) / sizeof(*protocol_versions); i++)
        if (strcmp(version, protocol_versions[i]) == 0)
            return true;
    return false;
}

struct json_object *server_capabilities(const struct mcp_server *s, bool modern)
{
    struct json_object *caps = json_object_new_object(), *t = json_object_new_object(),
                       *r = json_object_new_object();

    json_object_object_add(t, "listChanged", json_object_new_boolean(false));
    json_object_object_add(caps, "tools", t);
    json_object_object_add(r, "listChanged", json_object_new_boolean(false));
    /* 2026-07-28 subscribes through subscriptions/listen, not served here */
    json_object_object_add(r, "subscribe", json_object_new_boolean(s->subscriptions && !modern));
    json_object_object_add(caps, "resources", r);
    json_object_object_add(caps, "logging", json_object_new_object());
    if (s->n_prompts) {
        struct json_object *p = json_object_new_object();

        json_object_object_add(p, "listChanged", json_object_new_boolean(false));
        json_object_object_add(caps, "prompts", p);
    }
    if (s->complete)
        json_object_object_add(caps, "completions", json_object_new_object());
    return caps;
}

/* A later initialize on the same connection is answered as the first was,
 * and renegotiates the version. The specification (Lifecycle, 2025-03-26
 * to 2025-11-25) says that "the initialization phase MUST be the first
 * interaction between client and server", but not what a server does with
 * a second initialize, so none is refused here. */
static void m_initialize(struct mcp_conn *c, const struct req *r, struct json_object *params)
{
    struct json_object *v, *res;
    const char *asked;

    if (!params || !json_object_object_get_ex(params, "protocolVersion", &v) ||
            !json_object_is_type(v, json_type_string)) {
        answer_error(r, JR_INVALID_PARAMS, "initialize needs a protocolVersion");
        return;
    }
    asked = json_object_get_string(v);
    pthread_mutex_lock(&c->lock);
    /* the client's version when we speak it, else our newest */
    snprintf(c->protocol, sizeof(c->protocol), "%s",
            mcp_protocol_supported(asked) ? asked : protocol_versions[0]);
    pthread_mutex_unlock(&c->lock);
    res = json_object_new_object();
    json_object_object_add(res, "protocolVersion", json_object_new_string(c->protocol));
    json_object_object_add(res, "capabilities", server_capabilities(c->s, false));
    json_object_object_add(res, "serverInfo", server_info());
    json_object_object_add(res, "instructions", json_object_new_string(server_instructions));
    server_answer(r, res);
}

void server_add_versions(struct json_object *array)
{
    for (size_t i = 0; i < sizeof(protocol_versions) / sizeof(*protocol_versions); i++)
        json_object_array_add(array, json_object_new_string(protocol_versions[i]));
}

static void m_tools_list(struct mcp_conn *c, const struct req *r)
{
    struct mcp_server *s = c->s;
    struct json_object *res = json_object_new_object(), *a = json_object_new_array();

    /* Deep copies: the entries are shared by every thread, and json-c's
     * reference counts are not atomic. */
    for (size_t i = 0; i < s->n_tools; i++) {
        struct json_object *t = NULL;

        if (json_object_deep_copy(s->tool_json[i], &t, NULL) == 0)
            json_object_array_add(a, t);
    }
    json_object_object_add(res, "tools", a);
    server_answer(r, res);
}

static const struct mcp_tool *find_tool(const struct mcp_server *s, const char *name)
{
    for (size_t i = 0; name && i < s->n_tools; i++)
        if (strcmp(s->tools[i].name, name) == 0)
            return &s->tools[i];
    return NULL;
}

/* Queue a tool call for the pool; false when the queue is full. */
static bool enqueue(struct mcp_server *s, struct mcp_call *call)
{
    bool ok;

    pthread_mutex_lock(&s->lock);
    ok = !s->stopping && s->queued < MAX_QUEUED;
    if (ok) {
        if (s->tail)
            s->tail->next_queued = call;
        else
            s->head = call;
        s->tail = call;
        s->queued++;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Takes ownership of *root (set to NULL) when the call is kept. */
static void m_tools_call(struct mcp_conn *c, struct json_object **root, const struct req *r,
        struct json_object *params)
{
    struct json_object *name = NULL, *args = NULL, *meta, *token = NULL;
    const struct mcp_tool *tool;
    struct mcp_call *call;

    if (!params || !json_object_object_get_ex(params, "name", &name) ||
            !json_object_is_type(name, json_type_string)) {
        answer_error(r, JR_INVALID_PARAMS, "tools/call needs a tool name");
        return;
    }
    tool = find_tool(c->s, json_object_get_string(name));
    if (!tool) {
        answer_error(r, JR_INVALID_PARAMS, "unknown tool");
        return;
    }
    if (json_object_object_get_ex(params, "arguments", &args) && args &&
            !json_object_is_type(args, json_type_object)) {
        answer_error(r, JR_INVALID_PARAMS, "\"arguments\" must be an object");
        return;
    }
    if (json_object_object_get_ex(params, "_meta", &meta) &&
            json_object_is_type(meta, json_type_object))
        json_object_object_get_ex(meta, "progressToken", &token);
    call = calloc(1, sizeof(*call));
    if (!call || sbx_cancel_new(&call->cancel, NULL) < 0) {
        free(call);
        answer_error(r, JR_INTERNAL_ERROR, "out of memory");
        return;
    }
    call->conn = c;
    call->root = *root;
    *root = NULL;
    call->id = r->id;
    call->args = args;
    call->token = token && (json_object_is_type(token, json_type_string) ||
                                   json_object_is_type(token, json_type_int))
                          ? token
                          : NULL;
    call->tool = tool;
    call->sink = *r->sink;
    call->flags = r->flags;
    call->log_level = r->flags & R_MODERN ? modern_log_level(params) : -1;
    pthread_mutex_lock(&c->lock);
    call->next_in_conn = c->calls;
    c->calls = call;
    pthread_mutex_unlock(&c->lock);
    if (!(tool->flags & MCP_TOOL_WORKER)) {
        call_run(call);
        return;
    }
    if (!enqueue(c->s, call)) {
        /* answered as a tool error: the client may retry later */
        atomic_store(&call->cancelled, true);
        server_answer(r, mcp_error_result("too many tool calls in flight; retry later"));
        call_run(call);
    }
}

static struct json_object *resource_entry(const struct mcp_resource *r)
{
    struct json_object *o = json_object_new_object();

    json_object_object_add(
            o, r->is_template ? "uriTemplate" : "uri", json_object_new_string(r->uri));
    json_object_object_add(o, "name", json_object_new_string(r->name));
    json_object_object_add(o, "description", json_object_new_string(r->description));
    if (r->mime_type) /* a template's files may be of any type */
        json_object_object_add(o, "mimeType", json_object_new_string(r->mime_type));
    return o;
}

static void m_resources_list(struct mcp_conn *c, const struct req *r, bool templates)
{
    struct json_object *res = json_object_new_object(), *a = json_object_new_array();

    for (size_t i = 0; i < c->s->n_res; i++)
        if (c->s->res[i].is_template == templates)
            json_object_array_add(a, resource_entry(&c->s->res[i]));
    json_object_object_add(res, templates ? "resourceTemplates" : "resources", a);
    server_answer(r, res);
}

static void m_resources_read(struct mcp_conn *c, const struct req *r, struct json_object *params)
{
    struct json_object *uri, *contents = NULL, *res;
    const char *u;

    if (!params || !json_object_object_get_ex(params, "uri", &uri) ||
            !json_object_is_type(uri, json_type_string)) {
        answer_error(r, JR_INVALID_PARAMS, "resources/read needs a uri");
        return;
    }
    u = json_object_get_string(uri);
    for (int pass = 0; pass < 2 && !contents; pass++) {
        for (size_t i = 0; i < c->s->n_res && !contents; i++) {
            const struct mcp_resource *e = &c->s->res[i];
            int rc;

            if (e->is_template != (pass == 1) || (!e->is_template && strcmp(e->uri, u) != 0))
                continue;
            rc = e->read(c->s, u, &contents);
            if (rc < 0) {
                answer_error(r, JR_INTERNAL_ERROR, "reading the resource failed");
                return;
            }
        }
    }
    if (!contents) {
        struct json_object *data = json_object_new_object();

        json_object_object_add(data, "uri", json_object_new_string(u));
        /* 2026-07-28 made a missing resource invalid params; before, -32002 */
        server_send(r->sink,
                jr_error(r->id, r->flags & R_MODERN ? JR_INVALID_PARAMS : JR_SERVER_NOT_INITIALIZED,
                        "resource not found", data));
        return;
    }
    res = json_object_new_object();
    json_object_object_add(res, "contents", contents);
    server_answer(r, res);
}

static void m_prompts(struct mcp_conn *c, const struct req *r, struct json_object *params, bool get)
{
    struct json_object *res = NULL, *name, *args = NULL;

    if (!get) {
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; i < c->s->n_prompts; i++) {
            struct json_object *p = json_object_new_object();

            json_object_object_add(p, "name", json_object_new_string(c->s->prompts[i].name));
            json_object_object_add(
                    p, "description", json_object_new_string(c->s->prompts[i].description));
            if (c->s->prompts[i].arguments)
                json_object_object_add(
                        p, "arguments", json_tokener_parse(c->s->prompts[i].arguments));
            json_object_array_add(a, p);
        }
        res = json_object_new_object();
        json_object_object_add(res, "prompts", a);
        server_answer(r, res);
        return;
    }
    if (!params || !json_object_object_get_ex(params, "name", &name)) {
        answer_error(r, JR_INVALID_PARAMS, "prompts/get needs a name");
        return;
    }
    json_object_object_get_ex(params, "arguments", &args);
    for (size_t i = 0; i < c->s->n_prompts; i++) {
        if (strcmp(c->s->prompts[i].name, json_object_get_string(name)) != 0)
            continue;
        if (c->s->prompts[i].get(args, &res) < 0) {
            answer_error(r, JR_INVALID_PARAMS, "bad prompt arguments");
            return;
        }
        server_answer(r, res);
        return;
    }
    answer_error(r, JR_INVALID_PARAMS, "unknown prompt");
}

static void m_set_level(struct mcp_conn *c, const struct req *r, struct json_object *params)
{
    struct json_object *lv;
    int i = -1;

    if (params && json_object_object_get_ex(params, "level", &lv))
        i = server_level_index(json_object_get_string(lv));
    if (i < 0) {
        answer_error(r, JR_INVALID_PARAMS, "unknown logging level");
        return;
    }
    c->log_level = i;
    server_answer(r, NULL);
}

/* What only the initialize era has: ping, the initialize gate,
 * subscriptions and logging/setLevel. True when it answered. */
static bool dispatch_legacy(
        struct mcp_conn *c, const char *me, const struct req *r, struct json_object *params)
{
    bool ready;

    if (strcmp(me, "ping") == 0) {
        server_answer(r, NULL);
        return true;
    }
    pthread_mutex_lock(&c->lock);
    ready = c->protocol[0] != '\0';
    pthread_mutex_unlock(&c->lock);
    if (!ready) {
        answer_error(r, JR_INVALID_REQUEST, "not initialized: send initialize first");
        return true;
    }
    if (c->s->subscriptions &&
            (strcmp(me, "resources/subscribe") == 0 || strcmp(me, "resources/unsubscribe") == 0)) {
        server_answer(r, NULL);
        return true;
    }
    if (strcmp(me, "logging/setLevel") == 0) {
        m_set_level(c, r, params);
        return true;
    }
    return false;
}

/* Requests; takes *root when the request lives on (tools/call). */
static void dispatch(struct mcp_conn *c, struct jr_msg *m, const struct mcp_sink *sink)
{
    const char *me = m->method;
    struct req r = {m->id, sink, 0};

    /* initialize is the 2025 handshake whatever its _meta says: a 2026
     * client never sends it */
    if (strcmp(me, "initialize") == 0) {
        m_initialize(c, &r, m->params);
        return;
    }
    if (mcp_envelope_version(m->params)) {
        if (modern_dispatch(c->s, me, &r, m->params))
            return;
    } else if (dispatch_legacy(c, me, &r, m->params)) {
        return;
    }
    if (strcmp(me, "tools/list") == 0) {
        m_tools_list(c, &r);
        return;
    }
    if (strcmp(me, "tools/call") == 0) {
        m_tools_call(c, &m->root, &r, m->params);
        return;
    }
    if (strcmp(me, "resources/list") == 0 || strcmp(me, "resources/templates/list") == 0) {
        m_resources_list(c, &r, me[10] == 't');
        return;
    }
    if (strcmp(me, "resources/read") == 0) {
        m_resources_read(c, &r, m->params);
        return;
    }
    if (c->s->n_prompts && (strcmp(me, "prompts/list") == 0 || strcmp(me, "prompts/get") == 0)) {
        m_prompts(c, &r, m->params, me[8] == 'g');
        return;
    }
    if (c->s->complete && strcmp(me, "completion/complete") == 0) {
        struct json_object *res = NULL;

        if (c->s->complete(m->params, &res) < 0) {
            answer_error(&r, JR_INVALID_PARAMS, "cannot complete that");
            return;
        }
        server_answer(&r, res);
        return;
    }
    answer_error(&r, JR_METHOD_NOT_FOUND, "method not found");
}

void mcp_handle(struct mcp_conn *c, const char *buf, size_t len, const struct mcp_sink *sink)
{
    struct jr_msg m;
    bool kept = false;

    jr_parse(buf, len, &m);
    switch (m.kind) {
    case JR_INVALID: server_send(sink, jr_error(m.id, m.err_code, m.err_msg, NULL)); break;
    case JR_RESPONSE: break; /* we send no requests, so no answer is awaited */
    case JR_NOTIFICATION:
        if (strcmp(m.method, "notifications/cancelled") == 0)
            cancel_request(c, m.params);
        break;
    case JR_REQUEST:
        dispatch(c, &m, sink);
        kept = m.root == NULL; /* a tool call owns it now and calls done */
        break;
    }
    jr_msg_done(&m);
    if (!kept)
        sink->done(sink->ud);
}

/* ---- lifetime ---------------------------------------------------------- */

struct mcp_conn *mcp_conn_new(struct mcp_server *s)
{
    struct mcp_conn *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->s = s;
    c->log_level = 1; /* info */
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->idle, NULL);
    return c;
}

void mcp_conn_cancel(struct mcp_conn *c)
{
    pthread_mutex_lock(&c->lock);
    for (struct mcp_call *call = c->calls; call; call = call->next_in_conn) {
        atomic_store(&call->cancelled, true);
        sbx_cancel_fire(call->cancel);
    }
    pthread_mutex_unlock(&c->lock);
}

struct mcp_conn *mcp_conn_free(struct mcp_conn *c)
{
    if (!c)
        return NULL;
    mcp_conn_cancel(c);
    pthread_mutex_lock(&c->lock);
    while (c->calls)
        pthread_cond_wait(&c->idle, &c->lock);
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->idle);
    free(c);
    return NULL;
}

const char *mcp_conn_protocol(const struct mcp_conn *c)
{
    return c->protocol[0] ? c->protocol : NULL;
}

/* A tools/list entry. openWorldHint follows the configured network. */
static struct json_object *tool_entry(const struct mcp_tool *t, bool network_open)
{
    struct json_object *o = json_object_new_object(), *ann = json_object_new_object();
    struct json_object *in = json_tokener_parse(t->input_schema);

    if (!in) {
        json_object_put(o);
        json_object_put(ann);
        return NULL;
    }
    json_object_object_add(o, "name", json_object_new_string(t->name));
    json_object_object_add(o, "title", json_object_new_string(t->title));
    json_object_object_add(o, "description", json_object_new_string(t->description));
    json_object_object_add(o, "inputSchema", in);
    if (t->output_schema)
        json_object_object_add(o, "outputSchema", json_tokener_parse(t->output_schema));
    json_object_object_add(ann, "title", json_object_new_string(t->title));
    json_object_object_add(
            ann, "readOnlyHint", json_object_new_boolean(t->flags & MCP_TOOL_READ_ONLY));
    json_object_object_add(ann, "destructiveHint", json_object_new_boolean(false));
    json_object_object_add(
            ann, "idempotentHint", json_object_new_boolean((t->flags & MCP_TOOL_READ_ONLY) != 0));
    json_object_object_add(ann, "openWorldHint",
            json_object_new_boolean(network_open && (t->flags & MCP_TOOL_OPEN_WORLD)));
    json_object_object_add(o, "annotations", ann);
    return o;
}

int mcp_add_tools(struct mcp_server *s, const struct mcp_tool *t, size_t n)
{
    struct mcp_tool *nt = realloc(s->tools, (s->n_tools + n) * sizeof(*nt));
    struct json_object **nj;

    if (!nt)
        return -1;
    s->tools = nt;
    nj = realloc(s->tool_json, (s->n_tools + n) * sizeof(*nj));
    if (!nj)
        return -1;
    s->tool_json = nj;
    for (size_t i = 0; i < n; i++) {
        /* a schema that does not parse is a bug in the table: refuse it */
        struct json_object *e = tool_entry(&t[i], sbx_runtime_network_open(s->rt));

        if (!e)
            return -1;
        s->tools[s->n_tools] = t[i];
        s->tool_json[s->n_tools++] = e;
    }
    return 0;
}

int mcp_add_resources(struct mcp_server *s, const struct mcp_resource *r, size_t n)
{
    struct mcp_resource *nr = realloc(s->res, (s->n_res + n) * sizeof(*nr));

    if (!nr)
        return -1;
    s->res = nr;
    memcpy(s->res + s->n_res, r, n * sizeof(*r));
    s->n_res += n;
    return 0;
}

int mcp_add_prompts(struct mcp_server *s, const struct mcp_prompt *p, size_t n)
{
    struct mcp_prompt *np = realloc(s->prompts, (s->n_prompts + n) * sizeof(*np));

    if (!np)
        return -1;
    s->prompts = np;
    memcpy(s->prompts + s->n_prompts, p, n * sizeof(*p));
    s->n_prompts += n;
    return 0;
}

void mcp_set_subscriptions(struct mcp_server *s, bool on)
{
    s->subscriptions = on;
}

void mcp_set_completer(
        struct mcp_server *s, int (*complete)(struct json_object *params, struct json_object **ret))
{
    s->complete = complete;
}

int mcp_server_new(struct sbx_runtime *rt, const struct mcp_options *opt, struct mcp_server **ret,
        struct sbx_error **err)
{
    struct mcp_server *s = calloc(1, sizeof(*s));
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = opt && opt->workers ? opt->workers : (unsigned)(cpus > 2 ? cpus : 2);

    (void)err;
    if (!s)
        return -1;
    s->rt = rt;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    tools_register(s);
    if (opt && opt->fixtures)
        fixtures_register(s);
    s->threads = calloc(n, sizeof(*s->threads));
    for (unsigned i = 0; s->threads && i < n; i++) {
        if (pthread_create(&s->threads[i], NULL, worker, s) != 0)
            break;
        s->n_threads++;
    }
    if (s->n_threads == 0) {
        mcp_server_free(s);
        return -1;
    }
    *ret = s;
    return 0;
}

struct mcp_server *mcp_server_free(struct mcp_server *s)
{
    if (!s)
        return NULL;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    for (struct mcp_call *call = s->head; call; call = call->next_queued) {
        atomic_store(&call->cancelled, true);
        sbx_cancel_fire(call->cancel);
    }
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < s->n_threads; i++)
        pthread_join(s->threads[i], NULL);
    for (size_t i = 0; i < s->n_tools; i++)
        json_object_put(s->tool_json[i]);
    free(s->tool_json);
    free(s->tools);
    free(s->res);
    free(s->prompts);
    free(s->threads);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    free(s);
    return NULL;
}
