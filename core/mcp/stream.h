/* SPDX-License-Identifier: MIT */
/*
 * stream.h: what the byte-stream transports (stdio.c, unix.c) share:
 * newline-delimited JSON-RPC on a file descriptor. stream_out is a sink's
 * writer (one message per line, whole messages only, thread-safe);
 * stream_in splits what is read into lines for mcp_handle(), with the
 * message cap of jsonrpc.h.
 */
#ifndef SBX_MCP_STREAM_H
#define SBX_MCP_STREAM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct mcp_conn;
struct mcp_sink;
struct sbx_runtime;

struct stream_out {
    pthread_mutex_t lock;
    int fd;      /* borrowed */
    bool broken; /* a write failed: the client went away; later sends are dropped */
};

void stream_out_init(struct stream_out *o, int fd);
void stream_out_done(struct stream_out *o);
/* A sink's send and done, with ud a struct stream_out. */
void stream_out_send(void *ud, const char *text, size_t len);
void stream_out_sink_done(void *ud);

struct stream_in {
    char *buf;
    size_t len, cap;
    bool skipping; /* inside a line past the cap: dropped up to its newline */
};

/* 0, or -1 when out of memory. */
int stream_in_init(struct stream_in *in);
void stream_in_done(struct stream_in *in);
/* One read(2) of fd; every complete line is handed to c with sink. A line
 * past JR_MAX_MESSAGE is answered with an error and skipped; a blank one
 * (whitespace only) is skipped without a word. Returns 1 when bytes came,
 * 0 at end of input, -1 on a read error (errno set; EINTR is retried). */
int stream_in_read(struct stream_in *in, int fd, struct mcp_conn *c, const struct mcp_sink *sink);
/* At end of input: hand on a last message that had no newline. */
void stream_in_end(struct stream_in *in, struct mcp_conn *c, const struct mcp_sink *sink);

/* A thread body: probe the toolchain versions once (arg: the runtime), so
 * the first get_language_details does not wait for them. */
void *stream_probe_versions(void *rt);

#define STREAM_PROBE_GRACE_MS 5000
/* The server is ending: no probe begins any more; the one that runs may
 * finish (and be kept) within STREAM_PROBE_GRACE_MS, then it is cancelled;
 * returns once the prober thread has ended. */
void stream_end_prober(struct sbx_runtime *rt, pthread_t prober);

#endif
