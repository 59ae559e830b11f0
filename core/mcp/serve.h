/* SPDX-License-Identifier: MIT */
/*
 * serve.h: the MCP transports, as the CLI starts them. Each runs until its
 * client is gone (stdio: end of input) or a signal, then cancels what still
 * runs and returns 0; -1 when it could not start.
 */
#ifndef SBX_MCP_SERVE_H
#define SBX_MCP_SERVE_H

#include <llm-sandbox/sbx.h>

struct mcp_options;

int mcp_serve_stdio(struct sbx_runtime *rt, const struct mcp_options *opt);
/* addr: "127.0.0.1:8080", "[::1]:8080", "localhost:0" (any free port; the
 * URL is printed on stderr). Runs until SIGINT or SIGTERM. */
int mcp_serve_http(struct sbx_runtime *rt, const struct mcp_options *opt, const char *addr);

#endif
