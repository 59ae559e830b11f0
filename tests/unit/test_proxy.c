/* SPDX-License-Identifier: MIT */
/*
 * test_proxy.c: the install proxy's refusals, spoken to over its real unix
 * socket: only CONNECT, only port 443, only allowed hosts (case-blind),
 * never a loopback address even for an allowed name; what it refused is
 * reported; stopping it with connections open returns promptly. (The
 * relay to real registries is exercised by the integration tests.) Also
 * the host-name grammar and matching it relies on, and the dependency
 * cache's keys.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "cache/deps.h"
#include "cache/key.h"
#include "host/exec.h"
#include "net/proxy.h"
#include "plugins/manifest.h"

struct fixture {
    char dir[64];
    char path[96];
    struct proxy *p;
};

static int setup(void **state)
{
    static struct fixture f;
    char *const hosts[] = {"localhost", "*.example.org", NULL};
    struct sbx_error *err = NULL;

    snprintf(f.dir, sizeof(f.dir), "/var/tmp/sbx-proxy-test-XXXXXX");
    assert_non_null(mkdtemp(f.dir));
    snprintf(f.path, sizeof(f.path), "%s/p.sock", f.dir);
    assert_int_equal(proxy_start(f.path, hosts, -1, -1, &f.p, &err), 0);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    f->p = proxy_stop(f->p);
    assert_int_equal(access(f->path, F_OK), -1); /* the socket is gone */
    rmdir(f->dir);
    return 0;
}

static int dial(const struct fixture *f)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* Send a request, return the whole answer (the proxy closes after a refusal). */
static char *ask(const struct fixture *f, const char *req)
{
    static char buf[2048];
    size_t got = 0;
    int fd = dial(f);
    ssize_t n;

    assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    while ((n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fd);
    return buf;
}

static void test_refusals(void **state)
{
    struct fixture *f = *state;
    char *r, *log;

    r = ask(f, "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 405"));
    r = ask(f, "CONNECT example.com:443 HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 403"));
    assert_non_null(strstr(r, "not a registry"));
    r = ask(f, "CONNECT a.example.org:80 HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "only port 443"));
    r = ask(f, "CONNECT example.org.evil.com:443 HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "not a registry"));
    /* allowed by name, but it is this host's loopback */
    r = ask(f, "CONNECT LocalHost:443 HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 403"));
    assert_non_null(strstr(r, "loopback"));
    r = ask(f, "CONNECT localhost HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "405"));
    r = ask(f, "CONNECT [::1]:443 HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "403"));
    log = proxy_refusals(f->p);
    assert_non_null(log);
    assert_non_null(strstr(log, "refused 'GET http://127.0.0.1:9/ HTTP/1.1'"));
    assert_non_null(strstr(log, "refused CONNECT example.com:443: host is not a registry"));
    assert_non_null(strstr(log, "refused CONNECT localhost:443: it resolves to a loopback"));
    free(log);
}

static void test_stop_with_idle_connections(void **state)
{
    struct fixture *f = *state;
    int a = dial(f), b = dial(f);
    int64_t t0;

    assert_int_equal(write(b, "CONNECT loc", 11), 11); /* a head that never ends */
    usleep(100 * 1000);
    t0 = now_ms();
    f->p = proxy_stop(f->p);
    assert_true(now_ms() - t0 < 5000); /* not the 15 s head timeout */
    close(a);
    close(b);
    assert_int_equal(access(f->path, F_OK), -1);
    assert_int_equal(rmdir(f->dir), 0);
    assert_int_equal(setup(state), 0); /* a fresh one for teardown */
}

static void test_host_names(void **state)
{
    (void)state;
    assert_true(host_pattern_is_valid("pypi.org"));
    assert_true(host_pattern_is_valid("*.example.org"));
    assert_true(host_pattern_is_valid("localhost"));
    assert_true(host_pattern_is_valid("a-b.c0"));
    assert_false(host_pattern_is_valid(""));
    assert_false(host_pattern_is_valid("*."));
    assert_false(host_pattern_is_valid("PyPI.org"));
    assert_false(host_pattern_is_valid("a..b"));
    assert_false(host_pattern_is_valid("-a.b"));
    assert_false(host_pattern_is_valid("a-.b"));
    assert_false(host_pattern_is_valid("a.b."));
    assert_false(host_pattern_is_valid("a b"));
    assert_false(host_pattern_is_valid("a.*.b"));
    assert_false(host_pattern_is_valid("[::1]"));
    assert_true(host_matches("pypi.org", "pypi.org"));
    assert_false(host_matches("pypi.org", "xpypi.org"));
    assert_true(host_matches("*.example.org", "a.example.org"));
    assert_true(host_matches("*.example.org", "a.b.example.org"));
    assert_false(host_matches("*.example.org", "example.org"));
    assert_false(host_matches("*.example.org", "aexample.org"));
}

/* The decision alone (the fuzzer's target): what an installer may send. */
static int parse(const char *req, const char **ret_host)
{
    static char buf[512];
    char *allow[] = {"pypi.org", "*.example.org", NULL}, *host = NULL;
    const char *why = NULL;
    unsigned port = 0;
    int r;

    snprintf(buf, sizeof(buf), "%s", req);
    r = proxy_parse_request(buf, allow, &host, &port, &why);
    assert_true(r == 0 ? why == NULL && port == 443 : why != NULL);
    *ret_host = host;
    return r;
}

static void test_parse_request(void **state)
{
    const char *host;

    (void)state;
    assert_int_equal(parse("CONNECT PyPI.org:443 HTTP/1.1\r\nHost: x\r\n\r\n", &host), 0);
    assert_string_equal(host, "pypi.org");
    assert_int_equal(parse("CONNECT a.example.org:0443 HTTP/1.0\r\n\r\n", &host), 0);
    assert_string_equal(host, "a.example.org");
    assert_int_equal(parse("CONNECT example.org:443 HTTP/1.1\r\n\r\n", &host), 403);
    assert_int_equal(parse("CONNECT pypi.org:8443 HTTP/1.1\r\n\r\n", &host), 403);
    /* a pattern is no host name: it matched the allow-list's own entry */
    assert_int_equal(parse("CONNECT *.example.org:443 HTTP/1.1\r\n\r\n", &host), 403);
    /* the port is digits only: strtoul alone took a sign or white space */
    assert_int_equal(parse("CONNECT pypi.org:+443 HTTP/1.1\r\n\r\n", &host), 405);
    assert_int_equal(parse("CONNECT pypi.org:\t443 HTTP/1.1\r\n\r\n", &host), 405);
    assert_int_equal(parse("CONNECT pypi.org:000443 HTTP/1.1\r\n\r\n", &host), 405);
    assert_int_equal(parse("CONNECT pypi.org:443 HTTP/1.1", &host), 405);
    assert_int_equal(parse("GET / HTTP/1.1\r\n\r\n", &host), 405);
}

static void test_keys(void **state)
{
    char *run1[] = {"python3", "-m", "pip", NULL};
    char *env[] = {NULL};
    struct manifest_step step = {.run = run1};
    struct manifest_install in = {.steps = &step, .n_steps = 1, .env = env};
    char *ab[] = {"a", "b"}, *ba[] = {"b", "a", "b"}, *a[] = {"a"}, *split[] = {"a\nb"};
    char k1[65], k2[65], k3[65];

    (void)state;
    assert_int_equal(deps_key("python", "v1", &in, ab, 2, k1), 0);
    assert_int_equal(strlen(k1), 64);
    assert_int_equal(deps_key("python", "v1", &in, ba, 3, k2), 0);
    assert_string_equal(k1, k2); /* sorted, de-duplicated */
    assert_int_equal(deps_key("python", "v2", &in, ab, 2, k3), 0);
    assert_string_not_equal(k1, k3);
    assert_int_equal(deps_key("ruby", "v1", &in, ab, 2, k3), 0);
    assert_string_not_equal(k1, k3);
    assert_int_equal(deps_key("python", "v1", &in, a, 1, k3), 0);
    assert_string_not_equal(k1, k3);
    assert_int_equal(deps_key("python", "v1", &in, split, 1, k3), 0);
    assert_string_not_equal(k1, k3); /* names are delimited, not joined */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
            cmocka_unit_test_setup_teardown(test_stop_with_idle_connections, setup, teardown),
            cmocka_unit_test(test_host_names),
            cmocka_unit_test(test_parse_request),
            cmocka_unit_test(test_keys),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
