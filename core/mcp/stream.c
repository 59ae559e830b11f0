/* SPDX-License-Identifier: MIT */
/*
 * stream.c: newline-delimited JSON-RPC on a file descriptor, shared by the
 * stdio and unix-socket transports (stream.h). Framing only: what a line
 * means is mcp_handle()'s business. Writes are whole messages under one
 * lock, so the worker threads' answers never interleave; a failed write
 * marks the stream broken and later messages are dropped (the client is
 * gone, and its calls are cancelled when its input ends).
 */
#include "stream.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <llm-sandbox/sbx.h>

#include "jsonrpc.h"
#include "mcp.h"

void stream_out_init(struct stream_out *o, int fd)
{
    pthread_mutex_init(&o->lock, NULL);
    o->fd = fd;
    o->broken = false;
}

void stream_out_done(struct stream_out *o)
{
    pthread_mutex_destroy(&o->lock);
}

void stream_out_send(void *ud, const char *text, size_t len)
{
    struct stream_out *o = ud;
    struct iovec iov[2] = {{(void *)(uintptr_t)text, len}, {(void *)(uintptr_t) "\n", 1}};
    size_t left = len + 1;

    pthread_mutex_lock(&o->lock);
    while (!o->broken && left > 0) {
        ssize_t n = writev(o->fd, iov, 2);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            o->broken = true;
            break;
        }
        left -= (size_t)n;
        for (int i = 0; i < 2 && n > 0; i++) {
            size_t take = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;

            iov[i].iov_base = (char *)iov[i].iov_base + take;
            iov[i].iov_len -= take;
            n -= (ssize_t)take;
        }
    }
    pthread_mutex_unlock(&o->lock);
}

void stream_out_sink_done(void *ud)
{
    (void)ud;
}

int stream_in_init(struct stream_in *in)
{
    in->cap = JR_MAX_MESSAGE + 65536;
    in->len = 0;
    in->skipping = false;
    in->buf = malloc(in->cap);
    return in->buf ? 0 : -1;
}

void stream_in_done(struct stream_in *in)
{
    free(in->buf);
    in->buf = NULL;
}

/* A line of JSON whitespace only (spaces, tabs, the CR of a CRLF) holds no
 * message: it is skipped as an empty line is, not answered -32700. */
static bool blank(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

/* Hand every complete line in the buffer to the server; keep the rest. */
static void feed_lines(struct stream_in *in, struct mcp_conn *c, const struct mcp_sink *sink)
{
    size_t start = 0;

    for (size_t i = 0; i < in->len; i++) {
        if (in->buf[i] != '\n')
            continue;
        if (!in->skipping && !blank(in->buf + start, i - start))
            mcp_handle(c, in->buf + start, i - start, sink);
        in->skipping = false;
        start = i + 1;
    }
    memmove(in->buf, in->buf + start, in->len - start);
    in->len -= start;
    if (in->len > JR_MAX_MESSAGE) { /* no newline within the cap: refuse, skip to the next */
        if (!in->skipping) {
            struct json_object *id = jr_peek_id(in->buf, in->len);
            struct json_object *e = jr_error(id, JR_INVALID_REQUEST, "message too large", NULL);
            size_t n;
            const char *t = jr_text(e, &n);

            sink->send(sink->ud, t, n);
            json_object_put(e);
            json_object_put(id);
        }
        in->skipping = true;
        in->len = 0;
    }
}

int stream_in_read(struct stream_in *in, int fd, struct mcp_conn *c, const struct mcp_sink *sink)
{
    ssize_t n;

    do {
        n = read(fd, in->buf + in->len, in->cap - in->len);
    } while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n < 0 ? -1 : 0;
    in->len += (size_t)n;
    feed_lines(in, c, sink);
    return 1;
}

void stream_in_end(struct stream_in *in, struct mcp_conn *c, const struct mcp_sink *sink)
{
    if (!in->skipping && !blank(in->buf, in->len))
        mcp_handle(c, in->buf, in->len, sink);
    in->len = 0;
}

void *stream_probe_versions(void *rt)
{
    json_object_put(sbx_runtime_languages_json(rt, true));
    return NULL;
}

void stream_end_prober(struct sbx_runtime *rt, pthread_t prober)
{
#ifndef _WIN32 /* (winpthreads has no timed join: cancelled at once there) */
    struct timespec until;
#endif

    sbx_runtime_stop_probes(rt, false);
#ifndef _WIN32
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += STREAM_PROBE_GRACE_MS / 1000;
    if (pthread_timedjoin_np(prober, NULL, &until) == 0)
        return;
#endif
    sbx_runtime_stop_probes(rt, true);
    pthread_join(prober, NULL);
}
