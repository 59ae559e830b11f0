/* SPDX-License-Identifier: MIT */
/*
 * fuzz_proxy_request.c: libFuzzer target for the filtering proxy's request
 * parser (proxy_parse_request, core/src/net/proxy.h), which reads what an
 * installer inside the sandbox sends. Byte 0 picks which patterns are
 * allowed; the rest is the request as the proxy reads it (up to its 8 KiB
 * head buffer, as a C string). The answer is checked against a model
 * written here from the rule in proxy.h: accepted exactly when the first
 * line is "CONNECT host:port HTTP/1." with port 1 to 5 digits worth 443
 * and host, lower-cased, a valid name matching an allowed pattern; 403
 * for such a line with another port (0 to 65535) or host; 405 otherwise.
 * A crash, a sanitizer report or an abort() is a bug. Build with clang
 * -fsanitize=fuzzer, or link with replay.c to replay a corpus.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD_MAX 8192 /* proxy.c's */

static char *const patterns[] = {"pypi.org", "*.pythonhosted.org", "registry.npmjs.org",
        "proxy.golang.org", "*.example.org", "repo.maven.apache.org"};
#define NPATTERNS (sizeof(patterns) / sizeof(patterns[0]))

static void check(int ok)
{
    if (!ok)
        abort();
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* A DNS name: labels of 1 to 63 of [a-z0-9-], not starting or ending
 * with '-', at most 253 in all. */
static bool model_name(const char *h, size_t n)
{
    size_t label = 0;

    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? h[i] : '.';

        if (c == '.') {
            if (label == 0 || label > 63 || h[i - 1] == '-')
                return false;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && label > 0)) {
            label++;
        } else {
            return false;
        }
    }
    return true;
}

static bool model_allowed(const char *h, size_t n, char *const *allow)
{
    for (; *allow; allow++) {
        const char *p = *allow;
        size_t pl = strlen(p);

        if (p[0] == '*') {
            if (n > pl - 1 && memcmp(h + n - (pl - 1), p + 1, pl - 1) == 0)
                return true;
        } else if (n == pl && memcmp(h, p, n) == 0) {
            return true;
        }
    }
    return false;
}

/* The model's verdict on the (unmodified) head: 0, 403 or 405; the host
 * (lower-cased into host) and port when the line is a CONNECT. */
static int model(const char *head, char *const *allow, char *host, unsigned *port)
{
    const char *eol = strstr(head, "\r\n"), *target, *sp, *colon;
    size_t hn, digits;
    unsigned long v = 0;

    if (!eol || strncmp(head, "CONNECT ", 8) != 0)
        return 405;
    target = head + 8;
    sp = memchr(target, ' ', (size_t)(eol - target));
    if (!sp || (size_t)(eol - sp) < 8 || memcmp(sp, " HTTP/1.", 8) != 0)
        return 405;
    colon = NULL;
    for (const char *c = target; c < sp; c++)
        if (*c == ':')
            colon = c;
    if (!colon)
        return 405;
    digits = (size_t)(sp - colon - 1);
    if (digits < 1 || digits > 5)
        return 405;
    for (size_t i = 1; i <= digits; i++) {
        if (colon[i] < '0' || colon[i] > '9')
            return 405;
        v = v * 10 + (unsigned long)(colon[i] - '0');
    }
    if (v > 65535)
        return 405;
    hn = (size_t)(colon - target);
    for (size_t i = 0; i < hn; i++)
        host[i] = lower(target[i]);
    host[hn] = '\0';
    *port = (unsigned)v;
    return v == 443 && model_name(host, hn) && model_allowed(host, hn, allow) ? 0 : 403;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char head[HEAD_MAX], copy[HEAD_MAX], want_host[HEAD_MAX];
    char *allow[NPATTERNS + 1];
    size_t n = 0, len;
    char *host = NULL;
    const char *why = NULL;
    unsigned port = 0, want_port = 0;
    int got, want;

    if (size < 1)
        return 0;
    for (size_t i = 0; i < NPATTERNS; i++)
        if (data[0] & (1u << i))
            allow[n++] = patterns[i];
    allow[n] = NULL;
    len = size - 1 < HEAD_MAX - 1 ? size - 1 : HEAD_MAX - 1;
    memcpy(head, data + 1, len);
    head[len] = '\0';
    memcpy(copy, head, len + 1);

    want = model(copy, allow, want_host, &want_port);
    got = proxy_parse_request(head, allow, &host, &port, &why);
    check(got == want);
    if (got == 0) {
        check(host >= head && host < head + len);
        check(strcmp(host, want_host) == 0 && port == 443);
        check(why == NULL);
    } else {
        check(why != NULL && why[0] != '\0' && strchr(why, '\n') == NULL);
        if (got == 403)
            check(strcmp(host, want_host) == 0 && port == want_port);
        else if (strstr(copy, "\r\n"))
            check(strlen(head) <= (size_t)(strstr(copy, "\r\n") - copy));
    }
    return 0;
}
