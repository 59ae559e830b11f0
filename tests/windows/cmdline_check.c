/* SPDX-License-Identifier: MIT */
/*
 * cmdline_check.c: the core's Windows command lines (platform/cmdline.c)
 * against Windows' own parsers, under wine: every line is split again by
 * CommandLineToArgvW, and a sample is run with CreateProcessW as the
 * stub argv_echo.exe, whose C runtime parses it; both must give back the
 * argv given, byte for byte (arguments hold spaces, tabs, quotes,
 * backslashes and non-ASCII UTF-8), and the child's exit code must be its
 * argument count. Prints what differed and exits 1 on any failure.
 */
/* clang-format off */
#include <windows.h>
#include <shellapi.h>
/* clang-format on */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/cmdline.h"

static int failures;

static wchar_t *to_wide(const char *s)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    wchar_t *w = n > 0 ? malloc((size_t)n * sizeof(*w)) : NULL;

    if (w)
        MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n);
    return w;
}

static void to_utf8(const wchar_t *w, char *out, int len)
{
    if (WideCharToMultiByte(CP_UTF8, 0, w, -1, out, len, NULL, NULL) <= 0)
        out[0] = '\0';
}

static char *build_line(const char *const *argv)
{
    struct dynbuf b;
    struct sbx_error *err = NULL;

    dynbuf_init(&b, 1 << 16);
    if (win_cmdline_build(argv, &b, &err) < 0) {
        printf("FAIL win_cmdline_build refused [%s]: %s\n", argv[1] ? argv[1] : "",
                err ? err->msg : "");
        sbx_error_free(err);
        failures++;
        dynbuf_done(&b);
        return NULL;
    }
    return dynbuf_take(&b, NULL);
}

static int argc_of(const char *const *argv)
{
    int n = 0;

    while (argv[n])
        n++;
    return n;
}

/* Split by shell32's CommandLineToArgvW, which skips argv[0] like the CRT. */
static void check_shell32(const char *const *argv, const char *line)
{
    wchar_t *w = to_wide(line);
    int n = 0;
    wchar_t **back = w ? CommandLineToArgvW(w, &n) : NULL;
    char got[4096];

    if (!back || n != argc_of(argv)) {
        printf("FAIL CommandLineToArgvW [%s]: %d arguments, %d given\n", line, n, argc_of(argv));
        failures++;
    } else {
        for (int i = 1; i < n; i++) {
            to_utf8(back[i], got, (int)sizeof(got));
            if (strcmp(got, argv[i]) != 0) {
                printf("FAIL CommandLineToArgvW [%s]: argument %d is [%s], given [%s]\n", line, i,
                        got, argv[i]);
                failures++;
            }
        }
    }
    LocalFree(back);
    free(w);
}

/* Run argv_echo.exe with the line; read its report through a pipe. */
static void check_child(const char *const *argv, const char *line, const wchar_t *exe)
{
    SECURITY_ATTRIBUTES sa = {sizeof(sa), NULL, TRUE};
    STARTUPINFOW si = {.cb = sizeof(si)};
    PROCESS_INFORMATION pi;
    HANDLE rd, wr;
    char out[65536], want[8192];
    DWORD got = 0, n, code = 0;
    wchar_t *w = to_wide(line);
    size_t o = 0;

    if (!w || !CreatePipe(&rd, &wr, &sa, 0)) {
        printf("FAIL CreatePipe\n");
        failures++;
        free(w);
        return;
    }
    SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdOutput = wr;
    si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    if (!CreateProcessW(exe, w, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
        printf("FAIL CreateProcessW: error %lu\n", GetLastError());
        failures++;
        CloseHandle(rd);
        CloseHandle(wr);
        free(w);
        return;
    }
    CloseHandle(wr);
    while (got < sizeof(out) - 1 &&
            ReadFile(rd, out + got, (DWORD)(sizeof(out) - 1 - got), &n, NULL) && n > 0)
        got += n;
    out[got] = '\0';
    WaitForSingleObject(pi.hProcess, INFINITE);
    GetExitCodeProcess(pi.hProcess, &code);
    for (int i = 1; argv[i]; i++) {
        o += (size_t)snprintf(want + o, sizeof(want) - o, "arg ");
        for (const char *p = argv[i]; *p; p++)
            o += (size_t)snprintf(want + o, sizeof(want) - o, "%02x", (unsigned char)*p);
        o += (size_t)snprintf(want + o, sizeof(want) - o, "\r\n");
    }
    if (strcmp(out, want) != 0 || code != (DWORD)argc_of(argv)) {
        printf("FAIL child parsed [%s] as\n%s(exit %lu), wanted\n%s(exit %d)\n", line, out, code,
                want, argc_of(argv));
        failures++;
    }
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    CloseHandle(rd);
    free(w);
}

int main(void)
{
    static const char *const fixed[][6] = {
            {"argv_echo.exe", "plain", "two words", "", NULL},
            {"argv_echo.exe", "a\"b", "\\\"", "end\\", "sp ace\\", NULL},
            {"argv_echo.exe", "C:\\dir\\", "\\\\server\\share", "tab\there", NULL},
            {"argv_echo.exe", "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80 x",
                    NULL},
            {"argv_echo.exe", "\"\"", "\\\\\"\\\\", " leading", "trailing ", NULL},
    };
    static const char alphabet[] = {'a', ' ', '\t', '"', '\\', 'z'};
    wchar_t exe[MAX_PATH], *slash;
    unsigned seed = 4242;
    int lines = 0;

    GetModuleFileNameW(NULL, exe, MAX_PATH);
    slash = wcsrchr(exe, L'\\');
    wcscpy(slash ? slash + 1 : exe, L"argv_echo.exe");
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        char *line = build_line(fixed[i]);

        if (line) {
            check_shell32(fixed[i], line);
            check_child(fixed[i], line, exe);
            lines++;
        }
        free(line);
    }
    for (int round = 0; round < 400; round++) {
        char store[3][10];
        const char *argv[5] = {"argv_echo.exe"};

        for (int i = 0; i < 3; i++) {
            int len = (int)((seed >> 8) % 9);

            for (int k = 0; k < len; k++) {
                seed = seed * 1103515245u + 12345u;
                store[i][k] = alphabet[(seed >> 16) % sizeof(alphabet)];
            }
            store[i][len] = '\0';
            seed = seed * 1103515245u + 12345u;
            argv[i + 1] = store[i];
        }
        argv[4] = NULL;
        char *line = build_line(argv);

        if (line) {
            check_shell32(argv, line);
            if (round % 20 == 0) /* a process each is slow under wine */
                check_child(argv, line, exe);
            lines++;
        }
        free(line);
    }
    printf("%s %d command lines checked against CommandLineToArgvW and a child's C runtime\n",
            failures ? "FAIL" : "ok", lines);
    return failures ? 1 : 0;
}
