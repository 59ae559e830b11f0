/* SPDX-License-Identifier: MIT */
/*
 * save_artifacts.c: `run --artifacts DIR` writes the files the run left
 * (its artifacts, kept by the core for this process) beneath DIR, each at
 * its path in the workspace. Paths come from the sandbox's listing, so
 * they are plain names joined by '/'; each step is opened beneath DIR
 * without following a symlink, so nothing already in DIR redirects a
 * write elsewhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Write data to path beneath dirfd, making directories; 0 or -1 (errno). */
static int write_beneath(int dirfd, const char *path, const char *data, size_t len)
{
    char *copy = strdup(path), *c = copy, *slash;
    int dir = dirfd, fd = -1, e;

    if (!copy)
        return -1;
    while ((slash = strchr(c, '/'))) {
        int next;

        *slash = '\0';
        if (mkdirat(dir, c, 0755) < 0 && errno != EEXIST)
            break;
        next = openat(dir, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir != dirfd)
            close(dir);
        dir = next;
        if (dir < 0)
            break;
        c = slash + 1;
    }
    if (dir >= 0 && !slash)
        fd = openat(dir, c, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    e = errno;
    if (dir >= 0 && dir != dirfd)
        close(dir);
    free(copy);
    if (fd < 0) {
        errno = e;
        return -1;
    }
    cli_write_all(fd, data, len);
    return close(fd);
}

int cli_save_artifacts(struct sbx_runtime *rt, const struct sbx_execution *ex, const char *dir)
{
    int dirfd, failed = 0;
    size_t saved = 0;

    if (ex->n_artifacts == 0)
        return 0;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "llm-sandbox: cannot create '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        fprintf(stderr, "llm-sandbox: cannot open '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < ex->n_artifacts; i++) {
        const struct sbx_artifact *a = &ex->artifacts[i];
        struct sbx_error *err = NULL;
        const char *mime;
        char *data = NULL;
        size_t len = 0;
        int rc = a->uri ? sbx_artifact_read(rt, &(struct sbx_session_ref){NULL, a->uri}, &data,
                                  &len, &mime, &err)
                        : 1;

        if (rc == 0 && write_beneath(dirfd, a->path, data, len) == 0) {
            saved++;
        } else {
            fprintf(stderr, "llm-sandbox: artifact '%s' not saved: %s\n", a->path,
                    rc != 0 ? "not kept (LLM_SANDBOX_ARTIFACTS_BYTES, LLM_SANDBOX_FILE_MAX)"
                            : strerror(errno));
            failed = -1;
        }
        free(data);
        sbx_error_free(err);
    }
    close(dirfd);
    return failed;
}
