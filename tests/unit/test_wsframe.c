/* SPDX-License-Identifier: MIT */
/*
 * test_wsframe.c: the WebSocket framing module (core/src/net/wsframe.h)
 * against the golden frames of RFC 6455 section 5.7 and the handshake
 * example of section 1.3, a Kubernetes exec exchange, every protocol
 * error the decoder must catch, and the response-head check. Every
 * decoding test also feeds its stream one byte at a time and in seeded
 * random splits, and must give the same events.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

#include "net/wsframe.h"

static const uint8_t RFC_KEY[4] = {0x37, 0xfa, 0x21, 0x3d};
static const uint8_t HELLO_TEXT[] = {0x81, 0x05, 'H', 'e', 'l', 'l', 'o'};
static const uint8_t HELLO_MASKED[] = {
        0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
static const uint8_t HELLO_FRAGMENTS[] = {0x01, 0x03, 'H', 'e', 'l', 0x80, 0x02, 'l', 'o'};
static const uint8_t PING_HELLO[] = {0x89, 0x05, 'H', 'e', 'l', 'l', 'o'};
static const uint8_t PONG_HELLO_MASKED[] = {
        0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};

/* ---- Feeding helpers ---- */

/* One event as recorded: the data copied, since the decoder's pointer
 * lives only until the next feed. */
struct rec {
    enum ws_event_type type;
    unsigned opcode;
    uint16_t code;
    uint8_t *data;
    size_t len;
};

struct run {
    struct rec ev[16];
    size_t n;
    int rc; /* the first negative return, or 0 */
    uint16_t err_code;
};

/* 0: the stream whole; 1: a byte at a time; else random pieces of 1 to
 * 17 bytes from a xorshift generator seeded with split. */
static size_t piece_len(unsigned split, uint32_t *rng, size_t left)
{
    size_t n;

    if (split == 0)
        return left;
    if (split == 1)
        return 1;
    *rng ^= *rng << 13;
    *rng ^= *rng >> 17;
    *rng ^= *rng << 5;
    n = 1 + *rng % 17;
    return n < left ? n : left;
}

/* Feed one piece until it is used up, recording events and checking the
 * feed contract; false once the decoder failed. */
static bool feed_piece(struct ws_decoder *d, const uint8_t *p, size_t n, struct run *r)
{
    while (n > 0) {
        struct ws_event ev;
        size_t used = SIZE_MAX;
        int rc = ws_decoder_feed(d, p, n, &used, &ev);

        if (rc < 0) {
            assert_int_equal(ev.type, WS_EVENT_ERROR);
            assert_non_null(ev.why);
            assert_int_equal(used, SIZE_MAX); /* not written on failure */
            r->rc = rc;
            r->err_code = ev.close_code;
            return false;
        }
        if (rc == 0) {
            assert_int_equal(used, n);
            assert_int_equal(ev.type, WS_EVENT_NONE);
            return true;
        }
        assert_int_equal(rc, 1);
        assert_true(used >= 1 && used <= n);
        assert_true(r->n < 16);
        assert_true(ev.len == 0 ? ev.data == NULL : ev.data != NULL);
        r->ev[r->n] = (struct rec){ev.type, ev.opcode, ev.close_code, NULL, ev.len};
        if (ev.len > 0) {
            r->ev[r->n].data = malloc(ev.len);
            assert_non_null(r->ev[r->n].data);
            memcpy(r->ev[r->n].data, ev.data, ev.len);
        }
        r->n++;
        p += used;
        n -= used;
    }
    return true;
}

static void run_stream(const uint8_t *s, size_t len, size_t max, unsigned split, struct run *r)
{
    struct ws_decoder d;
    uint32_t rng = split;

    memset(r, 0, sizeof(*r));
    assert_int_equal(ws_decoder_init(&d, max), 0);
    for (size_t off = 0; off < len;) {
        size_t n = piece_len(split, &rng, len - off);

        if (!feed_piece(&d, s + off, n, r))
            break;
        off += n;
    }
    ws_decoder_done(&d);
}

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->ev[i].data);
    r->n = 0;
}

static void assert_runs_equal(const struct run *a, const struct run *b)
{
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->rc, b->rc);
    assert_int_equal(a->err_code, b->err_code);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->ev[i].type, b->ev[i].type);
        assert_int_equal(a->ev[i].opcode, b->ev[i].opcode);
        assert_int_equal(a->ev[i].code, b->ev[i].code);
        assert_int_equal(a->ev[i].len, b->ev[i].len);
        if (a->ev[i].len > 0)
            assert_memory_equal(a->ev[i].data, b->ev[i].data, a->ev[i].len);
    }
}

/* Decode s whole into *r, and check that a byte at a time and ten seeded
 * random splits give exactly the same events and error. */
static void decode(const uint8_t *s, size_t len, size_t max, struct run *r)
{
    struct run other;

    run_stream(s, len, max, 0, r);
    for (unsigned split = 1; split <= 11; split++) {
        run_stream(s, len, max, split == 1 ? 1 : split * 2654435761u, &other);
        assert_runs_equal(r, &other);
        run_free(&other);
    }
}

static void assert_event(
        const struct rec *e, enum ws_event_type type, unsigned opcode, const char *text)
{
    assert_int_equal(e->type, type);
    assert_int_equal(e->opcode, opcode);
    assert_int_equal(e->len, strlen(text));
    if (e->len > 0)
        assert_memory_equal(e->data, text, e->len);
}

/* ---- Encoding ---- */

/* ws_frame_encode(payload) gives exactly want. */
static void assert_encodes(const char *payload, size_t len, unsigned opcode, const uint8_t *key,
        const uint8_t *want, size_t want_len)
{
    uint8_t out[64];
    size_t n = 0;

    assert_int_equal(
            ws_frame_encode((const uint8_t *)payload, len, opcode, key, out, sizeof(out), &n), 0);
    assert_int_equal(n, want_len);
    assert_memory_equal(out, want, n);
}

static void test_encode_golden(void **state)
{
    (void)state;
    assert_encodes("Hello", 5, WS_OP_TEXT, NULL, HELLO_TEXT, sizeof(HELLO_TEXT));
    assert_encodes("Hello", 5, WS_OP_TEXT, RFC_KEY, HELLO_MASKED, sizeof(HELLO_MASKED));
    assert_encodes("Hello", 5, WS_OP_PING, NULL, PING_HELLO, sizeof(PING_HELLO));
    assert_encodes("Hello", 5, WS_OP_PONG, RFC_KEY, PONG_HELLO_MASKED, sizeof(PONG_HELLO_MASKED));
    assert_encodes(NULL, 0, WS_OP_CLOSE, RFC_KEY, (const uint8_t *)"\x88\x80\x37\xfa\x21\x3d", 6);
    /* RFC 6455's "Hel" + "lo", the second fragment alone */
    assert_encodes("lo", 2, WS_OP_CONTINUATION, NULL, HELLO_FRAGMENTS + 5, 4);
}

static void test_encode_headers(void **state)
{
    static const uint8_t h256[] = {0x82, 0x7e, 0x01, 0x00};
    static const uint8_t h64k[] = {0x82, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00};
    static const uint8_t h256_masked[] = {0x82, 0xfe, 0x01, 0x00, 0x37, 0xfa, 0x21, 0x3d};
    uint8_t out[WS_HEADER_MAX];

    (void)state;
    assert_int_equal(ws_frame_header(out, WS_OP_BINARY, true, 256, NULL), 4);
    assert_memory_equal(out, h256, 4);
    assert_int_equal(ws_frame_header(out, WS_OP_BINARY, true, 65536, NULL), 10);
    assert_memory_equal(out, h64k, 10);
    assert_int_equal(ws_frame_header(out, WS_OP_BINARY, true, 256, RFC_KEY), 8);
    assert_memory_equal(out, h256_masked, 8);
    /* the edges of each length form */
    assert_int_equal(ws_frame_header(out, WS_OP_BINARY, true, 125, NULL), 2);
    assert_int_equal(out[1], 125);
    assert_int_equal(ws_frame_header(out, WS_OP_BINARY, true, 126, NULL), 4);
    assert_int_equal(ws_frame_header(out, WS_OP_BINARY, true, 65535, NULL), 4);
    assert_int_equal(ws_frame_header(out, WS_OP_BINARY, false, 1ull << 40, RFC_KEY), 14);
    assert_memory_equal(out, "\x02\xff\x00\x00\x01\x00\x00\x00\x00\x00\x37\xfa\x21\x3d", 14);
    /* the first fragment of RFC 6455's "Hel" + "lo" */
    assert_int_equal(ws_frame_header(out, WS_OP_TEXT, false, 3, NULL), 2);
    assert_memory_equal(out, HELLO_FRAGMENTS, 2);
    assert_int_equal(ws_frame_header(out, WS_OP_CONTINUATION, true, 2, NULL), 2);
    assert_memory_equal(out, HELLO_FRAGMENTS + 5, 2);
    /* what no frame may carry */
    assert_int_equal(ws_frame_header(out, 0x3, true, 0, NULL), 0);
    assert_int_equal(ws_frame_header(out, 0x10, true, 0, NULL), 0);
    assert_int_equal(ws_frame_header(out, WS_OP_BINARY, true, 1ull << 63, NULL), 0);
}

static void test_encode_limits(void **state)
{
    uint8_t payload[200] = {0}, out[256];
    size_t n = 99;

    (void)state;
    assert_int_equal(ws_frame_encode(payload, 125, WS_OP_PING, RFC_KEY, out, sizeof(out), &n), 0);
    assert_int_equal(n, 2 + 4 + 125);
    assert_int_equal(ws_frame_encode(payload, 126, WS_OP_PING, RFC_KEY, out, sizeof(out), &n),
            SBX_E_INVALID);
    assert_int_equal(
            ws_frame_encode(payload, 126, WS_OP_CLOSE, NULL, out, sizeof(out), &n), SBX_E_INVALID);
    assert_int_equal(ws_frame_encode(payload, 1, 0x7, NULL, out, sizeof(out), &n), SBX_E_INVALID);
    /* exactly enough room, then one byte short */
    assert_int_equal(ws_frame_encode(payload, 200, WS_OP_BINARY, RFC_KEY, out, 208, &n), 0);
    assert_int_equal(n, 208);
    n = 99;
    assert_int_equal(
            ws_frame_encode(payload, 200, WS_OP_BINARY, RFC_KEY, out, 207, &n), SBX_E_LIMIT);
    assert_int_equal(ws_frame_encode(payload, 200, WS_OP_BINARY, RFC_KEY, out, 3, &n), SBX_E_LIMIT);
    assert_int_equal(n, 99);
}

static void test_mask_pieces(void **state)
{
    uint8_t plain[257], whole[257], pieces[257];
    static const uint8_t key[4] = {0xa1, 0x02, 0xf3, 0x44};

    (void)state;
    for (size_t i = 0; i < sizeof(plain); i++)
        plain[i] = (uint8_t)(i * 7 + 3);
    memcpy(whole, plain, sizeof(plain));
    ws_mask(whole, sizeof(whole), key, 0);
    assert_int_equal(whole[0], plain[0] ^ 0xa1);
    assert_int_equal(whole[5], plain[5] ^ 0x02);
    /* in pieces of every size from 1 to 9, each with its offset */
    for (size_t step = 1; step <= 9; step++) {
        memcpy(pieces, plain, sizeof(plain));
        for (size_t off = 0; off < sizeof(pieces); off += step) {
            size_t n = sizeof(pieces) - off < step ? sizeof(pieces) - off : step;

            ws_mask(pieces + off, n, key, off);
        }
        assert_memory_equal(pieces, whole, sizeof(whole));
    }
    /* the offset counts from the payload's start even past 2^32 */
    memcpy(pieces, plain, 8);
    ws_mask(pieces, 8, key, (1ull << 32) + 2);
    assert_int_equal(pieces[0], plain[0] ^ 0xf3);
    /* masking twice restores */
    ws_mask(whole, sizeof(whole), key, 0);
    assert_memory_equal(whole, plain, sizeof(plain));
}

static void test_close_payload(void **state)
{
    uint8_t out[WS_CONTROL_MAX];
    char long_reason[2 * 100 + 1];
    size_t n = 99;

    (void)state;
    assert_int_equal(ws_close_payload(1000, "bye", out, &n), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(out,
            "\x03\xe8"
            "bye",
            5);
    assert_int_equal(ws_close_payload(WS_CLOSE_NO_STATUS, NULL, out, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(ws_close_payload(4999, NULL, out, &n), 0);
    assert_int_equal(n, 2);
    assert_memory_equal(out, "\x13\x87", 2);
    n = 99;
    assert_int_equal(ws_close_payload(WS_CLOSE_NO_STATUS, "x", out, &n), SBX_E_INVALID);
    assert_int_equal(ws_close_payload(999, NULL, out, &n), SBX_E_INVALID);
    assert_int_equal(ws_close_payload(1004, NULL, out, &n), SBX_E_INVALID);
    assert_int_equal(ws_close_payload(1006, NULL, out, &n), SBX_E_INVALID);
    assert_int_equal(ws_close_payload(1015, NULL, out, &n), SBX_E_INVALID);
    assert_int_equal(ws_close_payload(2999, NULL, out, &n), SBX_E_INVALID);
    assert_int_equal(ws_close_payload(5000, NULL, out, &n), SBX_E_INVALID);
    assert_int_equal(ws_close_payload(1000, "\xff", out, &n), SBX_E_INVALID);
    assert_int_equal(n, 99);
    /* 100 two-byte characters: cut to 61 of them, not into the 62nd */
    for (size_t i = 0; i < 100; i++)
        memcpy(long_reason + 2 * i, "\xc3\xa9", 2);
    long_reason[200] = '\0';
    assert_int_equal(ws_close_payload(1001, long_reason, out, &n), 0);
    assert_int_equal(n, 2 + 122);
    assert_memory_equal(out + 2, long_reason, 122);
}

/* ---- Decoding ---- */

static void test_decode_golden(void **state)
{
    struct run r;
    uint8_t *big = malloc(10 + 65536);

    (void)state;
    decode(HELLO_TEXT, sizeof(HELLO_TEXT), 1024, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.rc, 0);
    assert_event(&r.ev[0], WS_EVENT_MESSAGE, WS_OP_TEXT, "Hello");
    run_free(&r);
    decode(HELLO_FRAGMENTS, sizeof(HELLO_FRAGMENTS), 1024, &r);
    assert_int_equal(r.n, 1);
    assert_event(&r.ev[0], WS_EVENT_MESSAGE, WS_OP_TEXT, "Hello");
    run_free(&r);
    decode(PING_HELLO, sizeof(PING_HELLO), 1024, &r);
    assert_int_equal(r.n, 1);
    assert_event(&r.ev[0], WS_EVENT_PING, 0, "Hello");
    run_free(&r);
    decode((const uint8_t *)"\x8a\x05Hello", 7, 1024, &r);
    assert_int_equal(r.n, 1);
    assert_event(&r.ev[0], WS_EVENT_PONG, 0, "Hello");
    run_free(&r);
    /* 256 and 65536 bytes of binary, and a limit of exactly that */
    assert_non_null(big);
    memcpy(big, "\x82\x7e\x01\x00", 4);
    for (size_t i = 0; i < 256; i++)
        big[4 + i] = (uint8_t)i;
    decode(big, 4 + 256, 256, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.ev[0].opcode, WS_OP_BINARY);
    assert_int_equal(r.ev[0].len, 256);
    assert_memory_equal(r.ev[0].data, big + 4, 256);
    run_free(&r);
    memcpy(big, "\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10);
    for (size_t i = 0; i < 65536; i++)
        big[10 + i] = (uint8_t)(i >> 3);
    decode(big, 10 + 65536, 65536, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.ev[0].len, 65536);
    assert_memory_equal(r.ev[0].data, big + 10, 65536);
    run_free(&r);
    free(big);
}

/* All golden frames back to back, twice: messages of one stream do not
 * leak into each other and the buffer is reused. */
static void test_decode_concatenated(void **state)
{
    uint8_t s[2 * (sizeof(HELLO_TEXT) + sizeof(HELLO_FRAGMENTS) + sizeof(PING_HELLO) + 3)];
    size_t n = 0;
    struct run r;

    (void)state;
    for (int k = 0; k < 2; k++) {
        memcpy(s + n, HELLO_FRAGMENTS, sizeof(HELLO_FRAGMENTS));
        n += sizeof(HELLO_FRAGMENTS);
        memcpy(s + n, PING_HELLO, sizeof(PING_HELLO));
        n += sizeof(PING_HELLO);
        memcpy(s + n, "\x82\x01\x07", 3);
        n += 3;
        memcpy(s + n, HELLO_TEXT, sizeof(HELLO_TEXT));
        n += sizeof(HELLO_TEXT);
    }
    decode(s, n, 5, &r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.n, 8);
    for (size_t k = 0; k < 8; k += 4) {
        assert_event(&r.ev[k], WS_EVENT_MESSAGE, WS_OP_TEXT, "Hello");
        assert_event(&r.ev[k + 1], WS_EVENT_PING, 0, "Hello");
        assert_event(&r.ev[k + 2], WS_EVENT_MESSAGE, WS_OP_BINARY, "\x07");
        assert_event(&r.ev[k + 3], WS_EVENT_MESSAGE, WS_OP_TEXT, "Hello");
    }
    run_free(&r);
}

/* What the API server sends on the v5.channel.k8s.io exec stream: binary
 * messages whose first byte is the channel (1 stdout, 2 stderr, 3 the
 * status object), then a close. */
static void test_decode_kubernetes(void **state)
{
    static const char status[] = "{\"metadata\":{},\"status\":\"Success\"}";
    uint8_t s[256], frame[128];
    size_t n = 0, fl;
    struct run r;

    (void)state;
    assert_int_equal(
            ws_frame_encode((const uint8_t *)"\x01out", 4, WS_OP_BINARY, NULL, s, sizeof(s), &fl),
            0);
    n += fl;
    /* stderr arrives in two fragments */
    memcpy(s + n,
            "\x02\x02\x02"
            "e\x80\x02rr",
            8);
    n += 8;
    frame[0] = 3;
    memcpy(frame + 1, status, strlen(status));
    assert_int_equal(ws_frame_encode(frame, 1 + strlen(status), WS_OP_BINARY, NULL, s + n,
                             sizeof(s) - n, &fl),
            0);
    n += fl;
    memcpy(s + n, "\x88\x02\x03\xe8", 4);
    n += 4;
    decode(s, n, 4096, &r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.n, 4);
    assert_event(&r.ev[0], WS_EVENT_MESSAGE, WS_OP_BINARY, "\x01out");
    assert_event(&r.ev[1], WS_EVENT_MESSAGE, WS_OP_BINARY,
            "\x02"
            "err");
    assert_int_equal(r.ev[2].len, 1 + strlen(status));
    assert_int_equal(r.ev[2].data[0], 3);
    assert_memory_equal(r.ev[2].data + 1, status, strlen(status));
    assert_int_equal(r.ev[3].type, WS_EVENT_CLOSE);
    assert_int_equal(r.ev[3].code, 1000);
    run_free(&r);
    /* the client's stdin (channel 0) goes out masked and unmasks back */
    assert_int_equal(ws_frame_encode((const uint8_t *)"\x00in", 3, WS_OP_BINARY, RFC_KEY, frame,
                             sizeof(frame), &fl),
            0);
    assert_int_equal(fl, 2 + 4 + 3);
    assert_memory_equal(frame, "\x82\x83\x37\xfa\x21\x3d", 6);
    ws_mask(frame + 6, 3, RFC_KEY, 0);
    assert_memory_equal(frame + 6, "\x00in", 3);
}

static void test_decode_control_between_fragments(void **state)
{
    static const uint8_t s[] = {0x01, 0x03, 'H', 'e', 'l', 0x89, 0x00, 0x8a, 0x02, 'h', 'i', 0x00,
            0x00, 0x89, 0x01, '!', 0x80, 0x02, 'l', 'o'};
    struct run r;

    (void)state;
    decode(s, sizeof(s), 5, &r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.n, 4);
    assert_event(&r.ev[0], WS_EVENT_PING, 0, "");
    assert_event(&r.ev[1], WS_EVENT_PONG, 0, "hi");
    assert_event(&r.ev[2], WS_EVENT_PING, 0, "!");
    assert_event(&r.ev[3], WS_EVENT_MESSAGE, WS_OP_TEXT, "Hello");
    run_free(&r);
}

static void test_decode_close(void **state)
{
    uint8_t payload[WS_CONTROL_MAX], frame[WS_CONTROL_MAX + 2];
    size_t n, fl;
    struct run r;

    (void)state;
    decode((const uint8_t *)"\x88\x00", 2, 16, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.ev[0].type, WS_EVENT_CLOSE);
    assert_int_equal(r.ev[0].code, WS_CLOSE_NO_STATUS);
    assert_int_equal(r.ev[0].len, 0);
    run_free(&r);
    /* code and reason, built by ws_close_payload; the limit on messages
     * does not apply to control frames */
    assert_int_equal(ws_close_payload(4001, "pod deleted \xe2\x9c\x93", payload, &n), 0);
    assert_int_equal(ws_frame_encode(payload, n, WS_OP_CLOSE, NULL, frame, sizeof(frame), &fl), 0);
    decode(frame, fl, 0, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.ev[0].code, 4001);
    assert_event(&r.ev[0], WS_EVENT_CLOSE, 0, "pod deleted \xe2\x9c\x93");
    run_free(&r);
}

static void test_decode_max_size(void **state)
{
    uint8_t s[64];
    struct run r;

    (void)state;
    /* exactly the limit, whole and in fragments */
    memcpy(s,
            "\x82\x04"
            "abcd",
            6);
    decode(s, 6, 4, &r);
    assert_int_equal(r.rc, 0);
    assert_event(&r.ev[0], WS_EVENT_MESSAGE, WS_OP_BINARY, "abcd");
    run_free(&r);
    memcpy(s,
            "\x02\x02"
            "ab"
            "\x80\x02"
            "cd",
            8);
    decode(s, 8, 4, &r);
    assert_int_equal(r.rc, 0);
    assert_event(&r.ev[0], WS_EVENT_MESSAGE, WS_OP_BINARY, "abcd");
    run_free(&r);
    /* one byte more, in the last fragment */
    memcpy(s,
            "\x02\x02"
            "ab"
            "\x80\x03"
            "cde",
            9);
    decode(s, 9, 4, &r);
    assert_int_equal(r.rc, SBX_E_LIMIT);
    assert_int_equal(r.err_code, WS_CLOSE_TOO_BIG);
    assert_int_equal(r.n, 0);
    /* a limit of 0 allows only empty messages */
    decode((const uint8_t *)"\x82\x00\x81\x00", 4, 0, &r);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.ev[1].opcode, WS_OP_TEXT);
    run_free(&r);
    decode((const uint8_t *)"\x82\x01x", 3, 0, &r);
    assert_int_equal(r.err_code, WS_CLOSE_TOO_BIG);
}

/* A frame that claims 2^62 bytes fails on its header alone: nothing of
 * it is buffered, and the error is reported again on every later call. */
static void test_decode_too_big_unbuffered(void **state)
{
    static const uint8_t s[] = {0x82, 0x7f, 0x40, 0, 0, 0, 0, 0, 0, 0, 'x'};
    struct ws_decoder d;
    struct ws_event ev;
    size_t used = 0;

    (void)state;
    assert_int_equal(ws_decoder_init(&d, 1 << 20), 0);
    assert_int_equal(ws_decoder_feed(&d, s, 9, &used, &ev), 0);
    assert_int_equal(used, 9);
    assert_int_equal(ws_decoder_feed(&d, s + 9, 2, &used, &ev), SBX_E_LIMIT);
    assert_int_equal(ev.type, WS_EVENT_ERROR);
    assert_int_equal(ev.close_code, WS_CLOSE_TOO_BIG);
    assert_int_equal(d.msg_len, 0);
    assert_int_equal(ws_decoder_feed(&d, HELLO_TEXT, sizeof(HELLO_TEXT), &used, &ev), SBX_E_LIMIT);
    assert_int_equal(ev.close_code, WS_CLOSE_TOO_BIG);
    ws_decoder_done(&d);
    ws_decoder_done(&d); /* twice, and on a zeroed decoder */
    ws_decoder_done(NULL);
    /* a done decoder refuses work instead of spinning */
    assert_int_equal(
            ws_decoder_feed(&d, HELLO_TEXT, sizeof(HELLO_TEXT), &used, &ev), SBX_E_INVALID);
    assert_int_equal(ev.close_code, WS_CLOSE_INTERNAL_ERROR);
}

struct bad_stream {
    const char *what;
    const char *bytes;
    size_t len;
    size_t events_before; /* events delivered before the error */
    uint16_t code;
};

#define BAD(what, bytes, before, code)                                                             \
    {                                                                                              \
        what, bytes, sizeof(bytes) - 1, before, code                                               \
    }

static void test_decode_protocol_errors(void **state)
{
    static const struct bad_stream bad[] = {
            BAD("RSV1", "\xc1\x00", 0, 1002),
            BAD("RSV3", "\x92\x00", 0, 1002),
            BAD("opcode 3", "\x83\x00", 0, 1002),
            BAD("opcode 0xB", "\x8b\x00", 0, 1002),
            BAD("masked", "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 0, 1002),
            BAD("fragmented ping", "\x09\x00", 0, 1002),
            BAD("fragmented close", "\x08\x00\x80\x00", 0, 1002),
            BAD("long ping", "\x89\x7e\x00\x7e", 0, 1002),
            BAD("ping of 126 in 7 bits", "\x89\x7e", 0, 1002),
            BAD("lone continuation", "\x80\x01x", 0, 1002),
            BAD("continuation after end", "\x81\x01x\x80\x01y", 1, 1002),
            BAD("text inside binary", "\x02\x01x\x81\x01y", 0, 1002),
            BAD("binary inside text", "\x01\x01x\x02\x01y", 0, 1002),
            BAD("64-bit top bit", "\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x00", 0, 1002),
            BAD("16-bit not shortest", "\x82\x7e\x00\x05", 0, 1002),
            BAD("64-bit not shortest", "\x82\x7f\x00\x00\x00\x00\x00\x00\xff\xff", 0, 1002),
            BAD("close of 1 byte", "\x88\x01\x03", 0, 1002),
            /* after a ping whose second byte would make code 1000 */
            BAD("close of 1 byte after a ping", "\x89\x02\x00\xe8\x88\x01\x03", 1, 1002),
            BAD("close code 999", "\x88\x02\x03\xe7", 0, 1002),
            BAD("close code 1005", "\x88\x02\x03\xed", 0, 1002),
            BAD("close code 1006", "\x88\x02\x03\xee", 0, 1002),
            BAD("close code 5000", "\x88\x02\x13\x88", 0, 1002),
            BAD("close reason not UTF-8", "\x88\x04\x03\xe8\xc3\x28", 0, 1007),
            BAD("data after close", "\x88\x00\x81\x01x", 1, 1002),
            BAD("text not UTF-8", "\x81\x02\xc3\x28", 0, 1007),
            BAD("overlong UTF-8", "\x81\x02\xc0\xaf", 0, 1007),
            BAD("surrogate", "\x81\x03\xed\xa0\x80", 0, 1007),
            BAD("fragments not UTF-8", "\x01\x01\xc3\x80\x01\x41", 0, 1007),
            BAD("too big", "\x82\x11", 0, 1009),
    };
    struct run r;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        print_message("%s\n", bad[i].what);
        decode((const uint8_t *)bad[i].bytes, bad[i].len, 16, &r);
        assert_int_equal(r.n, bad[i].events_before);
        assert_int_equal(r.err_code, bad[i].code);
        assert_int_equal(r.rc, bad[i].code == 1009 ? SBX_E_LIMIT : SBX_E_INVALID);
        run_free(&r);
    }
    /* a character split across fragments is fine */
    decode((const uint8_t *)"\x01\x01\xc3\x80\x01\xa9", 6, 16, &r);
    assert_int_equal(r.rc, 0);
    assert_event(&r.ev[0], WS_EVENT_MESSAGE, WS_OP_TEXT, "\xc3\xa9");
    run_free(&r);
    /* binary messages are not checked for UTF-8 */
    decode((const uint8_t *)"\x82\x02\xc3\x28", 4, 16, &r);
    assert_int_equal(r.rc, 0);
    run_free(&r);
}

/* ---- Handshake ---- */

static void test_handshake_key(void **state)
{
    char key[WS_KEY_LEN + 1], accept[WS_ACCEPT_LEN + 1];

    (void)state;
    ws_key_from_random((const uint8_t *)"the sample nonce", key);
    assert_string_equal(key, "dGhlIHNhbXBsZSBub25jZQ==");
    ws_accept_for_key(key, accept);
    assert_string_equal(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    ws_accept_for_key("x3JJHMbDL1EzLkh9GBhXDw==", accept);
    assert_string_equal(accept, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
}

static const char *const K8S_PROTOCOLS[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", NULL};
#define RFC_WS_KEY "dGhlIHNhbXBsZSBub25jZQ=="

static void test_response_good(void **state)
{
    static const char head_v4[] = "HTTP/1.1 101 Switching Protocols\r\n"
                                  "Upgrade: websocket\r\n"
                                  "Connection: Upgrade\r\n"
                                  "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                                  "Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n"
                                  "\r\n";
    /* field names and list tokens in any case, in lists, with spaces;
     * bare LF line ends */
    static const char head_v5[] = "HTTP/1.1 101 Switching Protocols\n"
                                  "upgrade:WebSocket\n"
                                  "CONNECTION: keep-alive ,  UPGRADE \n"
                                  "X-Other: a: b\n"
                                  "sec-websocket-accept:   s3pPLMBiTxaQ9kYGzzhZRbK+xOo=  \n"
                                  "Sec-WebSocket-Protocol: v5.channel.k8s.io\n"
                                  "\n";
    static const char head_plain[] = "HTTP/1.1 101 Switching Protocols\r\n"
                                     "Upgrade: h2c\r\nUpgrade: websocket\r\n"
                                     "Connection: Upgrade\r\n"
                                     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                                     "\r\n";
    const char *proto = "unset";
    char why[256] = "";

    (void)state;
    assert_int_equal(
            ws_check_response(head_v4, RFC_WS_KEY, K8S_PROTOCOLS, &proto, why, sizeof(why)), 0);
    assert_ptr_equal(proto, K8S_PROTOCOLS[1]);
    assert_string_equal(why, "");
    assert_int_equal(
            ws_check_response(head_v5, RFC_WS_KEY, K8S_PROTOCOLS, &proto, why, sizeof(why)), 0);
    assert_ptr_equal(proto, K8S_PROTOCOLS[0]);
    assert_int_equal(ws_check_response(head_plain, RFC_WS_KEY, NULL, &proto, NULL, 0), 0);
    assert_null(proto);
    assert_int_equal(ws_response_status(head_v4), 101);
}

struct bad_head {
    const char *head;
    const char *why_has;
};

#define GOOD_STATUS  "HTTP/1.1 101 Switching Protocols\r\n"
#define GOOD_UPGRADE "Upgrade: websocket\r\nConnection: Upgrade\r\n"
#define GOOD_ACCEPT  "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
#define GOOD_PROTO   "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n"

static void test_response_bad(void **state)
{
    static const struct bad_head bad[] = {
            {"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n\r\n",
                    "'HTTP/1.1 403 Forbidden' instead of 101"},
            {"HTTP/1.1 200 OK\r\n\r\n", "'HTTP/1.1 200 OK'"},
            {"HTTP/1.1 10 x\r\n\r\n", "malformed status line"},
            {"SSH-2.0-OpenSSH\r\n\r\n", "malformed status line"},
            {"", "malformed status line"},
            {"HTTP/1.1 101 Switching Protocols", "does not end with a blank line"},
            {GOOD_STATUS GOOD_UPGRADE GOOD_ACCEPT GOOD_PROTO, "does not end with a blank line"},
            {GOOD_STATUS "Connection: Upgrade\r\n" GOOD_ACCEPT GOOD_PROTO "\r\n",
                    "no 'Upgrade: websocket'"},
            {GOOD_STATUS "Upgrade: websocket2\r\nConnection: Upgrade\r\n" GOOD_ACCEPT GOOD_PROTO
                         "\r\n",
                    "no 'Upgrade: websocket'"},
            {GOOD_STATUS "Upgrade: websocket\r\nConnection: close\r\n" GOOD_ACCEPT GOOD_PROTO
                         "\r\n",
                    "no 'Connection: Upgrade'"},
            {GOOD_STATUS GOOD_UPGRADE GOOD_PROTO "\r\n", "no Sec-WebSocket-Accept"},
            {GOOD_STATUS GOOD_UPGRADE GOOD_ACCEPT GOOD_ACCEPT GOOD_PROTO "\r\n",
                    "more than one Sec-WebSocket-Accept"},
            {GOOD_STATUS GOOD_UPGRADE
                    "Sec-WebSocket-Accept: HSmrc0sMlYUkAGmm5OPpG2HaGWk=\r\n" GOOD_PROTO "\r\n",
                    "'HSmrc0sMlYUkAGmm5OPpG2HaGWk=' does not match the key sent (expected "
                    "'s3pPLMBiTxaQ9kYGzzhZRbK+xOo=')"},
            {GOOD_STATUS GOOD_UPGRADE
                    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo\r\n" GOOD_PROTO "\r\n",
                    "does not match"},
            {GOOD_STATUS GOOD_UPGRADE
                    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=x\r\n" GOOD_PROTO "\r\n",
                    "does not match"},
            {GOOD_STATUS GOOD_UPGRADE GOOD_ACCEPT "Sec-WebSocket-Protocol: v3.channel.k8s.io\r\n"
                                                  "\r\n",
                    "subprotocol 'v3.channel.k8s.io', which the client did not offer"},
            {GOOD_STATUS GOOD_UPGRADE GOOD_ACCEPT "Sec-WebSocket-Protocol: V5.channel.k8s.io\r\n"
                                                  "\r\n",
                    "did not offer"},
            {GOOD_STATUS GOOD_UPGRADE GOOD_ACCEPT "\r\n", "chose no subprotocol"},
            {GOOD_STATUS GOOD_UPGRADE GOOD_ACCEPT GOOD_PROTO GOOD_PROTO "\r\n",
                    "more than one Sec-WebSocket-Protocol"},
            {GOOD_STATUS GOOD_UPGRADE GOOD_ACCEPT GOOD_PROTO
                    "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
                    "extensions 'permessage-deflate'"},
            {GOOD_STATUS GOOD_UPGRADE " folded\r\n" GOOD_ACCEPT GOOD_PROTO "\r\n",
                    "malformed header line ' folded'"},
            {GOOD_STATUS GOOD_UPGRADE "Bad Name: x\r\n" GOOD_ACCEPT GOOD_PROTO "\r\n",
                    "malformed header line"},
            {GOOD_STATUS GOOD_UPGRADE ": x\r\n" GOOD_ACCEPT GOOD_PROTO "\r\n",
                    "malformed header line"},
            {GOOD_STATUS GOOD_UPGRADE "\x01\x7f\xff: x\r\n" GOOD_ACCEPT GOOD_PROTO "\r\n",
                    "malformed header line '???: x'"},
    };
    const char *proto = "unset";
    char why[256];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        print_message("%s\n", bad[i].why_has);
        assert_int_equal(
                ws_check_response(bad[i].head, RFC_WS_KEY, K8S_PROTOCOLS, &proto, why, sizeof(why)),
                SBX_E_BACKEND);
        assert_non_null(strstr(why, bad[i].why_has));
        assert_null(strchr(why, '\n'));
        assert_string_equal(proto, "unset"); /* not written on failure */
    }
    /* a refusal's reason says the body follows */
    ws_check_response(bad[0].head, RFC_WS_KEY, K8S_PROTOCOLS, &proto, why, sizeof(why));
    assert_non_null(strstr(why, "body"));
    ws_check_response(bad[1].head, RFC_WS_KEY, K8S_PROTOCOLS, &proto, why, sizeof(why));
    assert_null(strstr(why, "body"));
    /* offered nothing, got one */
    ws_check_response(GOOD_STATUS GOOD_UPGRADE GOOD_ACCEPT GOOD_PROTO "\r\n", RFC_WS_KEY, NULL,
            &proto, why, sizeof(why));
    assert_non_null(strstr(why, "did not offer"));
    assert_int_equal(
            ws_check_response(NULL, RFC_WS_KEY, NULL, &proto, why, sizeof(why)), SBX_E_INVALID);
    /* a short reason buffer is cut, not overrun */
    assert_int_equal(
            ws_check_response(bad[0].head, RFC_WS_KEY, NULL, &proto, why, 8), SBX_E_BACKEND);
    assert_int_equal(strlen(why), 7);
}

static void test_response_bounds(void **state)
{
    size_t big = WS_RESPONSE_HEAD_MAX + 2;
    char *head = malloc(big + 1);
    char why[256];
    const char *proto;

    (void)state;
    assert_non_null(head);
    /* a head one byte over the limit, otherwise good */
    memset(head, 'a', big);
    memcpy(head, GOOD_STATUS "X: ", strlen(GOOD_STATUS "X: "));
    memcpy(head + big - 4, "\r\n\r\n", 4);
    head[big] = '\0';
    assert_int_equal(
            ws_check_response(head, RFC_WS_KEY, NULL, &proto, why, sizeof(why)), SBX_E_BACKEND);
    assert_non_null(strstr(why, "longer than"));
    free(head);
    /* long network strings are cut in the reason */
    head = malloc(1000);
    assert_non_null(head);
    memcpy(head, "HTTP/1.1 500 ", 13);
    memset(head + 13, 'z', 900);
    memcpy(head + 913, "\r\n\r\n", 5);
    ws_check_response(head, RFC_WS_KEY, NULL, &proto, why, sizeof(why));
    assert_non_null(strstr(why, "zzz...'"));
    assert_true(strlen(why) < 200);
    free(head);
    assert_int_equal(ws_response_status("HTTP/1.0 404\r\n"), 404);
    assert_int_equal(ws_response_status("HTTP/1.1 404"), -1); /* no line end */
    assert_int_equal(ws_response_status("HTTP/1.1 4041 x"), -1);
    assert_int_equal(ws_response_status("HTTP/2 101 x"), -1);
    assert_int_equal(ws_response_status("HTTP/1.1 1"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_encode_golden),
            cmocka_unit_test(test_encode_headers),
            cmocka_unit_test(test_encode_limits),
            cmocka_unit_test(test_mask_pieces),
            cmocka_unit_test(test_close_payload),
            cmocka_unit_test(test_decode_golden),
            cmocka_unit_test(test_decode_concatenated),
            cmocka_unit_test(test_decode_kubernetes),
            cmocka_unit_test(test_decode_control_between_fragments),
            cmocka_unit_test(test_decode_close),
            cmocka_unit_test(test_decode_max_size),
            cmocka_unit_test(test_decode_too_big_unbuffered),
            cmocka_unit_test(test_decode_protocol_errors),
            cmocka_unit_test(test_handshake_key),
            cmocka_unit_test(test_response_good),
            cmocka_unit_test(test_response_bad),
            cmocka_unit_test(test_response_bounds),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
