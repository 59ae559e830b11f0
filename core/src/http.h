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

/* Open libcurl and call curl_global_init: on the main thread, before any
 * worker starts (STYLE C1); the loader does, for a plugin whose manifest
 * lists requires.host: [http]. Until then every request fails. */
int http_open(struct sbx_err *err);

int http_request(const struct sbx_http *req, struct sbx_http_resp *resp, struct sbx_err *err);
int http_upgrade(const struct sbx_http *req, struct sbx_conn **ret_conn, struct sbx_err *err);
int http_conn_fd(struct sbx_conn *c);
int64_t http_conn_read(struct sbx_conn *c, void *buf, size_t len);
int64_t http_conn_write(struct sbx_conn *c, const void *buf, size_t len);
int http_conn_shutdown_write(struct sbx_conn *c);
void http_conn_free(struct sbx_conn *c);

#endif
