/* SPDX-License-Identifier: MIT */
/*
 * pump_ws.h: the WebSocket half of the pump (pump.c), private to it: the
 * client side of RFC 6455 between the network's bytes (wsframe.c frames
 * them) and the plugin's SOCK_SEQPACKET end (pump.h gives the packets).
 * Runs only on the pump's thread.
 */
#ifndef SBX_PUMP_WS_H
#define SBX_PUMP_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A byte buffer with a consumer offset. */
struct pump_ring {
    unsigned char *buf;
    size_t cap, off, len;
};

static inline void pump_ring_compact(struct pump_ring *r)
{
    if (r->off > 0 && r->len > 0)
        memmove(r->buf, r->buf + r->off, r->len);
    r->off = 0;
}

#define PUMP_WS_IN_BUF  (64u * 1024u)
#define PUMP_WS_OUT_BUF (256u * 1024u) /* room for a whole piece's frame and control frames */

struct pump_ws;

struct pump_ws *pump_ws_new(void);
void pump_ws_free(struct pump_ws *w);

/* Move what can move: frames from in (network bytes) to the plugin's
 * packets on fd, the plugin's packets (when readable) to frames in out.
 * Sets *user_eof when the plugin closed its end. */
void pump_ws_step(struct pump_ws *w, struct pump_ring *in, struct pump_ring *out, int fd,
        bool readable, const bool *net_eof, bool *user_eof);

/* Would it take a packet from the plugin now (out has room, not closing)? */
bool pump_ws_wants_user(const struct pump_ws *w, const struct pump_ring *out);
/* Does it hold a piece for the plugin that did not fit yet? */
bool pump_ws_has_output(const struct pump_ws *w);
/* Is it over: closed both ways (our Close sent: out drained), or the
 * connection gone, and everything for the plugin delivered? */
bool pump_ws_done(const struct pump_ws *w, const struct pump_ring *out, bool net_eof);
/* The close code and reason (pump_ws_close_status). */
uint32_t pump_ws_status(const struct pump_ws *w, bool failed, char *reason, size_t len);

#endif
