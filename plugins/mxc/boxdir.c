/* SPDX-License-Identifier: MIT */
/*
 * boxdir.c: a box's directory on the host. MXC binds host paths into its
 * box at their own path, so the workspace and the agent live in a fresh
 * directory per box (mkdtemp), made before the executor starts and removed
 * after everything in the box has died. Removal follows no symlink and
 * keeps a bounded number of descriptors however deep the box nested its
 * directories (deeper ones are moved up and removed on a later pass).
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

#define RM_DEPTH  32   /* directory levels open at once while removing */
#define RM_PASSES 4096 /* top-level passes: each removes what it moved up */

struct rm {
    int top;        /* the box directory */
    unsigned moved; /* subtrees moved up to the top so far */
};

static void rm_dir(struct rm *r, int dfd, const char *name, int depth)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct dirent *e;
    DIR *d;

    if (fd < 0)
        return;
    fchmod(fd, 0700); /* a box may have taken its own write permission away */
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    while ((e = readdir(d))) {
        char up[32];

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(fd, e->d_name, 0) == 0 || errno != EISDIR)
            continue;
        if (depth < RM_DEPTH) {
            rm_dir(r, fd, e->d_name, depth + 1);
        } else {
            snprintf(up, sizeof(up), ".deep-%u", r->moved++);
            renameat(fd, e->d_name, r->top, up);
        }
    }
    closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Empty the directory open at top; true when it is empty. */
static bool rm_contents(int top)
{
    struct rm r = {.top = top};

    for (int pass = 0; pass < RM_PASSES; pass++) {
        int fd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd < 0 ? NULL : fdopendir(fd);
        struct dirent *e;
        bool any = false;

        if (!d) {
            if (fd >= 0)
                close(fd);
            return false;
        }
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            any = true;
            if (unlinkat(top, e->d_name, 0) < 0 && errno == EISDIR)
                rm_dir(&r, top, e->d_name, 1);
        }
        closedir(d);
        if (!any)
            return true;
    }
    return false;
}

static void rm_path(const struct sbx_host *h, const char *path)
{
    int top = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (top >= 0) {
        fchmod(top, 0700);
        if (!rm_contents(top))
            h->log(h, SBX_LOG_WARN, "cannot empty the box directory %s", path);
        close(top);
    }
    if (rmdir(path) < 0 && errno != ENOENT)
        h->log(h, SBX_LOG_WARN, "cannot remove the box directory %s: %s", path, strerror(errno));
}

void mxc_dir_remove(const struct sbx_host *h, struct mxc_dir *d)
{
    if (d->path[0])
        rm_path(h, d->path);
    d->path[0] = '\0';
}

/* Copy the core's agent (an fd at offset 0) into the box directory. */
static int copy_agent(const struct sbx_host *h, int dir, struct sbx_err *err)
{
    int in = -1, out, r = 0;
    char buf[65536];
    ssize_t n;

    if (h->agent_fd(h, &in, err) < 0)
        return err->rc;
    out = openat(dir, "sbx-agent", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0555);
    if (out < 0)
        r = jail_fail(err, SBX_E_IO, errno, "cannot create the agent's copy: %s", strerror(errno));
    while (r == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || write(out, buf, (size_t)n) != n)
            r = jail_fail(err, SBX_E_IO, errno, "cannot copy the agent: %s", strerror(errno));
    }
    if (out >= 0 && close(out) < 0 && r == 0)
        r = jail_fail(err, SBX_E_IO, errno, "cannot copy the agent: %s", strerror(errno));
    close(in);
    return r;
}

/* The workspace: the sandbox uid's when we are root (the executor runs as
 * it), the directory itself then only traversable by others. */
static int make_workspace(const struct mxc_state *st, int dir, struct sbx_err *err)
{
    uint32_t uid, gid;

    if (mkdirat(dir, "workspace", 0700) < 0)
        return jail_fail(err, SBX_E_IO, errno, "cannot make the workspace: %s", strerror(errno));
    if (geteuid() != 0)
        return 0;
    st->h->sandbox_ids(st->h, &uid, &gid);
    if (fchownat(dir, "workspace", uid, gid, AT_SYMLINK_NOFOLLOW) < 0 || fchmod(dir, 0711) < 0)
        return jail_fail(err, SBX_E_IO, errno, "cannot hand the workspace to the sandbox uid: %s",
                strerror(errno));
    return 0;
}

int mxc_dir_make(const struct mxc_state *st, const char *id, struct mxc_dir *d, struct sbx_err *err)
{
    int n = snprintf(d->path, sizeof(d->path), "%s/" MXC_DIR_PREFIX "%s-XXXXXX", st->work_dir, id);
    int dir, r;

    if (n < 0 || (size_t)n >= sizeof(d->path)) {
        d->path[0] = '\0';
        return jail_fail(err, SBX_E_LIMIT, 0, "the box directory's name is too long");
    }
    if (!mkdtemp(d->path)) {
        r = errno;
        d->path[0] = '\0';
        return jail_fail(err, SBX_E_IO, r, "cannot make a box directory in %s: %s", st->work_dir,
                strerror(r));
    }
    snprintf(d->agent, sizeof(d->agent), "%s/sbx-agent", d->path);
    snprintf(d->workspace, sizeof(d->workspace), "%s/workspace", d->path);
    dir = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        r = jail_fail(err, SBX_E_IO, errno, "cannot open %s: %s", d->path, strerror(errno));
    else
        r = copy_agent(st->h, dir, err);
    if (r == 0)
        r = make_workspace(st, dir, err);
    if (dir >= 0)
        close(dir);
    if (r < 0)
        mxc_dir_remove(st->h, d);
    return r;
}

void mxc_dir_sweep(const struct mxc_state *st)
{
    const struct sbx_host *h = st->h;
    DIR *d = opendir(st->work_dir);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d))) {
        const char *rest = e->d_name + strlen(MXC_DIR_PREFIX);
        char path[sizeof(((struct mxc_dir *)0)->path)];
        struct stat s;

        if (strncmp(e->d_name, MXC_DIR_PREFIX, strlen(MXC_DIR_PREFIX)) != 0 ||
                h->instance_dead(h, rest) != 1)
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", st->work_dir, e->d_name) >= (int)sizeof(path))
            continue;
        /* only our own: another user's server judges its own directories */
        if (lstat(path, &s) == 0 && S_ISDIR(s.st_mode) && s.st_uid == geteuid()) {
            h->log(h, SBX_LOG_INFO, "removing %s, left by a dead instance", path);
            rm_path(h, path);
        }
    }
    closedir(d);
}
