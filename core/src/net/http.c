/* SPDX-License-Identifier: MIT */
/*
 * http.c: HTTP over libcurl for plugins (the Docker Engine API, the
 * Kubernetes API and the like). Endpoints: unix:///path (a unix socket),
 * tcp://host:port (https when TLS material is given: a Docker-style
 * directory, or PEM data or files as a kubeconfig holds them), or a plain
 * http(s):// URL. Every transfer has a deadline and watches a cancel fd;
 * bodies are capped by the caller's buffer; the plugin's header lines are
 * checked (no CR, LF) and never logged. An upgraded connection is made
 * with CURLOPT_CONNECT_ONLY: we write the request and read the response
 * head ourselves, one byte at a time, so no byte of the stream that
 * follows is consumed; then a pump thread (pump.c) carries the stream to a
 * socketpair, whose readiness is honest even where TLS buffers bytes.
 * libcurl is opened by http_open(), which the loader calls for a plugin
 * whose manifest says it uses HTTP (core/dl/dlib.h says why).
 * Does no policy decisions; error convention: struct sbx_err (plugin.h).
 */
#include "net/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "dlib.h"
#include "net/pump.h"

#define HEAD_MAX HTTP_HEAD_MAX

struct sbx_conn {
    CURL *curl;
    int net_fd; /* the socket; only the pump uses it once started */
    bool tls;
    struct pump *pump;
    int fd; /* the plugin's end of the pump's pair */
};

#define HAS(req, field) SBX_HAS_FIELD(struct sbx_http, req, field)

static DLSYM_PROTOTYPE(curl_global_init);
static DLSYM_PROTOTYPE(curl_easy_init);
static DLSYM_PROTOTYPE(curl_easy_setopt);
static DLSYM_PROTOTYPE(curl_easy_perform);
static DLSYM_PROTOTYPE(curl_easy_getinfo);
static DLSYM_PROTOTYPE(curl_easy_cleanup);
static DLSYM_PROTOTYPE(curl_easy_strerror);
static DLSYM_PROTOTYPE(curl_easy_recv);
static DLSYM_PROTOTYPE(curl_easy_send);
static DLSYM_PROTOTYPE(curl_slist_append);
static DLSYM_PROTOTYPE(curl_slist_free_all);

static const struct dlib_sym curl_syms[] = {
        DLSYM_ARG(curl_global_init),
        DLSYM_ARG(curl_easy_init),
        DLSYM_ARG(curl_easy_setopt),
        DLSYM_ARG(curl_easy_perform),
        DLSYM_ARG(curl_easy_getinfo),
        DLSYM_ARG(curl_easy_cleanup),
        DLSYM_ARG(curl_easy_strerror),
        DLSYM_ARG(curl_easy_recv),
        DLSYM_ARG(curl_easy_send),
        DLSYM_ARG(curl_slist_append),
        DLSYM_ARG(curl_slist_free_all),
};

static struct dlib curl_lib = DLIB_INIT(SBX_CURL_SONAME, "HTTP for plugins", curl_syms);
static bool curl_ready; /* set once, on the main thread, before workers exist */

int http_open(struct sbx_err *err)
{
    CURLcode rc;

    if (curl_ready)
        return 0;
    if (dlib_open(&curl_lib) < 0)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOSYS, "%s", curl_lib.error);
    rc = sym_curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
        return sbx_err_fill(
                err, SBX_E_INTERNAL, EIO, "curl_global_init: %s", sym_curl_easy_strerror(rc));
    curl_ready = true;
    return 0;
}

struct xfer {
    const struct sbx_http *req;
    struct sbx_http_resp *resp;
    bool aborted;
};

static bool cancelled(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    return fd >= 0 && poll(&p, 1, 0) > 0;
}

static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    struct sbx_http_resp *r = x->resp;
    size_t len = size * n, room, keep;

    if (x->req->on_body) {
        if (x->req->on_body(x->req->userdata, data, len) != 0) {
            x->aborted = true;
            return 0;
        }
        return len;
    }
    if (r->cap == 0)
        return len;
    room = r->cap - 1 - r->len;
    keep = len < room ? len : room;
    memcpy(r->body + r->len, data, keep);
    r->len += keep;
    r->body[r->len] = '\0';
    if (keep < len)
        r->truncated = 1;
    return len;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    const struct xfer *x = ud;

    (void)a, (void)b, (void)c, (void)d;
    return cancelled(x->req->cancel_fd) ? 1 : 0;
}

static bool has_tls_material(const struct sbx_http *req)
{
    return HAS(req, key_file) && (req->ca_pem || req->ca_file || req->cert_pem || req->cert_file ||
                                         req->key_pem || req->key_file);
}

/* The CA bundle, client certificate and key: tls_dir's files (Docker's
 * layout), then each one given as PEM data or as a file instead. The
 * server is always verified, by certificate and by name. */
static void set_tls(CURL *c, const struct sbx_http *req)
{
    static const struct {
        CURLoption blob, file;
        const char *in_dir;
    } kinds[3] = {{CURLOPT_CAINFO_BLOB, CURLOPT_CAINFO, "ca.pem"},
            {CURLOPT_SSLCERT_BLOB, CURLOPT_SSLCERT, "cert.pem"},
            {CURLOPT_SSLKEY_BLOB, CURLOPT_SSLKEY, "key.pem"}};
    const char *pem[3] = {NULL, NULL, NULL}, *file[3] = {NULL, NULL, NULL};

    if (has_tls_material(req)) {
        pem[0] = req->ca_pem, pem[1] = req->cert_pem, pem[2] = req->key_pem;
        file[0] = req->ca_file, file[1] = req->cert_file, file[2] = req->key_file;
    }
    for (int i = 0; i < 3; i++) {
        char p[1024];

        if (pem[i]) {
            struct curl_blob b = {.data = (void *)(uintptr_t)pem[i],
                    .len = strlen(pem[i]),
                    .flags = CURL_BLOB_COPY};

            sym_curl_easy_setopt(c, kinds[i].blob, &b);
        } else if (file[i]) {
            sym_curl_easy_setopt(c, kinds[i].file, file[i]);
        } else if (req->tls_dir) {
            snprintf(p, sizeof(p), "%s/%s", req->tls_dir, kinds[i].in_dir);
            sym_curl_easy_setopt(c, kinds[i].file, p);
        }
    }
    sym_curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    sym_curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
}

/* "Name: value", no CR, LF (a second header smuggled in) or control. */
static bool header_ok(const char *h)
{
    const char *colon = strchr(h, ':');

    if (!colon || colon == h || colon[1] != ' ' || strlen(h) > 8192)
        return false;
    for (const unsigned char *p = (const unsigned char *)h; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return false;
    return strcspn(h, " \t") > (size_t)(colon - h);
}

static int check_headers(const struct sbx_http *req, struct sbx_err *err)
{
    for (const char *const *hd = HAS(req, headers) ? req->headers : NULL; hd && *hd; hd++)
        if (!header_ok(*hd))
            return sbx_err_fill(err, SBX_E_INVALID, EINVAL,
                    "http: a request header must be one 'Name: value' line (header %zu is not)",
                    (size_t)(hd - req->headers) + 1);
    return 0;
}

/* Point curl at the endpoint: the URL to request and, for unix://, the
 * socket. 0 or SBX_E_INVALID. */
static int set_endpoint(CURL *c, const struct sbx_http *req, bool *ret_tls, struct sbx_err *err)
{
    const char *ep = req->endpoint, *scheme = "http", *host = "localhost";
    char url[2048];
    int n;

    *ret_tls = false;
    if (!ep || !req->path || req->path[0] != '/')
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "http: missing endpoint or path");
    if (strncmp(ep, "unix://", 7) == 0) {
        if (ep[7] != '/')
            return sbx_err_fill(err, SBX_E_INVALID, EINVAL,
                    "endpoint '%s': a unix socket needs an absolute path", ep);
        sym_curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, ep + 7);
    } else if (strncmp(ep, "tcp://", 6) == 0) {
        host = ep + 6;
        if (req->tls_dir || has_tls_material(req))
            scheme = "https";
    } else if (strncmp(ep, "http://", 7) == 0) {
        host = ep + 7;
    } else if (strncmp(ep, "https://", 8) == 0) {
        host = ep + 8, scheme = "https";
    } else {
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL,
                "endpoint '%s' is not unix://PATH, tcp://HOST:PORT, http:// or https://", ep);
    }
    n = snprintf(url, sizeof(url), "%s://%.*s%s", scheme, (int)strcspn(host, "/"), host, req->path);
    if (n < 0 || (size_t)n >= sizeof(url))
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "http: URL too long");
    sym_curl_easy_setopt(c, CURLOPT_URL, url);
    if (strcmp(scheme, "https") == 0) {
        *ret_tls = true;
        set_tls(c, req);
    }
    return 0;
}

/* Why nothing answers on the unix socket at path, in our words: curl
 * speaks of "localhost port 80" even for a socket. */
static void unix_why(const char *path, char *out, size_t len)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    struct stat st;
    int fd, e = 0;

    if (stat(path, &st) < 0) {
        snprintf(out, len, "the socket '%s' does not exist (%s)", path, strerror(errno));
        return;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(out, len, "'%s' is not a socket", path);
        return;
    }
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        e = errno;
    if (fd >= 0)
        close(fd);
    if (e == EACCES || e == EPERM)
        snprintf(out, len, "the socket '%s' exists but this user may not connect to it (%s)", path,
                strerror(e));
    else
        snprintf(out, len, "nothing listens on the socket '%s' (%s)", path,
                e ? strerror(e) : "it accepted, then closed");
}

/* why: curl's error buffer (its detail, such as which certificate did not
 * verify), or "" for curl's generic text of rc. */
static int curl_fail(
        CURLcode rc, const char *why, const struct sbx_http *req, bool aborted, struct sbx_err *err)
{
    const char *text = why && why[0] ? why : sym_curl_easy_strerror(rc);

    if (rc == CURLE_ABORTED_BY_CALLBACK && cancelled(req->cancel_fd))
        return sbx_err_fill(err, SBX_E_CANCELLED, ECANCELED, "cancelled");
    if (rc == CURLE_COULDNT_CONNECT && strncmp(req->endpoint, "unix://", 7) == 0) {
        char mine[PATH_MAX + 128];

        unix_why(req->endpoint + 7, mine, sizeof(mine));
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ECONNREFUSED, "%s", mine);
    }
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ECONNREFUSED, "cannot connect to '%s': %s",
                req->endpoint, text);
    if (aborted)
        return sbx_err_fill(err, SBX_E_CANCELLED, ECANCELED, "%s %s: stopped by the receiver",
                req->method, req->path);
    return sbx_err_fill(err, SBX_E_BACKEND, rc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO,
            "%s %s on '%s': %s", req->method, req->path, req->endpoint, text);
}

static CURL *easy_new(const struct sbx_http *req, bool *ret_tls, struct sbx_err *err)
{
    CURL *c;

    if (!curl_ready) {
        sbx_err_fill(err, SBX_E_UNSUPPORTED, ENOSYS,
                "HTTP is not open: the plugin's manifest must say 'requires: {host: [http]}'");
        return NULL;
    }
    c = sym_curl_easy_init();
    if (!c) {
        sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "curl_easy_init failed");
        return NULL;
    }
    if (set_endpoint(c, req, ret_tls, err) < 0) {
        sym_curl_easy_cleanup(c);
        return NULL;
    }
    sym_curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    sym_curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (req->timeout_ms > 0)
        sym_curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
    sym_curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    return c;
}

int http_request(const struct sbx_http *req, struct sbx_http_resp *resp, struct sbx_err *err)
{
    struct xfer x = {.req = req, .resp = resp};
    struct curl_slist *hdr = NULL;
    char ct[160], why[CURL_ERROR_SIZE] = "";
    bool tls;
    CURLcode rc;
    CURL *c;

    if (!req || !resp || !req->method || (resp->cap && !resp->body))
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "http_request: missing argument");
    resp->len = 0, resp->status = 0, resp->truncated = 0;
    if (resp->cap)
        resp->body[0] = '\0';
    if (check_headers(req, err) < 0)
        return err->rc;
    c = easy_new(req, &tls, err);
    if (!c)
        return err->rc;
    sym_curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    if (req->body || strcmp(req->method, "POST") == 0 || strcmp(req->method, "PUT") == 0) {
        sym_curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        sym_curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    } else if (strcmp(req->method, "HEAD") == 0) {
        sym_curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    }
    snprintf(ct, sizeof(ct), "Content-Type: %s",
            req->content_type ? req->content_type : "application/json");
    hdr = sym_curl_slist_append(hdr, ct);
    hdr = sym_curl_slist_append(hdr, "Expect:");
    for (const char *const *hd = HAS(req, headers) ? req->headers : NULL; hd && *hd; hd++)
        hdr = sym_curl_slist_append(hdr, *hd);
    sym_curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    sym_curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    sym_curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    sym_curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    sym_curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    sym_curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    sym_curl_easy_setopt(c, CURLOPT_ERRORBUFFER, why);
    rc = sym_curl_easy_perform(c);
    if (rc == CURLE_OK)
        sym_curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
    sym_curl_easy_cleanup(c);
    sym_curl_slist_free_all(hdr);
    return rc == CURLE_OK ? 0 : curl_fail(rc, why, req, x.aborted, err);
}

static int64_t left_ms(const struct timespec *end)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)(end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
}

/* Wait for the socket (events), the deadline or the cancel fd. */
static int wait_sock(struct sbx_conn *cn, short events, const struct timespec *end,
        const struct sbx_http *req, struct sbx_err *err)
{
    struct pollfd p[2] = {
            {.fd = cn->net_fd, .events = events}, {.fd = req->cancel_fd, .events = POLLIN}};
    int64_t ms = left_ms(end);

    if (ms <= 0 || poll(p, 2, (int)ms) == 0)
        return sbx_err_fill(
                err, SBX_E_BACKEND, ETIMEDOUT, "%s %s: no answer in time", req->method, req->path);
    if (p[1].revents)
        return sbx_err_fill(err, SBX_E_CANCELLED, ECANCELED, "cancelled");
    return 0;
}

static int send_all(struct sbx_conn *cn, const char *p, size_t len, const struct timespec *end,
        const struct sbx_http *req, struct sbx_err *err)
{
    while (len > 0) {
        size_t n = 0;
        CURLcode rc = sym_curl_easy_send(cn->curl, p, len, &n);

        if (rc == CURLE_AGAIN) {
            if (wait_sock(cn, POLLOUT, end, req, err) < 0)
                return err->rc;
            continue;
        }
        if (rc != CURLE_OK)
            return sbx_err_fill(err, SBX_E_BACKEND, EIO, "%s %s: %s", req->method, req->path,
                    sym_curl_easy_strerror(rc));
        p += n, len -= n;
    }
    return 0;
}

/* Read the response head byte by byte (nothing of the stream after it may
 * be consumed) into head; its status in *ret_status. */
static int read_head(struct sbx_conn *cn, char *head, const struct timespec *end,
        const struct sbx_http *req, long *ret_status, struct sbx_err *err)
{
    size_t o = 0;

    while (o < 4 || memcmp(head + o - 4, "\r\n\r\n", 4) != 0) {
        size_t n = 0;
        CURLcode rc;

        if (o + 1 >= HEAD_MAX)
            return sbx_err_fill(
                    err, SBX_E_BACKEND, EPROTO, "%s: response head too long", req->path);
        rc = sym_curl_easy_recv(cn->curl, head + o, 1, &n);
        if (rc == CURLE_AGAIN) {
            if (wait_sock(cn, POLLIN, end, req, err) < 0)
                return err->rc;
            continue;
        }
        if (rc != CURLE_OK || n == 0)
            return sbx_err_fill(err, SBX_E_BACKEND, EPROTO, "%s %s: connection closed: %s",
                    req->method, req->path, sym_curl_easy_strerror(rc));
        o += n;
    }
    head[o] = '\0';
    if (sscanf(head, "HTTP/%*d.%*d %ld", ret_status) != 1)
        return sbx_err_fill(err, SBX_E_BACKEND, EPROTO, "%s: not an HTTP response", req->path);
    return 0;
}

/* After a refusal: up to len-1 bytes of the body the head announces (the
 * daemon's reason), for the error message. */
static void read_some(
        struct sbx_conn *cn, const char *head, char *out, size_t len, const struct timespec *end)
{
    const char *cl = strcasestr(head, "\r\nContent-Length:");
    size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0, o = 0;

    if (want > len - 1)
        want = len - 1;
    while (o < want && left_ms(end) > 0) {
        size_t n = 0;
        CURLcode rc = sym_curl_easy_recv(cn->curl, out + o, want - o, &n);
        struct pollfd p = {.fd = cn->net_fd, .events = POLLIN};

        if (rc == CURLE_AGAIN && poll(&p, 1, 1000) >= 0)
            continue;
        if (rc != CURLE_OK || n == 0)
            break;
        o += n;
    }
    out[o] = '\0';
}

/* Append to the HEAD_MAX bytes at head; false once it no longer fits. */
static bool head_add(char *head, size_t *o, const char *fmt, ...) SBX_PRINTF(3, 4);

static bool head_add(char *head, size_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*o >= HEAD_MAX)
        return false;
    va_start(ap, fmt);
    n = vsnprintf(head + *o, HEAD_MAX - *o, fmt, ap);
    va_end(ap);
    *o = n < 0 || (size_t)n >= HEAD_MAX - *o ? HEAD_MAX : *o + (size_t)n;
    return *o < HEAD_MAX;
}

/* The request line and headers of an upgrade: Docker's (proto NULL: as
 * before ABI 1.4) or another protocol's, with the plugin's header lines
 * and the caller's (more). 0, or SBX_E_INVALID when it does not fit. */
static int upgrade_head(const struct sbx_http *req, const char *proto, const char *const *more,
        char *head, struct sbx_err *err)
{
    const char *host = "docker";
    size_t o = 0, hlen = strlen(host);
    bool ok;

    if (proto && strncmp(req->endpoint, "unix://", 7) != 0) { /* the authority */
        host = strstr(req->endpoint, "://") + 3;
        hlen = strcspn(host, "/");
    }
    ok = head_add(head, &o,
            "%s %s HTTP/1.1\r\nHost: %.*s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n", req->method,
            req->path, (int)hlen, host, proto ? proto : "tcp");
    for (const char *const *hd = HAS(req, headers) ? req->headers : NULL; ok && hd && *hd; hd++)
        ok = head_add(head, &o, "%s\r\n", *hd);
    for (const char *const *hd = more; ok && hd && *hd; hd++)
        ok = head_add(head, &o, "%s\r\n", *hd);
    if (ok && (!proto || req->body))
        ok = head_add(head, &o, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                req->content_type ? req->content_type : "text/plain",
                req->body ? req->body_len : 0);
    if (!ok || !head_add(head, &o, "\r\n"))
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "http: request too long");
    return 0;
}

int http_upgrade_start(const struct sbx_http *req, const char *proto, const char *const *more,
        struct sbx_conn **ret_conn, char *head, long *ret_status, struct sbx_err *err)
{
    struct sbx_conn *cn = calloc(1, sizeof(*cn));
    struct timespec end;
    char why[CURL_ERROR_SIZE] = "";
    curl_socket_t s = CURL_SOCKET_BAD;
    int r = 0;
    CURLcode rc;

    if (!cn)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    cn->net_fd = cn->fd = -1;
    if (check_headers(req, err) < 0 || upgrade_head(req, proto, more, head, err) < 0) {
        free(cn);
        return err->rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += req->timeout_ms > 0 ? req->timeout_ms / 1000 + 1 : 30;
    cn->curl = easy_new(req, &cn->tls, err);
    if (!cn->curl) {
        free(cn);
        return err->rc;
    }
    sym_curl_easy_setopt(cn->curl, CURLOPT_CONNECT_ONLY, 1L);
    /* An upgrade is HTTP/1.1 only: without this, curl offers h2 in TLS's
     * ALPN, a Go server (the Kubernetes API server) takes it, and our
     * HTTP/1.1 request meets HTTP/2 frames. */
    sym_curl_easy_setopt(cn->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    sym_curl_easy_setopt(cn->curl, CURLOPT_ERRORBUFFER, why);
    rc = sym_curl_easy_perform(cn->curl);
    if (rc == CURLE_OK)
        rc = sym_curl_easy_getinfo(cn->curl, CURLINFO_ACTIVESOCKET, &s);
    if (rc != CURLE_OK || s == CURL_SOCKET_BAD)
        r = curl_fail(rc, why, req, false, err);
    sym_curl_easy_setopt(cn->curl, CURLOPT_ERRORBUFFER, NULL); /* why is on this stack */
    cn->net_fd = (int)s;
    if (r == 0)
        r = send_all(cn, head, strlen(head), &end, req, err);
    if (r == 0 && req->body)
        r = send_all(cn, req->body, req->body_len, &end, req, err);
    if (r == 0)
        r = read_head(cn, head, &end, req, ret_status, err);
    if (r == 0 && *ret_status != 101 && *ret_status != 200) {
        char body[220];

        read_some(cn, head, body, sizeof(body), &end);
        r = sbx_err_fill(err, SBX_E_BACKEND, EPROTO, "%s %s: HTTP status %ld: %s", req->method,
                req->path, *ret_status, body);
    }
    if (r < 0) {
        http_conn_free(cn);
        return r;
    }
    *ret_conn = cn;
    return 0;
}

static ssize_t net_recv(void *ctx, void *buf, size_t len)
{
    struct sbx_conn *c = ctx;
    size_t n = 0;
    CURLcode rc = sym_curl_easy_recv(c->curl, buf, len, &n);

    if (rc == CURLE_OK)
        return (ssize_t)n;
    errno = rc == CURLE_AGAIN ? EAGAIN : EIO;
    return -1;
}

static ssize_t net_send(void *ctx, const void *buf, size_t len)
{
    struct sbx_conn *c = ctx;
    size_t n = 0;
    CURLcode rc = sym_curl_easy_send(c->curl, buf, len, &n);

    if (rc == CURLE_OK)
        return (ssize_t)n;
    errno = rc == CURLE_AGAIN ? EAGAIN : EPIPE;
    return -1;
}

static void net_shutdown_write(void *ctx)
{
    struct sbx_conn *c = ctx;

    /* Through TLS a half-close would need close_notify; the peer learns of
     * the end when the connection closes. */
    if (!c->tls)
        shutdown(c->net_fd, SHUT_WR);
}

int http_conn_start_pump(struct sbx_conn *c, enum pump_mode mode, struct sbx_err *err)
{
    struct pump_io io = {.ctx = c,
            .fd = c->net_fd,
            .recv = net_recv,
            .send = net_send,
            .shutdown_write = net_shutdown_write};
    struct sbx_error *e = NULL;

    if (pump_start(&io, mode, NULL, 0, &c->pump, &c->fd, &e) < 0) {
        sbx_err_fill(err, e->rc, e->sys_errno, "%s", e->msg);
        sbx_error_free(e);
        return err->rc;
    }
    return 0;
}

struct pump *http_conn_pump(struct sbx_conn *c)
{
    return c->pump;
}

int http_upgrade(const struct sbx_http *req, struct sbx_conn **ret_conn, struct sbx_err *err)
{
    cleanup_free char *head = malloc(HEAD_MAX);
    const char *proto = HAS(req, upgrade) ? req->upgrade : NULL;
    struct sbx_conn *cn = NULL;
    long status = 0;

    if (!head)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (proto && (!*proto || strcspn(proto, "\r\n,") != strlen(proto)))
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "http: bad upgrade protocol");
    if (http_upgrade_start(req, proto, NULL, &cn, head, &status, err) < 0)
        return err->rc;
    if (http_conn_start_pump(cn, PUMP_RAW, err) < 0) {
        http_conn_free(cn);
        return err->rc;
    }
    *ret_conn = cn;
    return 0;
}

int http_conn_fd(struct sbx_conn *c)
{
    return c->fd;
}

int64_t http_conn_read(struct sbx_conn *c, void *buf, size_t len)
{
    return read(c->fd, buf, len);
}

int64_t http_conn_write(struct sbx_conn *c, const void *buf, size_t len)
{
    return send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int http_conn_shutdown_write(struct sbx_conn *c)
{
    return shutdown(c->fd, SHUT_WR);
}

void http_conn_free(struct sbx_conn *c)
{
    if (c) {
        pump_free(c->pump); /* joins the thread: the curl handle is ours again */
        sym_curl_easy_cleanup(c->curl);
        free(c);
    }
}
