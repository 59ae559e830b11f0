/* SPDX-License-Identifier: MIT */
/*
 * wslist.h: reading what wsl.exe says about its distributions (`-l -q`,
 * `-l -v`). Pure functions over bytes, unit-tested and fuzzed
 * (tests/unit/test_wsl2_list.c, tests/fuzz/fuzz_wsl2_list.c).
 */
#ifndef WSL2_WSLIST_H
#define WSL2_WSLIST_H

#include <stdbool.h>
#include <stddef.h>

/* wsl.exe's output, UTF-16LE (its default, with or without a byte order
 * mark) or UTF-8 (under WSL_UTF8=1), as NUL-terminated UTF-8 in out (at
 * most out_len-1 bytes), ending at the first NUL character. Unpaired
 * surrogates become U+FFFD. Returns the bytes written. */
size_t wsl_text_decode(const unsigned char *in, size_t len, char *out, size_t out_len);

/* Decoded `wsl.exe -l -q`: is distro one of its lines? */
bool wsl_list_has(const char *text, const char *distro);

/* Decoded `wsl.exe -l -q`: its names, joined by ", ", for a message. */
void wsl_list_names(const char *text, char *out, size_t len);

/* Decoded `wsl.exe -l -v` (a header row, then "[*] NAME STATE VERSION"
 * rows): distro's WSL version (1 or 2), 0 when it is not listed, -1 when
 * its row has no version. */
int wsl_list_version(const char *text, const char *distro);

#endif
