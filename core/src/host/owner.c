/* SPDX-License-Identifier: MIT */
/*
 * owner.c: the instance's name and the judgement of other instances'
 * names (owner.h).
 */
#include "host/owner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Up to len - 1 bytes of a small /proc file, NUL-terminated: the length,
 * or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -errno;
    n = read(fd, buf, len - 1);
    if (n < 0)
        n = -errno;
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

/* Field 22 (starttime) of /proc/PID/stat, counted after the last ')' (the
 * command name may hold spaces and parentheses): 0 when gone, 1 when
 * read, -1 when it could not be read. */
static int start_time(const char *pid, uint64_t *ret)
{
    char path[64], buf[1024];
    const char *p;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    n = read_small(path, buf, sizeof(buf));
    if (n == -ENOENT || n == -ESRCH)
        return 0;
    p = n > 0 ? strrchr(buf, ')') : NULL;
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%" SCNu64, ret) != 1)
        return -1;
    return 1;
}

void owner_scope(char out[OWNER_SCOPE_LEN + 1])
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    char boot[64], text[128];
    struct stat st;

    if (read_small("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) <= 0)
        boot[0] = '\0';
    boot[strcspn(boot, "\n")] = '\0';
    if (stat("/proc/self/ns/pid", &st) < 0)
        st.st_ino = 0;
    snprintf(text, sizeof(text), "%s/%" PRIu64, boot, (uint64_t)st.st_ino);
    for (const char *p = text; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    snprintf(out, OWNER_SCOPE_LEN + 1, "%016" PRIx64, h);
}

void owner_make(char *out, size_t len)
{
    char scope[OWNER_SCOPE_LEN + 1];
    uint64_t start = 0;

    owner_scope(scope);
    (void)start_time("self", &start);
    snprintf(out, len, "p%dt%" PRIu64 "h%s", (int)getpid(), start, scope);
}

size_t owner_parse(const char *name, struct owner *ret)
{
    char back[64];
    int n = 0;
    size_t len;

    memset(ret, 0, sizeof(*ret));
    if (sscanf(name, "p%" SCNu64 "t%" SCNu64 "%n", &ret->pid, &ret->start, &n) != 2 || n <= 0)
        return 0;
    snprintf(back, sizeof(back), "p%" PRIu64 "t%" PRIu64, ret->pid, ret->start);
    len = strlen(back);
    if ((size_t)n != len || strncmp(back, name, len) != 0)
        return 0;
    if (name[len] == 'h') {
        size_t k = strspn(name + len + 1, "0123456789abcdef");

        if (k != OWNER_SCOPE_LEN)
            return 0;
        memcpy(ret->scope, name + len + 1, OWNER_SCOPE_LEN);
        len += 1 + OWNER_SCOPE_LEN;
    }
    return len;
}

bool owner_dead(const struct owner *o, const char *mine)
{
    char pid[24];
    uint64_t start;

    if (o->scope[0] && strcmp(o->scope, mine) != 0)
        return false; /* not ours to judge */
    if (o->pid == 0 || o->pid > INT_MAX)
        return true;
    snprintf(pid, sizeof(pid), "%" PRIu64, o->pid);
    switch (start_time(pid, &start)) {
    case 0: return true;
    case 1: return start != o->start;
    default: return false;
    }
}
