/* SPDX-License-Identifier: MIT */
/*
 * dynbuf.h: a growable byte buffer with a mandatory cap (STYLE I1, after
 * curl's dynbuf). Appending past the cap fails with SBX_E_LIMIT and appends
 * nothing; the buffer is always NUL-terminated when non-empty.
 */
#ifndef SBX_DYNBUF_H
#define SBX_DYNBUF_H

#include <stddef.h>

#include <llm-sandbox/plugin.h>

struct dynbuf {
    char *buf;
    size_t len;
    size_t alloc;
    size_t cap;
};

void dynbuf_init(struct dynbuf *b, size_t cap);
int dynbuf_append(struct dynbuf *b, const void *data, size_t len);
int dynbuf_append_str(struct dynbuf *b, const char *s);
int dynbuf_printf(struct dynbuf *b, const char *fmt, ...) SBX_PRINTF(2, 3);
/* Hand the contents to the caller (never NULL unless out of memory);
 * the buffer is empty afterwards. (transfer full) */
char *dynbuf_take(struct dynbuf *b, size_t *ret_len);
void dynbuf_done(struct dynbuf *b);

#endif
