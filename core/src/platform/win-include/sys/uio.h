/* SPDX-License-Identifier: MIT */
/*
 * sys/uio.h for the Windows build: writev(2) as one write per piece
 * (win_base.c), enough for the MCP stream's line and its newline.
 */
#ifndef SBX_WIN_SYS_UIO_H
#define SBX_WIN_SYS_UIO_H

#include <stddef.h>
#include <sys/types.h>

struct iovec {
    void *iov_base;
    size_t iov_len;
};

ssize_t writev(int fd, const struct iovec *iov, int n);

#endif
