/* SPDX-License-Identifier: MIT */
/*
 * run_win.c: the WSL2 plugin's boxes in its Windows build (the Linux build
 * takes plugins/bwrap/run.c, whose WSL2 mode this is, less what only the
 * local bubblewrap needs: the info and block descriptors, pidfds, pasta).
 * The same argv (bwrap_translate in WSL2 mode), the same launcher spawn
 * through the host table, the same stream down the launcher's stdin to the
 * opener in the distribution (plugins/common/wslframe.h: the seccomp
 * filter, the agent, the generated /etc files, the limits), then the
 * agent's channel on the same pipes (jailbox.c). Ending a box: Windows
 * sends no SIGTERM, so the host table's kill ends the launcher's whole
 * Job Object at once; what that does to the opener in the distribution
 * (the box's teardown there) is wsl.exe's business and unverified: WSL is
 * said to end the Linux process it started when wsl.exe ends. Windows
 * build only (plugins/wsl2/CMakeLists.txt).
 */
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include <errno.h>
#include <io.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bwrap.h"
#include "wslsend.h"

#ifndef SIGKILL
#define SIGKILL 9 /* the ABI's signal numbers are Linux's */
#endif

#define CHILD_FD_BASE 3

struct bwrap_box {
    struct jail_box jb; /* first: channel and launcher (jailbox.h) */
    struct bwrap_state *st;
};

static const struct jail_kind wsl_kind = {.launcher = "wsl.exe (bwrap)",
        .term_grace_ms = 0, /* the kill ends the Job Object at once */
        .kill = bwrap_box_kill,
        .close = bwrap_box_close,
        .reap = NULL,
        .diag_error = jail_bwrap_diag_error,
        .stats_line = jail_wsl_stats_line};

static const char passwd_data[] = JAIL_PASSWD;
static const char group_data[] = JAIL_GROUP;
static const char hosts_data[] = JAIL_HOSTS;

/* Blobs for bwrap, in child fd order from CHILD_FD_BASE (as run.c's). */
enum { FD_SECCOMP, FD_AGENT, FD_PASSWD, FD_GROUP, FD_HOSTS, FD_COUNT };

static void fds_close(int *fd)
{
    for (int i = 0; i < FD_COUNT; i++)
        if (fd[i] >= 0)
            _close(fd[i]), fd[i] = -1;
}

static int fds_open(
        const struct sbx_host *h, const struct sbx_box_spec *spec, int *fd, struct sbx_err *err)
{
    bool zygote =
            SBX_HAS_FIELD(struct sbx_box_spec, spec, flags) && (spec->flags & SBX_BOX_ZYGOTE) != 0;

    if (zygote) /* its filter and capabilities are not carried over here yet */
        return sbx_err_fill(err, SBX_E_UNSUPPORTED, 0, "zygote boxes: not from Windows yet");
    if (h->seccomp_bpf_fd(h, &fd[FD_SECCOMP], err) < 0 || h->agent_fd(h, &fd[FD_AGENT], err) < 0 ||
            h->memfd_new(h, "passwd", passwd_data, sizeof(passwd_data) - 1, &fd[FD_PASSWD], err) <
                    0 ||
            h->memfd_new(h, "group", group_data, sizeof(group_data) - 1, &fd[FD_GROUP], err) < 0 ||
            h->memfd_new(h, "hosts", hosts_data, sizeof(hosts_data) - 1, &fd[FD_HOSTS], err) < 0)
        return err->rc;
    return 0;
}

static int spawn_launcher(struct bwrap_box *b, const struct sbx_box_spec *spec, const int *fd,
        int *child, struct sbx_err *err)
{
    const struct sbx_host *h = b->jb.h;
    struct bwrap_argv *argv = malloc(sizeof(*argv)); /* ~10 KiB: not on the stack */
    int r;

    if (!argv)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    for (int i = 0; i < FD_COUNT; i++)
        child[i] = fd[i] >= 0 ? CHILD_FD_BASE + i : -1;
    struct bwrap_input in = {.seccomp_fd = child[FD_SECCOMP],
            .agent_fd = child[FD_AGENT],
            .passwd_fd = child[FD_PASSWD],
            .group_fd = child[FD_GROUP],
            .hosts_fd = child[FD_HOSTS],
            .info_fd = -1,
            .block_fd = -1,
            .wsl = b->st->wsl};

    jail_input_init(&in.box, spec, &b->st->tops);
    r = bwrap_translate(&in, argv, err);
    if (r == 0) {
        struct sbx_spawn sp = {.size = sizeof(sp),
                .path = b->st->launcher,
                .argv = argv->argv,
                .envp = spec->envp,
                .stdin_fd = SBX_FD_PIPE,
                .stdout_fd = SBX_FD_PIPE,
                .stderr_fd = SBX_FD_PIPE,
                .flags = SBX_SPAWN_PDEATHSIG};

        r = h->proc_spawn(h, &sp, &b->jb.proc, err);
    }
    free(argv);
    return r;
}

int bwrap_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    struct bwrap_state *st = state;
    struct bwrap_box *b = calloc(1, sizeof(*b));
    int fd[FD_COUNT], child[FD_COUNT], r;

    if (!b)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (!st->wsl) {
        free(b);
        return sbx_err_fill(err, SBX_E_INTERNAL, 0, "no WSL2 distribution (the probe sets it)");
    }
    jail_box_init(&b->jb, st->h);
    b->st = st;
    for (int i = 0; i < FD_COUNT; i++)
        fd[i] = -1;
    r = fds_open(st->h, spec, fd, err);
    if (r == 0)
        r = spawn_launcher(b, spec, fd, child, err);
    if (r == 0) {
        jail_chan_take(st->h, b->jb.proc, &b->jb.chan);
        r = wsl_stream_send(
                b->jb.chan.wfd, fd, child, FD_COUNT, st->wsl_cgroup ? spec->policy : NULL, err);
    }
    fds_close(fd);
    if (r < 0) /* the opener's own message ("wsl2-open: ...") says more than ours */
        return jail_box_open_failed(b, &wsl_kind, r, err);
    *ret_box = b;
    return 0;
}

int bwrap_box_kill(void *box)
{
    struct bwrap_box *b = box;

    if (b->jb.proc)
        b->jb.h->proc_signal(b->jb.proc, SIGKILL); /* the launcher's whole Job Object */
    return 0;
}

int bwrap_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct bwrap_box *b = box;
    int r = jail_box_close(&b->jb, &wsl_kind, stats, err);

    free(b);
    return r;
}
