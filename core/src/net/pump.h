/* SPDX-License-Identifier: MIT */
/*
 * pump.h: a thread that moves an upgraded network stream (Docker's attach,
 * a WebSocket) to and from a local socketpair, so that what a plugin polls
 * is honest. Through TLS, decrypted bytes can wait inside the TLS library
 * while the socket is not readable: polling the socket would miss them. The
 * pump drains the library before it polls, and the plugin's end of the pair
 * is readable exactly when data (or the end) is there.
 *
 * Raw mode: the pair is a SOCK_STREAM; bytes pass unchanged both ways, and
 * an end in one direction (EOF, shutdown) is passed on as an end.
 * WebSocket mode (RFC 6455, client side): the pair is a SOCK_SEQPACKET; one
 * packet is one piece of a message, [u8 flags][payload <= PUMP_WS_PIECE_MAX]
 * (flags: PUMP_WS_TEXT, PUMP_WS_MORE). The pump masks, frames, answers
 * pings, reassembles fragments and runs the closing handshake; a packet
 * with PUMP_WS_CLOSE and a u16 code from the plugin closes the socket.
 * Makes no policy decisions. Errors: error.h.
 */
#ifndef SBX_PUMP_H
#define SBX_PUMP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define PUMP_WS_PIECE_MAX (64u * 1024u)
#define PUMP_WS_MSG_MAX   (16u * 1024u * 1024u) /* a larger message closes with 1009 */

enum pump_ws_flags {
    PUMP_WS_TEXT = 1u << 0,  /* a text message (else binary) */
    PUMP_WS_MORE = 1u << 1,  /* more pieces of this message follow */
    PUMP_WS_CLOSE = 1u << 7, /* plugin -> pump: send Close with the u16 code that follows */
};

/* The network side, as the pump sees it: poll fd, and non-blocking I/O
 * that returns bytes, 0 at the end, or -1 with errno (EAGAIN: poll fd). */
struct pump_io {
    void *ctx;
    int fd;
    ssize_t (*recv)(void *ctx, void *buf, size_t len);
    ssize_t (*send)(void *ctx, const void *buf, size_t len);
    void (*shutdown_write)(void *ctx); /* the end of what we send, or NULL */
};

enum pump_mode { PUMP_RAW = 0, PUMP_WS = 1 };

struct pump;

/* Start a pump on io (borrowed until pump_free) and hand back the plugin's
 * end of the pair, non-blocking and close-on-exec (transfer none: closed by
 * pump_free). pending/n_pending: bytes already read from the network (after
 * the response head), delivered first. SBX_E_IO, SBX_E_NOMEM. */
int pump_start(const struct pump_io *io, enum pump_mode mode, const void *pending, size_t n_pending,
        struct pump **ret, int *ret_fd, struct sbx_error **err);

/* WebSocket mode, once the plugin's end reads the end: the peer's close
 * code (1005: none given; 1006: the connection dropped without a Close;
 * 1002/1007/1009: we closed it for a protocol error, an invalid text or a
 * message too big) and its reason, NUL-terminated into reason. */
uint32_t pump_ws_close_status(struct pump *p, char *reason, size_t len);

/* Stop the thread, wait for it, close the pair. NULL is fine. */
void pump_free(struct pump *p);

#endif
