/* SPDX-License-Identifier: MIT */
/*
 * util.c: number and size parsing with explicit overflow checks, name
 * grammars, UTF-8 repair, string vectors. No I/O; see util.h for contracts.
 */
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <llm-sandbox/plugin.h>

int parse_u64(const char *s, uint64_t *ret)
{
    unsigned long long v;
    char *end = NULL;

    if (!s || !isdigit((unsigned char)s[0]))
        return SBX_E_INVALID;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || !end || *end != '\0')
        return SBX_E_INVALID;
    *ret = (uint64_t)v;
    return 0;
}

/* Digits with an optional fraction of at most 3 digits: the whole part and
 * the fraction in thousandths. SBX_E_INVALID when malformed, SBX_E_LIMIT
 * when the whole part overflows. */
static int parse_decimal(
        const char *s, const char **ret_end, uint64_t *ret_whole, uint64_t *ret_milli)
{
    uint64_t whole = 0, frac = 0;
    int nfrac = 0;
    const char *p = s;

    if (!isdigit((unsigned char)*p))
        return SBX_E_INVALID;
    for (; isdigit((unsigned char)*p); p++) {
        if (whole > (UINT64_MAX - 9) / 10)
            return SBX_E_LIMIT;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return SBX_E_INVALID;
        for (; isdigit((unsigned char)*p); p++) {
            if (++nfrac > 3)
                return SBX_E_INVALID;
            frac = frac * 10 + (uint64_t)(*p - '0');
        }
        for (int i = nfrac; i < 3; i++)
            frac *= 10;
    }
    *ret_end = p;
    *ret_whole = whole;
    *ret_milli = frac;
    return 0;
}

/* whole.milli * scale, the fraction's part rounded down: SBX_E_LIMIT past
 * UINT64_MAX. scale is at most 2^40. */
static int scale_decimal(uint64_t whole, uint64_t milli, uint64_t scale, uint64_t *ret)
{
    uint64_t part = milli * scale / 1000; /* milli < 1000: no overflow */

    if (whole > (UINT64_MAX - part) / scale)
        return SBX_E_LIMIT;
    *ret = whole * scale + part;
    return 0;
}

int parse_seconds_ms(const char *s, uint64_t *ret_ms)
{
    const char *end = NULL;
    uint64_t whole, milli;
    int r = s ? parse_decimal(s, &end, &whole, &milli) : SBX_E_INVALID;

    if (r == 0 && *end != '\0')
        r = SBX_E_INVALID;
    return r < 0 ? r : scale_decimal(whole, milli, 1000, ret_ms);
}

int parse_millicores(const char *s, uint64_t *ret_mc)
{
    return parse_seconds_ms(s, ret_mc);
}

int parse_size(const char *s, uint64_t *ret_bytes)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {
            {"", 0},
            {"b", 0},
            {"k", 10},
            {"kb", 10},
            {"kib", 10},
            {"m", 20},
            {"mb", 20},
            {"mib", 20},
            {"g", 30},
            {"gb", 30},
            {"gib", 30},
            {"t", 40},
            {"tb", 40},
            {"tib", 40},
    };
    const char *end = NULL;
    uint64_t whole, milli;
    int r = s ? parse_decimal(s, &end, &whole, &milli) : SBX_E_INVALID;

    for (size_t i = 0; r == 0 && i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].suffix) != 0)
            continue;
        if (units[i].shift == 0 && milli != 0)
            return SBX_E_INVALID; /* no fraction of a byte */
        return scale_decimal(whole, milli, UINT64_C(1) << units[i].shift, ret_bytes);
    }
    return r < 0 ? r : SBX_E_INVALID;
}

int parse_bool(const char *s, bool *ret)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};

    if (!s)
        return SBX_E_INVALID;
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *ret = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *ret = false;
            return 0;
        }
    }
    return SBX_E_INVALID;
}

bool name_is_valid(const char *s)
{
    size_t n = 0;

    if (!s || !(*s >= 'a' && *s <= 'z'))
        return false;
    for (; *s; s++, n++) {
        if (n >= 32)
            return false;
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    }
    return true;
}

bool env_key_is_valid(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++) {
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    }
    return true;
}

bool host_pattern_is_valid(const char *s)
{
    size_t label = 0, total;

    if (!s)
        return false;
    if (strncmp(s, "*.", 2) == 0)
        s += 2;
    total = strlen(s);
    if (total == 0 || total > 253)
        return false;
    for (const char *p = s;; p++) {
        if (*p == '.' || *p == '\0') {
            if (label == 0 || label > 63 || p[-1] == '-')
                return false;
            if (*p == '\0')
                return true;
            label = 0;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                   (*p == '-' && label > 0)) {
            label++;
        } else {
            return false;
        }
    }
}

bool host_matches(const char *pattern, const char *host)
{
    size_t pl, hl;

    if (strncmp(pattern, "*.", 2) != 0)
        return strcmp(pattern, host) == 0;
    pl = strlen(pattern + 1); /* ".example.org" */
    hl = strlen(host);
    return hl > pl && strcmp(host + hl - pl, pattern + 1) == 0;
}

bool rel_path_is_valid(const char *s)
{
    const char *part = s;

    if (!s || !*s || *s == '/' || strlen(s) > 4096)
        return false;
    for (const char *p = s;; p++) {
        if (*p == '/' || *p == '\0') {
            size_t n = (size_t)(p - part);

            if (n == 0 || n > 255 || (n == 1 && part[0] == '.') ||
                    (n == 2 && part[0] == '.' && part[1] == '.'))
                return false;
            if (*p == '\0')
                return true;
            part = p + 1;
        } else if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            return false;
        }
    }
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07u;
    else
        return 0;
    if (left < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

bool utf8_is_valid(const char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0;

    while (i < len) {
        size_t n = utf8_seq_len(p + i, len - i);

        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

char *utf8_sanitize(const char *buf, size_t len, size_t *ret_len)
{
    const unsigned char *p = (const unsigned char *)buf;
    char *out;
    size_t i = 0, o = 0;

    if (len > (SIZE_MAX - 1) / 3)
        return NULL;
    out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    while (i < len) {
        size_t n = utf8_seq_len(p + i, len - i);

        if (n == 0) { /* one bad byte becomes one U+FFFD */
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(out + o, p + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    if (ret_len)
        *ret_len = o;
    return out;
}

size_t strv_len(char *const *v)
{
    size_t n = 0;

    while (v && v[n])
        n++;
    return n;
}

char **strv_free(char **v)
{
    if (v) {
        for (char **s = v; *s; s++)
            free(*s);
        free(v);
    }
    return NULL;
}

static int strv_push_take(char ***v, char *s)
{
    size_t n = strv_len(*v);
    char **nv;

    if (!s)
        return SBX_E_NOMEM;
    nv = realloc(*v, (n + 2) * sizeof(char *));
    if (!nv) {
        free(s);
        return SBX_E_NOMEM;
    }
    nv[n] = s;
    nv[n + 1] = NULL;
    *v = nv;
    return 0;
}

int strv_setenv(char ***v, const char *kv)
{
    size_t klen = strcspn(kv, "=");

    for (char **e = *v; e && *e; e++) {
        if (strncmp(*e, kv, klen) == 0 && (*e)[klen] == '=') {
            char *copy = strdup(kv);

            if (!copy)
                return SBX_E_NOMEM;
            free(*e);
            *e = copy;
            return 0;
        }
    }
    return strv_push(v, kv);
}

int strv_dup(char *const *v, char ***ret)
{
    char **out = calloc(strv_len(v) + 1, sizeof(char *));

    if (!out)
        return SBX_E_NOMEM;
    for (size_t i = 0; v && v[i]; i++) {
        out[i] = strdup(v[i]);
        if (!out[i]) {
            strv_free(out);
            return SBX_E_NOMEM;
        }
    }
    *ret = out;
    return 0;
}

int strv_push(char ***v, const char *s)
{
    return strv_push_take(v, strdup(s));
}

int strv_pushf(char ***v, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return SBX_E_NOMEM;
    return strv_push_take(v, s);
}

bool strv_contains(char *const *v, const char *s)
{
    for (size_t i = 0; v && v[i]; i++) {
        if (strcmp(v[i], s) == 0)
            return true;
    }
    return false;
}

bool strv_has_key(char *const *v, const char *kv)
{
    size_t n = strcspn(kv, "=");

    for (; v && *v; v++)
        if (strncmp(*v, kv, n) == 0 && (*v)[n] == '=')
            return true;
    return false;
}

void hex_encode(char *out, const unsigned char *in, size_t n)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

int random_hex(char *out, size_t bytes)
{
    unsigned char buf[32];
    size_t got = 0;

    if (bytes > sizeof(buf))
        return SBX_E_INVALID;
    while (got < bytes) {
        ssize_t n = getrandom(buf + got, bytes - got, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return SBX_E_IO;
        got += (size_t)n;
    }
    hex_encode(out, buf, bytes);
    return 0;
}

int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
