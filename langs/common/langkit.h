/* SPDX-License-Identifier: MIT */
/*
 * langkit.h: small helpers shared by the language plugins, header-only so
 * each plugin compiles them in (a plugin links no core symbol): refusing a
 * library requirement in one printable line (through plugin_kit.h, as every
 * plugin fills its errors), and scanning source text.
 */
#ifndef SBX_LANGKIT_H
#define SBX_LANGKIT_H

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/plugin_kit.h>

#define LANG_LIBRARY_MAX 200 /* longest requirement any ecosystem gets */

/* Fill err: "'SPEC' is not a valid WHAT: WHY", the requirement quoted with
 * control characters replaced, so it stays one printable line whatever the
 * caller sent. Returns SBX_E_INVALID. */
static inline int lang_refuse(
        struct sbx_err *err, const char *what, const char *spec, const char *why)
{
    char shown[81];
    size_t i;

    for (i = 0; i < sizeof(shown) - 1 && spec[i]; i++)
        shown[i] = (unsigned char)spec[i] < 0x20 || spec[i] == 0x7f ? '?' : spec[i];
    shown[i] = '\0';
    snprintf(err->field, sizeof(err->field), "libraries");
    return sbx_err_fill(err, SBX_E_INVALID, 0, "'%s' is not a valid %s: %s", shown, what, why);
}

/* Length of the run of characters of s in set (ASCII letters, digits and
 * the punctuation listed in extra). */
static inline size_t lang_span(const char *s, const char *extra)
{
    size_t n = 0;

    while (s[n] && (isalnum((unsigned char)s[n]) || strchr(extra, s[n])))
        n++;
    return n;
}

static inline bool lang_ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* The next occurrence of the word w in code[0..len) at or after from, not
 * inside a longer identifier; or len. Comments and strings are not
 * skipped: the callers accept a false match's cost (a compiler error). */
static inline size_t lang_find_word(const char *code, size_t len, size_t from, const char *w)
{
    size_t wl = strlen(w);

    for (size_t i = from; i + wl <= len; i++) {
        if (memcmp(code + i, w, wl) != 0)
            continue;
        if ((i > 0 && lang_ident_char(code[i - 1])) ||
                (i + wl < len && lang_ident_char(code[i + wl])))
            continue;
        return i;
    }
    return len;
}

/* Skip spaces, tabs and newlines from i. */
static inline size_t lang_skip_space(const char *code, size_t len, size_t i)
{
    while (i < len && isspace((unsigned char)code[i]))
        i++;
    return i;
}

/* Copy the identifier at code[i] (at most out_len - 1 bytes) into out;
 * its length, 0 when there is none or it is too long. */
static inline size_t lang_ident(const char *code, size_t len, size_t i, char *out, size_t out_len)
{
    size_t n = 0;

    while (i + n < len && lang_ident_char(code[i + n]) &&
            !(n == 0 && isdigit((unsigned char)code[i])))
        n++;
    if (n == 0 || n >= out_len)
        return 0;
    memcpy(out, code + i, n);
    out[n] = '\0';
    return n;
}

#endif
