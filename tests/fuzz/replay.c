/* SPDX-License-Identifier: MIT */
/*
 * replay.c: run any libFuzzer target without libFuzzer. Each argument is a
 * file, or a directory whose regular files (not hidden, not recursive) are
 * fed one by one to LLVMFuzzerTestOneInput, each in a buffer of exactly its
 * size so sanitizers catch overreads. Lets ordinary test runs (gcc,
 * valgrind) replay seed corpora. Exit status 1 if an argument cannot be
 * read; a bug in the target shows as a crash or an abort.
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

#define REPLAY_MAX_BYTES (64u * 1024u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Feed one file to the target; 0, or -1 after printing why. */
static int replay_file(int dfd, const char *name, const char *shown)
{
    struct stat st;
    uint8_t *buf;
    size_t len = 0;
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            (uintmax_t)st.st_size > REPLAY_MAX_BYTES) {
        fprintf(stderr, "replay: %s: %s\n", shown,
                fd < 0 ? strerror(errno) : "not a regular file of at most 64 MiB");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    buf = malloc((size_t)st.st_size + 1); /* +1: malloc(0) may return NULL */
    while (buf && len < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (!buf || len != (size_t)st.st_size) {
        fprintf(stderr, "replay: %s: %s\n", shown, buf ? "short read" : "out of memory");
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int replay_dir(const char *path, size_t *count)
{
    DIR *d = opendir(path);
    int rc = 0;

    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        char shown[4096];
        struct stat st;

        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
            continue;
        snprintf(shown, sizeof(shown), "%s/%s", path, e->d_name);
        if (replay_file(dirfd(d), e->d_name, shown) < 0)
            rc = -1;
        else
            (*count)++;
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int rc = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int r;

        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            r = replay_dir(argv[i], &count);
        } else {
            r = replay_file(AT_FDCWD, argv[i], argv[i]);
            count += r == 0;
        }
        if (r < 0)
            rc = 1;
    }
    fprintf(stderr, "replay: %zu inputs\n", count);
    return rc;
}
