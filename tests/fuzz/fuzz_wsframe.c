/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wsframe.c: libFuzzer target for the WebSocket module
 * (core/src/net/wsframe.h). The first byte picks the message limit and a seed
 * for the piece sizes; the rest is fed to the decoder in those pieces,
 * checking the feed contract on every call (consumed within the piece, at
 * least one byte per event, all of it when no event, well-formed events
 * and errors, errors sticky). Then the same bytes whole must give the same
 * events, and the input, as text, goes through ws_check_response. A crash,
 * a sanitizer report or an abort() is a bug. Build with clang
 * -fsanitize=fuzzer, or link with replay.c to replay a corpus.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

#include "base/util.h"
#include "net/wsframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENTS 4096

static void check(int ok)
{
    if (!ok)
        abort();
}

/* A digest of the event sequence, to compare two runs without storing. */
struct trace {
    uint64_t hash;
    size_t events;
    int rc;
};

static void mix(struct trace *t, uint64_t v)
{
    t->hash = (t->hash ^ v) * 0x100000001b3ull;
}

static void check_event(const struct ws_event *ev, size_t max, struct trace *t)
{
    check(ev->len == 0 ? ev->data == NULL : ev->data != NULL);
    check(ev->why == NULL);
    switch (ev->type) {
    case WS_EVENT_MESSAGE:
        check(ev->opcode == WS_OP_TEXT || ev->opcode == WS_OP_BINARY);
        check(ev->len <= max);
        if (ev->opcode == WS_OP_TEXT)
            check(utf8_is_valid((const char *)ev->data, ev->len));
        break;
    case WS_EVENT_PING:
    case WS_EVENT_PONG: check(ev->len <= WS_CONTROL_MAX); break;
    case WS_EVENT_CLOSE:
        check(ev->len <= WS_CONTROL_MAX - 2);
        check(ev->close_code >= 1000 && ev->close_code <= 4999);
        break;
    case WS_EVENT_NONE:
    case WS_EVENT_ERROR: check(0); break;
    }
    mix(t, (uint64_t)ev->type << 32 | ev->opcode << 16 | ev->close_code);
    mix(t, ev->len);
    for (size_t i = 0; i < ev->len; i++)
        mix(t, ev->data[i]);
    t->events++;
}

static void check_error(int rc, const struct ws_event *ev, struct trace *t)
{
    check(ev->type == WS_EVENT_ERROR && ev->why != NULL && ev->data == NULL);
    check(rc == (ev->close_code == WS_CLOSE_TOO_BIG ? SBX_E_LIMIT : SBX_E_INVALID));
    check(ev->close_code == WS_CLOSE_PROTOCOL_ERROR || ev->close_code == WS_CLOSE_INVALID_DATA ||
            ev->close_code == WS_CLOSE_TOO_BIG);
    mix(t, ev->close_code);
    t->rc = rc;
}

/* Feed in[0..len) in pieces; seed 0 feeds it whole. */
static void run(const uint8_t *in, size_t len, size_t max, uint32_t seed, struct trace *t)
{
    struct ws_decoder d;
    struct ws_event ev;
    size_t used;
    int rc = 0;

    memset(t, 0, sizeof(*t));
    check(ws_decoder_init(&d, max) == 0);
    for (size_t off = 0; off < len && rc >= 0 && t->events < MAX_EVENTS;) {
        size_t n = len - off;

        if (seed != 0) {
            seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
            n = 1 + seed % (seed & 0x100 ? 3 : 40);
            n = n < len - off ? n : len - off;
        }
        rc = ws_decoder_feed(&d, in + off, n, &used, &ev);
        if (rc < 0) {
            check_error(rc, &ev, t);
            /* sticky: the next call says the same */
            check(ws_decoder_feed(&d, in, len, &used, &ev) == rc);
            break;
        }
        check(used <= n);
        if (rc == 0) {
            check(used == n && ev.type == WS_EVENT_NONE);
        } else {
            check(rc == 1 && used >= 1);
            check_event(&ev, max, t);
        }
        off += used;
    }
    ws_decoder_done(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const offered[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", NULL};
    struct trace whole, pieces;
    const char *proto = NULL;
    char *head, why[128];
    size_t max;

    if (size < 1)
        return 0;
    /* the limit: 0 to 70 bytes, or 64 KiB */
    max = data[0] < 0xF0 ? data[0] % 71 : 65536;
    run(data + 1, size - 1, max, 0, &whole);
    run(data + 1, size - 1, max, (uint32_t)data[0] * 2654435761u | 1, &pieces);
    check(whole.events == pieces.events && whole.hash == pieces.hash && whole.rc == pieces.rc);

    head = malloc(size + 1);
    check(head != NULL);
    memcpy(head, data, size);
    head[size] = '\0';
    if (ws_check_response(head, "dGhlIHNhbXBsZSBub25jZQ==", offered, &proto, why, sizeof(why)) == 0)
        check(proto == offered[0] || proto == offered[1]);
    else
        check(strlen(why) < sizeof(why) && strchr(why, '\n') == NULL);
    free(head);
    return 0;
}
