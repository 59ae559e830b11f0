/* SPDX-License-Identifier: MIT */
/*
 * demux.c: the attach stream demultiplexer (demux.h). Pure but for the
 * reads it is given; unit-tested with scripted reads (test_docker_demux).
 */
#include "demux.h"

#include <errno.h>

enum { STREAM_STDIN = 0, STREAM_STDOUT = 1, STREAM_STDERR = 2 };

/* Complete the header; 1 when complete, 0 at end, -1 with errno. */
static int read_header(struct dk_demux *d, dk_read_fn rd, void *rctx)
{
    while (d->hlen < sizeof(d->hdr)) {
        int64_t n = rd(rctx, d->hdr + d->hlen, sizeof(d->hdr) - d->hlen);

        if (n <= 0)
            return n == 0 ? 0 : -1;
        d->hlen += (size_t)n;
    }
    if (d->hdr[0] > STREAM_STDERR || d->hdr[1] || d->hdr[2] || d->hdr[3]) {
        errno = EPROTO;
        return -1;
    }
    d->stream = d->hdr[0];
    d->left = (uint64_t)d->hdr[4] << 24 | (uint64_t)d->hdr[5] << 16 | (uint64_t)d->hdr[6] << 8 |
              (uint64_t)d->hdr[7];
    d->hlen = 0;
    return 1;
}

int64_t dk_demux_read(struct dk_demux *d, dk_read_fn rd, void *rctx, void *buf, size_t len,
        dk_diag_fn diag, void *dctx)
{
    char scratch[512];

    for (;;) {
        int64_t n;

        if (d->left == 0) {
            int r = read_header(d, rd, rctx);

            if (r <= 0)
                return r;
            continue;
        }
        if (d->stream == STREAM_STDOUT) {
            n = rd(rctx, buf, len < d->left ? len : (size_t)d->left);
            if (n > 0)
                d->left -= (uint64_t)n;
            return n;
        }
        n = rd(rctx, scratch, sizeof(scratch) < d->left ? sizeof(scratch) : (size_t)d->left);
        if (n <= 0)
            return n;
        d->left -= (uint64_t)n;
        if (diag && d->stream == STREAM_STDERR)
            diag(dctx, scratch, (size_t)n);
    }
}
