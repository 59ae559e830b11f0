/* SPDX-License-Identifier: MIT */
/*
 * b64.c: base64 for the file tools and resources (b64.h).
 */
#include "b64.h"

#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *b64_encode(const void *data, size_t len)
{
    const unsigned char *p = data;
    char *out, *o;

    if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
        return NULL;
    out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    o = out;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;

        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        *o++ = alphabet[(v >> 18) & 63];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        *o++ = i + 2 < len ? alphabet[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int b64_decode(const char *text, size_t n, char **ret, size_t *ret_len)
{
    unsigned char *out = malloc(n / 4 * 3 + 4);
    size_t len = 0, got = 0, pad = 0;
    uint32_t v = 0;

    if (!out)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        int d;

        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            d = 0;
        } else if (pad || (d = value(c)) < 0) {
            free(out); /* a character after padding, or outside the alphabet */
            return -1;
        }
        v = v << 6 | (uint32_t)d;
        if (++got % 4 == 0) {
            out[len++] = (unsigned char)(v >> 16);
            out[len++] = (unsigned char)(v >> 8);
            out[len++] = (unsigned char)v;
            v = 0;
        }
    }
    if (got % 4 != 0 || pad > 2) {
        free(out);
        return -1;
    }
    len -= pad;
    out[len] = '\0';
    *ret = (char *)out;
    *ret_len = len;
    return 0;
}
