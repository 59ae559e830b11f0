/* SPDX-License-Identifier: MIT */
/*
 * dynbuf.c: the capped buffer of dynbuf.h. Doubles its allocation up to the
 * cap; no I/O.
 */
#include "base/dynbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dynbuf_init(struct dynbuf *b, size_t cap)
{
    b->buf = NULL;
    b->len = 0;
    b->alloc = 0;
    b->cap = cap;
}

int dynbuf_append(struct dynbuf *b, const void *data, size_t len)
{
    size_t need;

    if (len > b->cap || b->len > b->cap - len)
        return SBX_E_LIMIT;
    need = b->len + len + 1;
    if (need > b->alloc) {
        size_t n = b->alloc ? b->alloc : 64;
        char *p;

        while (n < need)
            n = n > SIZE_MAX / 2 ? need : n * 2;
        if (n > b->cap + 1)
            n = b->cap + 1;
        p = realloc(b->buf, n);
        if (!p)
            return SBX_E_NOMEM;
        b->buf = p;
        b->alloc = n;
    }
    if (len)
        memcpy(b->buf + b->len, data, len);
    b->len += len;
    b->buf[b->len] = '\0';
    return 0;
}

int dynbuf_append_str(struct dynbuf *b, const char *s)
{
    return dynbuf_append(b, s, strlen(s));
}

int dynbuf_printf(struct dynbuf *b, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n, r;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return SBX_E_NOMEM;
    r = dynbuf_append(b, s, (size_t)n);
    free(s);
    return r;
}

char *dynbuf_take(struct dynbuf *b, size_t *ret_len)
{
    char *p = b->buf;

    if (!p)
        p = calloc(1, 1);
    if (ret_len)
        *ret_len = b->len;
    b->buf = NULL;
    b->len = 0;
    b->alloc = 0;
    return p;
}

void dynbuf_done(struct dynbuf *b)
{
    free(b->buf);
    dynbuf_init(b, b->cap);
}
