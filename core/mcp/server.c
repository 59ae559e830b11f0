/* SPDX-License-Identifier: MIT */
/*
 * server.c: the MCP server's state, transport-free (mcp.h): the tables,
 * connections, sending (every message valid UTF-8), answers in the shape
 * the request's revision wants, what a tool may do with its call
 * (progress, logs, cancellation), and the bounded worker pool tool calls
 * run on. The method table is methods.c; server_priv.h says who shares
 * what, and which thread does what.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "jsonrpc.h"
#include "mcp.h"
#include "server_priv.h"

#define MAX_QUEUED 256 /* tool calls waiting for a worker */

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

void server_answer(const struct req *r, struct json_object *result)
{
    if (r->flags & R_MODERN)
        result = modern_result(result, r->flags & R_CACHEABLE);
    server_send(r->sink, jr_result(r->id, result));
}

void server_error(const struct req *r, int code, const char *msg)
{
    server_send(r->sink, jr_error(r->id, code, msg, NULL));
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

const char *mcp_call_owner(const struct mcp_call *call)
{
    return call->conn->owner[0] ? call->conn->owner : NULL;
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

void mcp_call_notice(void *userdata, enum sbx_notice level, const char *msg)
{
    struct mcp_call *call = *(struct mcp_call **)userdata;

    mcp_call_log(
            call, level == SBX_NOTICE_WARNING ? "warning" : "info", json_object_new_string(msg));
}

static void call_free(struct mcp_call *call)
{
    json_object_put(call->root);
    sbx_cancel_free(call->cancel);
    free(call);
}

void server_call_run(struct mcp_call *call)
{
    struct mcp_conn *c = call->conn;
    struct json_object *result = NULL;
    int r = 0;

    if (atomic_load(&call->shutdown))
        result = mcp_error_result("cancelled: the server is shutting down (it received a "
                                  "signal) before this call started");
    else if (!mcp_call_cancelled(call))
        r = call->tool->fn(call, call->args, &result);
    /* a call the server itself ends is answered (its result says
     * cancelled); one the client cancelled is not */
    if (!mcp_call_cancelled(call) || atomic_load(&call->shutdown)) {
        struct req to = {call->id, &call->sink, call->flags};

        if (r < 0 || !result)
            server_error(&to, JR_INTERNAL_ERROR, "the tool failed internally");
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
        server_call_run(call);
    }
}

/* ---- methods ----------------------------------------------------------- */

bool server_enqueue(struct mcp_server *s, struct mcp_call *call)
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

/* ---- lifetime ---------------------------------------------------------- */

/* "c-" and 128 random bits in hex: an owner no other connection has. */
static int owner_new(char *out, size_t n)
{
    unsigned char rnd[16];

    if (n < 3 + 2 * sizeof(rnd) || getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -1;
    memcpy(out, "c-", 2);
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(out + 2 + 2 * i, 3, "%02x", rnd[i]);
    return 0;
}

struct mcp_conn *mcp_conn_new(struct mcp_server *s)
{
    struct mcp_conn *c = calloc(1, sizeof(*c));

    if (!c || owner_new(c->owner, sizeof(c->owner)) < 0) {
        free(c);
        return NULL;
    }
    c->owns_sessions = true;
    c->s = s;
    c->log_level = 1; /* info */
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->idle, NULL);
    return c;
}

void mcp_conn_set_owner(struct mcp_conn *c, const char *owner)
{
    snprintf(c->owner, sizeof(c->owner), "%s", owner ? owner : "");
    c->owns_sessions = false;
}

void mcp_conn_set_http(struct mcp_conn *c)
{
    c->http = true;
}

void mcp_conn_cancel_sink(struct mcp_conn *c, const void *ud)
{
    pthread_mutex_lock(&c->lock);
    for (struct mcp_call *call = c->calls; call; call = call->next_in_conn) {
        if (call->sink.ud != ud)
            continue;
        atomic_store(&call->cancelled, true);
        sbx_cancel_fire(call->cancel);
    }
    pthread_mutex_unlock(&c->lock);
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

void mcp_conn_shutdown(struct mcp_conn *c)
{
    pthread_mutex_lock(&c->lock);
    for (struct mcp_call *call = c->calls; call; call = call->next_in_conn) {
        if (!atomic_load(&call->cancelled))
            atomic_store(&call->shutdown, true);
        sbx_cancel_fire(call->cancel);
    }
    pthread_mutex_unlock(&c->lock);
}

long long mcp_monotonic_ms(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

bool mcp_conn_wait_idle(struct mcp_conn *c, long long deadline_ms)
{
    bool idle;

    pthread_mutex_lock(&c->lock);
    while (c->calls) {
        struct timespec until;
        long long left = deadline_ms - mcp_monotonic_ms();

        if (left <= 0)
            break;
        /* the condition waits on CLOCK_REALTIME: wake at least every 100 ms */
        clock_gettime(CLOCK_REALTIME, &until);
        left = left < 100 ? left : 100;
        until.tv_nsec += (long)(left % 1000) * 1000000L;
        until.tv_sec += (time_t)(left / 1000) + until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&c->idle, &c->lock, &until);
    }
    idle = c->calls == NULL;
    pthread_mutex_unlock(&c->lock);
    return idle;
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
    /* its client is gone, and with it the only one who may use them */
    if (c->owns_sessions)
        sbx_sessions_close_owner(c->s->rt, c->owner);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->idle);
    free(c);
    return NULL;
}

const char *mcp_conn_protocol(const struct mcp_conn *c)
{
    return c->protocol[0] ? c->protocol : NULL;
}

/* A tools/list entry. A tool that may install libraries reaches package
 * registries whatever the sandbox's network: openWorldHint. */
static struct json_object *tool_entry(const struct mcp_tool *t)
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
    json_object_object_add(
            ann, "destructiveHint", json_object_new_boolean(t->flags & MCP_TOOL_DESTRUCTIVE));
    json_object_object_add(
            ann, "idempotentHint", json_object_new_boolean((t->flags & MCP_TOOL_READ_ONLY) != 0));
    json_object_object_add(
            ann, "openWorldHint", json_object_new_boolean(t->flags & MCP_TOOL_OPEN_WORLD));
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
        struct json_object *e = tool_entry(&t[i]);

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

int server_new(struct sbx_runtime *rt, const struct mcp_options *opt, struct mcp_server **ret)
{
    struct mcp_server *s = calloc(1, sizeof(*s));
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = opt && opt->workers ? opt->workers : (unsigned)(cpus > 2 ? cpus : 2);

    if (!s)
        return -1;
    s->rt = rt;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
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
