/* SPDX-License-Identifier: MIT */
/*
 * cgroup_fs.c: reading and writing cgroupfs for the cgroup service
 * (cgroup_int.h): paths, whole-file reads, single-write control files,
 * /proc/self/cgroup, event counters. Fake trees (tests): control files are
 * created on write and unlinked before rmdir, since no kernel provides or
 * owns them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/dynbuf.h"
#include "base/error.h"
#include "base/util.h"
#include "host/cgroup_int.h"

#define CG_READ_CAP (4u << 20)

int cg_oom(struct sbx_error **err)
{
    return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

/* "<prefix><path>: <strerror(errno)>" as SBX_E_BACKEND. */
int cg_sys_fail(struct sbx_error **err, const char *prefix, const char *path)
{
    int e = errno;

    return sbx_error_set(err, SBX_E_BACKEND, e, "%s%s: %s", prefix, path, strerror(e));
}

/* a + "/" + b without doubled slashes. (transfer full) */
char *cg_path_join(const char *a, const char *b)
{
    size_t alen = strlen(a);
    char *r = NULL;

    while (alen > 1 && a[alen - 1] == '/')
        alen--;
    while (*b == '/')
        b++;
    if (asprintf(&r, "%.*s%s%s", (int)alen, a, *b ? "/" : "", b) < 0)
        return NULL;
    return r;
}

bool cg_has_file(const char *dir, const char *name)
{
    cleanup_free char *path = cg_path_join(dir, name);

    return path && access(path, F_OK) == 0;
}

/* Read a whole file, NUL-terminated: 0 or -errno. (transfer full) */
int cg_read_all(const char *path, char **ret)
{
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct dynbuf b;
    char chunk[4096];

    if (fd < 0)
        return -errno;
    dynbuf_init(&b, CG_READ_CAP);
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && dynbuf_append(&b, chunk, (size_t)n) < 0)) {
            int e = n < 0 ? errno : EFBIG;

            dynbuf_done(&b);
            return -e;
        }
        if (n == 0)
            break;
    }
    *ret = dynbuf_take(&b, NULL);
    return *ret ? 0 : -ENOMEM;
}

/* One write(2) of val, as cgroupfs wants. Fake trees get the file
 * created, since no kernel provides it. err may be NULL (best effort). */
int cg_write_ctl(
        const char *dir, const char *name, const char *val, bool fake, struct sbx_error **err)
{
    cleanup_free char *path = cg_path_join(dir, name);
    cleanup_close int fd = -1;
    size_t len = strlen(val);
    ssize_t n;

    if (!path)
        return cg_oom(err);
    fd = open(path, O_WRONLY | O_CLOEXEC | (fake ? O_CREAT | O_TRUNC : 0), 0644);
    n = fd < 0 ? -1 : write(fd, val, len);
    if (n == (ssize_t)len)
        return 0;
    if (n >= 0)
        errno = EIO; /* a short write to a control file */
    return sbx_error_set(
            err, SBX_E_BACKEND, errno, "writing '%s' to %s: %s", val, path, strerror(errno));
}

/* Cut the next line out of *cur in place; NULL at the end. */
char *cg_next_line(char **cur)
{
    char *s = *cur, *nl;

    if (!*s)
        return NULL;
    nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        *cur = nl + 1;
    } else {
        *cur = s + strlen(s);
    }
    return s;
}

bool cg_has_word(const char *list, const char *word, const char *seps)
{
    size_t n = strlen(word);

    for (const char *p = list + strspn(list, seps); *p; p += strspn(p, seps)) {
        size_t len = strcspn(p, seps);

        if (len == n && strncmp(p, word, n) == 0)
            return true;
        p += len;
    }
    return false;
}

/* Our path in the hierarchy holding ctrl, from "ID:CTRLS:PATH" lines of
 * /proc/self/cgroup; ctrl NULL picks the v2 line "0::PATH". 0 or -errno. */
static int self_path(const char *file, const char *ctrl, char **ret)
{
    cleanup_free char *buf = NULL;
    char *cur;
    int r = cg_read_all(file, &buf);

    if (r < 0)
        return r;
    cur = buf;
    for (char *line = cg_next_line(&cur); line; line = cg_next_line(&cur)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

        if (!c2)
            continue;
        *c2 = '\0';
        if (ctrl ? cg_has_word(c1 + 1, ctrl, ",") : (c1 == line + 1 && line[0] == '0' && !c1[1])) {
            *ret = strdup(c2 + 1);
            return *ret ? 0 : -ENOMEM;
        }
    }
    return -ENOENT;
}

/* Our cgroup's directory in a hierarchy. Without a cgroup namespace, a
 * container sees the host's path in /proc/self/cgroup while its own cgroup
 * is mounted at the hierarchy root: then the root is ours. */
int cg_own_dir(
        const char *hier, const char *self, const char *ctrl, char **ret, struct sbx_error **err)
{
    cleanup_free char *rel = NULL;
    int r = self_path(self, ctrl, &rel);

    if (r == -ENOMEM)
        return cg_oom(err);
    if (r < 0)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, -r, "%s: no %s%s line: %s", self,
                ctrl ? ctrl : "cgroup v2", ctrl ? "" : " \"0::\"", strerror(-r));
    *ret = cg_path_join(hier, rel);
    if (*ret && access(*ret, F_OK) < 0 && errno == ENOENT) {
        free(*ret);
        *ret = strdup(hier);
    }
    return *ret ? 0 : cg_oom(err);
}

/* Unlink the files a fake tree holds (a real cgroupfs refuses, and needs
 * no help), then rmdir. 0 or -errno. */
int cg_remove_dir(const char *path, bool fake)
{
    if (fake) {
        cleanup_dir DIR *d = opendir(path);

        for (struct dirent *de = d ? readdir(d) : NULL; de; de = readdir(d))
            (void)unlinkat(dirfd(d), de->d_name, 0); /* directories fail: fine */
    }
    return rmdir(path) < 0 ? -errno : 0;
}

/* mkdir the parent (it may exist) and prove we can create groups in it. */
int cg_parent_prepare(const char *parent, struct sbx_error **err)
{
    cleanup_free char *probe = NULL;

    if (mkdir(parent, 0755) < 0 && errno != EEXIST)
        return cg_sys_fail(err, "", parent);
    if (asprintf(&probe, "%s/probe-%ld", parent, (long)getpid()) < 0)
        return cg_oom(err);
    if (mkdir(probe, 0755) < 0 && errno != EEXIST)
        return cg_sys_fail(err, "", probe);
    if (rmdir(probe) < 0)
        return cg_sys_fail(err, "", probe);
    return 0;
}

/* 1 when the "key N" line of dir/file has N > 0, 0 when N is 0, -1 when
 * the file or the line is missing. */
int cg_event_seen(const char *dir, const char *file, const char *key)
{
    cleanup_free char *path = cg_path_join(dir, file);
    cleanup_free char *buf = NULL;
    size_t klen = strlen(key);
    char *cur;
    uint64_t n;

    if (!path || cg_read_all(path, &buf) < 0)
        return -1;
    cur = buf;
    for (char *line = cg_next_line(&cur); line; line = cg_next_line(&cur))
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
            return parse_u64(line + klen + 1, &n) < 0 ? -1 : n > 0;
    return -1;
}
