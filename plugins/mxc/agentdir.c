/* SPDX-License-Identifier: MIT */
/*
 * agentdir.c: the agent where MXC boxes can bind it. MXC binds host paths
 * into a box at their own path, read by the executor as the sandbox uid, so
 * each server instance keeps one copy of the core's agent (mode 0555) in a
 * directory of its own in work_dir, bound read-only into every box, and
 * removes it when unloaded; a probe removes what dead instances of the same
 * user left (a crash, a kill -9). Nothing a box writes lands here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mxc.h"

#define AGENT_NAME "sbx-agent"

/* Remove a directory of ours holding only the agent's copy. */
static void remove_dir(const struct sbx_host *h, const char *path)
{
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (dir >= 0) {
        unlinkat(dir, AGENT_NAME, 0);
        close(dir);
    }
    if (rmdir(path) < 0 && errno != ENOENT)
        h->log(h, SBX_LOG_WARN, "cannot remove %s: %s", path, strerror(errno));
}

static int copy_agent(const struct sbx_host *h, int dir, struct sbx_err *err)
{
    int in = -1, out, r = 0;
    char buf[65536];
    ssize_t n;

    if (h->agent_fd(h, &in, err) < 0)
        return err->rc;
    out = openat(dir, AGENT_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0555);
    if (out < 0)
        r = sbx_err_fill(
                err, SBX_E_IO, errno, "cannot create the agent's copy: %s", strerror(errno));
    while (r == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || write(out, buf, (size_t)n) != n)
            r = sbx_err_fill(err, SBX_E_IO, errno, "cannot copy the agent: %s", strerror(errno));
    }
    if (out >= 0 && close(out) < 0 && r == 0)
        r = sbx_err_fill(err, SBX_E_IO, errno, "cannot copy the agent: %s", strerror(errno));
    close(in);
    return r;
}

int mxc_agent_make(struct mxc_state *st, struct sbx_err *err)
{
    const struct sbx_host *h = st->h;
    int n = snprintf(st->agent_dir, sizeof(st->agent_dir), "%s/" MXC_DIR_PREFIX "%s-XXXXXX",
            st->work_dir, h->instance_id(h));
    int dir, r;

    if (n < 0 || (size_t)n >= sizeof(st->agent_dir) || !mkdtemp(st->agent_dir)) {
        r = sbx_err_fill(err, SBX_E_IO, errno, "cannot make a directory in %s: %s", st->work_dir,
                strerror(errno));
        st->agent_dir[0] = '\0';
        return r;
    }
    snprintf(st->agent, sizeof(st->agent), "%s/" AGENT_NAME, st->agent_dir);
    dir = open(st->agent_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        r = sbx_err_fill(
                err, SBX_E_IO, errno, "cannot open %s: %s", st->agent_dir, strerror(errno));
    else
        r = copy_agent(h, dir, err);
    /* as root the executor runs as the sandbox uid: it must reach the copy */
    if (r == 0 && geteuid() == 0 && fchmod(dir, 0711) < 0)
        r = sbx_err_fill(err, SBX_E_IO, errno, "chmod %s: %s", st->agent_dir, strerror(errno));
    if (dir >= 0)
        close(dir);
    if (r < 0)
        mxc_agent_remove(st);
    return r;
}

void mxc_agent_remove(struct mxc_state *st)
{
    if (st->agent_dir[0])
        remove_dir(st->h, st->agent_dir);
    st->agent_dir[0] = st->agent[0] = '\0';
}

void mxc_agent_sweep(const struct mxc_state *st)
{
    const struct sbx_host *h = st->h;
    DIR *d = opendir(st->work_dir);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d))) {
        const char *rest = e->d_name + strlen(MXC_DIR_PREFIX);
        char path[sizeof(st->agent_dir)];
        struct stat s;

        if (strncmp(e->d_name, MXC_DIR_PREFIX, strlen(MXC_DIR_PREFIX)) != 0 ||
                h->instance_dead(h, rest) != 1 ||
                snprintf(path, sizeof(path), "%s/%s", st->work_dir, e->d_name) >= (int)sizeof(path))
            continue;
        /* only our own: another user's server judges its own directories */
        if (lstat(path, &s) == 0 && S_ISDIR(s.st_mode) && s.st_uid == geteuid()) {
            h->log(h, SBX_LOG_INFO, "removing %s, left by a dead instance", path);
            remove_dir(h, path);
        }
    }
    closedir(d);
}
