/* SPDX-License-Identifier: MIT */
/*
 * demux.h: Docker's attach stream without a TTY multiplexes stdout and
 * stderr in frames: an 8-byte header {u8 stream (0 stdin, 1 stdout,
 * 2 stderr), 3 zero bytes, u32 big-endian length}, then the payload. The
 * demultiplexer hands on stdout bytes (the agent protocol) and passes
 * stderr (the agent's diagnostics) to a callback. It never reads past the
 * frame it is in, so no byte waits in a buffer where poll(2) cannot see it.
 */
#ifndef DOCKER_DEMUX_H
#define DOCKER_DEMUX_H

#include <stddef.h>
#include <stdint.h>

/* Like read(2): bytes, 0 at end, -1 with errno (EAGAIN when none now). */
typedef int64_t (*dk_read_fn)(void *ctx, void *buf, size_t len);
typedef void (*dk_diag_fn)(void *ctx, const char *data, size_t len);

struct dk_demux {
    unsigned char hdr[8];
    size_t hlen;   /* header bytes read */
    uint64_t left; /* payload bytes of the current frame still to read */
    int stream;
};

/* Read stdout payload into buf: bytes (> 0), 0 at end of the stream, or -1
 * with errno: EAGAIN when nothing is available now (stderr frames may have
 * been consumed and passed to diag), EPROTO for a malformed header. */
int64_t dk_demux_read(struct dk_demux *d, dk_read_fn rd, void *rctx, void *buf, size_t len,
        dk_diag_fn diag, void *dctx);

#endif
