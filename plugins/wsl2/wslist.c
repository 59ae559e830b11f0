/* SPDX-License-Identifier: MIT */
/*
 * wslist.c: decode wsl.exe's listings. wsl.exe writes UTF-16LE unless
 * WSL_UTF8=1 is set (then UTF-8), ends lines with CRLF, and marks the
 * default distribution with '*' in `-l -v`. No I/O, no allocation: the
 * input is untrusted bytes of any length (fuzzed).
 */
#include "wslist.h"

#include <stdint.h>
#include <string.h>

/* Append code point c as UTF-8 if it fits (and a NUL after it). */
static size_t put_utf8(char *out, size_t o, size_t out_len, uint32_t c)
{
    unsigned char b[4];
    size_t n;

    if (c < 0x80) {
        b[0] = (unsigned char)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (unsigned char)(0xC0 | (c >> 6));
        b[1] = (unsigned char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (c >> 12));
        b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (c >> 18));
        b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (c & 0x3F));
        n = 4;
    }
    if (o + n + 1 > out_len)
        return o;
    memcpy(out + o, b, n);
    return o + n;
}

static uint32_t unit_at(const unsigned char *in, size_t i)
{
    return (uint32_t)in[i] | (uint32_t)in[i + 1] << 8;
}

size_t wsl_text_decode(const unsigned char *in, size_t len, char *out, size_t out_len)
{
    size_t i = 0, o = 0;
    bool utf16 = false;

    if (out_len == 0)
        return 0;
    if (len >= 2 && in[0] == 0xFF && in[1] == 0xFE) {
        utf16 = true;
        i = 2;
    } else if (len >= 2 && in[0] != 0 && in[1] == 0) {
        utf16 = true; /* an ASCII first character, without a mark */
    }
    if (!utf16) {
        while (i < len && in[i] && o + 1 < out_len)
            out[o++] = (char)in[i++];
        out[o] = '\0';
        return o;
    }
    while (i + 1 < len) {
        uint32_t c = unit_at(in, i);

        i += 2;
        if (c == 0)
            break;
        if (c >= 0xD800 && c < 0xDC00 && i + 1 < len && unit_at(in, i) >= 0xDC00 &&
                unit_at(in, i) < 0xE000) {
            c = 0x10000 + ((c - 0xD800) << 10) + (unit_at(in, i) - 0xDC00);
            i += 2;
        } else if (c >= 0xD800 && c < 0xE000) {
            c = 0xFFFD;
        }
        o = put_utf8(out, o, out_len, c);
    }
    out[o] = '\0';
    return o;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The next line of *p without blanks around it: its start and length;
 * false at the end. */
static bool next_line(const char **p, const char **ret_s, size_t *ret_n)
{
    const char *s = *p, *e;

    if (!*s)
        return false;
    e = strchr(s, '\n');
    *p = e ? e + 1 : s + strlen(s);
    e = e ? e : *p;
    while (s < e && is_blank(*s))
        s++;
    while (e > s && is_blank(e[-1]))
        e--;
    *ret_s = s;
    *ret_n = (size_t)(e - s);
    return true;
}

bool wsl_list_has(const char *text, const char *distro)
{
    size_t dn = strlen(distro), n;
    const char *s;

    while (dn && next_line(&text, &s, &n))
        if (n == dn && memcmp(s, distro, n) == 0)
            return true;
    return false;
}

void wsl_list_names(const char *text, char *out, size_t len)
{
    size_t o = 0, n;
    const char *s;

    if (len == 0)
        return;
    out[0] = '\0';
    while (next_line(&text, &s, &n)) {
        if (n == 0)
            continue;
        if (o && o + 2 < len) {
            memcpy(out + o, ", ", 2);
            o += 2;
        }
        if (n > len - 1 - o)
            n = len - 1 - o;
        memcpy(out + o, s, n);
        o += n;
        out[o] = '\0';
    }
}

/* The next blank-separated word of [*p, e). */
static bool next_word(const char **p, const char *e, const char **ret_s, size_t *ret_n)
{
    const char *s = *p;

    while (s < e && is_blank(*s))
        s++;
    *ret_s = s;
    while (s < e && !is_blank(*s))
        s++;
    *ret_n = (size_t)(s - *ret_s);
    *p = s;
    return *ret_n > 0;
}

int wsl_list_version(const char *text, const char *distro)
{
    size_t dn = strlen(distro), n;
    const char *s;
    bool header = true;

    while (dn && next_line(&text, &s, &n)) {
        const char *p = s, *e = s + n, *w, *ver = NULL;
        size_t wn, vn = 0, words = 0;

        if (n == 0)
            continue;
        if (header) { /* "NAME STATE VERSION", in the system's language */
            header = false;
            continue;
        }
        if (*p == '*')
            p++;
        if (!next_word(&p, e, &w, &wn) || wn != dn || memcmp(w, distro, dn) != 0)
            continue;
        /* the state may be words of the system's language ("Wird ausgeführt"):
         * the version is the last word */
        for (; next_word(&p, e, &w, &wn); words++)
            ver = w, vn = wn;
        if (words < 2 || vn != 1 || (ver[0] != '1' && ver[0] != '2'))
            return -1;
        return ver[0] - '0';
    }
    return 0;
}
