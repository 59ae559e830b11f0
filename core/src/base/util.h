/* SPDX-License-Identifier: MIT */
/*
 * util.h: checked parsing of numbers and sizes (STYLE I2), name grammars
 * (I4), UTF-8 repair, NULL-terminated string vectors, hex, and the
 * monotonic clock. No I/O beyond the clock and getrandom(2); no allocation
 * except where a function returns (transfer full).
 */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decimal unsigned integer, whole string, no sign, no overflow. */
int parse_u64(const char *s, uint64_t *ret);
/* The one grammar of sizes and durations, for the configuration and for
 * requests alike (sbx_req_limit_parse): digits, an optional fraction of
 * at most 3 decimals, and for sizes an optional unit. 0, SBX_E_INVALID
 * (malformed), or SBX_E_LIMIT (the value does not fit 64 bits).
 *
 * "512", "512k", "256M", "1.5G", "1GiB", "1gb" (binary multiples up to
 * T; a fraction needs a unit, and its last byte is rounded down). */
int parse_size(const char *s, uint64_t *ret_bytes);
/* "30", "1.5", "0.25" seconds -> milliseconds. */
int parse_seconds_ms(const char *s, uint64_t *ret_ms);
/* "1", "0.5", "1.25" cores -> millicores. */
int parse_millicores(const char *s, uint64_t *ret_mc);
/* "1", "true", "yes", "on" / "0", "false", "no", "off". */
int parse_bool(const char *s, bool *ret);

/* Plugin names: [a-z][a-z0-9_]{0,31} */
bool name_is_valid(const char *s);
/* Environment keys: [A-Za-z_][A-Za-z0-9_]* */
bool env_key_is_valid(const char *s);
/* A host name for the filtering proxy's allow-list: lower-case labels of
 * [a-z0-9-] (1 to 63 bytes, no '-' at either end) joined by '.', at most
 * 253 bytes; a pattern may start with "*." to mean any subdomain. */
bool host_pattern_is_valid(const char *s);
/* Does host (lower-case) match the pattern (exactly, or "*.x" any name
 * ending in ".x")? */
bool host_matches(const char *pattern, const char *host);
/* A path inside the workspace: relative, at most 4096 bytes, parts of 1 to
 * 255 bytes, no "." or ".." part, no control characters. */
bool rel_path_is_valid(const char *s);

/* Copy of buf with invalid UTF-8 replaced by U+FFFD. (transfer full) */
char *utf8_sanitize(const char *buf, size_t len, size_t *ret_len);
bool utf8_is_valid(const char *buf, size_t len);

size_t strv_len(char *const *v);
char **strv_free(char **v); /* returns NULL */
/* Append a copy of s; *v may be NULL. 0 or SBX_E_NOMEM. */
int strv_push(char ***v, const char *s);
/* Set "KEY=VALUE" in *v: replace the entry with the same key, else
 * append. 0 or SBX_E_NOMEM. */
int strv_setenv(char ***v, const char *kv);
/* A copy of v (NULL: an empty vector). 0 or SBX_E_NOMEM. */
int strv_dup(char *const *v, char ***ret);
int strv_pushf(char ***v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool strv_contains(char *const *v, const char *s);
/* Does v ("KEY=VALUE" strings) set the key of kv ("KEY=..." or "KEY")? */
bool strv_has_key(char *const *v, const char *kv);

/* n bytes as 2n lowercase hex digits and a NUL into out. */
void hex_encode(char *out, const unsigned char *in, size_t n);
/* bytes (at most 32) random bytes from getrandom(2) as lowercase hex into
 * out (2 * bytes + 1): 0, or SBX_E_IO (no randomness), SBX_E_INVALID. */
int random_hex(char *out, size_t bytes);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t now_ms(void);

#endif
