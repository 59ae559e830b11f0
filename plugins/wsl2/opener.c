/* SPDX-License-Identifier: MIT */
/*
 * opener.c: sbx-wsl2-open, run inside the WSL2 distribution as
 *
 *   wsl.exe -d DISTRO -u USER --cd / --exec OPENER BWRAP <bwrap's options>
 *
 * wsl.exe carries only stdin, stdout and stderr into the distribution, but
 * bwrap takes the seccomp filter, the agent binary and the generated /etc
 * files as descriptors. The host therefore sends them first on stdin
 * (wslframe.h); this program reads exactly that stream and no byte more,
 * puts each blob in a sealed memfd at the descriptor number the bwrap argv
 * names, closes every other descriptor above 2 and execs bwrap, whose stdin
 * and stdout are then the agent's channel as without WSL.
 *
 * Staging in memfds, not files: they are memory of this process alone, on
 * no filesystem (neither a Windows drive under /mnt nor a directory another
 * process of USER could read or swap), sealed before bwrap reads them, and
 * gone with their last descriptor, so nothing is left to remove, even when
 * the opener or the box is killed half-way.
 *
 * Static (built like the agent), no allocation beyond the stack. Exit 125
 * and one "sbx-wsl2-open: ..." line on stderr when the stream is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wslframe.h"

#define HIGH_FD 64 /* memfds wait above every target until the end */

static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "sbx-wsl2-open: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return 125;
}

/* Exactly n bytes of stdin, or -1 (end of input counts as an error). */
static int read_exact(unsigned char *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = read(0, buf + got, n - got);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            errno = r == 0 ? EPIPE : errno;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const unsigned char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A sealed memfd holding the next len bytes of stdin, above HIGH_FD. */
static int blob(uint32_t len, const char **why)
{
    unsigned char buf[65536];
    int m = (int)syscall(SYS_memfd_create, "sbx-wsl2", MFD_CLOEXEC | MFD_ALLOW_SEALING), hi;

    *why = "memfd_create";
    if (m < 0)
        return -1;
    hi = fcntl(m, F_DUPFD_CLOEXEC, HIGH_FD);
    close(m);
    if (hi < 0) {
        *why = "moving a memfd";
        return -1;
    }
    while (len > 0) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);

        if (read_exact(buf, n) < 0) {
            *why = "stdin ended inside a blob";
            close(hi);
            return -1;
        }
        if (write_all(hi, buf, n) < 0) {
            *why = "writing a memfd";
            close(hi);
            return -1;
        }
        len -= (uint32_t)n;
    }
    if (fcntl(hi, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
            lseek(hi, 0, SEEK_SET) != 0) {
        *why = "sealing a memfd";
        close(hi);
        return -1;
    }
    return hi;
}

int main(int argc, char **argv)
{
    struct wsl_frame f;
    struct wsl_frame_rec rec;
    unsigned char hdr[WSL_FRAME_MAGIC_LEN];
    int at[WSL_FRAME_FD_MAX + 1];
    const char *why = NULL;

    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("sbx-wsl2-open stream %.7s\n", WSL_FRAME_MAGIC);
        return 0;
    }
    if (argc < 3 || argv[1][0] != '/')
        return fail(
                "usage: sbx-wsl2-open /ABS/PATH/bwrap BWRAP-OPTIONS... (stream on stdin)", NULL);
    for (int i = 0; i <= WSL_FRAME_FD_MAX; i++)
        at[i] = -1;
    wsl_frame_init(&f);
    if (read_exact(hdr, WSL_FRAME_MAGIC_LEN) < 0)
        return fail("stdin ended before the stream", strerror(errno));
    if (wsl_frame_magic(&f, hdr, &why) < 0)
        return fail(why, NULL);
    while (!f.ended) {
        if (read_exact(hdr, WSL_FRAME_HDR) < 0)
            return fail("stdin ended inside the stream", strerror(errno));
        if (wsl_frame_header(&f, hdr, &rec, &why) < 0)
            return fail(why, NULL);
        if (rec.type == WSL_FRAME_FD && (at[rec.fd] = blob(rec.len, &why)) < 0)
            return fail(why, strerror(errno));
    }
    /* Each blob at its number; nothing else above stderr survives exec. */
    for (int fd = 3; fd <= WSL_FRAME_FD_MAX; fd++) {
        if (at[fd] >= 0 && dup2(at[fd], fd) != fd)
            return fail("dup2", strerror(errno));
        if (at[fd] < 0)
            close(fd);
    }
    if (syscall(SYS_close_range, (unsigned)WSL_FRAME_FD_MAX + 1, ~0U, 0) < 0)
        for (int fd = WSL_FRAME_FD_MAX + 1; fd < 1024; fd++)
            close(fd);
    {
        const char *bwrap = argv[1];

        argv[1] = "bwrap";
        execv(bwrap, argv + 1);
        return fail("cannot execute bwrap", strerror(errno));
    }
}
