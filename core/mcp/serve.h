/* SPDX-License-Identifier: MIT */
/*
 * serve.h: the MCP transports, as the CLI starts them. Each runs until its
 * client is gone (stdio: end of input; returns 0) or SIGINT/SIGTERM, then
 * cancels what still runs. On a signal every call in flight is first
 * answered (a cancelled result; up to MCP_SHUTDOWN_GRACE_MS) and the
 * return is 128 + the signal's number, the shell's convention, which the
 * CLI exits with. -1 when it could not start.
 */
#ifndef SBX_MCP_SERVE_H
#define SBX_MCP_SERVE_H

#include <llm-sandbox/sbx.h>

struct mcp_options;

int mcp_serve_stdio(struct sbx_runtime *rt, const struct mcp_options *opt);
/* addr: "127.0.0.1:8080", "[::1]:8080", "localhost:0" (any free port; the
 * URL is printed on stderr). Runs until SIGINT or SIGTERM. */
int mcp_serve_http(struct sbx_runtime *rt, const struct mcp_options *opt, const char *addr);
/* Open libmicrohttpd, which only --http needs (core/dl/dlib.h), before any
 * other thread exists: 0, or -1 after saying why on stderr. */
int mcp_http_open(void);
/* A unix stream socket at path (sbx_socket_path() gives the default): a
 * connection, with its own initialize, per client of the same user (or
 * root), up to 64 at once. Runs until SIGINT or SIGTERM, then removes the
 * socket. -1, after saying why on stderr, when it cannot listen (another
 * server listens there, the directory is not private, ...). With
 * listen_fd >= 0 (socket activation: sbx_socket_activation()) that socket
 * is served instead, and left in place at the end (systemd owns it);
 * path is then only for messages. */
int mcp_serve_unix(
        struct sbx_runtime *rt, const struct mcp_options *opt, const char *path, int listen_fd);

#endif
