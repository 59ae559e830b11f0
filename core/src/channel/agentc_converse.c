/* SPDX-License-Identifier: MIT */
/*
 * agentc_converse.c: a long-lived exec, a session's or a pooled box's
 * interpreter: started once, then fed one request after another, each
 * ending at a marker the interpreter writes to stdout and stderr after
 * the request's output (agentc.h says which marker). Also killing what
 * an exec left running.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "channel/agentc.h"
#include "channel/agentc_int.h"
#include "proto.h"

/*
 * One stream's search for the end marker: head (no byte of it but the
 * first equals head[0]), three decimal digits, BEL. got bytes of a
 * possible marker are held back; a mismatch releases them as output.
 */
struct scan {
    unsigned char held[AGENTC_MARK_HEAD_MAX + 4];
    size_t got;
    bool done;
    int status;
};

int agentc_start(struct agentc *ac, char *const *argv, char *const *envp, int64_t deadline_ms,
        struct agentc_sink *sink, struct agentc_exit *ret_exit)
{
    int r;

    if (agentc_queue_exec(ac, argv, envp, true) < 0)
        return agentc_lost(ac, "%s", "the command is too large for the sandbox agent");
    ac->idle_exited = false;
    for (;;) {
        r = agentc_next_frame(ac, deadline_ms);
        if (r != GOT_FRAME)
            return r;
        /* output before it started: "sbx-agent: cannot execute ..." */
        r = agentc_exec_frame(ac, sink, ret_exit);
        if (r != GOT_FRAME)
            return r == GOT_START ? 0 : r;
    }
}

static void scan_release(struct scan *sc, struct agentc_sink *sink, enum sbx_stream st)
{
    if (sc->got)
        agentc_capture_add(sink, st, sc->held, sc->got);
    sc->got = 0;
}

static void scan_feed(struct scan *sc, const char *head, size_t hlen, struct agentc_sink *sink,
        enum sbx_stream st, const unsigned char *p, size_t n)
{
    size_t i = 0;

    while (i < n && !sc->done) {
        unsigned char c;
        bool ok;

        if (sc->got == 0) {
            const unsigned char *e = memchr(p + i, head[0], n - i);
            size_t run = e ? (size_t)(e - (p + i)) : n - i;

            if (run)
                agentc_capture_add(sink, st, p + i, run);
            i += run;
            if (!e)
                break;
        }
        c = p[i];
        if (sc->got < hlen)
            ok = c == (unsigned char)head[sc->got];
        else if (sc->got < hlen + 3)
            ok = c >= '0' && c <= '9';
        else
            ok = c == 0x07;
        if (!ok) {
            scan_release(sc, sink, st); /* c is looked at again from the start */
            if (c != (unsigned char)head[0]) {
                agentc_capture_add(sink, st, &c, 1);
                i++;
            }
            continue;
        }
        sc->held[sc->got++] = c;
        i++;
        if (sc->got == hlen + 4) {
            sc->done = true;
            sc->status = (sc->held[hlen] - '0') * 100 + (sc->held[hlen + 1] - '0') * 10 +
                         (sc->held[hlen + 2] - '0');
            sc->got = 0;
        }
    }
    /* what follows a marker belongs to no call (a background thread's
     * late output): dropped */
}

int agentc_converse(struct agentc *ac, const char *head, const void *data, size_t len,
        int64_t deadline_ms, struct agentc_sink *sink, int *ret_status,
        struct agentc_exit *ret_exit)
{
    struct scan sc[2];
    size_t hlen = strlen(head), sent = 0;
    int r;

    if (hlen == 0 || hlen > AGENTC_MARK_HEAD_MAX || memchr(head + 1, head[0], hlen - 1))
        return agentc_lost(ac, "%s", "bad end marker");
    memset(sc, 0, sizeof(sc));
    for (;;) {
        while (sent < len && ac->wq.len < AGENT_CHUNK * 4) {
            size_t n = len - sent < AGENT_CHUNK ? len - sent : AGENT_CHUNK;

            if (agentc_queue_frame(ac, AGENT_STDIN, 0, (const char *)data + sent, n, NULL, 0) < 0)
                break;
            sent += n;
        }
        ac->want_room = sent < len;
        r = agentc_next_frame(ac, deadline_ms);
        ac->want_room = false;
        if (r == GOT_ROOM)
            continue;
        if (r != GOT_FRAME)
            break;
        if (ac->hdr.type == AGENT_STDOUT || ac->hdr.type == AGENT_STDERR) {
            int i = ac->hdr.type == AGENT_STDERR;

            scan_feed(&sc[i], head, hlen, sink, i ? SBX_STREAM_STDERR : SBX_STREAM_STDOUT,
                    ac->payload, ac->hdr.len);
            if (sc[0].done && sc[1].done) {
                *ret_status = sc[0].status;
                return AGENTC_MARKED;
            }
        } else if (ac->hdr.type == AGENT_EXITED && ac->hdr.len >= AGENT_EXITED_SIZE) {
            agentc_parse_exited(ac, ret_exit);
            r = AGENTC_EXITED;
            break;
        } else if (ac->hdr.type == AGENT_ERROR) {
            agentc_take_error(ac, "the sandbox agent refused the input");
            r = SBX_E_BACKEND;
            break;
        } else if (ac->hdr.type != AGENT_STARTED) {
            r = agentc_lost(ac, "%s", "the sandbox agent sent an unexpected frame");
            break;
        }
    }
    scan_release(&sc[0], sink, SBX_STREAM_STDOUT);
    scan_release(&sc[1], sink, SBX_STREAM_STDERR);
    return r;
}

int agentc_kill(struct agentc *ac, int64_t deadline_ms, struct agentc_sink *sink,
        struct agentc_exit *ret_exit)
{
    unsigned char sig[4];
    int r;

    agent_put_u32(sig, 9);
    if (agentc_queue_frame(ac, AGENT_SIGNAL, 0, sig, 4, NULL, 0) < 0)
        return agentc_lost(ac, "%s", "cannot queue a signal");
    for (;;) {
        int cancel_fd = ac->cancel_fd, cancel_fd2 = ac->cancel_fd2;

        ac->cancel_fd = ac->cancel_fd2 = -1; /* a fired cancellation may have brought us here */
        r = agentc_next_frame(ac, deadline_ms);
        ac->cancel_fd = cancel_fd;
        ac->cancel_fd2 = cancel_fd2;
        if (r != GOT_FRAME)
            return r;
        r = agentc_exec_frame(ac, sink, ret_exit);
        if (r != GOT_FRAME && r != GOT_START)
            return r;
    }
}
