/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wsl2_list.c: libFuzzer target for the WSL2 plugin's reading of
 * wsl.exe's listings (plugins/wsl2/wslist.h). The first byte picks the
 * output buffer's size (1..256) and whether the rest is read as `-l -q` or
 * `-l -v`; the decoded text must be NUL-terminated within the buffer and
 * valid UTF-8, and the lookups must agree with themselves (a name the list
 * holds is found; a version is 1, 2, 0 or -1). A crash, a sanitizer report
 * or an abort() is a bug. Build with clang -fsanitize=fuzzer, or link with
 * replay.c to replay a corpus.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wslist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

/* Well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF)? */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t k = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : 3;
        uint32_t v = k == 0 ? c : k == 1 ? c & 0x1Fu : k == 2 ? c & 0x0Fu : c & 0x07u;

        if ((c & 0xC0) == 0x80 || c > 0xF4 || i + k >= n + (k ? 0 : 1))
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
            v = v << 6 | (s[i + j] & 0x3Fu);
        }
        if ((k == 1 && v < 0x80) || (k == 2 && v < 0x800) || (k == 3 && v < 0x10000) ||
                v > 0x10FFFF || (v >= 0xD800 && v < 0xE000))
            return false;
        i += k + 1;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[256], names[128];
    size_t cap, n;
    bool utf16;

    if (size < 1)
        return 0;
    cap = (size_t)(data[0] & 0x7F) * 2 + 2; /* 2..256 */
    if (cap > sizeof(out))
        cap = sizeof(out);
    data++, size--;
    memset(out, 'x', sizeof(out));
    n = wsl_text_decode(data, size, out, cap);
    check(n < cap && out[n] == '\0' && strlen(out) == n);
    utf16 = size >= 2 && ((data[0] == 0xFF && data[1] == 0xFE) || (data[0] && !data[1]));
    if (utf16)
        check(utf8_valid((const unsigned char *)out, n));
    wsl_list_names(out, names, sizeof(names));
    check(strlen(names) < sizeof(names));
    if (data[-1] & 0x80) {
        int v = wsl_list_version(out, "sbx-wsl2-test");

        check(v >= -1 && v <= 2);
    } else {
        /* the first line, trimmed, is found again */
        char first[64];
        size_t k = strcspn(out, "\n");
        size_t s = 0;

        while (s < k && (out[s] == ' ' || out[s] == '\t' || out[s] == '\r'))
            s++;
        while (k > s && (out[k - 1] == ' ' || out[k - 1] == '\t' || out[k - 1] == '\r'))
            k--;
        if (k > s && k - s < sizeof(first)) {
            memcpy(first, out + s, k - s);
            first[k - s] = '\0';
            check(wsl_list_has(out, first));
        }
    }
    return 0;
}
