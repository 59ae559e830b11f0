/* SPDX-License-Identifier: MIT */
/*
 * fuzz_agentc.c: libFuzzer target for the host side of the agent protocol
 * (core/src/channel/agentc*.c, frames of core/agent/proto.h), which decodes
 * what the agent, inside the sandbox, sends back. The input:
 *   byte 0     the call: 0 hello, 1 exec, 2 get, 3 list, 4 list with
 *              stat, 5 put, 6 limits, 7 filter, 8 relay, 9 start then
 *              converse, 10 kill (modulo 11)
 *   byte 1     a seed for the fake channel (0: reads whole, never EAGAIN;
 *              else reads and writes in pieces of 1 to 40 bytes, with
 *              EAGAIN now and then)
 *   byte 2     the capture cap (x 4 bytes) and a get's max (x 16)
 *   the rest   the agent's byte stream; its end is the end of the channel
 * The result is checked against a model of proto.h and agentc.h written
 * here, which walks the same frames: the return code, what each stream's
 * capture kept and counted, a get's data and mode, a listing's paths, the
 * exit report and a converse's status. A crash, a sanitizer report, a
 * leak or an abort() is a bug. Build with clang -fsanitize=fuzzer, or link
 * with replay.c to replay a corpus.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include <llm-sandbox/plugin.h>

#include "base/util.h"
#include "channel/agentc.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAMES 4096
#define HEAD       "\033]m;" /* a converse marker: ESC is neither a digit nor BEL */
#define HLEN       4u

enum op {
    OP_HELLO,
    OP_EXEC,
    OP_GET,
    OP_LIST,
    OP_LIST_STAT,
    OP_PUT,
    OP_LIMITS,
    OP_FILTER,
    OP_RELAY,
    OP_CONVERSE,
    OP_KILL,
    OP_PREP,
    OP_GO,
    OP_FRESH,
    OP_COUNT
};

static void check(int ok)
{
    if (!ok)
        abort();
}

/* ---- the fake channel ---------------------------------------------------- */

struct fake {
    const uint8_t *in;
    size_t len, at;
    uint32_t seed;
    int fd; /* an eventfd holding 1: always readable and writable */
};

static size_t piece(struct fake *f, size_t want, bool *again)
{
    size_t n;

    *again = false;
    if (f->seed == 0)
        return want;
    f->seed ^= f->seed << 13, f->seed ^= f->seed >> 17, f->seed ^= f->seed << 5;
    if ((f->seed & 0xF) == 0) {
        *again = true;
        return 0;
    }
    n = 1 + (f->seed >> 8) % 40;
    return n < want ? n : want;
}

static int fake_fd(void *box)
{
    return ((struct fake *)box)->fd;
}

static int64_t fake_read(void *box, void *buf, size_t len)
{
    struct fake *f = box;
    bool again;
    size_t n = piece(f, len, &again);

    if (again) {
        errno = EAGAIN;
        return -1;
    }
    if (n > f->len - f->at)
        n = f->len - f->at;
    memcpy(buf, f->in + f->at, n);
    f->at += n;
    return (int64_t)n;
}

static int64_t fake_write(void *box, const void *buf, size_t len)
{
    bool again;
    size_t n = piece(box, len, &again);

    (void)buf;
    if (again) {
        errno = EAGAIN;
        return -1;
    }
    return (int64_t)n;
}

static const struct sbx_backend_ops ops = {.box_poll_fd = fake_fd,
        .box_read = fake_read,
        .box_write = fake_write,
        .box_write_fd = fake_fd};

/* ---- the model ------------------------------------------------------------ */

struct frame {
    uint8_t type;
    uint32_t len;
    const uint8_t *p;
};

/* The frames of the stream, in order; *ret_bad when it ends in a bad
 * header or a truncated frame rather than cleanly between frames. */
static size_t split(const uint8_t *in, size_t len, struct frame *fr, bool *ret_bad)
{
    size_t n = 0, at = 0;

    *ret_bad = false;
    while (at < len && n < MAX_FRAMES) {
        uint32_t plen;

        if (len - at < 8 || in[at + 6] != 0 || in[at + 7] != 0) {
            *ret_bad = true;
            break;
        }
        plen = (uint32_t)in[at] | (uint32_t)in[at + 1] << 8 | (uint32_t)in[at + 2] << 16 |
               (uint32_t)in[at + 3] << 24;
        if (plen > AGENT_MAX_PAYLOAD || len - at - 8 < plen) {
            *ret_bad = true;
            break;
        }
        fr[n++] = (struct frame){.type = in[at + 4], .len = plen, .p = in + at + 8};
        at += 8 + plen;
    }
    return n;
}

/* What a stream's capture should hold: the first cap bytes of all. */
struct expect {
    uint8_t *buf;
    size_t len, cap;
    uint64_t total;
};

static void expect_add(struct expect *e, const uint8_t *p, size_t n)
{
    size_t keep = e->cap - e->len < n ? e->cap - e->len : n;

    memcpy(e->buf + e->len, p, keep);
    e->len += keep;
    e->total += n;
}

static void check_capture(const struct capture *c, const struct expect *e)
{
    check(c->total == e->total && c->buf.len == e->len);
    check(c->truncated == (e->total > e->len));
    check(e->len == 0 || memcmp(c->buf.buf, e->buf, e->len) == 0);
}

static uint32_t u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

struct run {
    const struct frame *fr;
    size_t n, at; /* frames, and the next one */
    bool bad;     /* the stream ends badly (else: cleanly, at EOF) */
    size_t in_len;
    struct expect out, err;
};

static bool is_output(uint8_t t)
{
    return t == AGENT_STDOUT || t == AGENT_STDERR;
}

/* An exec's frames (agentc_exec_frame) until its end: the code, and the
 * exit report. stop_at_start: agentc_start's, which ends at STARTED. */
static int model_exec(struct run *m, bool stop_at_start, struct agentc_exit *ex)
{
    for (; m->at < m->n; m->at++) {
        const struct frame *f = &m->fr[m->at];

        if (is_output(f->type)) {
            expect_add(f->type == AGENT_STDOUT ? &m->out : &m->err, f->p, f->len);
            continue;
        }
        if (f->type == AGENT_STARTED) {
            if (stop_at_start) {
                m->at++;
                return 0;
            }
            continue;
        }
        m->at++;
        if (f->type == AGENT_EXITED && f->len >= AGENT_EXITED_SIZE) {
            ex->signaled = u32(f->p) == AGENT_EXIT_SIGNAL;
            ex->code = (int)u32(f->p + 4);
            ex->flags = u32(f->p + 8);
            return AGENTC_EXITED;
        }
        return f->type == AGENT_ERROR ? SBX_E_BACKEND : AGENTC_LOST;
    }
    return AGENTC_LOST;
}

/* The next reply frame (agentc_next_reply skips an idle exec's frames),
 * or NULL when the stream ends first. */
static const struct frame *model_reply(struct run *m)
{
    for (; m->at < m->n; m->at++) {
        uint8_t t = m->fr[m->at].type;

        if (!is_output(t) && t != AGENT_STARTED && t != AGENT_EXITED)
            return &m->fr[m->at++];
    }
    return NULL;
}

static int model_simple(struct run *m)
{
    const struct frame *f = model_reply(m);

    if (!f)
        return AGENTC_LOST;
    return f->type == AGENT_ERROR ? SBX_E_IO : f->type == AGENT_OK ? 0 : AGENTC_LOST;
}

/* A marker's end in a stream: the bytes so far (s, n) hold HEAD, three
 * digits and BEL for the first time ending at n. */
static bool marker_ends(const uint8_t *s, size_t n, int *status)
{
    const uint8_t *t = s + n - (HLEN + 4);

    if (n < HLEN + 4 || memcmp(t, HEAD, HLEN) != 0 || t[HLEN + 3] != 0x07)
        return false;
    for (size_t i = 0; i < 3; i++)
        if (t[HLEN + i] < '0' || t[HLEN + i] > '9')
            return false;
    *status = (t[HLEN] - '0') * 100 + (t[HLEN + 1] - '0') * 10 + (t[HLEN + 2] - '0');
    return true;
}

/* agentc_converse: each stream's bytes up to its first marker are output;
 * MARKED with stdout's status once both streams had theirs. */
static int model_converse(struct run *m, uint8_t *streams[2], int *status, struct agentc_exit *ex)
{
    size_t slen[2] = {0, 0}, kept[2] = {0, 0};
    bool done[2] = {false, false};
    int st[2] = {0, 0}, r = AGENTC_LOST;

    for (; m->at < m->n; m->at++) {
        const struct frame *f = &m->fr[m->at];

        if (is_output(f->type)) {
            int i = f->type == AGENT_STDERR;

            for (size_t k = 0; k < f->len && !done[i]; k++) {
                streams[i][slen[i]++] = f->p[k];
                if (marker_ends(streams[i], slen[i], &st[i])) {
                    done[i] = true;
                    kept[i] = slen[i] - (HLEN + 4);
                }
            }
            if (done[0] && done[1]) {
                m->at++;
                *status = st[0];
                r = AGENTC_MARKED;
                break;
            }
            continue;
        }
        if (f->type == AGENT_STARTED)
            continue;
        m->at++;
        if (f->type == AGENT_EXITED && f->len >= AGENT_EXITED_SIZE) {
            ex->signaled = u32(f->p) == AGENT_EXIT_SIGNAL;
            ex->code = (int)u32(f->p + 4);
            ex->flags = u32(f->p + 8);
            r = AGENTC_EXITED;
        } else {
            r = f->type == AGENT_ERROR ? SBX_E_BACKEND : AGENTC_LOST;
        }
        break;
    }
    for (int i = 0; i < 2; i++)
        expect_add(i ? &m->err : &m->out, streams[i], done[i] ? kept[i] : slen[i]);
    return r;
}

/* ---- the calls ------------------------------------------------------------- */

static struct agentc_sink sink_new(size_t cap)
{
    struct agentc_sink s = {0};

    capture_init(&s.out, cap);
    capture_init(&s.err, cap);
    return s;
}

static void sink_check(struct agentc_sink *s, const struct run *m)
{
    check_capture(&s->out, &m->out);
    check_capture(&s->err, &m->err);
    capture_done(&s->out);
    capture_done(&s->err);
}

static void check_exit(const struct agentc_exit *a, const struct agentc_exit *b)
{
    check(a->signaled == b->signaled && a->code == b->code && a->flags == b->flags);
}

static void do_exec(struct agentc *ac, struct run *m, enum op op, size_t cap, int64_t deadline)
{
    static char *const argv[] = {"prog", NULL}, *const envp[] = {"A=1", NULL};
    struct agentc_sink sink = sink_new(cap);
    struct agentc_exit got = {0}, want = {0};
    int r = op == OP_KILL ? agentc_kill(ac, deadline, &sink, &got)
                          : agentc_exec(ac, argv, envp, "in", 2, deadline, &sink, &got);
    int w = model_exec(m, false, &want);

    check(r == w);
    if (r == AGENTC_EXITED)
        check_exit(&got, &want);
    sink_check(&sink, m);
}

static void do_converse(struct agentc *ac, struct run *m, size_t cap, int64_t deadline)
{
    static char *const argv[] = {"repl", NULL}, *const envp[] = {NULL};
    struct agentc_sink sink = sink_new(cap);
    struct agentc_exit got = {0}, want = {0};
    uint8_t *streams[2];
    int r, w, st = -1, wst = -2;

    r = agentc_start(ac, argv, envp, deadline, &sink, &got);
    w = model_exec(m, true, &want);
    check(r == w);
    if (r == AGENTC_EXITED)
        check_exit(&got, &want);
    sink_check(&sink, m);
    if (r != 0)
        return;
    m->out = (struct expect){.buf = m->out.buf, .cap = cap};
    m->err = (struct expect){.buf = m->err.buf, .cap = cap};
    sink = sink_new(cap);
    streams[0] = malloc(m->in_len + 1);
    streams[1] = malloc(m->in_len + 1);
    check(streams[0] && streams[1]);
    r = agentc_converse(ac, HEAD, "x = 1\n", 6, deadline, &sink, &st, &got);
    w = model_converse(m, streams, &wst, &want);
    check(r == w);
    if (r == AGENTC_MARKED)
        check(st == wst && st >= 0 && st <= 999);
    if (r == AGENTC_EXITED)
        check_exit(&got, &want);
    sink_check(&sink, m);
    free(streams[0]);
    free(streams[1]);
}

static void do_get(struct agentc *ac, struct run *m, size_t max, int64_t deadline)
{
    const struct frame *f;
    char *got = NULL;
    size_t got_len = 0, want_len = 0;
    uint32_t mode = 0;
    int r = agentc_get(ac, "out.txt", max, &got, &got_len, &mode, deadline), w = AGENTC_LOST;
    uint8_t *want = malloc(max + 1);

    check(want != NULL);
    while ((f = model_reply(m)) != NULL) {
        if (f->type == AGENT_DATA) {
            if (want_len + f->len > max) {
                w = AGENTC_LOST;
                break;
            }
            memcpy(want + want_len, f->p, f->len);
            want_len += f->len;
            continue;
        }
        w = f->type == AGENT_ERROR               ? SBX_E_IO
            : f->type == AGENT_OK && f->len == 4 ? 0
                                                 : AGENTC_LOST;
        if (w == 0)
            check(mode == u32(f->p));
        break;
    }
    check(r == w);
    if (r == 0) {
        check(got != NULL && got_len == want_len && got[got_len] == '\0');
        check(want_len == 0 || memcmp(got, want, want_len) == 0);
    }
    free(got);
    free(want);
}

static void do_list(struct agentc *ac, struct run *m, bool stat, int64_t deadline)
{
    struct agentc_entry *e = NULL;
    const struct frame *f;
    char **files = NULL;
    size_t n = 0, k = 0;
    int r = stat ? agentc_list_stat(ac, ".", &e, &n, deadline)
                 : agentc_list(ac, ".", &files, deadline),
        w = AGENTC_LOST;

    while ((f = model_reply(m)) != NULL) {
        size_t plen = strnlen((const char *)f->p, f->len);
        bool entry = f->type == AGENT_DATA &&
                     (stat ? f->len >= 18 && plen == f->len - 17 : plen + 1 == f->len);

        if (entry) {
            /* the path, and with stat its size and mtime */
            if (r == 0 && stat) {
                check(k < n && strcmp(e[k].path, (const char *)f->p) == 0);
                check(e[k].size ==
                        ((uint64_t)u32(f->p + plen + 1) | (uint64_t)u32(f->p + plen + 5) << 32));
                check(e[k].mtime_ns ==
                        ((uint64_t)u32(f->p + plen + 9) | (uint64_t)u32(f->p + plen + 13) << 32));
            } else if (r == 0) {
                check(files[k] != NULL && strcmp(files[k], (const char *)f->p) == 0);
            }
            k++;
            continue;
        }
        if (stat && f->type == AGENT_DATA)
            w = AGENTC_LOST;
        else
            w = f->type == AGENT_ERROR ? SBX_E_IO : f->type == AGENT_OK ? 0 : AGENTC_LOST;
        break;
    }
    check(r == w);
    if (r == 0 && stat)
        check(n == k);
    if (r == 0 && !stat)
        check(files[k] == NULL);
    agentc_entries_free(e, n);
    strv_free(files);
}

static int do_simple(struct agentc *ac, enum op op, int64_t deadline)
{
    static const struct agentc_limit lims[] = {{AGENT_RLIMIT_NOFILE, 64}};
    static const unsigned char bpf[8] = {0x06, 0, 0, 0, 0, 0, 0xff, 0x7f};

    switch (op) {
    case OP_PUT: return agentc_put(ac, "dir/a.py", 0644, "print(1)\n", 9, deadline);
    case OP_LIMITS: return agentc_limits(ac, lims, 1, deadline);
    case OP_FILTER: return agentc_filter(ac, bpf, sizeof(bpf), deadline);
    case OP_RELAY: return agentc_relay(ac, 8080, "/run/proxy.sock", deadline);
    case OP_HELLO:
    case OP_EXEC:
    case OP_GET:
    case OP_LIST:
    case OP_LIST_STAT:
    case OP_CONVERSE:
    case OP_KILL:
    case OP_PREP:
    case OP_GO:
    case OP_FRESH:
    case OP_COUNT: break;
    }
    abort();
}

/* A zygote box's requests (agentc_zygote.c): OK, ERROR (SBX_E_BACKEND), or
 * lost; PREP's OK carries the child's pid and whether it is held, which
 * must be what was asked. */
static void do_zygote(struct agentc *ac, struct run *m, enum op op, bool hold, int64_t deadline)
{
    const struct frame *f;
    int32_t pid = -1;
    int r, w;

    if (op == OP_PREP)
        r = agentc_prep(ac, hold, deadline, &pid);
    else if (op == OP_GO)
        r = agentc_go(ac, deadline);
    else
        r = agentc_fresh(ac, deadline);
    f = model_reply(m);
    if (!f || (f->type != AGENT_OK && f->type != AGENT_ERROR))
        w = AGENTC_LOST;
    else if (f->type == AGENT_ERROR)
        w = SBX_E_BACKEND;
    else if (op == OP_PREP && (f->len < 8 || u32(f->p + 4) != (hold ? 1u : 0u)))
        w = AGENTC_LOST;
    else
        w = 0;
    check(r == w);
    if (r == 0 && op == OP_PREP)
        check(pid == (int32_t)u32(f->p));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct frame frames[MAX_FRAMES];
    static int efd = -1;
    struct fake f;
    struct run m = {0};
    struct agentc *ac;
    enum op op;
    size_t cap, max;
    int64_t deadline = now_ms() + 600000;
    int r;

    if (size < 3)
        return 0;
    if (efd < 0) {
        efd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
        check(efd >= 0);
    }
    op = (enum op)(data[0] % OP_COUNT);
    cap = (size_t)data[2] * 4;
    max = (size_t)data[2] * 16;
    f = (struct fake){.in = data + 3, .len = size - 3, .seed = data[1], .fd = efd};
    m.fr = frames;
    m.n = split(f.in, f.len, frames, &m.bad);
    m.in_len = f.len;
    if (m.n == MAX_FRAMES)
        return 0; /* the model holds no more */
    m.out = (struct expect){.buf = malloc(cap + 1), .cap = cap};
    m.err = (struct expect){.buf = malloc(cap + 1), .cap = cap};
    ac = agentc_new(&ops, &f, -1);
    check(ac && m.out.buf && m.err.buf);

    switch (op) {
    case OP_HELLO:
        r = agentc_hello(ac, deadline);
        check(r == (m.n > 0 && frames[0].type == AGENT_READY && frames[0].len >= 12 &&
                                           u32(frames[0].p) == AGENT_PROTO_VERSION
                                   ? 0
                                   : AGENTC_LOST));
        break;
    case OP_EXEC:
    case OP_KILL: do_exec(ac, &m, op, cap, deadline); break;
    case OP_CONVERSE:
        if (m.n > 0)
            do_converse(ac, &m, cap, deadline);
        break;
    case OP_GET: do_get(ac, &m, max, deadline); break;
    case OP_LIST:
    case OP_LIST_STAT: do_list(ac, &m, op == OP_LIST_STAT, deadline); break;
    case OP_PREP:
    case OP_GO:
    case OP_FRESH: do_zygote(ac, &m, op, data[1] & 1, deadline); break;
    case OP_PUT:
    case OP_LIMITS:
    case OP_FILTER:
    case OP_RELAY:
        r = do_simple(ac, op, deadline);
        check(r == model_simple(&m));
        break;
    case OP_COUNT: abort();
    }
    check(strlen(agentc_last_error(ac)) < 256);
    agentc_free(ac);
    free(m.out.buf);
    free(m.err.buf);
    return 0;
}
