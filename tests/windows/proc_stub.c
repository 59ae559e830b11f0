/* SPDX-License-Identifier: MIT */
/*
 * proc_stub.c: the program proc_check.c spawns through the core's
 * platform layer. argv[1] says what to do:
 *   exit N    exit with code N
 *   echo      copy stdin to stdout (binary), then write "err" to stderr
 *   env       print each environment string, one per line
 *   tree      start "proc_stub sleep", print "child <pid>", sleep forever
 *   spawn N   start N "proc_stub sleep" children, print "started <k>"
 *   alloc MB  commit MB mebibytes, print "alloc ok" or "alloc failed"
 *   sleep     sleep forever
 */
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

static int start_sleeper(DWORD *ret_pid)
{
    wchar_t exe[MAX_PATH], line[MAX_PATH + 16];
    STARTUPINFOW si = {.cb = sizeof(si)};
    PROCESS_INFORMATION pi;

    GetModuleFileNameW(NULL, exe, MAX_PATH);
    swprintf(line, sizeof(line) / sizeof(line[0]), L"\"%ls\" sleep", exe);
    if (!CreateProcessW(exe, line, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi))
        return -1;
    *ret_pid = pi.dwProcessId;
    CloseHandle(pi.hThread);
    CloseHandle(pi.hProcess);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    DWORD pid;

    if (strcmp(what, "exit") == 0 && argc > 2)
        return (int)strtoul(argv[2], NULL, 0);
    if (strcmp(what, "echo") == 0) {
        char buf[256];
        size_t n;

        _setmode(_fileno(stdin), _O_BINARY); /* bytes as they are, no CRLF */
        _setmode(_fileno(stdout), _O_BINARY);
        while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
            fwrite(buf, 1, n, stdout);
        fflush(stdout);
        fputs("err", stderr);
        return 0;
    }
    if (strcmp(what, "env") == 0) {
        wchar_t *env = GetEnvironmentStringsW();

        for (wchar_t *e = env; e && *e; e += wcslen(e) + 1) {
            char s[1024];

            if (WideCharToMultiByte(CP_UTF8, 0, e, -1, s, (int)sizeof(s), NULL, NULL) > 0)
                printf("%s\n", s);
        }
        FreeEnvironmentStringsW(env);
        return 0;
    }
    if (strcmp(what, "tree") == 0) {
        if (start_sleeper(&pid) < 0)
            return 2;
        printf("child %lu\n", pid);
        fflush(stdout);
        Sleep(INFINITE);
    }
    if (strcmp(what, "spawn") == 0 && argc > 2) {
        int want = (int)strtol(argv[2], NULL, 10), k = 0;

        while (k < want && start_sleeper(&pid) == 0)
            k++;
        printf("started %d\n", k);
        fflush(stdout);
        Sleep(INFINITE);
    }
    if (strcmp(what, "alloc") == 0 && argc > 2) {
        SIZE_T bytes = (SIZE_T)strtoul(argv[2], NULL, 0) << 20;
        void *m = VirtualAlloc(NULL, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);

        printf("alloc %s\n", m ? "ok" : "failed");
        fflush(stdout);
        return 0;
    }
    if (strcmp(what, "sleep") == 0)
        Sleep(INFINITE);
    return 100;
}
