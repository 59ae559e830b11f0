/* SPDX-License-Identifier: MIT */
/*
 * wshandshake.c: the client side of the WebSocket opening handshake
 * (RFC 6455 section 4): the Sec-WebSocket-Key for a caller's nonce, the
 * accept value a server must answer with (nettle's SHA-1 and base64), and
 * the check of the server's response head. The head comes from the
 * network: every read is bounded by its measured length, nothing is
 * allocated, and bytes quoted back in a reason are made printable. Pure:
 * no I/O. Contracts in wsframe.h.
 */
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

#include "net/wsframe.h"

#define WS_GUID     "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_SHOW_MAX 80 /* bytes of a network string quoted in a reason */

/* What the header fields of a response said. */
struct ws_fields {
    bool upgrade;    /* Upgrade lists websocket */
    bool connection; /* Connection lists upgrade */
    unsigned accepts, protocols;
    const char *accept, *protocol, *extensions; /* values, not NUL-terminated */
    size_t accept_len, protocol_len, extensions_len;
};

void ws_key_from_random(const uint8_t nonce[16], char out[WS_KEY_LEN + 1])
{
    base64_encode_raw(out, 16, nonce);
    out[WS_KEY_LEN] = '\0';
}

void ws_accept_for_key(const char *key, char out[WS_ACCEPT_LEN + 1])
{
    struct sha1_ctx ctx;
    uint8_t digest[SHA1_DIGEST_SIZE];

    sha1_init(&ctx);
    sha1_update(&ctx, strlen(key), (const uint8_t *)key);
    sha1_update(&ctx, strlen(WS_GUID), (const uint8_t *)WS_GUID);
    sha1_digest(&ctx, sizeof(digest), digest);
    base64_encode_raw(out, sizeof(digest), digest);
    out[WS_ACCEPT_LEN] = '\0';
}

/* ASCII classes and case, not <ctype.h> or strcasecmp: the answer must
 * not depend on the locale (a Turkish one lowers 'I' differently). */
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_print(char c)
{
    return c >= 0x20 && c < 0x7f;
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Do a[0..n) and b[0..n) match, ignoring ASCII case? */
static bool same_nocase(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
    }
    return true;
}

int ws_response_status(const char *head)
{
    /* "HTTP/1.x NNN" then a space or the end of the line; each test
     * stops at the first mismatch, so a short string is never overrun. */
    if (strncmp(head, "HTTP/1.", 7) != 0 || !is_digit(head[7]) || head[8] != ' ')
        return -1;
    for (size_t i = 9; i < 12; i++) {
        if (!is_digit(head[i]))
            return -1;
    }
    if (head[12] != ' ' && head[12] != '\r' && head[12] != '\n')
        return -1;
    return (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
}

/* p[0..n) made printable and cut to WS_SHOW_MAX, for a reason. */
static const char *show(const char *p, size_t n, char out[WS_SHOW_MAX + 4])
{
    size_t i;

    for (i = 0; i < n && i < WS_SHOW_MAX; i++)
        out[i] = is_print(p[i]) ? p[i] : '?';
    if (n > WS_SHOW_MAX) {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = '\0';
    return out;
}

__attribute__((format(printf, 4, 5))) static int say(
        int rc, char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;

    if (why && why_len > 0) {
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* An RFC 9110 token character, as a field name is made of. */
static bool is_tchar(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

/* Does the comma list v[0..n) hold token (case-insensitive)? */
static bool list_has(const char *v, size_t n, const char *token)
{
    size_t tlen = strlen(token);

    while (n > 0) {
        const char *comma = memchr(v, ',', n);
        size_t item = comma ? (size_t)(comma - v) : n;
        size_t a = 0, b = item;

        while (a < b && is_ows(v[a]))
            a++;
        while (b > a && is_ows(v[b - 1]))
            b--;
        if (b - a == tlen && same_nocase(v + a, token, tlen))
            return true;
        if (!comma)
            break;
        v += item + 1;
        n -= item + 1;
    }
    return false;
}

static bool name_is(const char *name, size_t n, const char *want)
{
    return n == strlen(want) && same_nocase(name, want, n);
}

/* Record one field. Values that must occur once are counted. */
static void field(struct ws_fields *f, const char *name, size_t nlen, const char *v, size_t vlen)
{
    if (name_is(name, nlen, "Upgrade")) {
        f->upgrade = f->upgrade || list_has(v, vlen, "websocket");
    } else if (name_is(name, nlen, "Connection")) {
        f->connection = f->connection || list_has(v, vlen, "upgrade");
    } else if (name_is(name, nlen, "Sec-WebSocket-Accept")) {
        f->accepts++;
        f->accept = v;
        f->accept_len = vlen;
    } else if (name_is(name, nlen, "Sec-WebSocket-Protocol")) {
        f->protocols++;
        f->protocol = v;
        f->protocol_len = vlen;
    } else if (name_is(name, nlen, "Sec-WebSocket-Extensions") && !f->extensions) {
        f->extensions = v;
        f->extensions_len = vlen;
    }
}

/* Read the field lines in [p, end), after the status line, up to the
 * blank line. 0, or SBX_E_BACKEND with the reason. */
static int parse_fields(
        const char *p, const char *end, struct ws_fields *f, char *why, size_t why_len)
{
    char shown[WS_SHOW_MAX + 4];

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *colon, *v, *e;

        if (!nl)
            break;
        e = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
        if (e == p)
            return 0; /* the blank line ends the head */
        colon = memchr(p, ':', (size_t)(e - p));
        for (const char *c = p; colon && c < colon; c++) {
            if (!is_tchar(*c))
                colon = NULL;
        }
        if (!colon || colon == p)
            return say(SBX_E_BACKEND, why, why_len, "malformed header line '%s' in the response",
                    show(p, (size_t)(e - p), shown));
        for (v = colon + 1; v < e && is_ows(*v); v++)
            ;
        while (e > v && is_ows(e[-1]))
            e--;
        field(f, p, (size_t)(colon - p), v, (size_t)(e - v));
        p = nl + 1;
    }
    return say(SBX_E_BACKEND, why, why_len, "response head does not end with a blank line");
}

/* The status line is not 101: say what it was, and that a refusal's
 * body (which the caller reads next) says why. */
static int refused(const char *head, size_t len, int status, char *why, size_t why_len)
{
    const char *nl = memchr(head, '\n', len);
    size_t n = nl ? (size_t)(nl - head) : len;
    char shown[WS_SHOW_MAX + 4];

    if (n > 0 && head[n - 1] == '\r')
        n--;
    if (status < 0)
        return say(SBX_E_BACKEND, why, why_len, "malformed status line '%s' in the response",
                show(head, n, shown));
    return say(SBX_E_BACKEND, why, why_len,
            "server answered '%s' instead of 101 Switching Protocols%s", show(head, n, shown),
            status >= 400 ? "; the response body that follows says why" : "");
}

/* Match the server's Sec-WebSocket-Protocol against the offered list. */
static int pick_protocol(const struct ws_fields *f, const char *const *offered,
        const char **ret_protocol, char *why, size_t why_len)
{
    char shown[WS_SHOW_MAX + 4];
    bool any = offered && offered[0];

    if (f->protocols > 1)
        return say(SBX_E_BACKEND, why, why_len,
                "response has more than one "
                "Sec-WebSocket-Protocol field");
    if (f->protocols == 0 && any)
        return say(SBX_E_BACKEND, why, why_len,
                "server chose no subprotocol, but the client "
                "needs one of those it offered ('%s' first)",
                offered[0]);
    for (size_t i = 0; f->protocols == 1 && any && offered[i]; i++) {
        if (f->protocol_len == strlen(offered[i]) &&
                memcmp(f->protocol, offered[i], f->protocol_len) == 0) {
            *ret_protocol = offered[i];
            return 0;
        }
    }
    if (f->protocols == 1)
        return say(SBX_E_BACKEND, why, why_len,
                "server chose subprotocol '%s', which the "
                "client did not offer",
                show(f->protocol, f->protocol_len, shown));
    *ret_protocol = NULL;
    return 0;
}

int ws_check_response(const char *head, const char *key, const char *const *offered_protocols,
        const char **ret_protocol, char *why, size_t why_len)
{
    struct ws_fields f = {0};
    char expect[WS_ACCEPT_LEN + 1], shown[WS_SHOW_MAX + 4];
    const char *nl;
    size_t len;
    int status, r;

    if (!head || !key || !ret_protocol)
        return say(SBX_E_INVALID, why, why_len, "no response head or key to check");
    len = strnlen(head, WS_RESPONSE_HEAD_MAX + 1);
    if (len > WS_RESPONSE_HEAD_MAX)
        return say(SBX_E_BACKEND, why, why_len, "response head longer than %d bytes",
                WS_RESPONSE_HEAD_MAX);
    status = ws_response_status(head);
    if (status != 101)
        return refused(head, len, status, why, why_len);
    nl = memchr(head, '\n', len);
    r = parse_fields(nl ? nl + 1 : head + len, head + len, &f, why, why_len);
    if (r < 0)
        return r;
    if (!f.upgrade)
        return say(SBX_E_BACKEND, why, why_len, "response has no 'Upgrade: websocket' field");
    if (!f.connection)
        return say(SBX_E_BACKEND, why, why_len, "response has no 'Connection: Upgrade' field");
    if (f.accepts != 1)
        return say(SBX_E_BACKEND, why, why_len, "response has %s Sec-WebSocket-Accept field",
                f.accepts == 0 ? "no" : "more than one");
    ws_accept_for_key(key, expect);
    if (f.accept_len != WS_ACCEPT_LEN || memcmp(f.accept, expect, WS_ACCEPT_LEN) != 0)
        return say(SBX_E_BACKEND, why, why_len,
                "Sec-WebSocket-Accept '%s' does not match the "
                "key sent (expected '%s')",
                show(f.accept, f.accept_len, shown), expect);
    if (f.extensions)
        return say(SBX_E_BACKEND, why, why_len,
                "server enabled extensions '%s' the client did "
                "not offer",
                show(f.extensions, f.extensions_len, shown));
    return pick_protocol(&f, offered_protocols, ret_protocol, why, why_len);
}
