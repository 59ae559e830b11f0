/* SPDX-License-Identifier: MIT */
/*
 * methods.c: the MCP method table: what each request gets. Lifecycle
 * (initialize and version negotiation), tools/list, tools/call (handed to
 * the server's worker pool, server.c), resources, prompts, completion,
 * logging level, and cancellation (notifications/cancelled fires the
 * call's sbx_cancel, which kills the run). Answers every malformed message
 * with the right JSON-RPC error and keeps serving.
 *
 * Two eras share the table. Revisions 2025-03-26 to 2025-11-25 start with
 * initialize (the gate, ping, logging/setLevel and the subscriptions are
 * here). Revision 2026-07-28 has no handshake: a request that carries its
 * version in params._meta has its envelope judged (protocol.c), gets
 * server/discover here, and its results shaped by the server.
 *
 * Runs on the transport's thread (mcp_handle); quick methods answer
 * inline.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "mcp.h"
#include "server_priv.h"

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

static struct json_object *capabilities(const struct mcp_server *s, bool modern)
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

/* The specification (Lifecycle, 2025-03-26 to 2025-11-25) says that "the
 * initialization phase MUST be the first interaction between client and
 * server": a second initialize on an initialized connection is refused
 * (the version stays the one negotiated); a client that wants another
 * starts another connection (over HTTP, another session). */
static void m_initialize(struct mcp_conn *c, const struct req *r, struct json_object *params)
{
    struct json_object *v, *res;
    const char *asked;
    bool again;

    pthread_mutex_lock(&c->lock);
    again = c->protocol[0] != '\0';
    pthread_mutex_unlock(&c->lock);
    if (again) {
        server_error(r, JR_INVALID_REQUEST,
                "already initialized: initialize comes once per connection (or HTTP session)");
        return;
    }
    if (!params || !json_object_object_get_ex(params, "protocolVersion", &v) ||
            !json_object_is_type(v, json_type_string)) {
        server_error(r, JR_INVALID_PARAMS, "initialize needs a protocolVersion");
        return;
    }
    asked = json_object_get_string(v);
    pthread_mutex_lock(&c->lock);
    /* the client's version when we speak it, else our newest */
    snprintf(c->protocol, sizeof(c->protocol), "%s", protocol_negotiate(asked, !c->http));
    pthread_mutex_unlock(&c->lock);
    res = json_object_new_object();
    json_object_object_add(res, "protocolVersion", json_object_new_string(c->protocol));
    json_object_object_add(res, "capabilities", capabilities(c->s, false));
    json_object_object_add(res, "serverInfo", server_info());
    json_object_object_add(res, "instructions", json_object_new_string(server_instructions));
    server_answer(r, res);
}

/* Every revision this server speaks, newest first: 2026-07-28 per
 * request, the others through initialize. */
static void m_discover(const struct mcp_server *s, const struct req *r)
{
    struct json_object *res = json_object_new_object(), *v = json_object_new_array();

    json_object_array_add(v, json_object_new_string(MCP_MODERN_VERSION));
    server_add_versions(v);
    json_object_object_add(res, "supportedVersions", v);
    json_object_object_add(res, "capabilities", capabilities(s, true));
    json_object_object_add(res, "instructions", json_object_new_string(server_instructions));
    server_answer(r, res);
}

static bool cacheable(const char *me)
{
    static const char *const methods[] = {"tools/list", "prompts/list", "resources/list",
            "resources/templates/list", "resources/read", "server/discover"};

    for (size_t i = 0; i < sizeof(methods) / sizeof(*methods); i++)
        if (strcmp(me, methods[i]) == 0)
            return true;
    return false;
}

static bool modern_dispatch(
        const struct mcp_server *s, const char *method, struct req *r, struct json_object *params)
{
    struct json_object *err = mcp_envelope_error(r->id, params);

    if (err) {
        server_send(r->sink, err);
        return true;
    }
    r->flags = R_MODERN | (cacheable(method) ? R_CACHEABLE : 0);
    if (strcmp(method, "server/discover") == 0) {
        m_discover(s, r);
        return true;
    }
    return false;
}

static void m_tools_list(struct mcp_conn *c, const struct req *r)
{
    struct mcp_server *s = c->s;
    struct json_object *res = json_object_new_object(), *a = json_object_new_array();

    bool v2024 = !(r->flags & R_MODERN) && strcmp(c->protocol, "2025-03-26") < 0;

    /* Deep copies: the entries are shared by every thread, and json-c's
     * reference counts are not atomic. */
    for (size_t i = 0; i < s->n_tools; i++) {
        struct json_object *t = NULL;

        if (json_object_deep_copy(s->tool_json[i], &t, NULL) != 0)
            continue;
        if (v2024) { /* 2024-11-05 has no annotations, titles or output schemas */
            json_object_object_del(t, "annotations");
            json_object_object_del(t, "title");
            json_object_object_del(t, "outputSchema");
        }
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

/* Takes ownership of *root (set to NULL) when the call is kept. */
static void m_tools_call(struct mcp_conn *c, struct json_object **root, const struct req *r,
        struct json_object *params)
{
    struct json_object *name = NULL, *args = NULL, *meta, *token = NULL;
    const struct mcp_tool *tool;
    struct mcp_call *call;

    if (!params || !json_object_object_get_ex(params, "name", &name) ||
            !json_object_is_type(name, json_type_string)) {
        server_error(r, JR_INVALID_PARAMS, "tools/call needs a tool name");
        return;
    }
    tool = find_tool(c->s, json_object_get_string(name));
    if (!tool) {
        server_error(r, JR_INVALID_PARAMS, "unknown tool");
        return;
    }
    if (json_object_object_get_ex(params, "arguments", &args) && args &&
            !json_object_is_type(args, json_type_object)) {
        server_error(r, JR_INVALID_PARAMS, "\"arguments\" must be an object");
        return;
    }
    if (json_object_object_get_ex(params, "_meta", &meta) &&
            json_object_is_type(meta, json_type_object))
        json_object_object_get_ex(meta, "progressToken", &token);
    call = calloc(1, sizeof(*call));
    if (!call || sbx_cancel_new(&call->cancel, NULL) < 0) {
        free(call);
        server_error(r, JR_INTERNAL_ERROR, "out of memory");
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
        server_call_run(call);
        return;
    }
    if (!server_enqueue(c->s, call)) {
        /* answered as a tool error: the client may retry later */
        atomic_store(&call->cancelled, true);
        server_answer(r, mcp_error_result("too many tool calls in flight; retry later"));
        server_call_run(call);
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
        server_error(r, JR_INVALID_PARAMS, "resources/read needs a uri");
        return;
    }
    u = json_object_get_string(uri);
    for (int pass = 0; pass < 2 && !contents; pass++) {
        for (size_t i = 0; i < c->s->n_res && !contents; i++) {
            const struct mcp_resource *e = &c->s->res[i];
            int rc;

            if (e->is_template != (pass == 1) || (!e->is_template && strcmp(e->uri, u) != 0))
                continue;
            rc = e->read(c->s, c->owner, u, &contents);
            if (rc < 0) {
                server_error(r, JR_INTERNAL_ERROR, "reading the resource failed");
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
        server_error(r, JR_INVALID_PARAMS, "prompts/get needs a name");
        return;
    }
    json_object_object_get_ex(params, "arguments", &args);
    for (size_t i = 0; i < c->s->n_prompts; i++) {
        if (strcmp(c->s->prompts[i].name, json_object_get_string(name)) != 0)
            continue;
        if (c->s->prompts[i].get(args, &res) < 0) {
            server_error(r, JR_INVALID_PARAMS, "bad prompt arguments");
            return;
        }
        server_answer(r, res);
        return;
    }
    server_error(r, JR_INVALID_PARAMS, "unknown prompt");
}

static void m_set_level(struct mcp_conn *c, const struct req *r, struct json_object *params)
{
    struct json_object *lv;
    int i = -1;

    if (params && json_object_object_get_ex(params, "level", &lv))
        i = server_level_index(json_object_get_string(lv));
    if (i < 0) {
        server_error(r, JR_INVALID_PARAMS, "unknown logging level");
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
        server_error(r, JR_INVALID_REQUEST, "not initialized: send initialize first");
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

/* Is a call with this id still running on c? Its cancel would be
 * ambiguous if another request took the same id. */
static bool id_in_flight(struct mcp_conn *c, struct json_object *id)
{
    bool found = false;

    pthread_mutex_lock(&c->lock);
    for (struct mcp_call *call = c->calls; call && !found; call = call->next_in_conn)
        found = ids_equal(call->id, id);
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* The lists come in one page: no cursor was ever handed out, so any
 * cursor is one this server does not know. */
static bool is_list(const char *me)
{
    return strcmp(me, "tools/list") == 0 || strcmp(me, "resources/list") == 0 ||
           strcmp(me, "resources/templates/list") == 0 || strcmp(me, "prompts/list") == 0;
}

/* A NUL byte in params would be cut short by C strings (a uri, a name, a
 * level): refuse it by name. A tool's arguments are the tool's to judge
 * (args.c): its refusal is a result a model can act on, and stdin and
 * file contents may carry NUL. */
static bool refuse_nul(const char *me, struct json_object *params, const struct req *r)
{
    bool call = strcmp(me, "tools/call") == 0;
    char msg[160];

    if (!json_object_is_type(params, json_type_object))
        return false;
    json_object_object_foreach(params, key, v)
    {
        if ((call && strcmp(key, "arguments") == 0) || !jr_holds_nul(v))
            continue;
        snprintf(msg, sizeof(msg), "params.%.60s must not hold a NUL byte (\\u0000)", key);
        server_error(r, JR_INVALID_PARAMS, msg);
        return true;
    }
    return false;
}

/* Requests; takes *root when the request lives on (tools/call). */
static void dispatch(struct mcp_conn *c, struct jr_msg *m, const struct mcp_sink *sink)
{
    const char *me = m->method;
    struct req r = {m->id, sink, 0};
    struct json_object *cursor;

    if (refuse_nul(me, m->params, &r))
        return;

    if (id_in_flight(c, m->id)) {
        server_error(&r, JR_INVALID_REQUEST, "a request with this id is still in flight");
        return;
    }

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
    if (is_list(me) && json_object_object_get_ex(m->params, "cursor", &cursor) && cursor) {
        server_error(&r, JR_INVALID_PARAMS, "unknown cursor: every list here is one page");
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
            server_error(&r, JR_INVALID_PARAMS, "cannot complete that");
            return;
        }
        server_answer(&r, res);
        return;
    }
    server_error(&r, JR_METHOD_NOT_FOUND, "method not found");
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
