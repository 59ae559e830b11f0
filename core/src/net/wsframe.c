/* SPDX-License-Identifier: MIT */
/*
 * wsframe.c: WebSocket frames (RFC 6455 section 5): the client's encoder,
 * which masks, and the decoder for server frames, a state machine fed
 * arbitrary slices that reassembles fragmented messages into the buffer
 * it allocated at init. Pure: no I/O, no threads, no allocation after
 * init. The handshake is in wshandshake.c; the contract of every function
 * is in wsframe.h. Return codes: enum sbx_rc (llm-sandbox/plugin.h).
 */
#include "net/wsframe.h"

#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

#include "base/util.h"

#define WS_FIN  0x80u
#define WS_RSV  0x70u /* RSV1-3: only extensions may set them */
#define WS_MASK 0x80u

static bool opcode_is_known(unsigned op)
{
    return op == WS_OP_CONTINUATION || op == WS_OP_TEXT || op == WS_OP_BINARY ||
           op == WS_OP_CLOSE || op == WS_OP_PING || op == WS_OP_PONG;
}

static bool opcode_is_control(unsigned op)
{
    return (op & 0x8u) != 0;
}

/* A code an endpoint may put in a close frame: the registered ones except
 * 1004 (reserved), 1005, 1006 and 1015 (never on the wire), and the
 * ranges for libraries and applications. */
static bool close_code_is_valid(unsigned code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

/* ---- Encoding ---- */

size_t ws_frame_header(uint8_t out[WS_HEADER_MAX], unsigned opcode, bool fin, uint64_t payload_len,
        const uint8_t mask_key[4])
{
    uint8_t mask = mask_key ? (uint8_t)WS_MASK : 0;
    size_t n = 2;

    if (!opcode_is_known(opcode) || (payload_len >> 63) != 0)
        return 0;
    out[0] = (uint8_t)((fin ? WS_FIN : 0u) | opcode);
    if (payload_len < 126) {
        out[1] = (uint8_t)(mask | payload_len);
    } else if (payload_len <= 0xFFFF) {
        out[1] = (uint8_t)(mask | 126u);
        out[2] = (uint8_t)(payload_len >> 8);
        out[3] = (uint8_t)payload_len;
        n = 4;
    } else {
        out[1] = (uint8_t)(mask | 127u);
        for (size_t i = 0; i < 8; i++)
            out[2 + i] = (uint8_t)(payload_len >> (56 - 8 * i));
        n = 10;
    }
    if (mask_key) {
        memcpy(out + n, mask_key, 4);
        n += 4;
    }
    return n;
}

void ws_mask(uint8_t *data, size_t len, const uint8_t mask_key[4], uint64_t offset)
{
    for (size_t i = 0; i < len; i++)
        data[i] ^= mask_key[(offset + i) & 3u];
}

int ws_frame_encode(const uint8_t *payload, size_t len, unsigned opcode, const uint8_t key[4],
        uint8_t *out, size_t out_cap, size_t *ret_len)
{
    uint8_t hdr[WS_HEADER_MAX];
    size_t hlen;

    if (opcode_is_control(opcode) && len > WS_CONTROL_MAX)
        return SBX_E_INVALID;
    hlen = ws_frame_header(hdr, opcode, true, len, key);
    if (hlen == 0)
        return SBX_E_INVALID;
    if (out_cap < hlen || len > out_cap - hlen)
        return SBX_E_LIMIT;
    memcpy(out, hdr, hlen);
    if (len > 0) {
        memcpy(out + hlen, payload, len);
        if (key)
            ws_mask(out + hlen, len, key, 0);
    }
    *ret_len = hlen + len;
    return 0;
}

int ws_close_payload(
        uint16_t code, const char *reason, uint8_t out[WS_CONTROL_MAX], size_t *ret_len)
{
    size_t n = reason ? strlen(reason) : 0;

    if (code == WS_CLOSE_NO_STATUS && n == 0) {
        *ret_len = 0;
        return 0;
    }
    if (!close_code_is_valid(code) || !utf8_is_valid(reason ? reason : "", n))
        return SBX_E_INVALID;
    if (n > WS_CONTROL_MAX - 2) {
        /* Cut before the character that would not fit whole: the byte
         * at the cut must not be a continuation byte (10xxxxxx). */
        n = WS_CONTROL_MAX - 2;
        while (n > 0 && ((unsigned char)reason[n] & 0xC0u) == 0x80u)
            n--;
    }
    out[0] = (uint8_t)(code >> 8);
    out[1] = (uint8_t)code;
    if (n > 0)
        memcpy(out + 2, reason, n);
    *ret_len = n + 2;
    return 0;
}

/* ---- Decoding ----
 *
 * The decoder alternates between WS_DECODE_HEADER, collecting the 2 to 10
 * header bytes in hdr (a server frame has no mask key), and
 * WS_DECODE_PAYLOAD, copying frame_left_bytes into msg or ctl. Each rule
 * is checked as soon as the bytes that decide it are in, so a bad stream
 * fails at the same byte however it is split. */

int ws_decoder_init(struct ws_decoder *d, size_t max_message_bytes)
{
    memset(d, 0, sizeof(*d));
    d->msg = malloc(max_message_bytes > 0 ? max_message_bytes : 1);
    if (!d->msg)
        return SBX_E_NOMEM;
    d->msg_max_bytes = max_message_bytes;
    d->hdr_need = 2;
    return 0;
}

void ws_decoder_done(struct ws_decoder *d)
{
    if (!d)
        return;
    free(d->msg);
    memset(d, 0, sizeof(*d));
}

/* Enter the failed state; later calls report the same error. */
static int fail(struct ws_decoder *d, uint16_t code, const char *why)
{
    d->state = WS_DECODE_FAILED;
    d->error_code = code;
    d->error_why = why;
    return code == WS_CLOSE_TOO_BIG ? SBX_E_LIMIT : SBX_E_INVALID;
}

static int report_error(const struct ws_decoder *d, struct ws_event *ev)
{
    ev->type = WS_EVENT_ERROR;
    ev->close_code = d->error_code;
    ev->why = d->error_why;
    return d->error_code == WS_CLOSE_TOO_BIG ? SBX_E_LIMIT : SBX_E_INVALID;
}

/* The rules that the first two header bytes alone decide; checked as soon
 * as they arrive, so a bad stream fails before its length is read. */
static int check_start(struct ws_decoder *d)
{
    unsigned b0 = d->hdr[0], b1 = d->hdr[1];
    unsigned op = b0 & 0x0Fu;

    if ((b0 & WS_RSV) != 0)
        return fail(d, WS_CLOSE_PROTOCOL_ERROR, "reserved bits set, but no extension was agreed");
    if (!opcode_is_known(op))
        return fail(d, WS_CLOSE_PROTOCOL_ERROR, "unknown opcode");
    if ((b1 & WS_MASK) != 0)
        return fail(d, WS_CLOSE_PROTOCOL_ERROR, "masked frame from the server");
    if (opcode_is_control(op) && (b0 & WS_FIN) == 0)
        return fail(d, WS_CLOSE_PROTOCOL_ERROR, "fragmented control frame");
    if (opcode_is_control(op) && (b1 & 0x7Fu) > WS_CONTROL_MAX)
        return fail(d, WS_CLOSE_PROTOCOL_ERROR, "control frame longer than 125 bytes");
    if (op == WS_OP_CONTINUATION && d->msg_opcode == 0)
        return fail(d, WS_CLOSE_PROTOCOL_ERROR, "continuation frame outside a message");
    if ((op == WS_OP_TEXT || op == WS_OP_BINARY) && d->msg_opcode != 0)
        return fail(d, WS_CLOSE_PROTOCOL_ERROR, "new message inside a fragmented one");
    d->frame_opcode = op;
    d->frame_fin = (b0 & WS_FIN) != 0;
    switch (b1 & 0x7Fu) {
    case 126: d->hdr_need = 4; break;
    case 127: d->hdr_need = 10; break;
    default: d->hdr_need = 2; break;
    }
    return 0;
}

/* The whole header is in: decode and check the length, open the message
 * or the control buffer. 1 if the frame is already complete (empty). */
static int check_length(struct ws_decoder *d)
{
    uint64_t n = d->hdr[1] & 0x7Fu;

    /* RFC 6455 5.2: "the minimal number of bytes MUST be used"; a peer
     * that pads the length is broken or probing, so it is an error. */
    if (n == 126) {
        n = (uint64_t)d->hdr[2] << 8 | d->hdr[3];
        if (n < 126)
            return fail(d, WS_CLOSE_PROTOCOL_ERROR, "frame length not in its shortest form");
    } else if (n == 127) {
        n = 0;
        for (size_t i = 2; i < 10; i++)
            n = n << 8 | d->hdr[i];
        if ((n >> 63) != 0)
            return fail(d, WS_CLOSE_PROTOCOL_ERROR, "64-bit frame length with the top bit set");
        if (n <= 0xFFFF)
            return fail(d, WS_CLOSE_PROTOCOL_ERROR, "frame length not in its shortest form");
    }
    if (opcode_is_control(d->frame_opcode)) {
        d->ctl_len = 0;
    } else {
        /* the whole message, not the frame: fragments add up */
        if (n > d->msg_max_bytes - d->msg_len)
            return fail(d, WS_CLOSE_TOO_BIG, "message larger than the limit");
        if (d->frame_opcode != WS_OP_CONTINUATION)
            d->msg_opcode = d->frame_opcode;
    }
    d->frame_left_bytes = n;
    d->hdr_have = 0;
    d->hdr_need = 2;
    d->state = n > 0 ? WS_DECODE_PAYLOAD : WS_DECODE_HEADER;
    return n == 0;
}

/* Collect header bytes from in; *ret_used of them were taken. <0 on a
 * protocol error, 1 when an empty frame is complete, else 0. */
static int take_header(struct ws_decoder *d, const uint8_t *in, size_t len, size_t *ret_used)
{
    size_t n = 0;
    int r;

    while (n < len && d->hdr_have < d->hdr_need) {
        d->hdr[d->hdr_have++] = in[n++];
        if (d->hdr_have == 2) {
            r = check_start(d);
            if (r < 0)
                return r;
        }
    }
    *ret_used = n;
    if (d->hdr_have < d->hdr_need)
        return 0;
    return check_length(d);
}

/* Copy payload bytes to the message or control buffer; 1 at the frame's
 * end. check_length bounded frame_left_bytes by the destination's room. */
static int take_payload(struct ws_decoder *d, const uint8_t *in, size_t len, size_t *ret_used)
{
    size_t n = d->frame_left_bytes < len ? (size_t)d->frame_left_bytes : len;

    if (opcode_is_control(d->frame_opcode)) {
        memcpy(d->ctl + d->ctl_len, in, n);
        d->ctl_len += n;
    } else {
        memcpy(d->msg + d->msg_len, in, n);
        d->msg_len += n;
    }
    d->frame_left_bytes -= n;
    *ret_used = n;
    if (d->frame_left_bytes > 0)
        return 0;
    d->state = WS_DECODE_HEADER;
    return 1;
}

static int close_event(struct ws_decoder *d, struct ws_event *ev)
{
    unsigned code;

    if (d->ctl_len == 1)
        return fail(d, WS_CLOSE_PROTOCOL_ERROR, "close frame with a one-byte payload");
    if (d->ctl_len == 0) {
        ev->close_code = WS_CLOSE_NO_STATUS;
    } else {
        code = (unsigned)d->ctl[0] << 8 | d->ctl[1];
        if (!close_code_is_valid(code))
            return fail(d, WS_CLOSE_PROTOCOL_ERROR, "close frame with an invalid code");
        if (!utf8_is_valid((const char *)d->ctl + 2, d->ctl_len - 2))
            return fail(d, WS_CLOSE_INVALID_DATA, "close reason is not UTF-8");
        ev->close_code = (uint16_t)code;
        ev->data = d->ctl_len > 2 ? d->ctl + 2 : NULL;
        ev->len = d->ctl_len - 2;
    }
    ev->type = WS_EVENT_CLOSE;
    d->state = WS_DECODE_CLOSED;
    return 1;
}

/* A frame is complete: 1 with an event, 0 for a fragment that does not
 * end its message, <0 on a protocol error. */
static int frame_done(struct ws_decoder *d, struct ws_event *ev)
{
    switch (d->frame_opcode) {
    case WS_OP_CLOSE: return close_event(d, ev);
    case WS_OP_PING:
    case WS_OP_PONG:
        ev->type = d->frame_opcode == WS_OP_PING ? WS_EVENT_PING : WS_EVENT_PONG;
        ev->data = d->ctl_len > 0 ? d->ctl : NULL;
        ev->len = d->ctl_len;
        return 1;
    default: break;
    }
    /* UTF-8 is checked on the whole message: a character may straddle
     * two fragments. */
    if (!d->frame_fin)
        return 0;
    if (d->msg_opcode == WS_OP_TEXT && !utf8_is_valid((const char *)d->msg, d->msg_len))
        return fail(d, WS_CLOSE_INVALID_DATA, "text message is not UTF-8");
    ev->type = WS_EVENT_MESSAGE;
    ev->opcode = d->msg_opcode;
    ev->data = d->msg_len > 0 ? d->msg : NULL;
    ev->len = d->msg_len;
    d->msg_opcode = 0;
    d->msg_delivered = true;
    return 1;
}

int ws_decoder_feed(struct ws_decoder *d, const uint8_t *in, size_t len, size_t *ret_consumed,
        struct ws_event *ev)
{
    size_t used = 0;

    memset(ev, 0, sizeof(*ev));
    if (!d->msg) /* zeroed: not initialised, or done; would never progress */
        fail(d, WS_CLOSE_INTERNAL_ERROR, "decoder used outside ws_decoder_init and _done");
    /* The last message's bytes were lent to the caller until this call. */
    if (d->msg_delivered) {
        d->msg_len = 0;
        d->msg_delivered = false;
    }
    while (used < len && d->state != WS_DECODE_FAILED) {
        size_t n = 0;
        int r;

        /* RFC 6455 5.5.1: nothing follows a close frame. */
        if (d->state == WS_DECODE_CLOSED) {
            fail(d, WS_CLOSE_PROTOCOL_ERROR, "data after the close frame");
            break;
        }
        if (d->state == WS_DECODE_HEADER)
            r = take_header(d, in + used, len - used, &n);
        else
            r = take_payload(d, in + used, len - used, &n);
        used += n;
        if (r > 0)
            r = frame_done(d, ev);
        if (r > 0) {
            *ret_consumed = used;
            return 1;
        }
    }
    if (d->state == WS_DECODE_FAILED) {
        memset(ev, 0, sizeof(*ev));
        return report_error(d, ev);
    }
    *ret_consumed = used;
    return 0;
}
