/* SPDX-License-Identifier: MIT */
/*
 * stdio.c: the MCP stdio transport. Newline-delimited JSON-RPC on standard
 * input and output; nothing but protocol messages ever reaches the real
 * stdout: at start-up fd 1 is moved to a private descriptor and fd 1 then
 * points at stderr, so a stray printf in a library or plugin cannot corrupt
 * the stream (STYLE G1). An oversized line is answered with an error and
 * skipped; a blank one (whitespace only) is skipped without a word. End
 * of input, SIGINT or SIGTERM ends the server cleanly: calls in flight are
 * cancelled (their sandboxes killed) before it returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "jsonrpc.h"
#include "mcp.h"
#include "serve.h"

struct out {
    pthread_mutex_t lock;
    int fd;
    bool broken; /* the client went away */
};

static void out_send(void *ud, const char *text, size_t len)
{
    struct out *o = ud;
    struct iovec iov[2] = {{(void *)(uintptr_t)text, len}, {(void *)(uintptr_t) "\n", 1}};
    size_t left = len + 1;

    pthread_mutex_lock(&o->lock);
    while (!o->broken && left > 0) {
        ssize_t n = writev(o->fd, iov, 2);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            o->broken = true;
            break;
        }
        left -= (size_t)n;
        for (int i = 0; i < 2 && n > 0; i++) {
            size_t take = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;

            iov[i].iov_base = (char *)iov[i].iov_base + take;
            iov[i].iov_len -= take;
            n -= (ssize_t)take;
        }
    }
    pthread_mutex_unlock(&o->lock);
}

static void out_done(void *ud)
{
    (void)ud;
}

/* Probe the toolchain versions once, off the request path, so the first
 * get_language_details does not wait and readiness is not delayed. */
static void *probe_versions(void *arg)
{
    json_object_put(sbx_runtime_languages_json(arg, true));
    return NULL;
}

/* A line of JSON whitespace only (spaces, tabs, the CR of a CRLF) holds no
 * message: it is skipped as an empty line is, not answered -32700. */
static bool blank(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

/* Hand every complete line in buf[0..*len) to the server; keep the rest. */
static void feed_lines(
        struct mcp_conn *c, const struct mcp_sink *sink, char *buf, size_t *len, bool *skipping)
{
    size_t start = 0;

    for (size_t i = 0; i < *len; i++) {
        if (buf[i] != '\n')
            continue;
        if (!*skipping && !blank(buf + start, i - start))
            mcp_handle(c, buf + start, i - start, sink);
        *skipping = false;
        start = i + 1;
    }
    memmove(buf, buf + start, *len - start);
    *len -= start;
    if (*len > JR_MAX_MESSAGE) { /* no newline within the cap: refuse, skip to the next */
        if (!*skipping) {
            struct json_object *e = jr_error(NULL, JR_INVALID_REQUEST, "message too large", NULL);
            size_t n;
            const char *t = jr_text(e, &n);

            sink->send(sink->ud, t, n);
            json_object_put(e);
        }
        *skipping = true;
        *len = 0;
    }
}

static int serve_loop(struct mcp_conn *c, const struct mcp_sink *sink, int sig_fd)
{
    size_t cap = JR_MAX_MESSAGE + 65536, len = 0;
    char *buf = malloc(cap);
    bool skipping = false;

    if (!buf)
        return -1;
    for (;;) {
        struct pollfd pfd[2] = {
                {.fd = STDIN_FILENO, .events = POLLIN}, {.fd = sig_fd, .events = POLLIN}};
        ssize_t n;

        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[1].revents)
            break;
        n = read(STDIN_FILENO, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* end of input: the client is done */
        len += (size_t)n;
        feed_lines(c, sink, buf, &len, &skipping);
    }
    if (!skipping && !blank(buf, len)) /* a last message without a newline */
        mcp_handle(c, buf, len, sink);
    free(buf);
    return 0;
}

int mcp_serve_stdio(struct sbx_runtime *rt, const struct mcp_options *opt)
{
    struct out o = {.fd = -1};
    struct mcp_sink sink = {out_send, out_done, &o};
    struct sigaction ign = {.sa_handler = SIG_IGN};
    struct mcp_server *s = NULL;
    struct mcp_conn *c;
    pthread_t prober;
    sigset_t mask;
    int sig_fd, rc;

    /* G1: the protocol gets a private copy of stdout; fd 1 becomes stderr */
    o.fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (o.fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        return -1;
    sigaction(SIGPIPE, &ign, NULL);
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, NULL); /* inherited by every thread */
    sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
    pthread_mutex_init(&o.lock, NULL);
    if (sig_fd < 0 || mcp_server_new(rt, opt, &s, NULL) < 0 || !(c = mcp_conn_new(s))) {
        mcp_server_free(s);
        return -1;
    }
    rc = pthread_create(&prober, NULL, probe_versions, rt);
    serve_loop(c, &sink, sig_fd);
    mcp_conn_free(c); /* cancels what still runs and waits for it */
    if (rc == 0)
        pthread_join(prober, NULL);
    mcp_server_free(s);
    close(sig_fd);
    close(o.fd);
    pthread_mutex_destroy(&o.lock);
    return 0;
}
