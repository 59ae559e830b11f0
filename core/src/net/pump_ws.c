/* SPDX-License-Identifier: MIT */
/*
 * pump_ws.c: the WebSocket client's moving parts on the pump's thread.
 * Network bytes go through wsframe.c's decoder; each whole message goes to
 * the plugin as packets of at most PUMP_WS_PIECE_MAX bytes, and the
 * decoder is fed again only once the last one is out (its data pointer is
 * valid until then). The plugin's packets become masked frames (a fresh
 * random key per frame, as RFC 6455 section 5.3 asks). Pings are answered,
 * a peer's Close is echoed, a protocol error is answered with a Close
 * carrying its code; after a Close nothing more is framed. Frames never
 * interleave: out holds whole frames, appended only when they fit.
 */
#include "net/pump_ws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net/pump.h"
#include "net/wsframe.h"

#define CLOSE_FRAME_MAX (WS_HEADER_MAX + WS_CONTROL_MAX)

struct pump_ws {
    struct ws_decoder dec;
    /* the message being handed to the plugin */
    const uint8_t *msg;
    size_t msg_len, msg_off;
    bool msg_text, pending;
    /* the plugin's side */
    bool user_frag; /* its last packet said MORE: the next is a continuation */
    bool user_shut; /* the end was passed to the plugin */
    uint8_t piece[1 + PUMP_WS_PIECE_MAX];
    /* closing */
    bool sent_close, recv_close, local_error;
    uint16_t code;
    char reason[WS_CONTROL_MAX + 1];
    /* mask keys, drawn in batches */
    uint8_t keys[256];
    size_t keys_left;
};

struct pump_ws *pump_ws_new(void)
{
    struct pump_ws *w = calloc(1, sizeof(*w));

    if (w && ws_decoder_init(&w->dec, PUMP_WS_MSG_MAX) < 0) {
        free(w);
        return NULL;
    }
    return w;
}

void pump_ws_free(struct pump_ws *w)
{
    if (w) {
        ws_decoder_done(&w->dec);
        free(w);
    }
}

static const uint8_t *mask_key(struct pump_ws *w)
{
    if (w->keys_left < 4) {
        ssize_t n = getrandom(w->keys, sizeof(w->keys), 0);

        /* getrandom on 256 bytes does not fail once the pool is ready; if
         * it ever did, the keys would still differ frame to frame */
        w->keys_left = n == (ssize_t)sizeof(w->keys) ? sizeof(w->keys) : 0;
        if (w->keys_left == 0) {
            for (size_t i = 0; i < sizeof(w->keys); i++)
                w->keys[i] = (uint8_t)(w->keys[i] * 31u + i + 7u);
            w->keys_left = sizeof(w->keys);
        }
    }
    w->keys_left -= 4;
    return w->keys + w->keys_left;
}

/* Append one frame (header, masked payload) to out; false when it does not fit. */
static bool put_frame(struct pump_ws *w, struct pump_ring *out, unsigned opcode, bool fin,
        const uint8_t *data, size_t len)
{
    const uint8_t *key;
    size_t hlen;

    pump_ring_compact(out);
    if (out->cap - out->len < WS_HEADER_MAX + len)
        return false;
    key = mask_key(w);
    hlen = ws_frame_header(out->buf + out->len, opcode, fin, len, key);
    if (len)
        memcpy(out->buf + out->len + hlen, data, len);
    ws_mask(out->buf + out->len + hlen, len, key, 0);
    out->len += hlen + len;
    return true;
}

static void send_close(struct pump_ws *w, struct pump_ring *out, uint16_t code)
{
    uint8_t payload[WS_CONTROL_MAX];
    size_t n = 0;

    if (w->sent_close)
        return;
    if (ws_close_payload(code, NULL, payload, &n) < 0)
        (void)ws_close_payload(WS_CLOSE_NORMAL, NULL, payload, &n);
    w->sent_close = put_frame(w, out, WS_OP_CLOSE, true, payload, n);
}

/* Hand the pending message to the plugin, piece by piece, until it blocks. */
static void deliver(struct pump_ws *w, int fd)
{
    while (w->pending) {
        size_t left = w->msg_len - w->msg_off,
               n = left < PUMP_WS_PIECE_MAX ? left : PUMP_WS_PIECE_MAX;
        uint8_t flags = (uint8_t)((w->msg_text ? PUMP_WS_TEXT : 0) | (n < left ? PUMP_WS_MORE : 0));
        struct iovec iov[2] = {{.iov_base = &flags, .iov_len = 1},
                {.iov_base = (void *)(uintptr_t)(w->msg + w->msg_off), .iov_len = n}};
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = n ? 2 : 1};
        ssize_t r = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return;
        if (r < 0) { /* the plugin closed its end: nobody reads this */
            w->pending = false;
            return;
        }
        w->msg_off += n;
        w->pending = w->msg_off < w->msg_len;
    }
}

/* The peer's frames, while nothing waits for the plugin and out has room
 * for a control frame. */
static void decode(struct pump_ws *w, struct pump_ring *in, struct pump_ring *out, int fd)
{
    while (!w->pending && !w->recv_close && !w->local_error && in->len > 0) {
        struct ws_event ev;
        size_t used = 0;
        int r;

        pump_ring_compact(out);
        if (out->cap - out->len < CLOSE_FRAME_MAX)
            return;
        r = ws_decoder_feed(&w->dec, in->buf + in->off, in->len, &used, &ev);
        if (r < 0) {
            w->local_error = true;
            w->code = ev.close_code;
            snprintf(w->reason, sizeof(w->reason), "%s", ev.why ? ev.why : "protocol error");
            send_close(w, out, ev.close_code);
            return;
        }
        if (r == 0)
            used = in->len;
        in->off += used;
        in->len -= used;
        if (r == 0)
            return;
        switch (ev.type) {
        case WS_EVENT_MESSAGE:
            w->msg = ev.data, w->msg_len = ev.len, w->msg_off = 0;
            w->msg_text = ev.opcode == WS_OP_TEXT;
            w->pending = true;
            deliver(w, fd);
            break;
        case WS_EVENT_PING: (void)put_frame(w, out, WS_OP_PONG, true, ev.data, ev.len); break;
        case WS_EVENT_CLOSE:
            w->recv_close = true;
            w->code = ev.close_code;
            snprintf(w->reason, sizeof(w->reason), "%.*s", (int)ev.len, (const char *)ev.data);
            send_close(w, out, ev.close_code);
            break;
        case WS_EVENT_PONG:
        case WS_EVENT_NONE:
        case WS_EVENT_ERROR: break;
        }
    }
}

/* The plugin's packets, while out has room for a whole piece's frame. */
static void take_user(struct pump_ws *w, struct pump_ring *out, int fd, bool *user_eof)
{
    while (pump_ws_wants_user(w, out)) {
        ssize_t n = recv(fd, w->piece, sizeof(w->piece), MSG_DONTWAIT);
        uint8_t flags;
        unsigned opcode;

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            *user_eof = true;
            send_close(w, out, WS_CLOSE_NORMAL);
            return;
        }
        flags = w->piece[0];
        if (flags & PUMP_WS_CLOSE) {
            uint16_t code = WS_CLOSE_NORMAL;

            if (n >= 3)
                code = (uint16_t)(w->piece[1] << 8 | w->piece[2]);
            send_close(w, out, code);
            continue;
        }
        opcode = w->user_frag                  ? WS_OP_CONTINUATION
                 : (flags & PUMP_WS_TEXT) != 0 ? WS_OP_TEXT
                                               : WS_OP_BINARY;
        w->user_frag = (flags & PUMP_WS_MORE) != 0;
        (void)put_frame(w, out, opcode, !w->user_frag, w->piece + 1, (size_t)n - 1);
    }
}

void pump_ws_step(struct pump_ws *w, struct pump_ring *in, struct pump_ring *out, int fd,
        bool readable, const bool *net_eof, bool *user_eof)
{
    deliver(w, fd);
    decode(w, in, out, fd);
    if (readable)
        take_user(w, out, fd, user_eof);
    /* the end, once the plugin has everything that came before it */
    if (!w->pending && !w->user_shut &&
            (w->recv_close || w->local_error || (*net_eof && in->len == 0))) {
        shutdown(fd, SHUT_WR);
        w->user_shut = true;
    }
}

bool pump_ws_wants_user(const struct pump_ws *w, const struct pump_ring *out)
{
    return !w->sent_close && out->cap - out->len >= WS_HEADER_MAX + PUMP_WS_PIECE_MAX + 1;
}

bool pump_ws_has_output(const struct pump_ws *w)
{
    return w->pending;
}

bool pump_ws_done(const struct pump_ws *w, const struct pump_ring *out, bool net_eof)
{
    return w->user_shut &&
           (net_eof || (w->sent_close && (w->recv_close || w->local_error) && out->len == 0));
}

uint32_t pump_ws_status(const struct pump_ws *w, bool failed, char *reason, size_t len)
{
    if (w->recv_close || w->local_error) {
        snprintf(reason, len, "%s", w->reason);
        return w->code;
    }
    snprintf(reason, len, "%s",
            failed ? "the connection failed" : "the connection closed without a Close frame");
    return 1006;
}
