/* SPDX-License-Identifier: MIT */
/*
 * test_pump.c: the pump (core/src/net/pump.c) against a fake network that
 * never runs dry (a program printing without end behind Docker's attach
 * stream): what the plugin writes must still reach the network. A control
 * frame (the agent's kill at a timeout) stuck in the pump hangs the run.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "net/pump.h"

struct endless {
    int fd; /* an eventfd with a count: always readable */
    pthread_mutex_t lock;
    char sent[64];
    size_t n_sent;
};

static ssize_t endless_recv(void *ctx, void *buf, size_t len)
{
    (void)ctx;
    memset(buf, 'x', len);
    return (ssize_t)len;
}

static ssize_t endless_send(void *ctx, const void *buf, size_t len)
{
    struct endless *e = ctx;
    size_t room;

    pthread_mutex_lock(&e->lock);
    room = sizeof(e->sent) - e->n_sent;
    if (len > room)
        len = room;
    memcpy(e->sent + e->n_sent, buf, len);
    e->n_sent += len;
    pthread_mutex_unlock(&e->lock);
    return (ssize_t)len;
}

static size_t sent_now(struct endless *e, char *out)
{
    size_t n;

    pthread_mutex_lock(&e->lock);
    n = e->n_sent;
    memcpy(out, e->sent, n);
    pthread_mutex_unlock(&e->lock);
    return n;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Raw mode: the network always has more; the plugin reads all the while
 * and writes a few bytes, which must reach the network within seconds. */
static void test_writes_pass_while_the_network_never_runs_dry(void **state)
{
    struct endless e = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct sbx_error *err = NULL;
    struct pump *p = NULL;
    char buf[16384], got[64];
    size_t n = 0;
    int fd = -1;
    int64_t deadline;

    (void)state;
    e.fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
    assert_true(e.fd >= 0);
    struct pump_io io = {.ctx = &e, .fd = e.fd, .recv = endless_recv, .send = endless_send};
    assert_int_equal(pump_start(&io, PUMP_RAW, NULL, 0, &p, &fd, &err), 0);
    assert_int_equal(write(fd, "KILL", 4), 4);
    deadline = now_ms() + 5000;
    while (now_ms() < deadline) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};

        if (poll(&pf, 1, 10) > 0)
            assert_true(read(fd, buf, sizeof(buf)) > 0);
        n = sent_now(&e, got);
        if (n >= 4)
            break;
    }
    if (n != 4 || memcmp(got, "KILL", 4) != 0)
        fail_msg("the plugin's bytes did not reach the network in 5 s (%zu sent)", n);
    pump_free(p);
    close(e.fd);
}

/* The same when the plugin does not read for a while: the pump waits
 * (no busy loop needed for correctness) and still passes the write on. */
static void test_writes_pass_while_the_plugin_does_not_read(void **state)
{
    struct endless e = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct sbx_error *err = NULL;
    struct pump *p = NULL;
    char got[64];
    size_t n = 0;
    int fd = -1;
    int64_t deadline;

    (void)state;
    e.fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
    assert_true(e.fd >= 0);
    struct pump_io io = {.ctx = &e, .fd = e.fd, .recv = endless_recv, .send = endless_send};
    assert_int_equal(pump_start(&io, PUMP_RAW, NULL, 0, &p, &fd, &err), 0);
    assert_int_equal(write(fd, "STOP", 4), 4);
    deadline = now_ms() + 5000;
    while (now_ms() < deadline && (n = sent_now(&e, got)) < 4)
        usleep(10000);
    if (n != 4 || memcmp(got, "STOP", 4) != 0)
        fail_msg("the plugin's bytes did not reach the network in 5 s (%zu sent)", n);
    pump_free(p);
    close(e.fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_writes_pass_while_the_network_never_runs_dry),
            cmocka_unit_test(test_writes_pass_while_the_plugin_does_not_read),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
