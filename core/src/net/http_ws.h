/* SPDX-License-Identifier: MIT */
/*
 * http_ws.h: the WebSocket client behind the host table's ws_* operations
 * (ABI 1.4; plugin.h has their contracts, which these follow exactly).
 * Makes no policy decisions. Errors: struct sbx_err (plugin.h).
 */
#ifndef SBX_HTTP_WS_H
#define SBX_HTTP_WS_H

#include <llm-sandbox/plugin.h>

int http_ws_open(const struct sbx_http *req, const char *const *protocols, struct sbx_ws **ret_ws,
        struct sbx_err *err);
const char *http_ws_protocol(const struct sbx_ws *ws);
int http_ws_fd(struct sbx_ws *ws);
int64_t http_ws_recv(struct sbx_ws *ws, void *buf, size_t len, uint32_t *ret_flags);
int http_ws_send(struct sbx_ws *ws, const void *buf, size_t len, uint32_t flags);
int http_ws_close(struct sbx_ws *ws, uint32_t code);
uint32_t http_ws_close_status(struct sbx_ws *ws, char *reason, size_t len);
void http_ws_free(struct sbx_ws *ws);

#endif
