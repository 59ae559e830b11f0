/* SPDX-License-Identifier: MIT */
/*
 * test_k8s_channel.c: golden tests of the Kubernetes exec/attach channel
 * layer (plugins/k8s/channel.c) on a scripted WebSocket: pieces as the
 * core's ws_recv hands them (SBX_WS_MORE between the pieces of one
 * message, the channel byte only in the first), EAGAIN and the close. Each
 * case writes a transcript of what the layer did (bytes read out, stderr
 * seen, messages sent, the exit code) and compares it with
 * tests/golden/k8s/channel_<case>.txt; SBX_UPDATE_GOLDEN=1 rewrites them.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"

enum step_kind { PIECE, AGAIN, CLOSED };

struct step {
    enum step_kind kind;
    uint32_t flags;
    const char *data; /* for PIECE: len bytes */
    size_t len;
};

struct fake {
    const struct step *steps;
    size_t n, at;
    int send_again; /* the next sends answer EAGAIN */
    char log[16384];
    size_t log_len;
};

static void logf_(struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct fake *f, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(f->log + f->log_len, sizeof(f->log) - f->log_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        f->log_len += (size_t)n;
}

static void log_bytes(struct fake *f, const void *p, size_t n)
{
    const unsigned char *b = p;

    logf_(f, "\"");
    for (size_t i = 0; i < n && i < 48; i++)
        logf_(f, b[i] >= 32 && b[i] < 127 && b[i] != '"' && b[i] != '\\' ? "%c" : "\\x%02x", b[i]);
    logf_(f, "%s\"", n > 48 ? "..." : "");
}

static int64_t fake_recv(void *ws, void *buf, size_t len, uint32_t *flags)
{
    struct fake *f = ws;
    const struct step *s;

    if (f->at >= f->n) {
        errno = EPIPE;
        return -1;
    }
    s = &f->steps[f->at++];
    if (s->kind == AGAIN || s->kind == CLOSED) {
        errno = s->kind == AGAIN ? EAGAIN : EPIPE;
        return -1;
    }
    assert_true(s->len <= len);
    memcpy(buf, s->data, s->len);
    *flags = s->flags;
    return (int64_t)s->len;
}

static int fake_send(void *ws, const void *buf, size_t len, uint32_t flags)
{
    struct fake *f = ws;

    if (f->send_again) {
        f->send_again--;
        logf_(f, "send %zu bytes -> EAGAIN\n", len);
        errno = EAGAIN;
        return -1;
    }
    logf_(f, "send %zu bytes flags %u: ", len, flags);
    log_bytes(f, buf, len);
    logf_(f, "\n");
    return 0;
}

static void on_stderr(void *ud, const char *data, size_t len)
{
    struct fake *f = ud;

    logf_(f, "stderr ");
    log_bytes(f, data, len);
    logf_(f, "\n");
}

static struct kch *open_channel(struct fake *f, bool v5)
{
    struct kch *c = calloc(1, sizeof(*c));
    struct kch_ws io = {.recv = fake_recv, .send = fake_send, .ws = f};

    assert_non_null(c);
    kch_init(c, &io, v5);
    c->on_stderr = on_stderr;
    c->userdata = f;
    return c;
}

/* Read in steps of `chunk` bytes until the end, logging every call. */
static void read_all(struct fake *f, struct kch *c, size_t chunk)
{
    char buf[64];

    for (int i = 0; i < 64; i++) {
        int64_t n = kch_read(c, buf, chunk);

        if (n < 0) {
            logf_(f, "read(%zu) = -1 %s\n", chunk, errno == EAGAIN ? "EAGAIN" : strerror(errno));
            continue;
        }
        logf_(f, "read(%zu) = %lld ", chunk, (long long)n);
        log_bytes(f, buf, (size_t)n);
        logf_(f, "%s\n", kch_pending(c) ? " (more pending)" : "");
        if (n == 0)
            return;
    }
    fail_msg("no end of stream");
}

static void check_golden(const char *name, const struct fake *f)
{
    const char *src = getenv("SBX_SOURCE_DIR");
    char path[4096], *want;
    FILE *fp;
    long n;

    snprintf(path, sizeof(path), "%s/tests/golden/k8s/channel_%s.txt", src ? src : ".", name);
    if (getenv("SBX_UPDATE_GOLDEN")) {
        fp = fopen(path, "w");
        assert_non_null(fp);
        fwrite(f->log, 1, f->log_len, fp);
        fclose(fp);
    }
    fp = fopen(path, "r");
    if (!fp)
        fail_msg("missing golden file %s (run with SBX_UPDATE_GOLDEN=1)", path);
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    rewind(fp);
    want = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(want, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    if ((size_t)n != f->log_len || memcmp(want, f->log, f->log_len) != 0)
        fail_msg("%s differs from %s:\n--- got ---\n%.*s", name, path, (int)f->log_len, f->log);
    free(want);
}

#define P(flags, s)                                                                                \
    {                                                                                              \
        PIECE, flags, s, sizeof(s) - 1                                                             \
    }

/* v5 attach: the empty stdout message the API server opens with, stdout
 * cut into pieces and read in small steps, stderr between them, a piece
 * with nothing yet, an empty message, the status, the close. Then stdin
 * and its half-close. */
static void test_v5_stream(void **state)
{
    static const struct step steps[] = {
            P(0, "\x01"),
            P(0, "\x01hello "),
            P(0, "\x02"
                 "agent: note\n"),
            {AGAIN, 0, NULL, 0},
            P(SBX_WS_MORE, "\x01wor"),
            P(SBX_WS_MORE, "\x02ld\n"), /* a continuation: no channel byte */
            P(0, "!"),
            {PIECE, 0, "", 0},
            P(0, "\x03{\"metadata\":{},\"status\":\"Success\"}"),
            {CLOSED, 0, NULL, 0},
    };
    struct fake f = {.steps = steps, .n = sizeof(steps) / sizeof(steps[0])};
    struct kch *c = open_channel(&f, true);

    int64_t n;
    int r;

    (void)state;
    n = kch_write(c, "abc", 3);
    logf_(&f, "write = %lld\n", (long long)n);
    r = kch_close_stdin(c);
    logf_(&f, "close stdin = %d\n", r);
    read_all(&f, c, 4);
    logf_(&f, "exit code %d\n", kch_exit_code(c));
    r = kch_close_stdin(c);
    logf_(&f, "close stdin after the end = %d (%s)\n", r, strerror(errno));
    check_golden("v5_stream", &f);
    free(c);
}

/* v4: a failure status in two pieces; no half-close; a long write is cut
 * to one message; a full WebSocket says EAGAIN and sends nothing. */
static void test_v4_failure(void **state)
{
    static const struct step steps[] = {
            P(SBX_WS_MORE, "\x03{\"status\":\"Failure\",\"message\":\"command terminated with "
                           "non-zero exit code: exit status 42\","),
            P(0, "\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":"
                 "\"ExitCode\",\"message\":\"42\"}]}}"),
            P(0, "\x07unknown channel"),
            {CLOSED, 0, NULL, 0},
    };
    struct fake f = {.steps = steps, .n = sizeof(steps) / sizeof(steps[0])};
    struct kch *c = open_channel(&f, false);
    char msg[200], *big = calloc(1, 70000);
    int64_t n;
    int r;

    (void)state;
    assert_non_null(big);
    read_all(&f, c, 16);
    kch_status_message(c, msg, sizeof(msg));
    logf_(&f, "exit code %d, message \"%s\"\n", kch_exit_code(c), msg);
    c->ended = false; /* writing on, as if the stream were still open */
    r = kch_close_stdin(c);
    logf_(&f, "close stdin = %d (%s)\n", r, strerror(errno));
    n = kch_write(c, big, 70000);
    logf_(&f, "write 70000 = %lld\n", (long long)n);
    f.send_again = 1;
    n = kch_write(c, "12345", 5);
    logf_(&f, "write 5 = %lld (%s)\n", (long long)n, errno == EAGAIN ? "EAGAIN" : "?");
    free(big);
    check_golden("v4_failure", &f);
    free(c);
}

/* After the close everything reads as the end, and writes fail EPIPE. */
static void test_after_close(void **state)
{
    static const struct step steps[] = {{CLOSED, 0, NULL, 0}};
    struct fake f = {.steps = steps, .n = 1};
    struct kch *c = open_channel(&f, true);
    char b[4];

    (void)state;
    assert_int_equal(kch_read(c, b, sizeof(b)), 0);
    assert_int_equal(kch_read(c, b, sizeof(b)), 0);
    assert_int_equal(kch_write(c, "x", 1), -1);
    assert_int_equal(errno, EPIPE);
    assert_int_equal(kch_exit_code(c), -1);
    free(c);
}

/* The status is the other side's JSON: fields of another type than
 * Kubernetes sends (null for a string, an object or null for the causes
 * list) name no exit code and no message, and must not crash (strcmp on
 * NULL) or abort (json-c asserts on an array call on a non-array). Found
 * while writing tests/fuzz/fuzz_k8s_channel.c; its corpus keeps them. */
static void test_status_odd_types(void **state)
{
    static const struct {
        const char *json;
        int code;
        const char *msg;
    } cases[] = {
            {"{\"status\":null,\"message\":null}", -1, ""},
            {"{\"status\":\"Failure\",\"details\":{\"causes\":null}}", -1, ""},
            {"{\"status\":\"Failure\",\"details\":{\"causes\":{\"reason\":\"ExitCode\","
             "\"message\":\"3\"}}}",
                    -1, ""},
            {"{\"details\":{\"causes\":[{\"reason\":null},{\"reason\":\"ExitCode\","
             "\"message\":null}]}}",
                    -1, ""},
            /* what is well-formed still counts */
            {"{\"status\":7,\"message\":42,\"details\":{\"causes\":[null,{\"reason\":null},"
             "{\"reason\":\"ExitCode\",\"message\":\"7\"}]}}",
                    7, "42"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char data[512], msg[64], b[4];
        int n = snprintf(data, sizeof(data), "\x03%s", cases[i].json);
        const struct step steps[] = {{PIECE, 0, data, (size_t)n}, {CLOSED, 0, NULL, 0}};
        struct fake f = {.steps = steps, .n = 2};
        struct kch *c = open_channel(&f, true);

        assert_true(n > 0 && (size_t)n < sizeof(data));
        assert_int_equal(kch_read(c, b, sizeof(b)), 0);
        assert_int_equal(kch_exit_code(c), cases[i].code);
        kch_status_message(c, msg, sizeof(msg));
        assert_string_equal(msg, cases[i].msg);
        free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_v5_stream),
            cmocka_unit_test(test_v4_failure),
            cmocka_unit_test(test_after_close),
            cmocka_unit_test(test_status_odd_types),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
