/* SPDX-License-Identifier: MIT */
/*
 * b64.h: standard base64 (RFC 4648, with padding) for the file tools and
 * resources.
 * Decoding is strict: only the alphabet, padding only at the end, length a
 * multiple of four; ASCII whitespace is skipped.
 */
#ifndef SBX_MCP_B64_H
#define SBX_MCP_B64_H

#include <stddef.h>

/* NUL-terminated text, or NULL when out of memory. (transfer full) */
char *b64_encode(const void *data, size_t len);
/* 0 and the bytes (NUL-terminated, *ret_len without it), or -1 when the
 * text is not base64 or memory ran out. (transfer full) */
int b64_decode(const char *text, size_t n, char **ret, size_t *ret_len);

#endif
