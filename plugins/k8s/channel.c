/* SPDX-License-Identifier: MIT */
/*
 * channel.c: the channel byte of Kubernetes' exec/attach streams over
 * the core's WebSocket (channel.h says the protocol). stdout is kept in a
 * buffer one piece long, read out as the box's channel asks; stderr goes
 * to a callback; the status is collected for the exit code. No I/O of its
 * own and no allocation.
 */
#include "channel.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kch_init(struct kch *c, const struct kch_ws *io, bool v5)
{
    c->io = *io;
    c->v5 = v5;
    c->in_msg = c->ended = false;
    c->ch = -1;
    c->off = c->len = c->status_len = 0;
    c->status[0] = '\0';
}

bool kch_pending(const struct kch *c)
{
    return c->off < c->len;
}

static void take_status(struct kch *c, const unsigned char *p, size_t n)
{
    size_t room = sizeof(c->status) - 1 - c->status_len;

    if (n > room)
        n = room;
    memcpy(c->status + c->status_len, p, n);
    c->status_len += n;
    c->status[c->status_len] = '\0';
}

/* One piece from the WebSocket into c->in: 1 when it left stdout bytes
 * there, 0 when it was another channel's, or -1 with errno. */
static int next_piece(struct kch *c)
{
    uint32_t flags = 0;
    int64_t n = c->io.recv(c->io.ws, c->in, sizeof(c->in), &flags);
    size_t start = 0;

    if (n < 0 && errno == EPIPE)
        c->ended = true;
    if (n < 0)
        return -1;
    if (!c->in_msg) {
        if (n == 0)
            return 0; /* an empty message carries no channel */
        c->ch = c->in[0];
        start = 1;
    }
    c->in_msg = (flags & SBX_WS_MORE) != 0;
    switch (c->ch) {
    case KCH_STDOUT:
        c->off = start;
        c->len = (size_t)n;
        return c->off < c->len;
    case KCH_STDERR:
        if (c->on_stderr && (size_t)n > start)
            c->on_stderr(c->userdata, (const char *)c->in + start, (size_t)n - start);
        return 0;
    case KCH_STATUS: take_status(c, c->in + start, (size_t)n - start); return 0;
    default: return 0; /* resize and unknown channels: nothing for us */
    }
}

int64_t kch_read(struct kch *c, void *buf, size_t len)
{
    while (!kch_pending(c)) {
        int r;

        if (c->ended)
            return 0;
        r = next_piece(c);
        if (r < 0 && c->ended)
            return 0;
        if (r < 0)
            return -1;
    }
    if (len > c->len - c->off)
        len = c->len - c->off;
    memcpy(buf, c->in + c->off, len);
    c->off += len;
    return (int64_t)len;
}

int64_t kch_write(struct kch *c, const void *buf, size_t len)
{
    if (c->ended) {
        errno = EPIPE;
        return -1;
    }
    if (len > sizeof(c->out) - 1)
        len = sizeof(c->out) - 1;
    c->out[0] = KCH_STDIN;
    memcpy(c->out + 1, buf, len);
    if (c->io.send(c->io.ws, c->out, len + 1, 0) < 0) {
        if (errno == EPIPE)
            c->ended = true;
        return -1;
    }
    return (int64_t)len;
}

int kch_close_stdin(struct kch *c)
{
    const unsigned char msg[2] = {KCH_CLOSE, KCH_STDIN};

    if (!c->v5 || c->ended) {
        errno = c->ended ? EPIPE : ENOTSUP;
        return -1;
    }
    return c->io.send(c->io.ws, msg, sizeof(msg), 0);
}

static struct json_object *status_json(const struct kch *c)
{
    return c->status_len ? json_tokener_parse(c->status) : NULL;
}

/* o's key as json-c's text, or NULL when o lacks it or it is null: the
 * status is the other side's JSON, any field may be of any type. */
static const char *text_of(struct json_object *o, const char *key)
{
    struct json_object *v;

    return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

int kch_exit_code(const struct kch *c)
{
    struct json_object *o = status_json(c), *details, *causes;
    const char *status = text_of(o, "status");
    int code = -1;

    if (status && strcmp(status, "Success") == 0)
        code = 0;
    else if (json_object_object_get_ex(o, "details", &details) &&
             json_object_object_get_ex(details, "causes", &causes) &&
             json_object_is_type(causes, json_type_array))
        for (size_t i = 0; i < json_object_array_length(causes); i++) {
            struct json_object *cause = json_object_array_get_idx(causes, i);
            const char *reason = text_of(cause, "reason"), *m = text_of(cause, "message");
            char *end = NULL;
            long n;

            if (!reason || strcmp(reason, "ExitCode") != 0 || !m)
                continue;
            errno = 0;
            n = strtol(m, &end, 10);
            if (errno == 0 && end && *end == '\0' && n >= 0 && n <= 255)
                code = (int)n;
        }
    json_object_put(o);
    return code;
}

void kch_status_message(const struct kch *c, char *buf, size_t len)
{
    struct json_object *o = status_json(c);
    const char *m = text_of(o, "message");

    snprintf(buf, len, "%s", m ? m : "");
    json_object_put(o);
}
