/* SPDX-License-Identifier: MIT */
/*
 * test_agentc_marker.c: agentc_converse, the host side of a session
 * interpreter's end-of-call marker (core/src/channel/agentc.c), against a scripted
 * agent on a socketpair. The marker may arrive split at any byte, on the
 * two streams in either order; bytes that only look like a marker (a
 * prefix, another nonce, a bad status) are output; what follows a marker
 * is no call's; an interpreter that exits first ends the call with its
 * status.
 */
#include <errno.h>
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel/agentc.h"
#include "proto.h"

static int box_fd(void *box)
{
    return *(int *)box;
}

static int64_t box_read(void *box, void *buf, size_t len)
{
    return read(*(int *)box, buf, len);
}

static int64_t box_write(void *box, const void *buf, size_t len)
{
    return write(*(int *)box, buf, len);
}

static const struct sbx_backend_ops ops = {.box_poll_fd = box_fd,
        .box_read = box_read,
        .box_write = box_write,
        .box_write_fd = box_fd};

#define NONCE "0123456789abcdef0123456789abcdef"
#define HEAD  "\033]sbx;" NONCE ";"

static void frame(int fd, uint8_t type, const void *p, size_t n)
{
    unsigned char h[AGENT_HDR_SIZE];

    agent_hdr_encode(h, (uint32_t)n, type, 0);
    assert_int_equal(write(fd, h, sizeof h), (ssize_t)sizeof h);
    if (n)
        assert_int_equal(write(fd, p, n), (ssize_t)n);
}

struct conv {
    int end, status;
    struct agentc_exit ex;
    char out[512], err[512];
};

/* Send the scripted frames first (the socket buffers them), then converse. */
static void converse(int *sv, struct conv *c)
{
    struct agentc *ac = agentc_new(&ops, &sv[0], -1);
    struct agentc_sink sink = {0};
    char buf[64];

    capture_init(&sink.out, 4096);
    capture_init(&sink.err, 4096);
    c->end = agentc_converse(ac, HEAD, "3 0\nx=1", 7, INT64_MAX, &sink, &c->status, &c->ex);
    snprintf(c->out, sizeof c->out, "%.*s", (int)sink.out.buf.len,
            sink.out.buf.buf ? sink.out.buf.buf : "");
    snprintf(c->err, sizeof c->err, "%.*s", (int)sink.err.buf.len,
            sink.err.buf.buf ? sink.err.buf.buf : "");
    capture_done(&sink.out);
    capture_done(&sink.err);
    /* the request reached the "agent" as one STDIN frame */
    assert_true(read(sv[1], buf, sizeof buf) >= (ssize_t)AGENT_HDR_SIZE + 7);
    agentc_free(ac);
}

static void test_split_at_every_byte(void **state)
{
    const char out[] = "hello" HEAD "042\a";
    const char err[] = "warn\n" HEAD "042\a";

    (void)state;
    for (size_t cut = 0; cut <= sizeof out - 1; cut++) {
        int sv[2];
        struct conv c;

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        frame(sv[1], AGENT_STDERR, err, cut < 5 ? cut : 5); /* interleaved streams */
        frame(sv[1], AGENT_STDOUT, out, cut);
        frame(sv[1], AGENT_STDERR, err + (cut < 5 ? cut : 5), sizeof err - 1 - (cut < 5 ? cut : 5));
        frame(sv[1], AGENT_STDOUT, out + cut, sizeof out - 1 - cut);
        converse(sv, &c);
        assert_int_equal(c.end, AGENTC_MARKED);
        assert_int_equal(c.status, 42);
        assert_string_equal(c.out, "hello");
        assert_string_equal(c.err, "warn\n");
        close(sv[0]);
        close(sv[1]);
    }
}

static void test_lookalikes_are_output(void **state)
{
    /* a bare ESC, a prefix cut short, another nonce, a bad status, no BEL */
    const char out[] = "a\033b"
                       "\033]sbx;0123"
                       "x"
                       "\033]sbx;"
                       "ffffffffffffffffffffffffffffffff;000\a" HEAD "0x1\a" HEAD "12"
                       "z"
                       "end" HEAD "000\a"
                       "late";
    int sv[2];
    struct conv c;

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    frame(sv[1], AGENT_STDOUT, out, sizeof out - 1);
    frame(sv[1], AGENT_STDERR, HEAD "000\a", sizeof(HEAD) - 1 + 4);
    converse(sv, &c);
    assert_int_equal(c.end, AGENTC_MARKED);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.out, "a\033b"
                               "\033]sbx;0123"
                               "x"
                               "\033]sbx;"
                               "ffffffffffffffffffffffffffffffff;000\a" HEAD "0x1\a" HEAD "12"
                               "z"
                               "end");
    assert_string_equal(c.err, "");
    close(sv[0]);
    close(sv[1]);
}

static void test_exit_before_the_marker(void **state)
{
    unsigned char exited[AGENT_EXITED_SIZE] = {0};
    const char out[] = "partial"
                       "\033]sbx;";
    int sv[2];
    struct conv c;

    (void)state;
    agent_put_u32(exited, AGENT_EXIT_CODE);
    agent_put_u32(exited + 4, 3);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    frame(sv[1], AGENT_STDOUT, out, sizeof out - 1);
    frame(sv[1], AGENT_EXITED, exited, sizeof exited);
    converse(sv, &c);
    assert_int_equal(c.end, AGENTC_EXITED);
    assert_false(c.ex.signaled);
    assert_int_equal(c.ex.code, 3);
    assert_string_equal(c.out, out); /* the held-back bytes are released */
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_split_at_every_byte),
            cmocka_unit_test(test_lookalikes_are_output),
            cmocka_unit_test(test_exit_before_the_marker),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
