/* SPDX-License-Identifier: MIT */
/*
 * channel.h: the Kubernetes exec/attach stream protocol
 * (v5.channel.k8s.io, v4.channel.k8s.io) on top of a WebSocket whose
 * messages cross in pieces (ABI 1.4's ws_recv/ws_send). Each binary
 * message starts with a channel byte: 0 stdin, 1 stdout, 2 stderr,
 * 3 status (a metav1.Status JSON once the process ends), 4 resize, and in
 * v5 255 "close" (its one data byte names the channel to close, so stdin
 * can be half-closed). Only the first piece of a message carries the
 * channel byte. No I/O of its own: the WebSocket is a pair of functions,
 * so tests drive it with recorded pieces (tests/unit/test_k8s_channel.c).
 */
#ifndef K8S_CHANNEL_H
#define K8S_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>

enum kch_channel {
    KCH_STDIN = 0,
    KCH_STDOUT = 1,
    KCH_STDERR = 2,
    KCH_STATUS = 3,
    KCH_RESIZE = 4,
    KCH_CLOSE = 255,
};

/* The WebSocket underneath, as plugin.h's ws_recv and ws_send behave. */
struct kch_ws {
    int64_t (*recv)(void *ws, void *buf, size_t len, uint32_t *ret_flags);
    int (*send)(void *ws, const void *buf, size_t len, uint32_t flags);
    void *ws;
};

struct kch {
    struct kch_ws io;
    bool v5;     /* stdin can be closed on its own */
    bool in_msg; /* the next piece continues the current message */
    bool ended;  /* the WebSocket closed */
    int ch;      /* the current message's channel */
    /* stdout bytes not yet read: in[off..len) */
    size_t off, len;
    unsigned char in[SBX_WS_PIECE_MAX];
    unsigned char out[SBX_WS_PIECE_MAX];
    char status[2048]; /* channel 3, as received (cut at its size) */
    size_t status_len;
    /* stderr (the agent's diagnostics), each piece as it comes */
    void (*on_stderr)(void *userdata, const char *data, size_t len);
    void *userdata;
};

void kch_init(struct kch *c, const struct kch_ws *io, bool v5);
/* Like read(2), non-blocking: stdout bytes; 0 once the WebSocket closed;
 * -1 with errno EAGAIN (nothing yet: poll the WebSocket) or another. Other
 * channels are taken on the way. */
int64_t kch_read(struct kch *c, void *buf, size_t len);
/* Like write(2), non-blocking: up to SBX_WS_PIECE_MAX - 1 bytes of len as
 * one stdin message; -1 with errno EAGAIN when the WebSocket has no room. */
int64_t kch_write(struct kch *c, const void *buf, size_t len);
/* v5: end of input for the process (EOF on its stdin); -1 with ENOTSUP
 * on v4, which can only close the whole stream. */
int kch_close_stdin(struct kch *c);
/* stdout bytes are waiting in the buffer (the WebSocket's fd may not say). */
bool kch_pending(const struct kch *c);
/* From the status channel: 0 for Success, the exit code a NonZeroExitCode
 * names, -1 when there is no status (yet) or it names none. */
int kch_exit_code(const struct kch *c);
/* The status's message (e.g. why the stream failed), or "". */
void kch_status_message(const struct kch *c, char *buf, size_t len);

#endif
