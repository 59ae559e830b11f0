/* SPDX-License-Identifier: MIT */
/*
 * test_http.c: the core's HTTP services for plugins (ABI 1.4) against a
 * real TLS server on loopback (http_peer.py, certificates made by the
 * test): request headers, TLS material as PEM data and as files, refused
 * header lines and certificates, a raw upgrade whose stream is honest to
 * poll through TLS, and WebSocket subprotocols, pieces, pings and closes.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/http.h"
#include "net/http_ws.h"

static char dir[64], endpoint[64];
static pid_t peer = -1;
static int peer_in = -1;
static char *ca, *cert, *key; /* the good client's PEM data */

static char *slurp(const char *sub, const char *file)
{
    char path[256];
    FILE *f;
    char *buf = calloc(1, 65536);
    size_t n;

    snprintf(path, sizeof(path), "%s/certs/%s/%s", dir, sub, file);
    f = fopen(path, "re");
    if (!f || !buf)
        return NULL;
    n = fread(buf, 1, 65535, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int start_peer(void **state)
{
    char script[512], port[16] = "", certs[128];
    const char *src = getenv("SBX_SOURCE_DIR");
    int in[2], out[2];
    struct sbx_err err = {.size = sizeof(err)};
    FILE *f;

    (void)state;
    signal(SIGPIPE, SIG_IGN);
    if (!src || http_open(&err) < 0)
        return -1;
    snprintf(dir, sizeof(dir), "/var/tmp/sbx-http-XXXXXX");
    if (!mkdtemp(dir) || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        return -1;
    snprintf(script, sizeof(script), "%s/tests/unit/http_peer.py", src);
    snprintf(certs, sizeof(certs), "%s/certs", dir);
    peer = fork();
    if (peer == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl("/usr/bin/python3", "python3", script, certs, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    peer_in = in[1];
    f = fdopen(out[0], "r");
    if (!f || !fgets(port, sizeof(port), f))
        return -1;
    fclose(f);
    snprintf(endpoint, sizeof(endpoint), "https://127.0.0.1:%d", atoi(port));
    ca = slurp("client", "ca.pem");
    cert = slurp("client", "cert.pem");
    key = slurp("client", "key.pem");
    return ca && cert && key ? 0 : -1;
}

static int stop_peer(void **state)
{
    char cmd[128];

    (void)state;
    close(peer_in);
    if (peer > 0)
        waitpid(peer, NULL, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (dir[0])
        (void)!system(cmd);
    free(ca), free(cert), free(key);
    return 0;
}

static struct sbx_http base(const char *method, const char *path)
{
    return (struct sbx_http){.size = sizeof(struct sbx_http),
            .endpoint = endpoint,
            .method = method,
            .path = path,
            .timeout_ms = 10000,
            .cancel_fd = -1,
            .ca_pem = ca,
            .cert_pem = cert,
            .key_pem = key};
}

static void test_headers_and_pem(void **state)
{
    static const char *const hdrs[] = {"Authorization: Bearer secret-token", "X-Two: 2", NULL};
    struct sbx_http req = base("GET", "/headers");
    char body[4096];
    struct sbx_http_resp resp = {.size = sizeof(resp), .body = body, .cap = sizeof(body)};
    struct sbx_err err = {.size = sizeof(err)};

    (void)state;
    req.headers = hdrs;
    assert_int_equal(http_request(&req, &resp, &err), 0);
    assert_int_equal(resp.status, 200);
    assert_non_null(strstr(body, "\r\nAuthorization: Bearer secret-token\r\n"));
    assert_non_null(strstr(body, "\r\nX-Two: 2\r\n"));
}

static void test_pem_files(void **state)
{
    char f[3][256], body[4096];
    struct sbx_http req = base("GET", "/headers");
    struct sbx_http_resp resp = {.size = sizeof(resp), .body = body, .cap = sizeof(body)};
    struct sbx_err err = {.size = sizeof(err)};

    (void)state;
    snprintf(f[0], sizeof(f[0]), "%s/certs/client/ca.pem", dir);
    snprintf(f[1], sizeof(f[1]), "%s/certs/client/cert.pem", dir);
    snprintf(f[2], sizeof(f[2]), "%s/certs/client/key.pem", dir);
    req.ca_pem = req.cert_pem = req.key_pem = NULL;
    req.ca_file = f[0], req.cert_file = f[1], req.key_file = f[2];
    assert_int_equal(http_request(&req, &resp, &err), 0);
    assert_int_equal(resp.status, 200);
}

/* A second header smuggled into one line, a line without a name: refused
 * before anything is sent. A server that does not verify, or a client the
 * server does not know: no answer. */
static void test_refusals(void **state)
{
    static const char *const crlf[] = {"X-A: a\r\nX-Evil: b", NULL};
    static const char *const lf[] = {"X-A: a\nb", NULL};
    static const char *const noname[] = {": b", NULL};
    static const char *const nospace[] = {"X-A:b", NULL};
    const char *const *bad[] = {crlf, lf, noname, nospace};
    struct sbx_http req = base("GET", "/headers");
    char body[64], *other_ca = slurp("wrong-ca", "ca.pem");
    struct sbx_http_resp resp = {.size = sizeof(resp), .body = body, .cap = sizeof(body)};
    struct sbx_err err = {.size = sizeof(err)};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        req.headers = bad[i];
        assert_int_equal(http_request(&req, &resp, &err), SBX_E_INVALID);
        assert_non_null(strstr(err.msg, "one 'Name: value' line"));
    }
    req.headers = NULL;
    req.ca_pem = other_ca; /* the server's certificate does not verify */
    assert_int_equal(http_request(&req, &resp, &err), SBX_E_BACKEND);
    req.ca_pem = ca;
    req.cert_pem = req.key_pem = NULL; /* the server wants a client certificate */
    assert_int_not_equal(http_request(&req, &resp, &err), 0);
    free(other_ca);
}

/* Read exactly n bytes from fd, one at a time, waiting on poll alone: the
 * stream is honest (TLS holds no byte poll cannot see). */
static size_t read_polled(int fd, size_t n, char want)
{
    size_t got = 0;
    char c;

    while (got < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t r;

        if (poll(&p, 1, 5000) != 1)
            break;
        r = read(fd, &c, 1);
        if (r < 0 && errno == EAGAIN)
            continue;
        if (r != 1 || c != want)
            break;
        got++;
    }
    return got;
}

static void test_raw_upgrade(void **state)
{
    static const char *const hdrs[] = {"Authorization: Bearer t", NULL};
    struct sbx_http req = base("POST", "/attach");
    struct sbx_err err = {.size = sizeof(err)};
    struct sbx_conn *c = NULL;
    char buf[64];
    int fd;

    (void)state;
    req.headers = hdrs;
    assert_int_equal(http_upgrade(&req, &c, &err), 0);
    fd = http_conn_fd(c);
    assert_int_equal(http_conn_write(c, "burst 100000\n", 13), 13);
    assert_int_equal(read_polled(fd, 100000, 'x'), 100000);
    assert_int_equal(http_conn_write(c, "hi\n", 3), 3);
    assert_int_equal(read_polled(fd, 1, 'h'), 1);
    assert_int_equal(read_polled(fd, 1, 'i'), 1);
    assert_int_equal(read_polled(fd, 1, '\n'), 1);
    /* the server's end reaches us through the pump (ours would not reach
     * it through TLS: a half-close needs a close_notify libcurl does not
     * send; http.c says so) */
    assert_int_equal(http_conn_write(c, "end\n", 4), 4);
    for (int i = 0; i < 100; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t r;

        assert_int_equal(poll(&p, 1, 5000), 1);
        r = http_conn_read(c, buf, sizeof(buf));
        if (r == 0)
            break;
        assert_true(r < 0 && errno == EAGAIN);
    }
    http_conn_free(c);
}

/* Wait for and read the next piece. */
static int64_t ws_next(struct sbx_ws *ws, void *buf, size_t len, uint32_t *flags)
{
    for (;;) {
        struct pollfd p = {.fd = http_ws_fd(ws), .events = POLLIN};
        int64_t r = http_ws_recv(ws, buf, len, flags);

        if (r >= 0 || errno != EAGAIN)
            return r;
        if (poll(&p, 1, 5000) != 1)
            return -2;
    }
}

static struct sbx_ws *ws_open(const char *const *protos)
{
    struct sbx_http req = base("GET", "/ws");
    struct sbx_err err = {.size = sizeof(err)};
    struct sbx_ws *ws = NULL;

    if (http_ws_open(&req, protos, &ws, &err) < 0)
        fail_msg("ws_open: %s", err.msg);
    return ws;
}

static void test_ws_echo_and_pieces(void **state)
{
    static const char *const protos[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", NULL};
    struct sbx_ws *ws = ws_open(protos);
    char *buf = malloc(300000);
    uint32_t flags = 0;
    size_t total = 0, pieces = 0;
    int64_t n;

    (void)state;
    assert_string_equal(http_ws_protocol(ws), "v5.channel.k8s.io");
    /* a channel-numbered message, echoed after a ping the pump answers */
    assert_int_equal(http_ws_send(ws, "\001hello", 6, 0), 0);
    n = ws_next(ws, buf, 100, &flags);
    assert_int_equal(n, 11);
    assert_memory_equal(buf, "echo:\001hello", 11);
    assert_int_equal(flags, 0);
    /* a message sent in two pieces arrives as one */
    assert_int_equal(http_ws_send(ws, "ab", 2, SBX_WS_MORE | SBX_WS_TEXT), 0);
    assert_int_equal(http_ws_send(ws, "c", 1, 0), 0);
    n = ws_next(ws, buf, 100, &flags);
    assert_int_equal(n, 8);
    assert_memory_equal(buf, "echo:abc", 8);
    assert_int_equal(flags, SBX_WS_TEXT);
    /* 200000 bytes in three fragments with a ping between: pieces of at
     * most SBX_WS_PIECE_MAX, read here through a smaller buffer */
    assert_int_equal(http_ws_send(ws, "big", 3, 0), 0);
    do {
        n = ws_next(ws, buf + total, 50000, &flags);
        assert_true(n > 0 && n <= 50000);
        total += (size_t)n, pieces++;
    } while (flags & SBX_WS_MORE);
    assert_int_equal(total, 200000);
    assert_true(pieces >= 4);
    for (size_t i = 0; i < total; i++)
        if ((unsigned char)buf[i] != i % 251)
            fail_msg("byte %zu is %d", i, buf[i]);
    /* too big for one piece: refused, nothing sent */
    assert_int_equal(http_ws_send(ws, buf, SBX_WS_PIECE_MAX + 1, 0), -1);
    assert_int_equal(errno, EMSGSIZE);
    /* the server closes with a code and a reason */
    assert_int_equal(http_ws_send(ws, "close", 5, 0), 0);
    assert_int_equal(ws_next(ws, buf, 100, &flags), -1);
    assert_int_equal(errno, EPIPE);
    assert_int_equal(http_ws_close_status(ws, buf, 64), 4000);
    assert_string_equal(buf, "bye");
    http_ws_free(ws);
    free(buf);
}

static void test_ws_closes(void **state)
{
    static const char *const v4[] = {"v4.channel.k8s.io", NULL};
    struct sbx_ws *ws = ws_open(v4);
    char buf[128];
    uint32_t flags;

    (void)state;
    assert_string_equal(http_ws_protocol(ws), "v4.channel.k8s.io");
    /* ours: the server echoes the Close */
    assert_int_equal(http_ws_close(ws, 1000), 0);
    assert_int_equal(ws_next(ws, buf, sizeof(buf), &flags), -1);
    assert_int_equal(errno, EPIPE);
    assert_int_equal(http_ws_close_status(ws, buf, sizeof(buf)), 1000);
    http_ws_free(ws);
    /* a dropped connection: 1006 */
    ws = ws_open(v4);
    assert_int_equal(http_ws_send(ws, "drop", 4, 0), 0);
    assert_int_equal(ws_next(ws, buf, sizeof(buf), &flags), -1);
    assert_int_equal(errno, EPIPE);
    assert_int_equal(http_ws_close_status(ws, buf, sizeof(buf)), 1006);
    http_ws_free(ws);
}

static void test_ws_refusals(void **state)
{
    static const char *const v3[] = {"v3.channel.k8s.io", NULL};
    static const char *const v5[] = {"v5.channel.k8s.io", NULL};
    static const char *const bad[] = {"a b", NULL};
    struct sbx_http req = base("GET", "/ws");
    struct sbx_err err = {.size = sizeof(err)};
    struct sbx_ws *ws = NULL;

    (void)state;
    /* the server takes none of them */
    assert_int_equal(http_ws_open(&req, v3, &ws, &err), SBX_E_BACKEND);
    assert_non_null(strstr(err.msg, "400"));
    /* no WebSocket there: the status and the body */
    req.path = "/deny";
    assert_int_equal(http_ws_open(&req, v5, &ws, &err), SBX_E_BACKEND);
    assert_non_null(strstr(err.msg, "403"));
    assert_non_null(strstr(err.msg, "forbidden"));
    /* not a token; not a GET */
    req.path = "/ws";
    assert_int_equal(http_ws_open(&req, bad, &ws, &err), SBX_E_INVALID);
    req.method = "POST";
    assert_int_equal(http_ws_open(&req, v5, &ws, &err), SBX_E_INVALID);
    assert_null(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_headers_and_pem),
            cmocka_unit_test(test_pem_files),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_raw_upgrade),
            cmocka_unit_test(test_ws_echo_and_pieces),
            cmocka_unit_test(test_ws_closes),
            cmocka_unit_test(test_ws_refusals),
    };

    return cmocka_run_group_tests(tests, start_peer, stop_peer);
}
