/* SPDX-License-Identifier: MIT */
/*
 * wsframe.h: the pure half of a WebSocket client (RFC 6455) for the
 * Kubernetes exec stream: frame encoding with client masking, an
 * incremental decoder for server frames, and the opening handshake's key,
 * accept value and response check. No I/O, no threads, no clock; the
 * transport (TLS, the pump thread) lives elsewhere. Every function here is
 * deterministic: randomness (mask keys, the nonce) comes from the caller.
 * Return codes are the plugin ABI's enum sbx_rc.
 */
#ifndef SBX_WSFRAME_H
#define SBX_WSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WS_HEADER_MAX        14    /* 2 + 8 (64-bit length) + 4 (mask key) */
#define WS_CONTROL_MAX       125   /* payload bytes of a ping, pong or close */
#define WS_KEY_LEN           24    /* Sec-WebSocket-Key: base64 of 16 bytes */
#define WS_ACCEPT_LEN        28    /* Sec-WebSocket-Accept: base64 of a SHA-1 */
#define WS_RESPONSE_HEAD_MAX 65536 /* longest response head ws_check_response reads */

enum ws_opcode {
    WS_OP_CONTINUATION = 0x0,
    WS_OP_TEXT = 0x1,
    WS_OP_BINARY = 0x2,
    WS_OP_CLOSE = 0x8,
    WS_OP_PING = 0x9,
    WS_OP_PONG = 0xA,
};

/* Close codes this module produces or interprets (RFC 6455 section 7.4.1). */
enum ws_close_code {
    WS_CLOSE_NORMAL = 1000,
    WS_CLOSE_GOING_AWAY = 1001,
    WS_CLOSE_PROTOCOL_ERROR = 1002,
    WS_CLOSE_NO_STATUS = 1005, /* reported for a close frame without a code; never sent */
    WS_CLOSE_INVALID_DATA = 1007,
    WS_CLOSE_TOO_BIG = 1009,
    WS_CLOSE_INTERNAL_ERROR = 1011,
};

/* ---- Encoding (client to server: every frame masked) ---- */

/* Write the header of one frame into out: FIN bit, opcode, the shortest
 * length form (7, 16 or 64 bits), and the mask bit and key when mask_key is
 * not NULL (a client always passes one; NULL is for tests that play the
 * server). Returns the header's length (2 to WS_HEADER_MAX), or 0 for an
 * opcode RFC 6455 does not define or a payload_len with the top bit set.
 * Checks nothing else: control frame limits are ws_frame_encode's. */
size_t ws_frame_header(uint8_t out[WS_HEADER_MAX], unsigned opcode, bool fin, uint64_t payload_len,
        const uint8_t mask_key[4]);

/* XOR len bytes at data with the mask key, in place (masking and unmasking
 * are the same). offset is the position of data[0] in the frame's payload,
 * so a payload can be masked in pieces: ws_mask(p, 3, k, 0) then
 * ws_mask(p + 3, n - 3, k, 3) equals ws_mask(p, n, k, 0). */
void ws_mask(uint8_t *data, size_t len, const uint8_t mask_key[4], uint64_t offset);

/* One whole frame (FIN set) into out: the header, then the payload masked
 * with key (NULL: unmasked, for tests). 0 with *ret_len set; SBX_E_INVALID
 * for an unknown opcode or a control frame over WS_CONTROL_MAX bytes;
 * SBX_E_LIMIT when out_cap cannot hold the frame (out is then unspecified).
 * payload may be NULL when len is 0. */
int ws_frame_encode(const uint8_t *payload, size_t len, unsigned opcode, const uint8_t key[4],
        uint8_t *out, size_t out_cap, size_t *ret_len);

/* The payload of a close frame: the code in network order and the reason
 * (NULL: none) cut at a character boundary to fit WS_CONTROL_MAX. Code
 * WS_CLOSE_NO_STATUS gives an empty payload (a close without a code).
 * 0 with *ret_len set; SBX_E_INVALID for a code an endpoint may not send
 * (below 1000, 1004 to 1006, 1015, 1016 to 2999, above 4999) or a reason
 * that is not UTF-8. */
int ws_close_payload(
        uint16_t code, const char *reason, uint8_t out[WS_CONTROL_MAX], size_t *ret_len);

/* ---- Decoding (server to client) ---- */

enum ws_event_type {
    WS_EVENT_NONE = 0,
    WS_EVENT_MESSAGE, /* a whole data message, continuation frames joined */
    WS_EVENT_PING,    /* answer with a pong carrying the same data */
    WS_EVENT_PONG,
    WS_EVENT_CLOSE, /* the peer's close; the decoder accepts nothing after it */
    WS_EVENT_ERROR, /* protocol error: send close_code, then close */
};

/* What ws_decoder_feed produced. data (transfer none) points into the
 * decoder and stays valid until the next ws_decoder_feed or
 * ws_decoder_done; it is NULL when len is 0. */
struct ws_event {
    enum ws_event_type type;
    unsigned opcode;     /* MESSAGE: WS_OP_TEXT or WS_OP_BINARY */
    const uint8_t *data; /* the payload; CLOSE: the reason (UTF-8, no NUL) */
    size_t len;
    uint16_t close_code; /* CLOSE: the peer's code (1005 if none); ERROR: the code to send */
    const char *why;     /* ERROR: a static one-line reason; NULL otherwise */
};

enum ws_decoder_state {
    WS_DECODE_HEADER = 0,
    WS_DECODE_PAYLOAD,
    WS_DECODE_CLOSED, /* a close frame was delivered */
    WS_DECODE_FAILED, /* a protocol error was reported; it is reported again */
};

/* The decoder's state. Fields are private to wsframe.c; the struct is here
 * so callers can embed it. msg is allocated once, by ws_decoder_init, at
 * max_message_bytes: feeding never allocates. Pages of a large buffer that
 * no message reaches are never touched, so a generous cap costs address
 * space, not memory. */
struct ws_decoder {
    enum ws_decoder_state state;
    uint8_t hdr[WS_HEADER_MAX];
    size_t hdr_have;       /* header bytes collected */
    size_t hdr_need;       /* header length, once the second byte is in */
    unsigned frame_opcode; /* of the frame being read */
    bool frame_fin;
    uint64_t frame_left_bytes; /* payload bytes still to come */
    uint8_t *msg;              /* the message being reassembled */
    size_t msg_max_bytes;
    size_t msg_len;
    unsigned msg_opcode; /* WS_OP_TEXT or _BINARY while a message is open, else 0 */
    bool msg_delivered;  /* msg was handed out: reset on the next call */
    uint8_t ctl[WS_CONTROL_MAX];
    size_t ctl_len;
    uint16_t error_code; /* FAILED: the close code and reason, reported again */
    const char *error_why;
};

/* Set d up for messages of at most max_message_bytes (0 allows only empty
 * ones). 0, or SBX_E_NOMEM. d must be released with ws_decoder_done, which
 * may also be called on a zeroed decoder or after a failed init. */
int ws_decoder_init(struct ws_decoder *d, size_t max_message_bytes);
void ws_decoder_done(struct ws_decoder *d);

/* Feed up to len bytes (in may be NULL when len is 0). Returns:
 *   1  an event is in *ev; *ret_consumed (at least 1) bytes were used and
 *      the caller feeds the rest (in + *ret_consumed) next;
 *   0  all len bytes were used (*ret_consumed == len) and no event is
 *      complete; *ev is WS_EVENT_NONE;
 *   SBX_E_INVALID (1002 protocol error, 1007 invalid UTF-8 in a text
 *      message or close reason) or SBX_E_LIMIT (1009: the message would
 *      exceed max_message_bytes; detected from the frame header, before any
 *      of it is buffered): *ev is WS_EVENT_ERROR with close_code and why,
 *      *ret_consumed is not written, and every later call fails the same
 *      way. After WS_EVENT_CLOSE, more bytes are a 1002 error. A decoder
 *      that is not initialised (zeroed, or after ws_decoder_done) fails
 *      with SBX_E_INVALID and 1011.
 * Rules enforced: server frames are not masked; RSV1-3 are 0 (no extension
 * is ever negotiated); the opcode is known; control frames have FIN and at
 * most 125 bytes and may come between the fragments of a message;
 * continuation frames continue an open message and no new message starts
 * inside one; lengths use the shortest form and a 64-bit length has its top
 * bit clear; a close payload is empty or a valid code and a UTF-8 reason. */
int ws_decoder_feed(struct ws_decoder *d, const uint8_t *in, size_t len, size_t *ret_consumed,
        struct ws_event *ev);

/* ---- Opening handshake ---- */

/* Sec-WebSocket-Key for 16 random bytes: their base64, NUL-terminated. */
void ws_key_from_random(const uint8_t nonce[16], char out[WS_KEY_LEN + 1]);

/* The Sec-WebSocket-Accept a server must answer key with:
 * base64(SHA-1(key "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")), NUL-terminated. */
void ws_accept_for_key(const char *key, char out[WS_ACCEPT_LEN + 1]);

/* The status code of a response head ("HTTP/1.x NNN ..."), or -1 when the
 * status line is malformed. */
int ws_response_status(const char *head);

/* Check the server's response head (NUL-terminated text from the status
 * line through the blank line, at most WS_RESPONSE_HEAD_MAX bytes) for the
 * key the client sent: status 101; Upgrade lists "websocket" and Connection
 * lists "upgrade" (case-insensitive, comma lists, repeated fields
 * allowed); exactly one Sec-WebSocket-Accept, equal to
 * ws_accept_for_key(key); no Sec-WebSocket-Extensions; and exactly one
 * Sec-WebSocket-Protocol naming one of offered_protocols (NULL-terminated;
 * NULL or empty: the field must be absent). On success 0 and
 * *ret_protocol = the chosen entry of offered_protocols (transfer none;
 * NULL when none was offered). On failure SBX_E_BACKEND (the server
 * refused or answered wrongly; for a status other than 101 the reason
 * quotes the status line and, for 4xx and 5xx, says the body follows) or
 * SBX_E_INVALID (head or key is NULL), and a one-line reason in why (why
 * may be NULL). Bytes from the network in the reason are cut and made
 * printable. */
int ws_check_response(const char *head, const char *key, const char *const *offered_protocols,
        const char **ret_protocol, char *why, size_t why_len);

#endif
