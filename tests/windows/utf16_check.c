/* SPDX-License-Identifier: MIT */
/*
 * utf16_check.c: the WSL2 plugin's decoding of wsl.exe's UTF-16LE output
 * (plugins/wsl2/wslist.c) against Windows' own converter,
 * WideCharToMultiByte(CP_UTF8), under wine: fixed strings (ASCII, accents,
 * CJK, surrogate pairs, unpaired surrogates, CRLF) and generated ones
 * drawn from the same units must decode to the same bytes. Prints what
 * differed and exits 1 on any failure.
 */
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "wslist.h"

#define MAX_UNITS 64

static int failures;

/* units[0..n) after a byte order mark, through both decoders. */
static void compare(const WCHAR *units, int n)
{
    unsigned char in[2 + 2 * MAX_UNITS];
    char ours[8 * MAX_UNITS], theirs[8 * MAX_UNITS];
    int m;

    in[0] = 0xFF;
    in[1] = 0xFE;
    for (int i = 0; i < n; i++) {
        in[2 + 2 * i] = (unsigned char)(units[i] & 0xFF);
        in[3 + 2 * i] = (unsigned char)(units[i] >> 8);
    }
    wsl_text_decode(in, (size_t)(2 + 2 * n), ours, sizeof(ours));
    m = n ? WideCharToMultiByte(CP_UTF8, 0, units, n, theirs, (int)sizeof(theirs) - 1, NULL, NULL)
          : 0;
    theirs[m > 0 ? m : 0] = '\0';
    if (strcmp(ours, theirs) != 0) {
        printf("FAIL units");
        for (int i = 0; i < n; i++)
            printf(" %04x", units[i]);
        printf(": ours");
        for (const char *p = ours; *p; p++)
            printf(" %02x", (unsigned char)*p);
        printf(", Windows'");
        for (const char *p = theirs; *p; p++)
            printf(" %02x", (unsigned char)*p);
        printf("\n");
        failures++;
    }
}

int main(void)
{
    static const WCHAR ascii[] = {'U', 'b', 'u', 'n', 't', 'u', '\r', '\n'};
    static const WCHAR bmp[] = {'c', 'a', 'f', 0x00E9, ' ', 0x65E5, 0x672C, 0x8A9E};
    static const WCHAR pair[] = {'d', 0xD83D, 0xDE00, 'x', 0xD800, 0xDC00, 0xDBFF, 0xDFFF};
    static const WCHAR lone_high_end[] = {'a', 0xD83D};
    static const WCHAR lone_low[] = {0xDE00, 'b'};
    static const WCHAR high_high[] = {0xD83D, 0xD83D, 0xDE00};
    static const WCHAR high_ascii[] = {0xD800, 'z', '\n'};
    static const WCHAR alphabet[] = {
            'A', 0x00E9, 0x0800, 0xFFFD, 0xD83D, 0xDE00, 0xDBFF, 0xDC00, '\r', '\n', '*'};
    unsigned seed = 7;
    int checked = 0;

#define CASE(a) (compare((a), (int)(sizeof(a) / sizeof((a)[0]))), checked++)
    CASE(ascii);
    CASE(bmp);
    CASE(pair);
    CASE(lone_high_end);
    CASE(lone_low);
    CASE(high_high);
    CASE(high_ascii);
#undef CASE
    for (int round = 0; round < 5000; round++) {
        WCHAR units[MAX_UNITS];
        int n = 1 + (int)((seed >> 8) % 24);

        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            units[i] = alphabet[(seed >> 16) % (sizeof(alphabet) / sizeof(alphabet[0]))];
        }
        seed = seed * 1103515245u + 12345u;
        compare(units, n);
        checked++;
    }
    printf("%s %d UTF-16 strings decoded as WideCharToMultiByte does\n", failures ? "FAIL" : "ok",
            checked);
    return failures ? 1 : 0;
}
