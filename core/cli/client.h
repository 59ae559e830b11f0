/* SPDX-License-Identifier: MIT */
/*
 * client.h: a small blocking MCP client over a unix socket, for the
 * `session` subcommands: connect, initialize, one tools/call at a time.
 * Failures are printed on stderr ("llm-sandbox: ...", naming the socket)
 * by the function that meets them; callers only choose the exit code.
 */
#ifndef SBX_CLI_CLIENT_H
#define SBX_CLI_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct json_object;

struct mcp_client {
    int fd;
    const char *path; /* borrowed: for messages */
    char *buf;        /* what was read and not yet taken as a line */
    size_t len, cap;
    int64_t next_id;
};

/* Connect to the server at path and do the handshake (initialize, then
 * notifications/initialized). 0, or -1 after saying why. */
int client_open(struct mcp_client *c, const char *path);
void client_close(struct mcp_client *c);

/* tools/call tool with args (transfer full; NULL: no arguments) and wait
 * for its answer, skipping notifications. 0 and *ret_result (the
 * CallToolResult, transfer full), or -1 after saying why (a JSON-RPC
 * error, the connection lost). */
int client_call_tool(struct mcp_client *c, const char *tool, struct json_object *args,
        struct json_object **ret_result);

#endif
