/* SPDX-License-Identifier: MIT */
/*
 * poll.h for the Windows build: poll(2) over C runtime descriptors of
 * anonymous pipes and files (win_base.c), which is what the agent channel
 * waits on there. Windows cannot wait on an anonymous pipe's readability,
 * so this polls: PeekNamedPipe for POLLIN (POLLHUP once the other end is
 * closed), a pipe's or file's write end always reads as POLLOUT (writes
 * block until the reader takes them, as the CRT's do), a file is always
 * readable; between looks it sleeps 1 ms, so a wait costs up to that much
 * latency and a little CPU. A negative fd is skipped, as in poll(2).
 */
#ifndef SBX_WIN_POLL_H
#define SBX_WIN_POLL_H

#define POLLIN   0x001
#define POLLPRI  0x002
#define POLLOUT  0x004
#define POLLERR  0x008
#define POLLHUP  0x010
#define POLLNVAL 0x020

struct pollfd {
    int fd;
    short events;
    short revents;
};

typedef unsigned long nfds_t;

int win_poll(struct pollfd *fds, nfds_t n, int timeout_ms);
#define poll win_poll

#endif
