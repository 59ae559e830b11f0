/* SPDX-License-Identifier: MIT */
/*
 * unix.c: the MCP transport on a unix stream socket (`serve --socket`),
 * which the `session` subcommands and other local clients talk to. Each
 * accepted connection is an MCP connection of its own (its own initialize)
 * served by a thread of its own, with the stdio transport's framing
 * (stream.c); all share one server and so one runtime, so what one
 * connection creates (a session) another can use. At most MAX_CONNS at
 * once; a client past that, or of another user, gets one JSON-RPC error
 * and is closed.
 *
 * Who may connect: the socket's directory is ours and closed to others
 * (created 0700; an existing one must be ours and not group- or
 * other-writable), the socket is 0600, and a peer whose uid (SO_PEERCRED)
 * is neither ours nor root is refused. A socket file nobody listens on
 * (connect: ECONNREFUSED) is replaced; one somebody listens on stops
 * start-up. SIGINT or SIGTERM: stop accepting, remove the socket, cancel
 * the calls in flight (their sandboxes are killed) and answer each (a
 * cancelled result), close every connection, return 128 + the signal.
 *
 * Socket activation (llm-sandbox.socket): the listening socket comes from
 * systemd, made with the unit's SocketMode= and DirectoryMode=; it is
 * served as it is and never removed. Who may connect is still checked per
 * connection (SO_PEERCRED).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "jsonrpc.h"
#include "mcp.h"
#include "serve.h"
#include "stream.h"

#define MAX_CONNS 64

enum slot_state { SLOT_FREE, SLOT_RUNNING, SLOT_FINISHED };

struct slot {
    enum slot_state state;
    pthread_t thread;
    int fd;                /* open while the thread may write to it */
    struct mcp_conn *conn; /* NULL once the thread is freeing it */
    struct unix_srv *u;
};

struct unix_srv {
    struct mcp_server *s;
    pthread_mutex_t lock; /* the slots */
    struct slot slots[MAX_CONNS];
};

/* ---- the socket file ---------------------------------------------------- */

/* The directory the socket goes in: created 0700 when missing; else it
 * must be ours and not writable by group or others (anyone who can write
 * there can replace the socket). */
static int check_dir(const char *path)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    const char *slash = strrchr(path, '/');
    struct stat st;

    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "llm-sandbox: cannot create the socket's directory '%s': %s\n", dir,
                strerror(errno));
        return -1;
    }
    /* lstat: a symbolic link someone else owns could be pointed elsewhere
     * between this check and the bind */
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "llm-sandbox: the socket's directory '%s' is not a directory (a symbolic link "
                "is not taken)\n",
                dir);
        return -1;
    }
    if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        fprintf(stderr,
                "llm-sandbox: refusing to listen in '%s': it must belong to uid %u and not be "
                "writable by group or others (mode %04o, owner %u); choose a directory of your "
                "own with --socket PATH\n",
                dir, (unsigned)geteuid(), (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
        return -1;
    }
    return 0;
}

/* Whether a server answers on sa: 1 yes, 0 no (a stale file), -1 cannot
 * tell (errno). Non-blocking, so a listener with a full backlog counts as
 * there (EAGAIN) rather than hanging us. */
static int someone_listens(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r, e;

    if (fd < 0)
        return -1;
    r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
    e = errno;
    close(fd);
    if (r == 0 || e == EAGAIN || e == EINPROGRESS)
        return 1;
    errno = e;
    return e == ECONNREFUSED ? 0 : -1;
}

static int bind_0600(int fd, const struct sockaddr_un *sa)
{
    mode_t old = umask(0177); /* the socket is born 0600: no window */
    int r = bind(fd, (const struct sockaddr *)sa, sizeof(*sa)), e = errno;

    umask(old);
    errno = e;
    return r;
}

/* Bind and listen on path, replacing a stale socket file; records the
 * file's identity in *ret_st, so that only our own file is removed at the
 * end. Prints why on failure. */
static int listen_at(const char *path, struct stat *ret_st)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int fd, r;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "llm-sandbox: socket path '%s' is longer than %zu bytes\n", path,
                sizeof(sa.sun_path) - 1);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if (check_dir(path) < 0)
        return -1;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "llm-sandbox: cannot make a unix socket: %s\n", strerror(errno));
        return -1;
    }
    r = bind_0600(fd, &sa);
    if (r < 0 && errno == EADDRINUSE) {
        int there = someone_listens(&sa);

        if (there == 1) {
            fprintf(stderr,
                    "llm-sandbox: another server is listening on '%s'; stop it first or give "
                    "another path with --socket PATH\n",
                    path);
            close(fd);
            return -1;
        }
        if (there == 0 && lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
            fprintf(stderr, "llm-sandbox: '%s' exists and is not a socket; not replacing it\n",
                    path);
            close(fd);
            return -1;
        }
        if (there == 0 && unlink(path) == 0) /* stale: its server is gone */
            r = bind_0600(fd, &sa);
        else
            errno = there < 0 ? errno : EADDRINUSE;
    }
    if (r < 0 || chmod(path, 0600) < 0 || stat(path, ret_st) < 0 || listen(fd, SOMAXCONN) < 0) {
        fprintf(stderr, "llm-sandbox: cannot listen on '%s': %s\n", path, strerror(errno));
        if (r == 0)
            unlink(path);
        close(fd);
        return -1;
    }
    return fd;
}

/* Remove the socket file if it is still the one we made. */
static void unlink_ours(const char *path, const struct stat *ours)
{
    struct stat st;

    if (lstat(path, &st) == 0 && st.st_dev == ours->st_dev && st.st_ino == ours->st_ino)
        unlink(path);
}

/* ---- connections ---------------------------------------------------------- */

static void *conn_main(void *arg)
{
    struct slot *sl = arg;
    struct unix_srv *u = sl->u;
    struct stream_out out;
    struct mcp_sink sink = {stream_out_send, stream_out_sink_done, &out};
    struct stream_in in;
    struct mcp_conn *c = sl->conn;

    stream_out_init(&out, sl->fd);
    if (stream_in_init(&in) == 0) {
        while (stream_in_read(&in, sl->fd, c, &sink) > 0)
            ;
        stream_in_end(&in, c, &sink);
        stream_in_done(&in);
    }
    /* Out of the table first: shutdown then leaves the connection alone
     * (it may still shut the socket down, to unblock a write). */
    pthread_mutex_lock(&u->lock);
    sl->conn = NULL;
    pthread_mutex_unlock(&u->lock);
    mcp_conn_free(c); /* cancels what still runs and waits for its sinks */
    stream_out_done(&out);
    pthread_mutex_lock(&u->lock);
    close(sl->fd);
    sl->fd = -1;
    sl->state = SLOT_FINISHED;
    pthread_mutex_unlock(&u->lock);
    return NULL;
}

/* One JSON-RPC error line to a client we will not serve, then close. */
static void turn_away(int fd, const char *why)
{
    struct json_object *e = jr_error(NULL, JR_INVALID_REQUEST, why, NULL);
    size_t n;
    const char *t = jr_text(e, &n);

    if (send(fd, t, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n)
        (void)!send(fd, "\n", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    json_object_put(e);
    close(fd);
}

/* The peer's uid (SO_PEERCRED) when it may connect: our own, or root. */
static bool peer_allowed(int fd, uid_t *ret_uid)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return false;
    *ret_uid = cred.uid;
    return cred.uid == geteuid() || cred.uid == 0;
}

/* Join the threads of finished connections; a free slot, or NULL. */
static struct slot *free_slot(struct unix_srv *u)
{
    struct slot *found = NULL;

    pthread_mutex_lock(&u->lock);
    for (size_t i = 0; i < MAX_CONNS; i++) {
        struct slot *sl = &u->slots[i];

        if (sl->state == SLOT_FINISHED) {
            pthread_join(sl->thread, NULL); /* it has returned, or is about to */
            sl->state = SLOT_FREE;
        }
        if (sl->state == SLOT_FREE && !found)
            found = sl;
    }
    pthread_mutex_unlock(&u->lock);
    return found;
}

/* Accept and serve one client; the accept's errno when it failed, else 0. */
static int accept_one(struct unix_srv *u, int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    struct slot *sl;
    char owner[32];
    uid_t uid;

    if (fd < 0)
        return errno;
    if (!peer_allowed(fd, &uid)) {
        turn_away(fd, "permission denied: this server serves its own user only");
        return 0;
    }
    sl = free_slot(u);
    if (!sl) {
        turn_away(fd, "too many connections; try again when one has closed");
        return 0;
    }
    sl->conn = mcp_conn_new(u->s);
    if (!sl->conn) {
        turn_away(fd, "out of memory");
        return 0;
    }
    /* sessions belong to the peer's uid, not the connection: each
     * `llm-sandbox session` command is a connection of its own */
    snprintf(owner, sizeof(owner), "uid-%u", (unsigned)uid);
    mcp_conn_set_owner(sl->conn, owner);
    sl->fd = fd;
    sl->u = u;
    pthread_mutex_lock(&u->lock);
    sl->state = SLOT_RUNNING;
    if (pthread_create(&sl->thread, NULL, conn_main, sl) != 0) {
        sl->state = SLOT_FREE;
        sl->conn = mcp_conn_free(sl->conn);
        sl->fd = -1;
        pthread_mutex_unlock(&u->lock);
        turn_away(fd, "cannot start a thread for this connection");
        return 0;
    }
    pthread_mutex_unlock(&u->lock);
    return 0;
}

/* Until SIGINT or SIGTERM: its number (0 if poll itself failed). An
 * accept that fails for want of descriptors or memory is retried after a
 * second rather than at once, or poll would spin on the pending
 * connection. */
static int accept_loop(struct unix_srv *u, int lfd, int sig_fd)
{
    int wait_ms = -1;

    for (;;) {
        struct pollfd pfd[2] = {{.fd = sig_fd, .events = POLLIN}, {.fd = lfd, .events = POLLIN}};
        int r = poll(pfd, wait_ms < 0 ? 2 : 1, wait_ms);

        if (r < 0 && errno != EINTR)
            return 0;
        if (r > 0 && pfd[0].revents) {
            struct signalfd_siginfo si;

            if (read(sig_fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
                return SIGTERM;
            return (int)si.ssi_signo;
        }
        wait_ms = -1;
        if (r > 0 && pfd[1].revents) {
            int e = accept_one(u, lfd);

            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
                wait_ms = 1000;
        }
    }
}

/* Cancel every call so that each is still answered (a cancelled result)
 * and give the answers MCP_SHUTDOWN_GRACE_MS to go out; then unblock every
 * thread (a write to a client that does not read, a read) and wait for
 * them all. */
static void close_all(struct unix_srv *u)
{
    long long deadline = mcp_monotonic_ms() + MCP_SHUTDOWN_GRACE_MS;

    pthread_mutex_lock(&u->lock);
    for (size_t i = 0; i < MAX_CONNS; i++)
        if (u->slots[i].state == SLOT_RUNNING && u->slots[i].conn)
            mcp_conn_shutdown(u->slots[i].conn);
    for (size_t i = 0; i < MAX_CONNS; i++)
        if (u->slots[i].state == SLOT_RUNNING && u->slots[i].conn)
            mcp_conn_wait_idle(u->slots[i].conn, deadline);
    for (size_t i = 0; i < MAX_CONNS; i++) {
        struct slot *sl = &u->slots[i];

        if (sl->state != SLOT_RUNNING)
            continue;
        if (sl->conn)
            mcp_conn_cancel(sl->conn);
        if (sl->fd >= 0)
            shutdown(sl->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&u->lock);
    for (size_t i = 0; i < MAX_CONNS; i++)
        if (u->slots[i].state != SLOT_FREE)
            pthread_join(u->slots[i].thread, NULL);
}

int mcp_serve_unix(
        struct sbx_runtime *rt, const struct mcp_options *opt, const char *path, int listen_fd)
{
    struct sigaction ign = {.sa_handler = SIG_IGN};
    struct unix_srv u = {0};
    struct stat ours = {0};
    pthread_t prober;
    sigset_t mask;
    int lfd, sig_fd, rc, sig;

    sigaction(SIGPIPE, &ign, NULL);
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, NULL); /* before any thread: all inherit it */
    sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (sig_fd < 0)
        return -1;
    lfd = listen_fd >= 0 ? listen_fd : listen_at(path, &ours);
    if (lfd < 0) {
        close(sig_fd);
        return -1;
    }
    pthread_mutex_init(&u.lock, NULL);
    for (size_t i = 0; i < MAX_CONNS; i++)
        u.slots[i].fd = -1;
    if (mcp_server_new(rt, opt, &u.s, NULL) < 0) {
        if (listen_fd < 0)
            unlink_ours(path, &ours);
        close(lfd);
        close(sig_fd);
        return -1;
    }
    fprintf(stderr, "llm-sandbox: MCP on unix socket %s%s\n", path,
            listen_fd >= 0 ? " (from systemd)" : "");
    rc = pthread_create(&prober, NULL, stream_probe_versions, rt);
    sig = accept_loop(&u, lfd, sig_fd);
    if (listen_fd < 0)
        unlink_ours(path, &ours); /* new clients now fail at once, not queue */
    close(lfd);
    if (rc == 0) /* first: a call may wait for the probe that runs */
        stream_end_prober(rt, prober);
    close_all(&u);
    mcp_server_free(u.s);
    pthread_mutex_destroy(&u.lock);
    close(sig_fd);
    return sig ? 128 + sig : 0;
}
