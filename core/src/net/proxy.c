/* SPDX-License-Identifier: MIT */
/*
 * proxy.c: the filtering CONNECT proxy for dependency installs (proxy.h).
 *
 * One acceptor thread and one thread per connection (at most PROXY_CONNS;
 * more are answered 503). A connection: read the request head (8 KiB, 15 s),
 * accept only "CONNECT host:443", check the host against the allow-list,
 * resolve it here, refuse forbidden addresses, connect (10 s), answer 200,
 * then copy bytes both ways until both sides are done or 5 minutes pass
 * without traffic. proxy_stop() shuts every socket down and joins every
 * thread, so nothing outlives it.
 */
#include "net/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"

#define PROXY_CONNS     32
#define HEAD_MAX        8192
#define HEAD_TIMEOUT_MS 15000
#define CONNECT_TIMEOUT 10000
#define IDLE_TIMEOUT_MS 300000
#define RELAY_CHUNK     16384
#define REFUSALS_MAX    8192
#define HTTPS_PORT      443

enum slot_state { SLOT_FREE, SLOT_RUNNING, SLOT_DONE };

struct slot {
    enum slot_state state;
    pthread_t thread;
    int client, upstream; /* -1 when closed; shut down by proxy_stop */
    struct proxy *p;
};

struct proxy {
    int listen_fd, stop_fd;
    char *path;
    char **hosts;
    pthread_t acceptor;
    bool acceptor_started, bound;
    pthread_mutex_t lock; /* slots, refusals, stopping */
    bool stopping;
    struct slot slots[PROXY_CONNS];
    struct dynbuf refusals;
};

static void refusal(struct proxy *p, const char *fmt, ...) SBX_PRINTF(2, 3);

static void refusal(struct proxy *p, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    log_msg(SBX_LOG_INFO, "proxy", "%.*s", n - 1, line);
    pthread_mutex_lock(&p->lock);
    (void)dynbuf_append(&p->refusals, line, (size_t)n); /* past the cap: dropped */
    pthread_mutex_unlock(&p->lock);
}

static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};

            if (poll(&pf, 1, IDLE_TIMEOUT_MS) <= 0)
                return -1;
            continue;
        }
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static void answer(int fd, const char *status, const char *why)
{
    char buf[640];
    int n = snprintf(buf, sizeof(buf),
            "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n%s\n",
            status, strlen(why) + 1, why);

    if (n > 0)
        (void)send_all(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Addresses no install may reach, whatever name led there: this host's
 * loopback (the server's own services), link-local (cloud metadata),
 * unspecified, multicast and broadcast. */
static bool addr_forbidden(const struct sockaddr *sa)
{
    /* sa may be any sockaddr's storage: copy the family's struct out, not
     * cast (its alignment may be less than sockaddr_in's). */
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in in;
        uint32_t a;

        memcpy(&in, sa, sizeof(in));
        a = ntohl(in.sin_addr.s_addr);

        return (a >> 24) == 127 || (a >> 24) == 0 || (a >> 16) == 0xA9FE || (a >> 28) == 0xE ||
               a == 0xFFFFFFFFu;
    }
    if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 in6;
        const struct in6_addr *a = &in6.sin6_addr;
        const uint8_t *b = a->s6_addr;

        memcpy(&in6, sa, sizeof(in6));
        if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
            struct sockaddr_in v4 = {.sin_family = AF_INET};

            memcpy(&v4.sin_addr, b + 12, 4);
            return addr_forbidden((const struct sockaddr *)&v4);
        }
        return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LINKLOCAL(a) ||
               IN6_IS_ADDR_MULTICAST(a);
    }
    return true;
}

/* Connect with a deadline; the socket stays non-blocking. */
static int connect_timeout(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct pollfd pf;
    int soerr = 0;
    socklen_t sl = sizeof(soerr);

    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return fd;
    if (errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    pf = (struct pollfd){.fd = fd, .events = POLLOUT};
    if (poll(&pf, 1, CONNECT_TIMEOUT) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0) {
        close(fd);
        errno = soerr ? soerr : ETIMEDOUT;
        return -1;
    }
    return fd;
}

/* Read the request head; returns its length (through "\r\n\r\n") or -1. */
static ssize_t read_head(int fd, char *buf, size_t cap, size_t *ret_got)
{
    size_t got = 0;
    int64_t deadline = now_ms() + HEAD_TIMEOUT_MS;

    while (got < cap - 1) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        ssize_t n;
        char *end;

        if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
            return -1;
        n = recv(fd, buf + got, cap - 1 - got, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end) {
            *ret_got = got;
            return end + 4 - buf;
        }
    }
    return -1;
}

/* "CONNECT host:port HTTP/1.x": 0 and host/port, or -1 with why. The
 * port is 1 to 5 digits: strtoul alone would also take a sign or
 * leading white space. */
static int parse_connect(char *line, char **ret_host, unsigned *ret_port, const char **why)
{
    char *sp, *colon, *end;
    unsigned long port;

    if (strncmp(line, "CONNECT ", 8) != 0) {
        *why = "only HTTPS through CONNECT is relayed";
        return -1;
    }
    line += 8;
    sp = strchr(line, ' ');
    if (!sp || strncmp(sp, " HTTP/1.", 8) != 0) {
        *why = "malformed CONNECT request";
        return -1;
    }
    *sp = '\0';
    colon = strrchr(line, ':');
    if (!colon) {
        *why = "CONNECT without a port";
        return -1;
    }
    *colon = '\0';
    errno = 0;
    port = strtoul(colon + 1, &end, 10);
    if (colon[1] < '0' || colon[1] > '9' || errno || *end || end - colon > 6 || port > 65535) {
        *why = "CONNECT with a bad port";
        return -1;
    }
    for (char *c = line; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    *ret_host = line;
    *ret_port = (unsigned)port;
    return 0;
}

int proxy_parse_request(
        char *head, char *const *hosts, char **ret_host, unsigned *ret_port, const char **ret_why)
{
    char *eol = strstr(head, "\r\n");
    bool allowed = false;

    if (eol)
        *eol = '\0';
    if (!eol || parse_connect(head, ret_host, ret_port, ret_why) < 0) {
        if (!eol)
            *ret_why = "malformed request";
        return 405;
    }
    for (char *const *h = hosts; h && *h && !allowed; h++)
        allowed = host_matches(*h, *ret_host);
    /* a name, not a pattern: "*.x" would match the allow-list entry "*.x" */
    if (*ret_port != HTTPS_PORT || (*ret_host)[0] == '*' || !host_pattern_is_valid(*ret_host) ||
            !allowed) {
        *ret_why = *ret_port != HTTPS_PORT ? "only port 443 is relayed"
                                           : "host is not a registry of this language";
        return 403;
    }
    return 0;
}

/* Copy bytes both ways until both directions ended, an error, the idle
 * timeout, or proxy_stop() shutting the sockets down. */
static void relay(int a, int b)
{
    char buf[RELAY_CHUNK];
    bool open_in[2] = {true, true};
    int fd[2] = {a, b};

    while (open_in[0] || open_in[1]) {
        struct pollfd pf[2] = {{.fd = open_in[0] ? a : -1, .events = POLLIN},
                {.fd = open_in[1] ? b : -1, .events = POLLIN}};
        int r = poll(pf, 2, IDLE_TIMEOUT_MS);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        for (int i = 0; i < 2; i++) {
            ssize_t n;

            if (!pf[i].revents)
                continue;
            n = recv(fd[i], buf, sizeof(buf), 0);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n < 0)
                return;
            if (n == 0) {
                open_in[i] = false;
                shutdown(fd[1 - i], SHUT_WR);
                continue;
            }
            if (send_all(fd[1 - i], buf, (size_t)n) < 0)
                return;
        }
    }
}

/* Publish the upstream socket for proxy_stop(); shut at once if it ran. */
static void set_upstream(struct slot *s, int fd)
{
    pthread_mutex_lock(&s->p->lock);
    s->upstream = fd;
    if (s->p->stopping)
        shutdown(fd, SHUT_RDWR);
    pthread_mutex_unlock(&s->p->lock);
}

static void serve(struct slot *s)
{
    struct proxy *p = s->p;
    char head[HEAD_MAX];
    size_t got = 0;
    ssize_t hlen = read_head(s->client, head, sizeof(head), &got);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    const char *why = NULL;
    char *host = NULL;
    unsigned port = 0;
    int up = -1, gai, status;

    if (hlen < 0)
        return;
    status = proxy_parse_request(head, p->hosts, &host, &port, &why);
    if (status == 405) {
        refusal(p, "refused '%.100s': %s", head, why);
        answer(s->client, "405 Method Not Allowed", why);
        return;
    }
    if (status != 0) {
        refusal(p, "refused CONNECT %.200s:%u: %s", host, port, why);
        answer(s->client, "403 Forbidden", why);
        return;
    }
    gai = getaddrinfo(host, "443", &hints, &res);
    if (gai != 0) {
        refusal(p, "CONNECT %.200s:%u: cannot resolve: %s", host, port, gai_strerror(gai));
        answer(s->client, "502 Bad Gateway", "cannot resolve the host");
        return;
    }
    for (const struct addrinfo *ai = res; ai && up < 0; ai = ai->ai_next) {
        if (addr_forbidden(ai->ai_addr)) {
            why = "it resolves to a loopback, link-local or multicast address";
            continue;
        }
        up = connect_timeout(ai);
        if (up < 0)
            why = "cannot connect";
    }
    freeaddrinfo(res);
    if (up < 0) {
        refusal(p, "refused CONNECT %.200s:%u: %s", host, port, why ? why : "no address");
        answer(s->client, why && why[0] == 'i' ? "403 Forbidden" : "502 Bad Gateway",
                why ? why : "no address");
        return;
    }
    set_upstream(s, up);
    if (send_all(s->client, "HTTP/1.1 200 Connection established\r\n\r\n", 39) == 0 &&
            ((size_t)hlen == got || send_all(up, head + hlen, got - (size_t)hlen) == 0))
        relay(s->client, up);
}

static void *conn_main(void *arg)
{
    struct slot *s = arg;
    int c, u;

    serve(s);
    pthread_mutex_lock(&s->p->lock);
    c = s->client;
    u = s->upstream;
    s->client = s->upstream = -1;
    s->state = SLOT_DONE;
    pthread_mutex_unlock(&s->p->lock);
    close(c);
    if (u >= 0)
        close(u);
    return NULL;
}

/* Join finished connection threads; a free slot, or NULL. Under lock. */
static struct slot *free_slot(struct proxy *p)
{
    struct slot *found = NULL;

    for (int i = 0; i < PROXY_CONNS; i++) {
        struct slot *s = &p->slots[i];

        if (s->state == SLOT_DONE) {
            pthread_join(s->thread, NULL);
            s->state = SLOT_FREE;
        }
        if (s->state == SLOT_FREE && !found)
            found = s;
    }
    return found;
}

static void *accept_main(void *arg)
{
    struct proxy *p = arg;

    for (;;) {
        struct pollfd pf[2] = {
                {.fd = p->listen_fd, .events = POLLIN}, {.fd = p->stop_fd, .events = POLLIN}};
        struct slot *s;
        int c;

        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            return NULL;
        if (pf[1].revents)
            return NULL;
        if (!pf[0].revents)
            continue;
        c = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        pthread_mutex_lock(&p->lock);
        s = p->stopping ? NULL : free_slot(p);
        if (s) {
            s->state = SLOT_RUNNING;
            s->client = c;
            s->upstream = -1;
            s->p = p;
            if (pthread_create(&s->thread, NULL, conn_main, s) != 0) {
                s->state = SLOT_FREE;
                s = NULL;
            }
        }
        pthread_mutex_unlock(&p->lock);
        if (!s) {
            answer(c, "503 Service Unavailable", "too many connections");
            close(c);
        }
    }
}

/* sun_path holds 107 bytes; a deeper cache directory is reached through
 * /proc/self/fd of its parent (the socket itself stays where it is). */
static int bind_name(const char *path, struct sockaddr_un *sa, int *dir_fd)
{
    const char *slash = strrchr(path, '/');
    char *dir;

    if (strlen(path) < sizeof(sa->sun_path)) {
        memcpy(sa->sun_path, path, strlen(path) + 1);
        return 0;
    }
    if (!slash || strlen(slash) > 80 || !(dir = strndup(path, (size_t)(slash - path))))
        return -1;
    *dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (*dir_fd < 0)
        return -1;
    snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d%s", *dir_fd, slash);
    return 0;
}

int proxy_start(const char *sock_path, char *const *hosts, int64_t uid, int64_t gid,
        struct proxy **ret, struct sbx_error **err)
{
    struct proxy *p = calloc(1, sizeof(*p));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int e, dir_fd = -1;

    if (!p)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    p->listen_fd = p->stop_fd = -1;
    pthread_mutex_init(&p->lock, NULL);
    dynbuf_init(&p->refusals, REFUSALS_MAX);
    for (int i = 0; i < PROXY_CONNS; i++)
        p->slots[i].client = p->slots[i].upstream = -1;
    if (bind_name(sock_path, &sa, &dir_fd) < 0) {
        proxy_stop(p);
        return sbx_error_set(
                err, SBX_E_INVALID, ENAMETOOLONG, "proxy socket path '%s' is too long", sock_path);
    }
    for (char *const *h = hosts; h && *h; h++)
        if (strv_push(&p->hosts, *h) < 0)
            goto fail;
    p->path = strdup(sock_path);
    p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!p->path || p->stop_fd < 0 || p->listen_fd < 0 ||
            bind(p->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        goto fail;
    p->bound = true;
    if (dir_fd >= 0) {
        close(dir_fd);
        dir_fd = -1;
    }
    if ((uid >= 0 && chown(sock_path, (uid_t)uid, (gid_t)gid) < 0) || chmod(sock_path, 0600) < 0 ||
            listen(p->listen_fd, 64) < 0)
        goto fail;
    if (pthread_create(&p->acceptor, NULL, accept_main, p) != 0)
        goto fail;
    p->acceptor_started = true;
    *ret = p;
    return 0;
fail:
    e = errno;
    if (dir_fd >= 0)
        close(dir_fd);
    proxy_stop(p);
    return sbx_error_set(
            err, SBX_E_IO, e, "cannot start the install proxy at %s: %s", sock_path, strerror(e));
}

char *proxy_refusals(struct proxy *p)
{
    char *out = NULL;

    pthread_mutex_lock(&p->lock);
    if (p->refusals.len > 0)
        out = strndup(p->refusals.buf, p->refusals.len);
    pthread_mutex_unlock(&p->lock);
    return out;
}

struct proxy *proxy_stop(struct proxy *p)
{
    uint64_t one = 1;

    if (!p)
        return NULL;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    for (int i = 0; i < PROXY_CONNS; i++) {
        if (p->slots[i].client >= 0)
            shutdown(p->slots[i].client, SHUT_RDWR);
        if (p->slots[i].upstream >= 0)
            shutdown(p->slots[i].upstream, SHUT_RDWR);
    }
    pthread_mutex_unlock(&p->lock);
    if (p->acceptor_started) {
        (void)!write(p->stop_fd, &one, sizeof(one));
        pthread_join(p->acceptor, NULL);
    }
    for (int i = 0; i < PROXY_CONNS; i++)
        if (p->slots[i].state != SLOT_FREE)
            pthread_join(p->slots[i].thread, NULL);
    if (p->listen_fd >= 0)
        close(p->listen_fd);
    if (p->stop_fd >= 0)
        close(p->stop_fd);
    if (p->bound)
        unlink(p->path);
    free(p->path);
    strv_free(p->hosts);
    dynbuf_done(&p->refusals);
    pthread_mutex_destroy(&p->lock);
    free(p);
    return NULL;
}
