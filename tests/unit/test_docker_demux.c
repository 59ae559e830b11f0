/* SPDX-License-Identifier: MIT */
/*
 * test_docker_demux.c: the attach stream demultiplexer against scripted
 * reads: frames split at every byte, stderr frames between stdout ones,
 * EAGAIN in the middle of a header and a payload, empty frames, the end
 * of the stream, and malformed headers.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <errno.h>
#include <string.h>

#include "demux.h"

/* A scripted connection: data handed out at most `step` bytes per read,
 * with EAGAIN before every read whose offset is in `again`. */
struct script {
    const unsigned char *data;
    size_t len, off, step;
    size_t again[8];
    size_t n_again;
    char diag[256];
    size_t diag_len;
};

static int64_t script_read(void *ctx, void *buf, size_t len)
{
    struct script *s = ctx;
    size_t n;

    for (size_t i = 0; i < s->n_again; i++) {
        if (s->again[i] == s->off) {
            s->again[i] = (size_t)-1;
            errno = EAGAIN;
            return -1;
        }
    }
    n = s->len - s->off;
    if (n > len)
        n = len;
    if (n > s->step)
        n = s->step;
    memcpy(buf, s->data + s->off, n);
    s->off += n;
    return (int64_t)n;
}

static void script_diag(void *ctx, const char *data, size_t len)
{
    struct script *s = ctx;

    memcpy(s->diag + s->diag_len, data, len);
    s->diag_len += len;
}

/* Read everything; the stdout bytes in out, the final return in *ret_end. */
static size_t drain(struct script *s, char *out, size_t cap, size_t chunk, int64_t *ret_end)
{
    struct dk_demux d;
    size_t o = 0;

    memset(&d, 0, sizeof(d));
    for (int guard = 0; guard < 10000; guard++) {
        int64_t n = dk_demux_read(
                &d, script_read, s, out + o, chunk < cap - o ? chunk : cap - o, script_diag, s);

        if (n > 0) {
            o += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EAGAIN)
            continue;
        *ret_end = n;
        return o;
    }
    fail_msg("no end");
    return 0;
}

/* stdout "hello ", stderr "oops", empty stdout, stdout "world" */
static const unsigned char stream[] = {1, 0, 0, 0, 0, 0, 0, 6, 'h', 'e', 'l', 'l', 'o', ' ', 2, 0,
        0, 0, 0, 0, 0, 4, 'o', 'o', 'p', 's', 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5, 'w',
        'o', 'r', 'l', 'd'};

static void test_every_split(void **state)
{
    (void)state;
    for (size_t step = 1; step <= sizeof(stream); step++) {
        for (size_t chunk = 1; chunk <= 8; chunk++) {
            struct script s = {.data = stream, .len = sizeof(stream), .step = step};
            char out[64];
            int64_t end = 99;
            size_t n = drain(&s, out, sizeof(out), chunk, &end);

            assert_int_equal(end, 0);
            assert_int_equal(n, 11);
            assert_memory_equal(out, "hello world", 11);
            assert_int_equal(s.diag_len, 4);
            assert_memory_equal(s.diag, "oops", 4);
        }
    }
}

static void test_eagain_mid_frame(void **state)
{
    struct script s = {.data = stream,
            .len = sizeof(stream),
            .step = 3,
            .again = {0, 3, 9, 17, 24, 40},
            .n_again = 6};
    char out[64];
    int64_t end = 99;

    (void)state;
    assert_int_equal(drain(&s, out, sizeof(out), 64, &end), 11);
    assert_int_equal(end, 0);
    assert_memory_equal(out, "hello world", 11);
}

/* A payload is never read past its frame: what follows stays in the
 * connection, where poll(2) sees it. */
static void test_reads_stop_at_frame_end(void **state)
{
    struct script s = {.data = stream, .len = sizeof(stream), .step = 64};
    struct dk_demux d;
    char out[64];

    (void)state;
    memset(&d, 0, sizeof(d));
    assert_int_equal(dk_demux_read(&d, script_read, &s, out, sizeof(out), script_diag, &s), 6);
    assert_int_equal(s.off, 14);
}

static void test_malformed(void **state)
{
    static const unsigned char bad_stream[] = {3, 0, 0, 0, 0, 0, 0, 1, 'x'};
    static const unsigned char bad_pad[] = {1, 0, 1, 0, 0, 0, 0, 1, 'x'};
    const unsigned char *cases[] = {bad_stream, bad_pad};

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        struct script s = {.data = cases[i], .len = 9, .step = 64};
        char out[8];
        int64_t end = 99;

        assert_int_equal(drain(&s, out, sizeof(out), 8, &end), 0);
        assert_int_equal(end, -1);
        assert_int_equal(errno, EPROTO);
    }
}

static void test_end_mid_frame(void **state)
{
    struct script s = {.data = stream, .len = 10, .step = 64};
    char out[64];
    int64_t end = 99;

    (void)state;
    assert_int_equal(drain(&s, out, sizeof(out), 64, &end), 2);
    assert_int_equal(end, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_every_split),
            cmocka_unit_test(test_eagain_mid_frame),
            cmocka_unit_test(test_reads_stop_at_frame_end),
            cmocka_unit_test(test_malformed),
            cmocka_unit_test(test_end_mid_frame),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
