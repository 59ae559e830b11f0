/* SPDX-License-Identifier: MIT */
/*
 * fuzz_k8s_channel.c: libFuzzer target for the Kubernetes exec/attach
 * channel layer (plugins/k8s/channel.c), whose received bytes come from
 * the pod's side of the stream. The input is a script:
 *   byte 0     options: bit 0 v5 (else v4), bit 1 a stderr callback
 *   byte 1     n, the number of operation bytes that follow
 *   n bytes    operations in turn (op = b & 7, arg = b >> 3): 0-2 read
 *              (arg picks the size), 3 write (arg: the size, and what the
 *              fake's send answers), 4 close stdin (arg: the answer),
 *              5 exit code and status message (arg: the buffer's size),
 *              6 pending, 7 read until nothing comes
 *   the rest   what the fake WebSocket's recv hands out, record by record:
 *              a control byte c: c & 3 = 0 a last piece, 1 a piece with
 *              SBX_WS_MORE, 2 EAGAIN, 3 EIO (or, with c & 4, the close:
 *              EPIPE); a piece's length is the next byte, or the next two
 *              (little-endian) when c & 0x80, cut at what is left and at
 *              what recv was asked for; its bytes follow. Past the end
 *              recv says EPIPE, as the core's ws_recv does once closed.
 * Then stdout is read to the end and the status looked at. Checked
 * against a model of the protocol (channel.h), piece by piece: the bytes
 * read are exactly the stdout channel's, the callback's exactly stderr's,
 * the status exactly channel 3's (cut at its buffer); a read returns at
 * most what was asked, 0 only after the close, and then for good; a
 * write sends one stdin message of the bytes it counts; close stdin sends
 * {255, 0} on v5 and nothing on v4; the exit code is -1 or 0..255, -1 with
 * no status; the message fits its buffer. A crash, a sanitizer report, a
 * leak or an abort() is a bug. Build with clang -fsanitize=fuzzer, or link
 * with replay.c to replay a corpus.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

#include "channel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WRITE_MAX 70000 /* more than one message holds */

/* Big buffers live here rather than on the heap for each input: ASan's
 * large allocations would cost most of the time. */
static unsigned char sent[SBX_WS_PIECE_MAX];
static struct kch channel;

static void check(int ok)
{
    if (!ok)
        abort();
}

/* Bytes a channel carried, or that came out of the layer. */
struct bytes {
    unsigned char *p;
    size_t len, cap;
};

static void bytes_add(struct bytes *b, const void *p, size_t n)
{
    check(b->len + n <= b->cap); /* never more than the input held */
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

struct fake {
    const uint8_t *rec; /* the recv records */
    size_t rec_len, at;
    bool closed;     /* recv and send say EPIPE from now on */
    int last_errno;  /* what the last failed recv said */
    size_t recvs;    /* recv calls so far */
    int send_answer; /* 0, or the errno the next send fails with */
    /* the last message sent (in sent[]) */
    size_t sends;
    size_t sent_len;
    /* the model: where the current message is and what each channel got */
    bool in_msg, have_ch;
    unsigned ch;
    struct bytes out, err, status;
    /* what the layer gave */
    struct bytes got_out, got_err;
};

/* The protocol as channel.h says it, on one piece the fake hands out. */
static void model_piece(struct fake *f, const unsigned char *p, size_t n, bool more)
{
    if (!f->in_msg)
        f->have_ch = false;
    if (n > 0 && !f->have_ch) {
        f->ch = p[0];
        f->have_ch = true;
        p++;
        n--;
    }
    if (f->have_ch && f->ch == KCH_STDOUT)
        bytes_add(&f->out, p, n);
    else if (f->have_ch && f->ch == KCH_STDERR)
        bytes_add(&f->err, p, n);
    else if (f->have_ch && f->ch == KCH_STATUS)
        bytes_add(&f->status, p, n);
    f->in_msg = more;
}

static int64_t fake_recv(void *ws, void *buf, size_t len, uint32_t *ret_flags)
{
    struct fake *f = ws;
    unsigned c;
    size_t n;

    check(buf != NULL && len > 0 && ret_flags != NULL);
    f->recvs++;
    if (f->closed || f->at >= f->rec_len) {
        f->closed = true;
        f->last_errno = errno = EPIPE;
        return -1;
    }
    c = f->rec[f->at++];
    if ((c & 3) == 2 || (c & 3) == 3) {
        f->last_errno = (c & 3) == 2 ? EAGAIN : (c & 4) ? EPIPE : EIO;
        f->closed = f->last_errno == EPIPE;
        errno = f->last_errno;
        return -1;
    }
    n = f->at < f->rec_len ? f->rec[f->at++] : 0;
    if (c & 0x80)
        n |= (size_t)(f->at < f->rec_len ? f->rec[f->at++] : 0) << 8;
    if (n > f->rec_len - f->at)
        n = f->rec_len - f->at;
    if (n > len)
        n = len;
    memcpy(buf, f->rec + f->at, n);
    f->at += n;
    *ret_flags = (c & 3) == 1 ? SBX_WS_MORE : 0;
    model_piece(f, buf, n, (c & 3) == 1);
    return (int64_t)n;
}

static int fake_send(void *ws, const void *buf, size_t len, uint32_t flags)
{
    struct fake *f = ws;
    int answer = f->send_answer;

    f->send_answer = 0;
    check(buf != NULL && len <= SBX_WS_PIECE_MAX && flags == 0);
    if (f->closed)
        answer = EPIPE;
    if (answer) {
        f->closed = answer == EPIPE;
        errno = answer;
        return -1;
    }
    memcpy(sent, buf, len);
    f->sent_len = len;
    f->sends++;
    return 0;
}

static void on_stderr(void *userdata, const char *data, size_t len)
{
    struct fake *f = userdata;

    check(data != NULL);
    bytes_add(&f->got_err, data, len);
}

/* What the layer shows must agree with the model after every call. */
static void check_model(const struct fake *f, const struct kch *c, bool have_cb)
{
    size_t want = f->status.len < sizeof(c->status) - 1 ? f->status.len : sizeof(c->status) - 1;

    check(f->got_out.len <= f->out.len);
    check(f->got_out.len == 0 || memcmp(f->got_out.p, f->out.p, f->got_out.len) == 0);
    if (have_cb)
        check(f->got_err.len == f->err.len &&
                (f->err.len == 0 || memcmp(f->got_err.p, f->err.p, f->err.len) == 0));
    check(c->status_len == want && c->status[want] == '\0');
    check(want == 0 || memcmp(c->status, f->status.p, want) == 0);
}

static size_t pick_size(unsigned arg)
{
    static const size_t sizes[32] = {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 63, 64, 100, 255,
            256, 1000, 1024, 4095, 4096, 8192, 16384, 32767, 32768, 65534, 65535, 65536, 65537,
            WRITE_MAX, 131072};

    return sizes[arg & 31];
}

static const int answers[4] = {0, EAGAIN, EPIPE, EMSGSIZE};

/* One read of len bytes into a buffer exactly that big. */
static int64_t do_read(struct fake *f, struct kch *c, size_t len, bool have_cb)
{
    unsigned char *buf = malloc(len ? len : 1);
    bool closed_before = f->closed && f->got_out.len == f->out.len && !kch_pending(c);
    bool pending = kch_pending(c);
    size_t recvs = f->recvs;
    int64_t n;

    check(buf != NULL);
    errno = 0;
    n = kch_read(c, buf, len);
    check(n >= -1 && n <= (int64_t)len);
    if (pending && len > 0)
        check(n > 0 && f->recvs == recvs); /* buffered bytes first, no recv */
    if (n < 0)
        check(errno == f->last_errno && (errno == EAGAIN || errno == EIO));
    if (n == 0 && len > 0)
        check(f->closed); /* the end: only once the WebSocket closed */
    if (closed_before && len > 0)
        check(n == 0); /* and for good */
    if (n > 0)
        bytes_add(&f->got_out, buf, (size_t)n);
    free(buf);
    check_model(f, c, have_cb);
    return n;
}

static void do_write(struct fake *f, struct kch *c, unsigned arg, const unsigned char *pattern)
{
    static const size_t lens[8] = {0, 1, 2, 100, 4096, 65535, 65536, WRITE_MAX};
    size_t len = lens[arg & 7], sends = f->sends;
    unsigned char *src = malloc(len ? len : 1);
    int64_t n;

    check(src != NULL);
    memcpy(src, pattern, len);
    f->send_answer = answers[(arg >> 3) & 3];
    errno = 0;
    n = kch_write(c, src, len);
    if (n >= 0) {
        check((size_t)n <= len && (size_t)n <= SBX_WS_PIECE_MAX - 1);
        check(n > 0 || len == 0);
        check(f->sends == sends + 1 && f->sent_len == (size_t)n + 1);
        check(sent[0] == KCH_STDIN && memcmp(sent + 1, src, (size_t)n) == 0);
    } else {
        check(n == -1 && f->sends == sends);
        check(errno == EAGAIN || errno == EPIPE || errno == EMSGSIZE);
    }
    free(src);
}

static void do_close_stdin(struct fake *f, struct kch *c, unsigned arg, bool v5)
{
    size_t sends = f->sends;
    bool closed = f->closed;
    int r;

    f->send_answer = answers[arg & 3];
    errno = 0;
    r = kch_close_stdin(c);
    check(r == 0 || r == -1);
    if (!v5 || closed) {
        check(r == -1 && f->sends == sends);
        check(errno == (v5 ? EPIPE : ENOTSUP) || (closed && errno == EPIPE));
    } else if (r == 0) {
        check(f->sends == sends + 1 && f->sent_len == 2);
        check(sent[0] == KCH_CLOSE && sent[1] == KCH_STDIN);
    } else {
        check(f->sends == sends && (errno == EAGAIN || errno == EPIPE || errno == EMSGSIZE));
    }
    f->send_answer = 0;
}

static void do_status(const struct fake *f, const struct kch *c, unsigned arg)
{
    static const size_t lens[8] = {0, 1, 2, 8, 64, 256, 2048, 4096};
    size_t len = lens[arg & 7];
    char *buf = malloc(len + 16);
    int code = kch_exit_code(c);

    check(buf != NULL);
    check(code >= -1 && code <= 255);
    if (f->status.len == 0)
        check(code == -1);
    memset(buf, 0x5A, len + 16);
    kch_status_message(c, buf, len);
    for (size_t i = len; i < len + 16; i++)
        check(buf[i] == 0x5A);
    if (len > 0)
        check(memchr(buf, '\0', len) != NULL);
    if (len > 0 && f->status.len == 0)
        check(buf[0] == '\0');
    free(buf);
}

/* Read until nothing comes (to_end: until the end, through EAGAIN and
 * errors). Every call that does not end takes a record or stdout bytes,
 * so more calls than the input has bytes would be a loop. */
static void drain(struct fake *f, struct kch *c, bool have_cb, size_t len, bool to_end)
{
    for (size_t limit = f->rec_len + 2;; limit--) {
        int64_t n = do_read(f, c, len, have_cb);

        if (n == 0 || (n < 0 && !to_end))
            return;
        check(limit > 0);
    }
}

static bool bytes_init(struct bytes *b, size_t cap)
{
    b->p = malloc(cap ? cap : 1);
    b->len = 0;
    b->cap = cap;
    return b->p != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned char pattern[WRITE_MAX];
    struct kch *c = &channel;
    struct fake *f;
    struct kch_ws io = {.recv = fake_recv, .send = fake_send};
    const uint8_t *ops;
    size_t nops;
    bool v5, have_cb;

    if (size < 2)
        return 0;
    if (pattern[1] == 0)
        for (size_t i = 0; i < sizeof(pattern); i++)
            pattern[i] = (unsigned char)(i * 31 + 7);
    v5 = data[0] & 1;
    have_cb = data[0] & 2;
    nops = data[1] < size - 2 ? data[1] : size - 2;
    ops = data + 2;
    f = calloc(1, sizeof(*f));
    check(f != NULL);
    f->rec = data + 2 + nops;
    f->rec_len = size - 2 - nops;
    check(bytes_init(&f->out, f->rec_len) && bytes_init(&f->err, f->rec_len) &&
            bytes_init(&f->status, f->rec_len) && bytes_init(&f->got_out, f->rec_len) &&
            bytes_init(&f->got_err, f->rec_len));
    io.ws = f;
    kch_init(c, &io, v5);
    c->on_stderr = have_cb ? on_stderr : NULL;
    c->userdata = f;
    check(!kch_pending(c) && kch_exit_code(c) == -1);

    for (size_t i = 0; i < nops; i++) {
        unsigned op = ops[i] & 7, arg = ops[i] >> 3;

        switch (op) {
        case 0:
        case 1:
        case 2: do_read(f, c, pick_size(arg), have_cb); break;
        case 3: do_write(f, c, arg, pattern); break;
        case 4: do_close_stdin(f, c, arg, v5); break;
        case 5: do_status(f, c, arg); break;
        case 6:
            /* bytes waiting: a read takes them without asking the WebSocket */
            if (kch_pending(c)) {
                size_t recvs = f->recvs;

                check(do_read(f, c, 1, have_cb) == 1 && f->recvs == recvs);
            }
            break;
        default: drain(f, c, have_cb, 4096, false); break;
        }
    }
    drain(f, c, have_cb, 4096, true);
    check(f->closed && !kch_pending(c));
    check(f->got_out.len == f->out.len);
    check(kch_read(c, pattern, 1) == 0);
    do_status(f, c, 7);
    do_status(f, c, 1);
    check(kch_write(c, "x", 1) == -1 && errno == EPIPE);

    free(f->out.p);
    free(f->err.p);
    free(f->status.p);
    free(f->got_out.p);
    free(f->got_err.p);
    free(f);
    return 0;
}
