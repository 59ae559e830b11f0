/* SPDX-License-Identifier: MIT */
/*
 * http.h: the core's HTTP client (libcurl), lent to plugins through the
 * host table (ABI 1.2): one request with a capped body, and an upgraded
 * connection for hijacked streams such as Docker's attach. Makes no policy
 * decisions. Errors: the plugin ABI's struct sbx_err, filled here.
 */
#ifndef SBX_HTTP_H
#define SBX_HTTP_H

#include <llm-sandbox/plugin.h>

#include "net/pump.h"

/* Open libcurl and call curl_global_init: on the main thread, before any
 * worker starts (STYLE C1); the loader does, for a plugin whose manifest
 * lists requires.host: [http]. Until then every request fails. */
int http_open(struct sbx_err *err);

int http_request(const struct sbx_http *req, struct sbx_http_resp *resp, struct sbx_err *err);
int http_upgrade(const struct sbx_http *req, struct sbx_conn **ret_conn, struct sbx_err *err);

/* For http_ws.c: connect, send req as an upgrade to proto (NULL: Docker's
 * "tcp") with the extra header lines more (NULL-terminated, or NULL), and
 * read the response head into head (HTTP_HEAD_MAX bytes) and its status.
 * A status other than 101 or 200 is SBX_E_BACKEND with the body's start.
 * The connection is not pumped yet. (transfer full) */
#define HTTP_HEAD_MAX 8192
int http_upgrade_start(const struct sbx_http *req, const char *proto, const char *const *more,
        struct sbx_conn **ret_conn, char *head, long *ret_status, struct sbx_err *err);
/* Start the pump thread of c (pump.h): from now on only it uses the
 * network; c's fd is the plugin's end. */
int http_conn_start_pump(struct sbx_conn *c, enum pump_mode mode, struct sbx_err *err);
struct pump *http_conn_pump(struct sbx_conn *c); /* (transfer none) */
int http_conn_fd(struct sbx_conn *c);
int64_t http_conn_read(struct sbx_conn *c, void *buf, size_t len);
int64_t http_conn_write(struct sbx_conn *c, const void *buf, size_t len);
int http_conn_shutdown_write(struct sbx_conn *c);
void http_conn_free(struct sbx_conn *c);

#endif
