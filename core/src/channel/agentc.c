/* SPDX-License-Identifier: MIT */
/*
 * agentc.c: the host side of the agent protocol. One poll loop watches the
 * box's channel (read, and write while frames are queued), the cancel fd
 * and the deadline. Writes never block: frames wait in a queue while the
 * channel is full, so a program that floods stdout while we are still
 * sending its stdin cannot deadlock us (the agent applies back-pressure on
 * its side). Output beyond a stream's cap is counted and dropped while the
 * program keeps running. Frames are validated before use; anything
 * unexpected ends the exchange as AGENTC_LOST with a message. No policy
 * decisions here. Here: the channel, framing, the greeting and what it
 * sends (limits, filter, relay), and one-shot execs; file transfers are
 * in agentc_files.c, a session's long-lived interpreter in
 * agentc_converse.c.
 */
#include "channel/agentc.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "channel/agentc_int.h"
#include "proto.h"

void capture_init(struct capture *c, size_t cap)
{
    dynbuf_init(&c->buf, cap);
    c->total = 0;
    c->truncated = false;
}

void capture_done(struct capture *c)
{
    dynbuf_done(&c->buf);
}

void agentc_capture_add(
        struct agentc_sink *s, enum sbx_stream stream, const unsigned char *data, size_t len)
{
    struct capture *c = stream == SBX_STREAM_STDOUT ? &s->out : &s->err;
    size_t room = c->buf.cap - c->buf.len, keep = len < room ? len : room;

    c->total += len;
    if (keep < len)
        c->truncated = true;
    if (keep == 0 || dynbuf_append(&c->buf, data, keep) < 0)
        return;
    if (s->on_output)
        s->on_output(s->userdata, stream, (const char *)data, keep);
}

void agentc_sink_write(struct agentc_sink *s, enum sbx_stream stream, const void *data, size_t len)
{
    agentc_capture_add(s, stream, data, len);
}

struct agentc *agentc_new(const struct sbx_backend_ops *ops, void *box, int cancel_fd)
{
    struct agentc *ac = calloc(1, sizeof(*ac));

    if (!ac)
        return NULL;
    ac->rbuf = malloc(AGENT_HDR_SIZE + AGENT_MAX_PAYLOAD);
    if (!ac->rbuf) {
        free(ac);
        return NULL;
    }
    ac->ops = ops;
    ac->box = box;
    ac->cancel_fd = cancel_fd;
    ac->cancel_fd2 = -1;
    dynbuf_init(&ac->wq, QUEUE_CAP);
    return ac;
}

struct agentc *agentc_free(struct agentc *ac)
{
    if (ac) {
        free(ac->rbuf);
        dynbuf_done(&ac->wq);
        free(ac);
    }
    return NULL;
}

const char *agentc_last_error(const struct agentc *ac)
{
    return ac->error;
}

int agentc_lost(struct agentc *ac, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(ac->error, sizeof(ac->error), fmt, ap);
    va_end(ap);
    return AGENTC_LOST;
}

int agentc_queue_frame(struct agentc *ac, uint8_t type, uint8_t flags, const void *a, size_t alen,
        const void *b, size_t blen)
{
    unsigned char hdr[AGENT_HDR_SIZE];

    agent_hdr_encode(hdr, (uint32_t)(alen + blen), type, flags);
    if (dynbuf_append(&ac->wq, hdr, sizeof(hdr)) < 0 ||
            (alen && dynbuf_append(&ac->wq, a, alen) < 0) ||
            (blen && dynbuf_append(&ac->wq, b, blen) < 0))
        return SBX_E_LIMIT;
    return 0;
}

int agentc_flush_some(struct agentc *ac)
{
    while (ac->wq_off < ac->wq.len) {
        int64_t n = ac->ops->box_write(ac->box, ac->wq.buf + ac->wq_off, ac->wq.len - ac->wq_off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return agentc_lost(ac, "cannot write to the sandbox agent: %s", strerror(errno));
        ac->wq_off += (size_t)n;
    }
    ac->wq.len = 0;
    ac->wq_off = 0;
    return 0;
}

/*
 * Read what is available; GOT_FRAME when a whole frame is in ac->hdr/payload, 0
 * when more is needed, AGENTC_LOST on end of channel or a bad header.
 */
static int read_frame(struct agentc *ac)
{
    for (;;) {
        size_t need = AGENT_HDR_SIZE;
        int64_t n;

        if (ac->rlen >= AGENT_HDR_SIZE) {
            if (agent_hdr_decode(ac->rbuf, &ac->hdr) < 0)
                return agentc_lost(ac, "%s", "the sandbox agent sent a malformed frame");
            need += ac->hdr.len;
            if (ac->rlen == need) {
                ac->payload = ac->rbuf + AGENT_HDR_SIZE;
                ac->rlen = 0;
                return GOT_FRAME;
            }
        }
        n = ac->ops->box_read(ac->box, ac->rbuf + ac->rlen, need - ac->rlen);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return agentc_lost(ac, "%s",
                    n == 0 ? "the sandbox ended unexpectedly"
                           : "cannot read from the sandbox agent");
        ac->rlen += (size_t)n;
    }
}

/*
 * Wait for the next frame. Returns GOT_FRAME with a frame, or AGENTC_TIMEOUT,
 * AGENTC_CANCELLED, AGENTC_LOST.
 */
int agentc_next_frame(struct agentc *ac, int64_t deadline_ms)
{
    for (;;) {
        struct pollfd pfd[4] = {
                {.fd = ac->ops->box_poll_fd(ac->box), .events = POLLIN},
                {.fd = ac->wq.len ? ac->ops->box_write_fd(ac->box) : -1, .events = POLLOUT},
                {.fd = ac->cancel_fd, .events = POLLIN},
                {.fd = ac->cancel_fd2, .events = POLLIN},
        };
        int64_t left = deadline_ms - now_ms();
        int r;

        /* Checked before reading, so a program flooding output cannot
         * outrun its deadline or a cancellation. */
        if (left <= 0)
            return AGENTC_TIMEOUT;
        if ((ac->cancel_fd >= 0 || ac->cancel_fd2 >= 0) && poll(&pfd[2], 2, 0) > 0)
            return AGENTC_CANCELLED;
        if ((r = agentc_flush_some(ac)) != 0)
            return r;
        if ((r = read_frame(ac)) != 0)
            return r;
        /* A program that reads all its input before writing anything sends
         * no frames; keep feeding it rather than waiting for one. */
        if (ac->want_room && ac->wq.len < LOW_WATER)
            return GOT_ROOM;
        pfd[1].fd = ac->wq.len ? pfd[1].fd : -1;
        r = poll(pfd, 4, (int)(left > 60000 ? 60000 : left));
        if (r < 0 && errno != EINTR)
            return agentc_lost(ac, "poll: %s", strerror(errno));
        if (r > 0 && (pfd[2].revents || pfd[3].revents))
            return AGENTC_CANCELLED;
    }
}

/* Copy an ERROR frame's message into ac->error. */
void agentc_take_error(struct agentc *ac, const char *what)
{
    size_t n = ac->hdr.len > 4 ? ac->hdr.len - 4 : 0;
    const char *msg = (const char *)ac->payload + 4;

    if (n > 200)
        n = 200;
    snprintf(ac->error, sizeof(ac->error), "%s: %.*s", what, (int)strnlen(msg, n), msg);
}

/*
 * The reply to a request, skipping what a long-lived exec (a session's
 * interpreter) sends between calls: output is dropped, and its end is
 * remembered for agentc_running(). GOT_FRAME or an enum agentc_end.
 */
int agentc_next_reply(struct agentc *ac, int64_t deadline_ms)
{
    for (;;) {
        int r = agentc_next_frame(ac, deadline_ms);

        if (r != GOT_FRAME)
            return r;
        if (ac->hdr.type == AGENT_STDOUT || ac->hdr.type == AGENT_STDERR ||
                ac->hdr.type == AGENT_STARTED)
            continue;
        if (ac->hdr.type != AGENT_EXITED)
            return GOT_FRAME;
        ac->idle_exited = true;
    }
}

int agentc_hello(struct agentc *ac, int64_t deadline_ms)
{
    int r = agentc_next_frame(ac, deadline_ms);

    if (r != GOT_FRAME)
        return r;
    if (ac->hdr.type != AGENT_READY || ac->hdr.len < 12)
        return agentc_lost(ac, "%s", "the sandbox agent did not start properly");
    if (agent_get_u32(ac->payload) != AGENT_PROTO_VERSION)
        return agentc_lost(ac, "%s", "the sandbox agent speaks another protocol version");
    return 0;
}

int agentc_limits(struct agentc *ac, const struct agentc_limit *lims, size_t n, int64_t deadline_ms)
{
    unsigned char buf[4 + 16 * AGENT_LIMITS_MAX];
    int r;

    if (n > AGENT_LIMITS_MAX)
        return agentc_lost(ac, "too many limits");
    memset(buf, 0, sizeof(buf));
    agent_put_u32(buf, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        agent_put_u32(buf + 4 + 16 * i, lims[i].resource);
        agent_put_u64(buf + 4 + 16 * i + 8, lims[i].value);
    }
    if (agentc_queue_frame(ac, AGENT_LIMITS, 0, buf, 4 + 16 * n, NULL, 0) < 0)
        return agentc_lost(ac, "cannot queue limits");
    r = agentc_next_reply(ac, deadline_ms);
    if (r != GOT_FRAME)
        return r;
    if (ac->hdr.type == AGENT_ERROR) {
        agentc_take_error(ac, "the sandbox agent refused the limits");
        return SBX_E_IO;
    }
    return ac->hdr.type == AGENT_OK ? 0 : agentc_lost(ac, "unexpected reply to limits");
}

int agentc_filter(struct agentc *ac, const void *bpf, size_t len, int64_t deadline_ms)
{
    unsigned char head[8] = {0};
    int r;

    if (len == 0 || len % 8 != 0 || len / 8 > AGENT_FILTER_MAX)
        return agentc_lost(ac, "%s", "the seccomp filter does not fit the agent's");
    if (agentc_queue_frame(ac, AGENT_FILTER, 0, head, sizeof(head), bpf, len) < 0)
        return agentc_lost(ac, "%s", "cannot queue the seccomp filter");
    r = agentc_next_reply(ac, deadline_ms);
    if (r != GOT_FRAME)
        return r;
    if (ac->hdr.type == AGENT_ERROR) {
        agentc_take_error(ac, "the sandbox agent refused the seccomp filter");
        return SBX_E_IO;
    }
    return ac->hdr.type == AGENT_OK
                   ? 0
                   : agentc_lost(ac, "%s", "unexpected reply to the seccomp filter");
}

int agentc_relay(struct agentc *ac, uint16_t port, const char *path, int64_t deadline_ms)
{
    unsigned char buf[8 + 108];
    size_t plen = strlen(path) + 1;
    int r;

    if (plen > sizeof(buf) - 8)
        return agentc_lost(ac, "relay socket path too long");
    agent_put_u32(buf, port);
    agent_put_u32(buf + 4, 0);
    memcpy(buf + 8, path, plen);
    if (agentc_queue_frame(ac, AGENT_RELAY, 0, buf, 8 + plen, NULL, 0) < 0)
        return agentc_lost(ac, "cannot queue the relay");
    r = agentc_next_reply(ac, deadline_ms);
    if (r != GOT_FRAME)
        return r;
    if (ac->hdr.type == AGENT_ERROR) {
        agentc_take_error(ac, "the sandbox agent cannot relay to the proxy");
        return SBX_E_IO;
    }
    return ac->hdr.type == AGENT_OK ? 0 : agentc_lost(ac, "unexpected reply to relay");
}

int agentc_queue_exec(struct agentc *ac, char *const *argv, char *const *envp, bool with_stdin)
{
    return agentc_queue_run(ac, AGENT_EXEC, with_stdin ? AGENT_EXEC_STDIN_PIPE : 0, argv, envp);
}

int agentc_queue_run(
        struct agentc *ac, uint8_t type, uint32_t flags, char *const *argv, char *const *envp)
{
    struct dynbuf b;
    unsigned char head[12];
    uint32_t argc = 0, envc = 0;
    int r = 0;

    while (argv[argc])
        argc++;
    while (envp[envc])
        envc++;
    agent_put_u32(head, flags);
    agent_put_u32(head + 4, argc);
    agent_put_u32(head + 8, envc);
    dynbuf_init(&b, AGENT_MAX_PAYLOAD);
    r = dynbuf_append(&b, head, sizeof(head));
    for (uint32_t i = 0; r == 0 && i < argc; i++)
        r = dynbuf_append(&b, argv[i], strlen(argv[i]) + 1);
    for (uint32_t i = 0; r == 0 && i < envc; i++)
        r = dynbuf_append(&b, envp[i], strlen(envp[i]) + 1);
    if (r == 0)
        r = dynbuf_append(&b, "", 1);
    if (r == 0)
        r = agentc_queue_frame(ac, type, 0, b.buf, b.len, NULL, 0);
    dynbuf_done(&b);
    return r;
}

void agentc_parse_exited(const struct agentc *ac, struct agentc_exit *ex)
{
    ex->signaled = agent_get_u32(ac->payload) == AGENT_EXIT_SIGNAL;
    ex->code = (int)agent_get_u32(ac->payload + 4);
    ex->flags = agent_get_u32(ac->payload + 8);
}

/* A frame while an exec runs: its output goes into sink (GOT_FRAME), its
 * start (GOT_START), its end (AGENTC_EXITED, which is 0, and ret_exit), a
 * refusal (SBX_E_BACKEND), or anything else (AGENTC_LOST). */
int agentc_exec_frame(struct agentc *ac, struct agentc_sink *sink, struct agentc_exit *ret_exit)
{
    switch (ac->hdr.type) {
    case AGENT_STDOUT:
    case AGENT_STDERR:
        agentc_capture_add(sink,
                ac->hdr.type == AGENT_STDOUT ? SBX_STREAM_STDOUT : SBX_STREAM_STDERR, ac->payload,
                ac->hdr.len);
        return GOT_FRAME;
    case AGENT_STARTED: return GOT_START;
    case AGENT_EXITED:
        if (ac->hdr.len < AGENT_EXITED_SIZE)
            return agentc_lost(ac, "%s", "the sandbox agent sent a short exit report");
        agentc_parse_exited(ac, ret_exit);
        return AGENTC_EXITED;
    case AGENT_ERROR:
        agentc_take_error(ac, "the sandbox agent refused to run the program");
        return SBX_E_BACKEND;
    default: return agentc_lost(ac, "%s", "the sandbox agent sent an unexpected frame");
    }
}

/* Feed stdin (NULL: none) to the exec that runs, then its end, and collect
 * its output until it exits or the deadline/cancel. */
int agentc_finish(struct agentc *ac, const char *stdin_data, size_t stdin_len, int64_t deadline_ms,
        struct agentc_sink *sink, struct agentc_exit *ret_exit)
{
    size_t sent = 0;
    bool eof_sent = false;
    int r;

    for (;;) {
        /* Feed stdin a little at a time so output keeps flowing. */
        while (stdin_data && sent < stdin_len && ac->wq.len < AGENT_CHUNK * 4) {
            size_t n = stdin_len - sent < AGENT_CHUNK ? stdin_len - sent : AGENT_CHUNK;

            if (agentc_queue_frame(ac, AGENT_STDIN, 0, stdin_data + sent, n, NULL, 0) < 0)
                break;
            sent += n;
        }
        if (stdin_data && sent == stdin_len && !eof_sent &&
                agentc_queue_frame(ac, AGENT_STDIN_EOF, 0, NULL, 0, NULL, 0) == 0)
            eof_sent = true;
        ac->want_room = stdin_data && sent < stdin_len;
        r = agentc_next_frame(ac, deadline_ms);
        ac->want_room = false;
        if (r == GOT_ROOM)
            continue;
        if (r != GOT_FRAME)
            return r;
        r = agentc_exec_frame(ac, sink, ret_exit);
        if (r != GOT_FRAME && r != GOT_START)
            return r;
    }
}

int agentc_exec(struct agentc *ac, char *const *argv, char *const *envp, const char *stdin_data,
        size_t stdin_len, int64_t deadline_ms, struct agentc_sink *sink,
        struct agentc_exit *ret_exit)
{
    if (agentc_queue_exec(ac, argv, envp, stdin_data != NULL) < 0)
        return agentc_lost(ac, "%s", "the command is too large for the sandbox agent");
    return agentc_finish(ac, stdin_data, stdin_len, deadline_ms, sink, ret_exit);
}

void agentc_quit(struct agentc *ac)
{
    if (agentc_queue_frame(ac, AGENT_QUIT, 0, NULL, 0, NULL, 0) == 0)
        agentc_flush_some(ac);
}

/* ---- a long-lived exec: a session's interpreter ------------------------ */

void agentc_set_cancel(struct agentc *ac, int cancel_fd, int cancel_fd2)
{
    ac->cancel_fd = cancel_fd;
    ac->cancel_fd2 = cancel_fd2;
}

bool agentc_take_idle_exit(struct agentc *ac)
{
    bool r = ac->idle_exited;

    ac->idle_exited = false;
    return r;
}
