/* SPDX-License-Identifier: MIT */
/*
 * agentc_int.h: the agent client's state and framing, shared by its files
 * (agentc.c: the channel and execs; agentc_files.c; agentc_converse.c).
 * Private to channel/.
 */
#ifndef SBX_CHANNEL_AGENTC_INT_H
#define SBX_CHANNEL_AGENTC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>

#include "base/dynbuf.h"
#include "channel/agentc.h"
#include "proto.h"

#define QUEUE_CAP (4u * 1024u * 1024u)
#define GOT_FRAME 100 /* distinct from every enum agentc_end */
#define GOT_ROOM  101 /* the write queue drained and the caller has more to send */
#define GOT_START 102 /* exec_frame: the program started */
#define LOW_WATER (AGENT_CHUNK * 2)

struct agentc {
    const struct sbx_backend_ops *ops;
    void *box;
    int cancel_fd, cancel_fd2; /* either cancels; -1: none */
    unsigned char *rbuf;       /* header + payload of the frame being read */
    size_t rlen;
    struct dynbuf wq; /* encoded frames not yet written */
    size_t wq_off;
    char error[256];
    bool want_room; /* return GOT_ROOM once the queue is below LOW_WATER */
    /* the frame just completed */
    struct agent_hdr hdr;
    const unsigned char *payload;
    /* a long-lived exec (a session's interpreter) ended while no exec
     * was waited for; its output then was dropped */
    bool idle_exited;
};

/* End the exchange: AGENTC_LOST, with the message kept for
 * agentc_last_error. */
int agentc_lost(struct agentc *ac, const char *fmt, ...) SBX_PRINTF(2, 3);
/* Queue one frame (header, then a and b as its payload): 0, or < 0 when
 * the queue is full. */
int agentc_queue_frame(struct agentc *ac, uint8_t type, uint8_t flags, const void *a, size_t alen,
        const void *b, size_t blen);
/* Write what the channel takes now: 0, or AGENTC_LOST. */
int agentc_flush_some(struct agentc *ac);
/* Run the poll loop until a frame is complete (GOT_FRAME, in ac->hdr and
 * ac->payload), the queue has room (GOT_ROOM), or an enum agentc_end. */
int agentc_next_frame(struct agentc *ac, int64_t deadline_ms);
/* The reply to the request just queued: 0 (OK), SBX_E_IO (the agent's
 * ERROR, in agentc_last_error), or an enum agentc_end. */
int agentc_next_reply(struct agentc *ac, int64_t deadline_ms);
/* Keep an ERROR frame's message ("what: message"). */
void agentc_take_error(struct agentc *ac, const char *what);
/* Queue an EXEC of argv with envp: 0, or < 0 when it is too large. */
int agentc_queue_exec(struct agentc *ac, char *const *argv, char *const *envp, bool with_stdin);
/* EXEC or FORK (type) with flags, as agentc_queue_exec. */
int agentc_queue_run(
        struct agentc *ac, uint8_t type, uint32_t flags, char *const *argv, char *const *envp);
/* Handle one frame of a running exec: output into sink, GOT_START,
 * AGENTC_EXITED with *ret_exit, GOT_FRAME (go on), or an enum agentc_end. */
int agentc_exec_frame(struct agentc *ac, struct agentc_sink *sink, struct agentc_exit *ret_exit);
/* An EXITED frame's payload as *ex. */
void agentc_parse_exited(const struct agentc *ac, struct agentc_exit *ex);
/* Count output into its capture and pass it on, within the cap. */
void agentc_capture_add(
        struct agentc_sink *s, enum sbx_stream stream, const unsigned char *data, size_t len);

#endif
