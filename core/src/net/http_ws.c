/* SPDX-License-Identifier: MIT */
/*
 * http_ws.c: the WebSocket client lent to plugins (ABI 1.4, plugin.h's
 * ws_* operations): the opening handshake over http.c's upgrade, checked
 * by wsframe.c, then pump.c in WebSocket mode. What the plugin reads and
 * writes are the pump's packets (pump.h), one piece of a message each.
 * Calls on one connection come from one thread at a time (the plugin's);
 * the pump's thread is the only one on the network. Makes no policy
 * decisions; errors: struct sbx_err (plugin.h).
 */
#include "net/http_ws.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "net/http.h"
#include "net/pump.h"
#include "net/wsframe.h"

_Static_assert((unsigned)SBX_WS_TEXT == (unsigned)PUMP_WS_TEXT &&
                       (unsigned)SBX_WS_MORE == (unsigned)PUMP_WS_MORE &&
                       SBX_WS_PIECE_MAX == PUMP_WS_PIECE_MAX,
        "plugin.h and pump.h agree on the pieces");

#define PROTOCOLS_MAX 8

struct sbx_ws {
    struct sbx_conn *conn;
    char protocol[64];
    /* the packet being read, when the caller's buffer took only part */
    uint8_t packet[1 + PUMP_WS_PIECE_MAX];
    size_t off, len;
};

/* "Sec-WebSocket-Protocol: a, b": each a token, at most PROTOCOLS_MAX. */
static int protocols_line(const char *const *protocols, char *out, size_t len, struct sbx_err *err)
{
    size_t o = (size_t)snprintf(out, len, "Sec-WebSocket-Protocol: ");
    size_t n = 0;

    for (const char *const *p = protocols; p && *p; p++, n++) {
        size_t plen = strlen(*p);

        if (n == PROTOCOLS_MAX || plen == 0 || plen >= 64 ||
                strcspn(*p, " \t\r\n,;\"()<>@:/[]?={}\\") != plen || o + plen + 3 >= len)
            return sbx_err_fill(err, SBX_E_INVALID, EINVAL,
                    "ws_open: subprotocols must be 1 to %d tokens of at most 63 bytes",
                    PROTOCOLS_MAX);
        o += (size_t)snprintf(out + o, len - o, "%s%s", n ? ", " : "", *p);
    }
    if (n == 0)
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "ws_open: no subprotocol offered");
    return 0;
}

int http_ws_open(const struct sbx_http *req, const char *const *protocols, struct sbx_ws **ret_ws,
        struct sbx_err *err)
{
    cleanup_free char *head = malloc(HTTP_HEAD_MAX);
    cleanup_free struct sbx_ws *ws = calloc(1, sizeof(*ws));
    char key[WS_KEY_LEN + 1], key_line[64], proto_line[640], why[256];
    const char *more[] = {key_line, "Sec-WebSocket-Version: 13", proto_line, NULL};
    const char *chosen = NULL;
    uint8_t nonce[16];
    long status = 0;

    if (!head || !ws)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (!req || !req->method || strcmp(req->method, "GET") != 0 || req->body)
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "ws_open: the request must be a GET");
    if (protocols_line(protocols, proto_line, sizeof(proto_line), err) < 0)
        return err->rc;
    if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
        return sbx_err_fill(err, SBX_E_IO, errno, "getrandom: %s", strerror(errno));
    ws_key_from_random(nonce, key);
    snprintf(key_line, sizeof(key_line), "Sec-WebSocket-Key: %s", key);
    if (http_upgrade_start(req, "websocket", more, &ws->conn, head, &status, err) < 0)
        return err->rc;
    if (ws_check_response(head, key, protocols, &chosen, why, sizeof(why)) < 0) {
        http_conn_free(ws->conn);
        return sbx_err_fill(err, SBX_E_BACKEND, EPROTO, "%s %s: %s", req->method, req->path, why);
    }
    snprintf(ws->protocol, sizeof(ws->protocol), "%s", chosen ? chosen : "");
    if (http_conn_start_pump(ws->conn, PUMP_WS, err) < 0) {
        http_conn_free(ws->conn);
        return err->rc;
    }
    *ret_ws = steal_ptr(&ws);
    return 0;
}

const char *http_ws_protocol(const struct sbx_ws *ws)
{
    return ws->protocol;
}

int http_ws_fd(struct sbx_ws *ws)
{
    return http_conn_fd(ws->conn);
}

int64_t http_ws_recv(struct sbx_ws *ws, void *buf, size_t len, uint32_t *ret_flags)
{
    size_t n;

    if (ws->len == 0) {
        ssize_t r = recv(http_conn_fd(ws->conn), ws->packet, sizeof(ws->packet), MSG_DONTWAIT);

        if (r < 0)
            return -1;
        if (r == 0) {
            errno = EPIPE;
            return -1;
        }
        ws->off = 1, ws->len = (size_t)r - 1;
        if (ws->len == 0) { /* an empty message */
            *ret_flags = ws->packet[0] & (SBX_WS_TEXT | SBX_WS_MORE);
            return 0;
        }
    }
    n = len < ws->len ? len : ws->len;
    memcpy(buf, ws->packet + ws->off, n);
    ws->off += n, ws->len -= n;
    *ret_flags = (ws->packet[0] & SBX_WS_TEXT) |
                 ((ws->len > 0 || (ws->packet[0] & SBX_WS_MORE)) ? SBX_WS_MORE : 0);
    return (int64_t)n;
}

static int send_packet(struct sbx_ws *ws, uint8_t flags, const void *buf, size_t len)
{
    struct iovec iov[2] = {{.iov_base = &flags, .iov_len = 1},
            {.iov_base = (void *)(uintptr_t)buf, .iov_len = len}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};

    return sendmsg(http_conn_fd(ws->conn), &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -1 : 0;
}

int http_ws_send(struct sbx_ws *ws, const void *buf, size_t len, uint32_t flags)
{
    if (len > SBX_WS_PIECE_MAX || (flags & ~(uint32_t)(SBX_WS_TEXT | SBX_WS_MORE))) {
        errno = len > SBX_WS_PIECE_MAX ? EMSGSIZE : EINVAL;
        return -1;
    }
    return send_packet(ws, (uint8_t)flags, buf, len);
}

int http_ws_close(struct sbx_ws *ws, uint32_t code)
{
    uint8_t be[2] = {(uint8_t)(code >> 8), (uint8_t)code};

    return send_packet(ws, PUMP_WS_CLOSE, be, sizeof(be));
}

uint32_t http_ws_close_status(struct sbx_ws *ws, char *reason, size_t len)
{
    return pump_ws_close_status(http_conn_pump(ws->conn), reason, len);
}

void http_ws_free(struct sbx_ws *ws)
{
    if (ws) {
        http_conn_free(ws->conn);
        free(ws);
    }
}
