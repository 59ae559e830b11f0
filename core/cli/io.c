/* SPDX-License-Identifier: MIT */
/*
 * io.c: the subcommands' file and stream helpers (cli.h): reading a whole
 * file or standard input with a cap, writing everything to an fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define READ_CAP (256u * 1024u * 1024u) /* a program, stdin or file read whole */

static char *read_all(int fd, size_t *ret_len)
{
    size_t len = 0, alloc = 0;
    char *buf = NULL;

    for (;;) {
        ssize_t n;

        if (len + 65536 + 1 > alloc) {
            char *nb;

            if (alloc >= READ_CAP) {
                free(buf);
                errno = EFBIG;
                return NULL;
            }
            alloc = alloc ? alloc * 2 : 65536 * 2;
            nb = realloc(buf, alloc);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        n = read(fd, buf + len, alloc - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *ret_len = len;
    return buf;
}

char *cli_read_path(const char *path, size_t *ret_len)
{
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    char *buf;

    if (fd < 0)
        return NULL;
    buf = read_all(fd, ret_len);
    if (fd != STDIN_FILENO)
        close(fd);
    return buf;
}

void cli_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}
