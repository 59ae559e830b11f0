/* SPDX-License-Identifier: MIT */
/*
 * pump.c: the thread behind every upgraded connection (pump.h says why).
 * One thread per connection, all signals blocked, woken by poll on the
 * network fd, the plugin's end of the pair and a stop eventfd. It never
 * waits on the network while it may still hold undelivered TLS bytes:
 * after a read stopped for want of room (not EAGAIN) it reads again once
 * there is room, looking at the other fds without waiting.
 * Nothing here makes a policy decision or logs above debug; the network
 * I/O functions come from http.c (or a test). Errors: error.h.
 */
#include "net/pump.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/pump_ws.h"

#define RAW_BUF (64u * 1024u)

struct pump {
    struct pump_io io;
    enum pump_mode mode;
    int pair[2]; /* [0] the plugin's end, [1] ours */
    int stop_fd;
    pthread_t thread;
    bool started;
    struct pump_ring down; /* network -> plugin */
    struct pump_ring up;   /* plugin -> network */
    bool net_eof, net_more, user_eof, user_shut, net_shut, failed;
    struct pump_ws *ws;   /* WebSocket mode */
    pthread_mutex_t lock; /* guards the close status read by another thread */
};

/* Bytes from the network into down, until EAGAIN, the end or no room. */
static void net_read(struct pump *p)
{
    pump_ring_compact(&p->down);
    p->net_more = false;
    while (!p->net_eof && p->down.len < p->down.cap) {
        ssize_t n = p->io.recv(p->io.ctx, p->down.buf + p->down.len, p->down.cap - p->down.len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            p->net_eof = true;
            p->failed = p->failed || n < 0;
            return;
        }
        p->down.len += (size_t)n;
    }
    p->net_more = !p->net_eof; /* stopped for room: the TLS library may hold more */
}

static void net_write(struct pump *p)
{
    while (p->up.len > 0) {
        ssize_t n = p->io.send(p->io.ctx, p->up.buf + p->up.off, p->up.len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) { /* the peer is gone: nothing we send arrives */
            p->up.len = 0;
            p->net_eof = true;
            p->failed = true;
            return;
        }
        p->up.off += (size_t)n;
        p->up.len -= (size_t)n;
    }
    p->up.off = 0;
}

/* Raw mode: the plugin's bytes into up; the network's from down to it. */
static void raw_user_read(struct pump *p)
{
    pump_ring_compact(&p->up);
    while (!p->user_eof && p->up.len < p->up.cap) {
        ssize_t n = read(p->pair[1], p->up.buf + p->up.len, p->up.cap - p->up.len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            p->user_eof = true;
            return;
        }
        p->up.len += (size_t)n;
    }
}

static void raw_user_write(struct pump *p)
{
    while (p->down.len > 0) {
        ssize_t n = write(p->pair[1], p->down.buf + p->down.off, p->down.len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) { /* EAGAIN; or the plugin closed its end: drop what it will not read */
            if (errno != EAGAIN)
                p->down.len = 0;
            return;
        }
        p->down.off += (size_t)n;
        p->down.len -= (size_t)n;
    }
}

/* Pass ends on: the network's to the plugin once down is drained, the
 * plugin's to the network once up is sent. */
static void pass_ends(struct pump *p)
{
    if (p->net_eof && p->down.len == 0 && !p->user_shut && p->mode == PUMP_RAW) {
        shutdown(p->pair[1], SHUT_WR);
        p->user_shut = true;
    }
    if (p->user_eof && p->up.len == 0 && !p->net_shut) {
        if (p->io.shutdown_write)
            p->io.shutdown_write(p->io.ctx);
        p->net_shut = true;
    }
}

static bool raw_done(const struct pump *p)
{
    return p->user_shut && (p->net_shut || p->failed);
}

/* One round: move what can move without waiting. */
static void step(struct pump *p, const struct pollfd *pf)
{
    if (p->net_more || (pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
        net_read(p);
    if (p->mode == PUMP_WS) {
        pump_ws_step(p->ws, &p->down, &p->up, p->pair[1], (pf[1].revents & POLLIN) != 0,
                &p->net_eof, &p->user_eof);
    } else {
        if (pf[1].revents & (POLLIN | POLLHUP))
            raw_user_read(p);
        raw_user_write(p);
    }
    net_write(p);
    pass_ends(p);
}

static void *pump_main(void *arg)
{
    struct pump *p = arg;

    for (;;) {
        struct pollfd pf[3] = {{.fd = -1}, {.fd = -1}, {.fd = p->stop_fd, .events = POLLIN}};
        bool room_down = p->down.len < p->down.cap, room_up;

        if (p->mode == PUMP_WS ? pump_ws_done(p->ws, &p->up, p->net_eof) : raw_done(p))
            break;
        room_up = p->mode == PUMP_WS ? pump_ws_wants_user(p->ws, &p->up) : p->up.len < p->up.cap;
        if (!p->net_eof && (room_down || p->up.len > 0))
            pf[0] = (struct pollfd){.fd = p->io.fd,
                    .events = (short)((room_down ? POLLIN : 0) | (p->up.len ? POLLOUT : 0))};
        if ((!p->user_eof && room_up) || p->down.len > 0 ||
                (p->mode == PUMP_WS && pump_ws_has_output(p->ws)))
            pf[1] = (struct pollfd){.fd = p->pair[1],
                    .events = (short)(((!p->user_eof && room_up) ? POLLIN : 0) |
                                      ((p->down.len > 0 ||
                                               (p->mode == PUMP_WS && pump_ws_has_output(p->ws)))
                                                      ? POLLOUT
                                                      : 0))};
        /* Bytes the TLS library may hold are read without waiting, but the
         * other fds are still polled (timeout 0): a network that never runs
         * dry must not starve the plugin's writes or the stop. With no
         * room for them, wait for the plugin to read instead. */
        if (poll(pf, 3, p->net_more && room_down ? 0 : -1) < 0 && errno != EINTR)
            break;
        if (pf[2].revents)
            break;
        pthread_mutex_lock(&p->lock);
        step(p, pf);
        pthread_mutex_unlock(&p->lock);
    }
    /* whatever happened, the plugin reads the end */
    shutdown(p->pair[1], SHUT_WR);
    return NULL;
}

static int ring_init(struct pump_ring *r, size_t cap)
{
    r->buf = malloc(cap);
    r->cap = cap;
    return r->buf ? 0 : -1;
}

int pump_start(const struct pump_io *io, enum pump_mode mode, const void *pending, size_t n_pending,
        struct pump **ret, int *ret_fd, struct sbx_error **err)
{
    struct pump *p = calloc(1, sizeof(*p));
    sigset_t all, old;
    int e;

    if (!p)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    p->io = *io;
    p->mode = mode;
    p->pair[0] = p->pair[1] = p->stop_fd = -1;
    pthread_mutex_init(&p->lock, NULL);
    if (ring_init(&p->down, mode == PUMP_WS ? PUMP_WS_IN_BUF : RAW_BUF) < 0 ||
            ring_init(&p->up, mode == PUMP_WS ? PUMP_WS_OUT_BUF : RAW_BUF) < 0 ||
            (mode == PUMP_WS && !(p->ws = pump_ws_new())) || n_pending > p->down.cap) {
        pump_free(p);
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    if (n_pending) /* pending may be NULL: nothing came with the head */
        memcpy(p->down.buf, pending, n_pending);
    p->down.len = n_pending;
    if (socketpair(AF_UNIX,
                (mode == PUMP_WS ? SOCK_SEQPACKET : SOCK_STREAM) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
                p->pair) < 0 ||
            (p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        e = errno;
        pump_free(p);
        return sbx_error_set(err, SBX_E_IO, e, "pump: %s", strerror(e));
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    e = pthread_create(&p->thread, NULL, pump_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        pump_free(p);
        return sbx_error_set(err, SBX_E_IO, e, "pump thread: %s", strerror(e));
    }
    p->started = true;
    *ret = p;
    *ret_fd = p->pair[0];
    return 0;
}

uint32_t pump_ws_close_status(struct pump *p, char *reason, size_t len)
{
    uint32_t code;

    pthread_mutex_lock(&p->lock);
    code = p->ws ? pump_ws_status(p->ws, p->failed, reason, len) : 1006;
    pthread_mutex_unlock(&p->lock);
    return code;
}

void pump_free(struct pump *p)
{
    uint64_t one = 1;

    if (!p)
        return;
    if (p->started) {
        (void)!write(p->stop_fd, &one, sizeof(one));
        pthread_join(p->thread, NULL);
    }
    for (int i = 0; i < 2; i++)
        if (p->pair[i] >= 0)
            close(p->pair[i]);
    if (p->stop_fd >= 0)
        close(p->stop_fd);
    pump_ws_free(p->ws);
    free(p->down.buf);
    free(p->up.buf);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
