/* SPDX-License-Identifier: MIT */
/*
 * server_priv.h: what the server's own files share; tools and transports
 * use mcp.h. Top down: catalog.c (the server with its tables), methods.c
 * (the method table), server.c (state, sending, calls and the worker
 * pool), protocol.c (versions, identity, levels, the 2026-07-28 envelope
 * and result shape).
 *
 * Threads: the transport's thread calls mcp_handle(); tool calls flagged
 * MCP_TOOL_WORKER run on the pool. A connection's in-flight calls are
 * listed under its mutex so a cancel can find them; the pool's queue has
 * its own mutex. Nothing else is shared.
 */
#ifndef SBX_MCP_SERVER_PRIV_H
#define SBX_MCP_SERVER_PRIV_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "mcp.h"

#define LOG_NONE 8 /* above every level: no notifications/message */

/* Where a request's answer goes, and in which era's shape. */
enum {
    R_MODERN = 1u << 0,    /* 2026-07-28: resultType, serverInfo in _meta */
    R_CACHEABLE = 1u << 1, /* and ttlMs, cacheScope */
};

struct req {
    struct json_object *id; /* borrowed */
    const struct mcp_sink *sink;
    unsigned flags;
};

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
    char owner[48];         /* of its sandbox sessions; "": none */
    bool owns_sessions;     /* owner is this connection's own: close them with it */
    bool http;              /* Streamable HTTP: no 2024-11-05 */
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
    atomic_bool shutdown; /* the server is ending: answer (cancelled) all the same */
    struct mcp_call *next_queued, *next_in_conn;
};

/* ---- server.c ------------------------------------------------------------ */

/* A server with its worker pool and no tables yet (catalog.c adds them). */
int server_new(struct sbx_runtime *rt, const struct mcp_options *opt, struct mcp_server **ret);
/* Send one message (o: transfer full; NULL, out of memory, sends nothing),
 * with any invalid UTF-8 in it replaced. */
void server_send(const struct mcp_sink *sink, struct json_object *o);
/* Answer r with result (transfer full; NULL: an empty object), in the
 * shape r->flags asks for. */
void server_answer(const struct req *r, struct json_object *result);
/* Answer r with a JSON-RPC error. */
void server_error(const struct req *r, int code, const char *msg);
/* Queue a tool call for the pool; false when the queue is full. */
bool server_enqueue(struct mcp_server *s, struct mcp_call *call);
/* Run the tool and answer (unless the client cancelled: then no answer is
 * sent, as the specification asks), then retire the call. */
void server_call_run(struct mcp_call *call);

/* ---- protocol.c ---------------------------------------------------------- */

extern const char server_instructions[];
/* The Implementation object naming this server. (transfer full) */
struct json_object *server_info(void);
/* Append the versions initialize negotiates, newest first. */
void server_add_versions(struct json_object *array);
/* The version initialize answers: asked when spoken here, else the newest;
 * 2024-11-05 only when legacy_ok (not over Streamable HTTP). */
const char *protocol_negotiate(const char *asked, bool legacy_ok);
/* "debug" (0) ... "emergency" (7), or -1 for anything else (NULL too). */
int server_level_index(const char *level);

/* Decorate a 2026-07-28 result: resultType, ttlMs and cacheScope when
 * cacheable, the server's identity in _meta. (result: transfer full; NULL
 * is an empty result) (transfer full) */
struct json_object *modern_result(struct json_object *result, bool cacheable);
/* The level the envelope in params asks logs to be sent at, or LOG_NONE. */
int modern_log_level(struct json_object *params);

#endif
