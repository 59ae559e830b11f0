/* SPDX-License-Identifier: MIT */
/*
 * server_priv.h: what server.c (the protocol core) and modern.c (revision
 * 2026-07-28) share; no other file includes it. A request being answered
 * and the shape its answer takes, the server's identity, capabilities and
 * logging levels (server.c), and the hooks server.c calls for a request
 * that carries the 2026-07-28 envelope (modern.c). Transports use mcp.h.
 */
#ifndef SBX_MCP_SERVER_PRIV_H
#define SBX_MCP_SERVER_PRIV_H

#include <json-c/json.h>
#include <stdbool.h>

struct mcp_server;
struct mcp_sink;

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

/* ---- server.c ------------------------------------------------------------ */

/* Send one message (o: transfer full; NULL, out of memory, sends nothing),
 * with any invalid UTF-8 in it replaced. */
void server_send(const struct mcp_sink *sink, struct json_object *o);
/* Answer r with result (transfer full; NULL: an empty object), in the
 * shape r->flags asks for. */
void server_answer(const struct req *r, struct json_object *result);
/* The Implementation object naming this server. (transfer full) */
struct json_object *server_info(void);
/* The capabilities object; modern: as 2026-07-28 states them. (transfer
 * full) */
struct json_object *server_capabilities(const struct mcp_server *s, bool modern);
/* Append the versions initialize negotiates, newest first. */
void server_add_versions(struct json_object *array);
/* "debug" (0) ... "emergency" (7), or -1 for anything else (NULL too). */
int server_level_index(const char *level);

extern const char server_instructions[];

/* ---- modern.c ------------------------------------------------------------ */

/* Decorate a 2026-07-28 result: resultType, ttlMs and cacheScope when
 * cacheable, the server's identity in _meta. (result: transfer full; NULL
 * is an empty result) (transfer full) */
struct json_object *modern_result(struct json_object *result, bool cacheable);
/* A request whose params carry the envelope (mcp_envelope_version() is not
 * NULL): answers it and returns true when the envelope is refused or the
 * method is server/discover; otherwise sets r->flags for the 2026-07-28
 * shape and returns false, for the method table to answer. */
bool modern_dispatch(
        const struct mcp_server *s, const char *method, struct req *r, struct json_object *params);
/* The level the envelope in params asks logs to be sent at, or LOG_NONE. */
int modern_log_level(struct json_object *params);

#endif
