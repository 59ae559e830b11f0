/* SPDX-License-Identifier: MIT */
/*
 * wslsend.c: the host's side of the stream to the WSL2 opener (wslframe.h),
 * one copy for both hosts that send it: plugins/bwrap/run.c in WSL2 mode
 * (Linux, the launcher's stdin non-blocking) and plugins/wsl2/run_win.c
 * (Windows, a blocking pipe to wsl.exe). What differs is below, under
 * _WIN32: how bytes go down the pipe, how a blob is read, and SIGPIPE,
 * which Windows does not have.
 */
#ifdef _WIN32
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include <io.h>
#else
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#endif
#include <errno.h>
#include <string.h>

#include <llm-sandbox/plugin_kit.h>

#include "wslframe.h"
#include "wslsend.h"

#define WRITE_TIMEOUT (-2) /* write_some: the opener took nothing for 30 s */

#ifdef _WIN32
/* Some of buf down the launcher's stdin (a blocking pipe): the bytes
 * written, or -1 with errno set. */
static long long write_some(int fd, const unsigned char *buf, size_t n)
{
    return _write(fd, buf, n > 65536 ? 65536u : (unsigned)n);
}

/* The blob's size, its file offset left at its start. */
static long long blob_size(int fd)
{
    long long size = _lseeki64(fd, 0, SEEK_END);

    return size >= 0 && _lseeki64(fd, 0, SEEK_SET) == 0 ? size : -1;
}

static long long blob_read(int fd, unsigned char *buf, size_t len, long long off)
{
    (void)off; /* read in order from the start blob_size left */
    return _read(fd, buf, (unsigned)len);
}
#else
/* Some of buf down the launcher's stdin (non-blocking): the bytes written,
 * -1 with errno set, or WRITE_TIMEOUT after 30 s without room. */
static long long write_some(int fd, const unsigned char *buf, size_t n)
{
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        ssize_t w = write(fd, buf, n);

        if (w >= 0 || (errno != EAGAIN && errno != EINTR))
            return w;
        if (poll(&pfd, 1, 30000) == 0)
            return WRITE_TIMEOUT;
    }
}

static long long blob_size(int fd)
{
    struct stat sb;

    return fstat(fd, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* pread: the descriptor's offset stays where it was. */
static long long blob_read(int fd, unsigned char *buf, size_t len, long long off)
{
    ssize_t n;

    do
        n = pread(fd, buf, len, (off_t)off);
    while (n < 0 && errno == EINTR);
    return n;
}
#endif

/* All of buf down the launcher's stdin. */
static int put_all(int fd, const unsigned char *buf, size_t n, struct sbx_err *err)
{
    while (n > 0) {
        long long w = write_some(fd, buf, n);

        if (w == WRITE_TIMEOUT)
            return sbx_err_fill(
                    err, SBX_E_BACKEND, ETIMEDOUT, "the WSL2 opener took no input for 30 s");
        if (w <= 0)
            return sbx_err_fill(err, SBX_E_BACKEND, errno,
                    "the WSL2 opener stopped reading its input: %s", strerror(errno));
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One blob (the whole file behind fd) as a record of the stream. */
static int put_blob(int wfd, int fd, int child_fd, struct sbx_err *err)
{
    unsigned char buf[65536], hdr[WSL_FRAME_HDR];
    long long size, off = 0;

    errno = 0;
    size = blob_size(fd);
    if (size < 0 || size > (long long)WSL_FRAME_BLOB_MAX)
        return sbx_err_fill(err, SBX_E_BACKEND, errno, "a blob for the WSL2 opener: %s",
                size < 0 ? strerror(errno) : "too large");
    wsl_frame_put(hdr, WSL_FRAME_FD, child_fd, (uint32_t)size);
    if (put_all(wfd, hdr, sizeof(hdr), err) < 0)
        return err->rc;
    while (off < size) {
        long long n = blob_read(fd, buf, sizeof(buf), off);

        if (n <= 0)
            return sbx_err_fill(err, SBX_E_IO, n < 0 ? errno : EIO,
                    "reading a blob for the WSL2 opener: %s", n < 0 ? strerror(errno) : "short");
        if (n > size - off)
            n = size - off; /* it grew: send what was announced */
        if (put_all(wfd, buf, (size_t)n, err) < 0)
            return err->rc;
        off += n;
    }
    return 0;
}

static int put_stream(int wfd, const int *fd, const int *child, int n_fds,
        const struct sbx_policy *lim, struct sbx_err *err)
{
    unsigned char hdr[WSL_FRAME_HDR], lbuf[WSL_FRAME_LIMITS_LEN];
    int r = put_all(wfd, (const unsigned char *)WSL_FRAME_MAGIC, WSL_FRAME_MAGIC_LEN, err);

    for (int i = 0; r == 0 && i < n_fds; i++)
        if (fd[i] >= 0)
            r = put_blob(wfd, fd[i], child[i], err);
    if (r == 0 && lim) { /* the opener makes the box's cgroup with these */
        struct wsl_frame_limits l = {.memory_bytes = lim->memory_bytes,
                .cpu_millicores = lim->cpu_millicores,
                .pids_max = lim->pids_max};

        wsl_frame_put(hdr, WSL_FRAME_LIMITS, -1, WSL_FRAME_LIMITS_LEN);
        wsl_frame_limits_put(lbuf, &l);
        r = put_all(wfd, hdr, sizeof(hdr), err);
        if (r == 0)
            r = put_all(wfd, lbuf, sizeof(lbuf), err);
    }
    if (r == 0) {
        wsl_frame_put(hdr, WSL_FRAME_END, -1, 0);
        r = put_all(wfd, hdr, sizeof(hdr), err);
    }
    return r;
}

int wsl_stream_send(int wfd, const int *fd, const int *child, int n_fds,
        const struct sbx_policy *lim, struct sbx_err *err)
{
#ifdef _WIN32
    return put_stream(wfd, fd, child, n_fds, lim, err);
#else
    static const struct timespec now = {0, 0};
    sigset_t pipe, old;
    int r;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    r = put_stream(wfd, fd, child, n_fds, lim, err);
    if (r < 0 && !sigismember(&old, SIGPIPE))
        while (sigtimedwait(&pipe, NULL, &now) == SIGPIPE)
            ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
#endif
}
