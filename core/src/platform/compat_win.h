/* SPDX-License-Identifier: MIT */
/*
 * compat_win.h: the few POSIX names the shared sources use that mingw-w64's
 * C runtime lacks, each mapped onto Windows' own (win_base.c). The Windows
 * build force-includes this header (cmake/SbxWindowsCore.cmake); the Linux
 * build never sees it.
 *
 * Flags Windows' CRT has no counterpart for are 0: O_CLOEXEC (the CRT's
 * descriptors are not inherited by CreateProcess unless asked, and
 * win_proc.c passes only the standard handles), O_NOFOLLOW (the CRT opens
 * no symbolic links as such), O_NONBLOCK, O_NOCTTY, O_DIRECTORY.
 */
#ifndef SBX_PLATFORM_COMPAT_WIN_H
#define SBX_PLATFORM_COMPAT_WIN_H
#ifdef _WIN32

#include <fcntl.h>
#include <io.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif
#ifndef O_NONBLOCK
#define O_NONBLOCK 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif

/* The plugin ABI's signal numbers are Linux's; mingw's signal.h has
 * SIGINT and SIGTERM (the same numbers) but not these. */
#ifndef SIGKILL
#define SIGKILL 9
#endif
#ifndef SIGHUP
#define SIGHUP 1
#endif

typedef unsigned uid_t;
typedef unsigned gid_t;

/* The CRT's read and write count in unsigned int: at most 2^31 - 1 bytes
 * at once, which POSIX allows (a short transfer). (Not INT_MAX: the MCP
 * layer's own limits.h shadows <limits.h> on its include path.) */
static inline ssize_t win_read(int fd, void *buf, size_t n)
{
    return _read(fd, buf, n > 0x7fffffffu ? 0x7fffffffu : (unsigned)n);
}
static inline ssize_t win_write(int fd, const void *buf, size_t n)
{
    return _write(fd, buf, n > 0x7fffffffu ? 0x7fffffffu : (unsigned)n);
}
#define read  win_read
#define write win_write

/* sysconf(_SC_NPROCESSORS_ONLN) only: the logical processors. */
#define _SC_NPROCESSORS_ONLN 84
long win_sysconf(int name);
#define sysconf win_sysconf

/* open_memstream(3) on a temporary file: *ptr and *size are set by
 * fclose (win_fclose), which reads the file back; fflush does not set
 * them (nothing here reads them before fclose). */
FILE *win_open_memstream(char **ptr, size_t *size);
int win_fclose(FILE *f);
#define open_memstream win_open_memstream
#define fclose         win_fclose

char *strndup(const char *s, size_t n);
char *strsep(char **sp, const char *delim);
/* Windows has no root: every user is treated as an unprivileged one. */
unsigned win_geteuid(void);
#define geteuid win_geteuid
/* No set-uid programs on Windows: the plain environment. */
#define secure_getenv getenv
int win_unsetenv(const char *name);
#define unsetenv win_unsetenv
/* The CRT sees no symbolic links: stat is all there is. */
#define lstat stat

#endif
#endif
