/* SPDX-License-Identifier: MIT */
/*
 * argv_echo.c: a stub program for cmdline_check.c. Writes each argument
 * its C runtime parsed from the command line, as UTF-8 in hexadecimal, one
 * per line, and exits with the number of arguments (the program included).
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

int wmain(int argc, wchar_t **argv);

int wmain(int argc, wchar_t **argv)
{
    for (int i = 1; i < argc; i++) {
        char buf[4096];
        int n = WideCharToMultiByte(CP_UTF8, 0, argv[i], -1, buf, (int)sizeof(buf), NULL, NULL);

        printf("arg ");
        for (int k = 0; k + 1 < n; k++)
            printf("%02x", (unsigned char)buf[k]);
        printf("\n");
    }
    fflush(stdout);
    return argc;
}
