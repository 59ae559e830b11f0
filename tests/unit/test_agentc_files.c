/* SPDX-License-Identifier: MIT */
/*
 * test_agentc_files.c: agentc_get, the host side of the agent's GET
 * (core/src/channel/agentc_files.c), against a scripted agent on a
 * socketpair. The agent is inside the sandbox and not trusted: a reply of
 * more bytes than were asked for ends the exchange, even by one byte
 * (found by the agentc fuzzer: the buffer's cap was max + 1).
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

static void frame(int fd, uint8_t type, const void *p, size_t n)
{
    unsigned char h[AGENT_HDR_SIZE];

    agent_hdr_encode(h, (uint32_t)n, type, 0);
    assert_int_equal(write(fd, h, sizeof h), (ssize_t)sizeof h);
    if (n)
        assert_int_equal(write(fd, p, n), (ssize_t)n);
}

/* GET of at most max bytes, the agent answering with data then OK. */
static int get(const char *data, size_t max, char **ret, size_t *ret_len)
{
    unsigned char mode[4];
    uint32_t got_mode = 0;
    struct agentc *ac;
    int sv[2], r;

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    agent_put_u32(mode, 0644);
    frame(sv[1], AGENT_DATA, data, strlen(data));
    frame(sv[1], AGENT_OK, mode, sizeof mode);
    ac = agentc_new(&ops, &sv[0], -1);
    assert_non_null(ac);
    r = agentc_get(ac, "out.txt", max, ret, ret_len, &got_mode, INT64_MAX);
    if (r == 0)
        assert_int_equal(got_mode, 0644);
    if (r == AGENTC_LOST)
        assert_non_null(strstr(agentc_last_error(ac), "more than it was asked for"));
    agentc_free(ac);
    close(sv[0]);
    close(sv[1]);
    return r;
}

static void test_get_within_max(void **state)
{
    char *data = NULL;
    size_t len = 0;

    (void)state;
    assert_int_equal(get("0123456789", 10, &data, &len), 0);
    assert_int_equal(len, 10);
    assert_string_equal(data, "0123456789");
    free(data);
}

static void test_get_one_byte_more(void **state)
{
    char *data = NULL;
    size_t len = 0;

    (void)state;
    assert_int_equal(get("0123456789a", 10, &data, &len), AGENTC_LOST);
    assert_null(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_get_within_max),
            cmocka_unit_test(test_get_one_byte_more),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
