/* SPDX-License-Identifier: MIT */
/*
 * tree.c: the processes below lxc-exec, to await after a kill. lxc-exec
 * runs bwrap, whose child is pid 1 of the box's pid namespace: when that
 * one dies the kernel kills every other process of the box, and its exit
 * completes only once they are all gone. Killing lxc-exec's process group
 * reaches both bwraps at once but returns before that; waiting on a pidfd
 * of each (POLLIN: exited) is what makes "killed" mean "gone" without a
 * cgroup (bwrap's run.c awaits its agent the same way).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mxc.h"

/* Add pidfds on pid's children (and theirs, depth levels down). */
static void watch_children(struct mxc_tree *t, int pid, int depth)
{
    char path[64], buf[1024], *p, *end;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    for (p = buf; t->n < MXC_TREE_MAX; p = end) {
        long child = strtol(p, &end, 10);
        int pidfd;

        if (end == p || child <= 0 || child > 0x3fffffff)
            break;
        pidfd = (int)syscall(SYS_pidfd_open, (int)child, 0);
        /* still the same process (it cannot change parents while ours lives) */
        if (pidfd >= 0 && jail_parent_of((int)child) != pid) {
            close(pidfd);
            continue;
        }
        if (pidfd >= 0)
            t->fd[t->n++] = pidfd;
        if (depth > 1)
            watch_children(t, (int)child, depth - 1);
    }
}

void mxc_tree_watch(struct mxc_tree *t, int pid)
{
    if (t->n == 0)
        watch_children(t, pid, 2);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mxc_tree_await(const struct sbx_host *h, struct mxc_tree *t, int64_t timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;

    for (size_t i = 0; i < t->n; i++) {
        struct pollfd pfd = {.fd = t->fd[i], .events = POLLIN};
        int64_t left = end - now_ms();
        int r;

        do
            r = poll(&pfd, 1, left > 0 ? (int)left : 0);
        while (r < 0 && errno == EINTR);
        if (r == 0)
            h->log(h, SBX_LOG_WARN, "a process of an MXC box still exiting after %lld ms",
                    (long long)timeout_ms);
        close(t->fd[i]);
    }
    t->n = 0;
}
