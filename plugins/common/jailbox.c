/* SPDX-License-Identifier: MIT */
/*
 * jailbox.c: a local jail's box (jailbox.h).
 */
#ifdef _WIN32
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include <io.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jailbox.h"

#ifndef SIGKILL
#define SIGKILL 9 /* Windows: the ABI's signal numbers are Linux's */
#endif

/* read(2) and write(2); Windows' C runtime counts in unsigned int. */
static int64_t fd_read(int fd, void *buf, size_t len)
{
#ifdef _WIN32
    return _read(fd, buf, len > 0x7fffffffu ? 0x7fffffffu : (unsigned)len);
#else
    return read(fd, buf, len);
#endif
}

static int64_t fd_write(int fd, const void *buf, size_t len)
{
#ifdef _WIN32
    return _write(fd, buf, len > 0x7fffffffu ? 0x7fffffffu : (unsigned)len);
#else
    return write(fd, buf, len);
#endif
}

#define CLOSE_WAIT_MS 2000 /* for the launcher to end after end of input */
#define DIAG_MAX      240

#define DIAG_READ_MAX (1u << 20) /* what is read of a launcher's stderr at most */

struct diag {
    const char *drop;
    int (*stats_line)(const char *line, struct sbx_box_stats *stats);
    struct sbx_box_stats *stats;
    char *out;
    size_t len, o;
    bool full;
};

static void diag_line(struct diag *d, const char *line)
{
    int w;

    if ((d->drop && strstr(line, d->drop)) || !line[0])
        return;
    if (d->stats_line && d->stats_line(line, d->stats))
        return;
    if (d->full) /* only stats lines may follow */
        return;
    w = snprintf(d->out + d->o, d->len - d->o, "%s%s", d->o ? "; " : "", line);
    if (w < 0 || (size_t)w >= d->len - d->o) { /* cut there, as snprintf left it */
        d->full = true;
        return;
    }
    d->o += (size_t)w;
}

void jail_read_diag_stats(int fd, const char *drop,
        int (*stats_line)(const char *line, struct sbx_box_stats *stats),
        struct sbx_box_stats *stats, char *out, size_t len)
{
    struct diag d = {
            .drop = drop, .stats_line = stats_line, .stats = stats, .out = out, .len = len};
    char buf[4096];
    size_t got = 0, total = 0;
    bool skipping = false; /* the rest of a line longer than buf */
    int64_t n;

    out[0] = '\0';
    /* line by line to the end (a stats line comes last, after whatever
     * else was written), keeping what fits in out */
    while (fd >= 0 && total < DIAG_READ_MAX &&
            (n = fd_read(fd, buf + got, sizeof(buf) - 1 - got)) > 0) {
        char *start = buf, *nl;

        total += (size_t)n;
        got += (size_t)n;
        while ((nl = memchr(start, '\n', got - (size_t)(start - buf)))) {
            *nl = '\0';
            if (!skipping)
                diag_line(&d, start);
            skipping = false;
            start = nl + 1;
        }
        got -= (size_t)(start - buf);
        memmove(buf, start, got);
        if (got == sizeof(buf) - 1) { /* a line longer than buf: its start only */
            buf[got] = '\0';
            if (!skipping)
                diag_line(&d, buf);
            skipping = true;
            got = 0;
        }
    }
    buf[got] = '\0';
    if (!skipping)
        diag_line(&d, buf);
}

void jail_read_diag(int fd, const char *drop, char *out, size_t len)
{
    jail_read_diag_stats(fd, drop, NULL, NULL, out, len);
}

void jail_chan_take(const struct sbx_host *h, struct sbx_proc *p, struct jail_chan *c)
{
    c->wfd = h->proc_fd(p, 0);
    c->rfd = h->proc_fd(p, 1);
    c->efd = h->proc_fd(p, 2);
#ifndef _WIN32 /* Windows' anonymous pipes do not block-free: jail_box_read peeks */
    fcntl(c->wfd, F_SETFL, O_NONBLOCK);
    fcntl(c->rfd, F_SETFL, O_NONBLOCK);
    fcntl(c->efd, F_SETFL, O_NONBLOCK);
#endif
}

void jail_chan_close(struct jail_chan *c)
{
    int *fds[] = {&c->wfd, &c->rfd, &c->efd};

    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

int jail_box_poll_fd(void *box)
{
    return ((struct jail_chan *)box)->rfd;
}

int jail_box_write_fd(void *box)
{
    return ((struct jail_chan *)box)->wfd;
}

#ifdef _WIN32
/* A read that does not block, as the channel's contract wants: what the
 * pipe holds now (at most len), -1 with EAGAIN when it holds nothing, 0
 * once the launcher's end is closed and drained. */
int64_t jail_box_read(void *box, void *buf, size_t len)
{
    int fd = ((struct jail_chan *)box)->rfd;
    DWORD avail = 0;

    if (!PeekNamedPipe((HANDLE)_get_osfhandle(fd), NULL, 0, NULL, &avail, NULL))
        return GetLastError() == ERROR_BROKEN_PIPE ? 0 : (errno = EIO, -1);
    if (avail == 0) {
        errno = EAGAIN;
        return -1;
    }
    return _read(fd, buf, (unsigned)(len < avail ? len : avail));
}
#else
int64_t jail_box_read(void *box, void *buf, size_t len)
{
    return fd_read(((struct jail_chan *)box)->rfd, buf, len);
}
#endif

int64_t jail_box_write(void *box, const void *buf, size_t len)
{
    return fd_write(((struct jail_chan *)box)->wfd, buf, len);
}

int jail_cgroup_new(const struct sbx_host *h, const struct sbx_box_spec *spec,
        struct sbx_cgroup **ret_cg, struct sbx_err *err)
{
    int r = h->cgroup_new(h, spec->id, spec->policy, ret_cg, err);

    if (r == SBX_E_UNAVAILABLE) { /* no cgroups here: rlimits instead */
        *ret_cg = NULL;
        memset(err->msg, 0, sizeof(err->msg));
        r = 0;
    }
    return r;
}

void jail_box_init(struct jail_box *b, const struct sbx_host *h)
{
    memset(b, 0, sizeof(*b));
    b->h = h;
    b->chan.rfd = b->chan.wfd = b->chan.efd = -1;
}

/* Wait for the launcher; kill it as the kind says when it lingers. */
static int launcher_end(struct jail_box *b, const struct jail_kind *k)
{
    const struct sbx_host *h = b->h;
    int status = 0;

    if (h->proc_wait(b->proc, CLOSE_WAIT_MS, &status) == 1)
        return status;
    k->kill(b);
    if (k->term_grace_ms > 0 && h->proc_wait(b->proc, k->term_grace_ms, &status) == 1)
        return status;
    if (k->term_grace_ms > 0)
        h->log(h, SBX_LOG_WARN, "%s ignored SIGTERM for %lld s; killing it", k->launcher,
                (long long)(k->term_grace_ms / 1000));
    if (b->cg)
        h->cgroup_kill(b->cg);
    h->proc_signal(b->proc, SIGKILL);
    h->proc_wait(b->proc, -1, &status);
    return status;
}

int jail_box_close(struct jail_box *b, const struct jail_kind *k, struct sbx_box_stats *stats,
        struct sbx_err *err)
{
    const struct sbx_host *h = b->h;
    char diag[DIAG_MAX];
    int status, r = 0;

    if (b->chan.wfd >= 0)
        close(b->chan.wfd); /* end of input: the agent kills everything and exits */
    b->chan.wfd = -1;
    if (b->proc) {
        status = launcher_end(b, k);
        if (k->reap)
            k->reap(b);
        jail_read_diag_stats(b->chan.efd, k->noise, k->stats_line, stats, diag, sizeof(diag));
        if (diag[0])
            h->log(h, SBX_LOG_DEBUG, "%s exited with status %d: %s", k->launcher, status, diag);
        if (status != 0 && k->diag_error)
            r = k->diag_error(diag, err);
    }
    if (b->cg) {
        stats->oom_killed = h->cgroup_oom_killed(b->cg);
        stats->pids_limited = h->cgroup_pids_limited(b->cg);
        h->cgroup_free(b->cg);
        b->cg = NULL;
    }
    h->proc_free(b->pasta);
    h->proc_free(b->proc);
    b->pasta = b->proc = NULL;
    jail_chan_close(&b->chan);
    return r;
}

int jail_box_open_failed(void *box, const struct jail_kind *k, int r, struct sbx_err *err)
{
    struct sbx_box_stats st = {.size = sizeof(st)};
    struct sbx_err cerr;

    sbx_err_init(&cerr);
    k->kill(box);
    if (k->close(box, &st, &cerr) < 0)
        sbx_err_fill(err, cerr.rc, cerr.sys_errno, "%s", cerr.msg);
    return r;
}

int jail_bwrap_diag_error(char *diag, struct sbx_err *err)
{
    return strstr(diag, "bwrap:") || strstr(diag, "wsl2-open:")
                   ? sbx_err_fill(err, SBX_E_BACKEND, 0, "%s", diag)
                   : 0;
}

int jail_wsl_stats_line(const char *line, struct sbx_box_stats *stats)
{
    int oom = 0, pids = 0;

    if (strncmp(line, "sbx-wsl2-stats ", 15) != 0)
        return 0;
    if (sscanf(line + 15, "oom_killed=%d pids_limited=%d", &oom, &pids) == 2 && oom >= -1 &&
            oom <= 1 && pids >= -1 && pids <= 1) {
        stats->oom_killed = oom;
        stats->pids_limited = pids;
    }
    return 1;
}
