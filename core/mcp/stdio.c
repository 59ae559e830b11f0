/* SPDX-License-Identifier: MIT */
/*
 * stdio.c: the MCP stdio transport. Newline-delimited JSON-RPC on standard
 * input and output; nothing but protocol messages ever reaches the real
 * stdout: at start-up fd 1 is moved to a private descriptor and fd 1 then
 * points at stderr, so a stray printf in a library or plugin cannot corrupt
 * the stream (STYLE G1). The framing is stream.c's, shared with the unix
 * socket transport. An oversized line is answered with an error and
 * skipped; a blank one (whitespace only) is skipped without a word. End
 * of input ends the server: calls in flight are cancelled (their
 * sandboxes killed) before it returns 0. SIGINT or SIGTERM cancels them
 * too, but each still gets its answer (a cancelled result) before the
 * server returns 128 + the signal's number.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "mcp.h"
#include "serve.h"
#include "stream.h"

/* Until end of input (0) or a signal (its number). */
static int serve_loop(struct mcp_conn *c, const struct mcp_sink *sink, int sig_fd)
{
    struct stream_in in;
    int sig = 0;

    if (stream_in_init(&in) < 0)
        return 0;
    for (;;) {
        struct pollfd pfd[2] = {
                {.fd = STDIN_FILENO, .events = POLLIN}, {.fd = sig_fd, .events = POLLIN}};

        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[1].revents) {
            struct signalfd_siginfo si;

            sig = read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si) ? (int)si.ssi_signo
                                                                       : SIGTERM;
            break;
        }
        if (stream_in_read(&in, STDIN_FILENO, c, sink) <= 0)
            break; /* end of input: the client is done */
    }
    if (!sig)
        stream_in_end(&in, c, sink);
    stream_in_done(&in);
    return sig;
}

int mcp_serve_stdio(struct sbx_runtime *rt, const struct mcp_options *opt)
{
    struct stream_out o;
    struct mcp_sink sink = {stream_out_send, stream_out_sink_done, &o};
    struct sigaction ign = {.sa_handler = SIG_IGN};
    struct mcp_server *s = NULL;
    struct mcp_conn *c;
    pthread_t prober;
    sigset_t mask;
    int sig_fd, rc, out_fd, sig;

    /* G1: the protocol gets a private copy of stdout; fd 1 becomes stderr */
    out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (out_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        return -1;
    sigaction(SIGPIPE, &ign, NULL);
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, NULL); /* inherited by every thread */
    sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
    stream_out_init(&o, out_fd);
    if (sig_fd < 0 || mcp_server_new(rt, opt, &s, NULL) < 0 || !(c = mcp_conn_new(s))) {
        mcp_server_free(s);
        return -1;
    }
    rc = pthread_create(&prober, NULL, stream_probe_versions, rt);
    sig = serve_loop(c, &sink, sig_fd);
    if (rc == 0) /* first: a call may wait for the probe that runs */
        stream_end_prober(rt, prober);
    if (sig) { /* every call in flight still gets its (cancelled) answer */
        mcp_conn_shutdown(c);
        mcp_conn_wait_idle(c, mcp_monotonic_ms() + MCP_SHUTDOWN_GRACE_MS);
    }
    mcp_conn_free(c); /* cancels what still runs and waits for it */
    mcp_server_free(s);
    close(sig_fd);
    close(out_fd);
    stream_out_done(&o);
    return sig ? 128 + sig : 0;
}
