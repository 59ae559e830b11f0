/* SPDX-License-Identifier: MIT */
/*
 * win_base.c: the POSIX functions the shared sources use that mingw-w64's
 * C runtime lacks (compat_win.h, win-include/), on Windows' own API, and
 * the cancellation flag of sbx.h. Windows build only.
 */
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include "platform/win_base.h"

#include <bcrypt.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>

#include "base/cancel.h"
#include "base/error.h"

char *strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = malloc(len + 1);

    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *strsep(char **sp, const char *delim)
{
    char *s = *sp, *end;

    if (!s)
        return NULL;
    end = s + strcspn(s, delim);
    if (*end) {
        *end = '\0';
        *sp = end + 1;
    } else {
        *sp = NULL;
    }
    return s;
}

unsigned win_geteuid(void)
{
    return 1000; /* any non-zero id: never the root paths */
}

int win_unsetenv(const char *name)
{
    if (!name || !*name || strchr(name, '=')) {
        errno = EINVAL;
        return -1;
    }
    return _putenv_s(name, "") == 0 ? 0 : -1;
}

ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
    if (flags != 0 || len > 0x7fffffff) {
        errno = EINVAL;
        return -1;
    }
    if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, buf, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG))) {
        errno = EIO;
        return -1;
    }
    return (ssize_t)len;
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    ssize_t total = 0;

    for (int i = 0; i < n; i++) {
        const char *p = iov[i].iov_base;
        size_t left = iov[i].iov_len;

        while (left > 0) {
            int w = _write(fd, p, left > 0x40000000 ? 0x40000000u : (unsigned)left);

            if (w < 0)
                return total > 0 ? total : -1;
            p += w;
            left -= (size_t)w;
            total += w;
        }
    }
    return total;
}

long win_sysconf(int name)
{
    SYSTEM_INFO si;

    if (name != _SC_NPROCESSORS_ONLN) {
        errno = EINVAL;
        return -1;
    }
    GetSystemInfo(&si);
    return (long)si.dwNumberOfProcessors;
}

/* The open memory streams: few at once (one per tool result being
 * written), so a short list under a lock. */
struct memstream {
    FILE *f;
    char **ptr;
    size_t *size;
    struct memstream *next;
};
static struct memstream *memstreams;
static SRWLOCK memstreams_lock = SRWLOCK_INIT;

FILE *win_open_memstream(char **ptr, size_t *size)
{
    struct memstream *m = calloc(1, sizeof(*m));

    if (!m || !ptr || !size || !(m->f = tmpfile())) {
        free(m);
        errno = ENOMEM;
        return NULL;
    }
    m->ptr = ptr;
    m->size = size;
    *ptr = NULL;
    *size = 0;
    AcquireSRWLockExclusive(&memstreams_lock);
    m->next = memstreams;
    memstreams = m;
    ReleaseSRWLockExclusive(&memstreams_lock);
    return m->f;
}

#undef fclose
int win_fclose(FILE *f)
{
    struct memstream **pp, *m = NULL;
    long len;
    int rc = 0;

    AcquireSRWLockExclusive(&memstreams_lock);
    for (pp = &memstreams; *pp; pp = &(*pp)->next)
        if ((*pp)->f == f) {
            m = *pp;
            *pp = m->next;
            break;
        }
    ReleaseSRWLockExclusive(&memstreams_lock);
    if (!m)
        return fclose(f);
    if (fflush(f) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
            !(*m->ptr = malloc((size_t)len + 1)) ||
            fread(*m->ptr, 1, (size_t)len, f) != (size_t)len) {
        free(*m->ptr);
        *m->ptr = NULL;
        rc = EOF;
    } else {
        (*m->ptr)[len] = '\0';
        *m->size = (size_t)len;
    }
    if (fclose(f) != 0)
        rc = EOF;
    free(m);
    return rc;
}

char *win_exe_dir(void)
{
    wchar_t wpath[32768];
    DWORD n = GetModuleFileNameW(NULL, wpath, (DWORD)(sizeof(wpath) / sizeof(wpath[0])));
    char *path, *slash;
    int len;

    if (n == 0 || n >= sizeof(wpath) / sizeof(wpath[0]))
        return NULL;
    len = WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, wpath, (int)n, NULL, 0, NULL, NULL);
    if (len <= 0 || !(path = malloc((size_t)len + 1)))
        return NULL;
    WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, wpath, (int)n, path, len, NULL, NULL);
    path[len] = '\0';
    for (char *p = path; *p; p++)
        if (*p == '\\')
            *p = '/';
    slash = strrchr(path, '/');
    if (!slash) {
        free(path);
        return NULL;
    }
    *slash = '\0';
    return path;
}

/* sbx.h's cancellation flag. On Linux an eventfd; here the read end of a
 * pipe of the C runtime (not inherited), which the emulated poll() sees
 * readable once fire wrote its one byte, so the agent channel's wait on a
 * run (agentc.c) wakes as on Linux. */
int sbx_cancel_new(struct sbx_cancel **ret, struct sbx_error **err)
{
    struct sbx_cancel *c = calloc(1, sizeof(*c));
    int fds[2];

    if (!c)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (_pipe(fds, 64, _O_BINARY | _O_NOINHERIT) < 0) {
        free(c);
        return sbx_error_set(err, SBX_E_IO, errno, "pipe: %s", strerror(errno));
    }
    c->fd = fds[0];
    c->wfd = fds[1];
    *ret = c;
    return 0;
}

void sbx_cancel_fire(struct sbx_cancel *c)
{
    if (c && InterlockedExchange(&c->fired, 1) == 0)
        (void)_write(c->wfd, "x", 1); /* once: a second byte would change nothing */
}

struct sbx_cancel *sbx_cancel_free(struct sbx_cancel *c)
{
    if (c) {
        _close(c->fd);
        _close(c->wfd);
        free(c);
    }
    return NULL;
}

/* One descriptor's readiness now (poll.h says what is emulated how). */
static short poll_one(const struct pollfd *p)
{
    HANDLE h = (HANDLE)_get_osfhandle(p->fd);
    DWORD avail = 0, type;
    short r = 0;

    if (h == INVALID_HANDLE_VALUE)
        return POLLNVAL;
    type = GetFileType(h);
    if (type != FILE_TYPE_PIPE)
        return (short)(p->events & (POLLIN | POLLOUT)); /* a file: never waits */
    if (p->events & POLLOUT)
        r |= POLLOUT;
    if (p->events & POLLIN) {
        if (!PeekNamedPipe(h, NULL, 0, NULL, &avail, NULL))
            r |= GetLastError() == ERROR_BROKEN_PIPE ? POLLHUP : POLLERR;
        else if (avail > 0)
            r |= POLLIN;
    }
    return r;
}

int win_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
    ULONGLONG deadline = timeout_ms < 0 ? 0 : GetTickCount64() + (ULONGLONG)timeout_ms;

    for (;;) {
        int ready = 0;

        for (nfds_t i = 0; i < n; i++) {
            fds[i].revents = fds[i].fd < 0 ? 0 : poll_one(&fds[i]);
            ready += fds[i].revents != 0;
        }
        if (ready > 0 || timeout_ms == 0 || (timeout_ms > 0 && GetTickCount64() >= deadline))
            return ready;
        Sleep(1);
    }
}
