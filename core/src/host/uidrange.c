/* SPDX-License-Identifier: MIT */
/*
 * uidrange.c: per-sandbox host ids from a range, leased with flock(2)
 * (uidrange.h). Reads /etc and /proc, makes and locks files under the
 * lock directory; no logging. Error convention: base/error.h.
 */
#include "host/uidrange.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"

/* Processes seen in /proc running as an id of the range, per lease: more
 * are possible but then the range is busy anyway (flock decides). */
#define BUSY_MAX 512

struct uidrange {
    uint32_t first, count;
    char *lock_dir;
    uint32_t *taken; /* ids of the range host accounts use, sorted */
    size_t n_taken;
};

static bool in_range(const struct uidrange *u, unsigned long id)
{
    return id >= u->first && id - u->first < u->count;
}

static int add_taken(struct uidrange *u, unsigned long id)
{
    uint32_t *t;

    if (!in_range(u, id))
        return 0;
    for (size_t i = 0; i < u->n_taken; i++)
        if (u->taken[i] == id)
            return 0;
    t = realloc(u->taken, (u->n_taken + 1) * sizeof(*t));
    if (!t)
        return -1;
    u->taken = t;
    u->taken[u->n_taken++] = (uint32_t)id;
    return 0;
}

/* The numeric fields (3rd, and the 4th of passwd) of each line of an
 * /etc file; a missing file names nobody. */
static int read_accounts(struct uidrange *u, const char *etc_dir, const char *name, int fields)
{
    char path[512], line[1024];
    cleanup_fclose FILE *f = NULL;

    snprintf(path, sizeof(path), "%s/%s", etc_dir, name);
    f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    while (fgets(line, sizeof(line), f)) {
        char *p = line;

        /* name:password:ID[:GID:...]; fields may be empty */
        for (int field = 1; p && field <= 2 + fields; field++) {
            char *next = strchr(p, ':'), *end;
            unsigned long id;

            if (next)
                *next++ = '\0';
            if (field >= 3) {
                errno = 0;
                id = strtoul(p, &end, 10);
                if (errno == 0 && end != p && (*end == '\0' || *end == '\n') &&
                        add_taken(u, id) < 0)
                    return -ENOMEM;
            }
            p = next;
        }
    }
    return 0;
}

int uidrange_new(uint32_t first, uint32_t count, const char *lock_dir, const char *etc_dir,
        struct uidrange **ret, struct sbx_error **err)
{
    struct uidrange *u;
    struct stat st;
    int r;

    if (count == 0 || first == 0 || (uint64_t)first + count > UINT32_MAX)
        return sbx_error_set(
                err, SBX_E_INVALID, 0, "the uid range %u:%u is empty or too high", first, count);
    u = calloc(1, sizeof(*u));
    if (!u || !(u->lock_dir = strdup(lock_dir))) {
        free(u);
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    u->first = first;
    u->count = count;
    r = read_accounts(u, etc_dir, "passwd", 2);
    if (r == 0)
        r = read_accounts(u, etc_dir, "group", 1);
    if (r < 0) {
        uidrange_free(u);
        return sbx_error_set(err, r == -ENOMEM ? SBX_E_NOMEM : SBX_E_IO, -r,
                "reading the host's accounts in %s: %s", etc_dir, strerror(-r));
    }
    if (mkdir(lock_dir, 0700) < 0 && errno != EEXIST) {
        r = errno;
        uidrange_free(u);
        return sbx_error_set(err, SBX_E_IO, r, "cannot make %s: %s", lock_dir, strerror(r));
    }
    if (lstat(lock_dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 0022)) {
        uidrange_free(u);
        return sbx_error_set(err, SBX_E_IO, 0,
                "%s must be a directory of uid %u that no one else can write", lock_dir,
                (unsigned)geteuid());
    }
    *ret = u;
    return 0;
}

struct uidrange *uidrange_free(struct uidrange *u)
{
    if (u) {
        free(u->lock_dir);
        free(u->taken);
        free(u);
    }
    return NULL;
}

size_t uidrange_skipped(const struct uidrange *u)
{
    return u->n_taken;
}

void uidrange_bounds(const struct uidrange *u, uint32_t *ret_first, uint32_t *ret_count)
{
    *ret_first = u->first;
    *ret_count = u->count;
}

/*
 * The ids of the range some process runs as: the owner of /proc/PID is its
 * effective uid and gid (root instead when it made itself undumpable,
 * which the lock covers: a sandbox of a live server holds its lease).
 */
static size_t busy_ids(const struct uidrange *u, uint32_t *busy)
{
    cleanup_dir DIR *d = opendir("/proc");
    struct dirent *e;
    struct stat st;
    size_t n = 0;

    while (d && (e = readdir(d)) && n + 2 <= BUSY_MAX) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
                fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (in_range(u, st.st_uid))
            busy[n++] = (uint32_t)st.st_uid;
        if (in_range(u, st.st_gid))
            busy[n++] = (uint32_t)st.st_gid;
    }
    return n;
}

static bool listed(const uint32_t *ids, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Lock DIR/<id>: the fd when it was free, -1 when held, or -errno. */
static int try_lock(const struct uidrange *u, uint32_t id)
{
    char path[512];
    int fd;

    snprintf(path, sizeof(path), "%s/%u", u->lock_dir, id);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    close(fd);
    return errno == EWOULDBLOCK ? -1 : -errno;
}

int uidrange_take(struct uidrange *u, struct uid_lease **ret, struct sbx_error **err)
{
    uint32_t busy[BUSY_MAX];
    size_t n_busy = busy_ids(u, busy);
    struct uid_lease *l = malloc(sizeof(*l));

    if (!l)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    for (uint32_t i = 0; i < u->count; i++) {
        uint32_t id = u->first + i;
        int fd;

        if (listed(u->taken, u->n_taken, id) || listed(busy, n_busy, id))
            continue;
        fd = try_lock(u, id);
        if (fd == -1)
            continue;
        if (fd < 0) {
            free(l);
            return sbx_error_set(
                    err, SBX_E_IO, -fd, "locking %s/%u: %s", u->lock_dir, id, strerror(-fd));
        }
        *l = (struct uid_lease){.uid = id, .gid = id, .lock_fd = fd};
        *ret = l;
        return 0;
    }
    free(l);
    return sbx_error_set(err, SBX_E_LIMIT, 0,
            "all %u sandbox uids of LLM_SANDBOX_UID_RANGE (from %u) are in use; widen the range",
            u->count, u->first);
}

void uid_lease_free(struct uid_lease *l)
{
    if (l) {
        close(l->lock_fd); /* releases the flock */
        free(l);
    }
}
