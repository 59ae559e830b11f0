/* SPDX-License-Identifier: MIT */
/*
 * deps.c: the dependency cache (deps.h).
 *
 * Layout of CACHE_DIR/deps:
 *   LANG-KEY/             a finished set; LANG-KEY/.sbx-set is its record
 *   LANG-KEY.lock         flock: shared while used, exclusive to build or evict
 *   .build-LANG-KEY/      a set being built (removed on failure, or by the
 *                         next builder when a crashed one left it)
 *   .proxy-KEY.sock  the install proxy's socket while building
 * The record's mtime is when the set was last used (eviction order).
 */
#include "cache/deps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "plugins/manifest.h"
#include "policy/settings.h"

#define SET_RECORD  ".sbx-set"
#define WALK_DEPTH  128
#define WATCH_EVERY 250 /* ms between size checks of a growing install */

/* ---- trees written by untrusted code ----------------------------------- */

/* Remove name beneath dirfd, never following a link. */
static int rm_at(int at, const char *name, int depth)
{
    struct stat st;
    DIR *d;
    int fd;

    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(at, name, 0);
    if (depth > WALK_DEPTH)
        return -1;
    fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    (void)fchmod(fd, 0700); /* Go's module cache is read-only by design */
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (rm_at(dirfd(d), e->d_name, depth + 1) < 0) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    return unlinkat(at, name, AT_REMOVEDIR);
}

static int rm_tree(const char *path)
{
    return rm_at(AT_FDCWD, path, 0);
}

/* What a walk does to each entry. */
struct walk {
    uint64_t bytes, limit;
    bool fix; /* chown to root, readable by all, writable by none but root */
    int failed_errno;
};

static void walk_at(struct walk *w, int at, const char *name, int depth)
{
    struct stat st;
    DIR *d;
    int fd;

    if (w->bytes > w->limit || w->failed_errno)
        return;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            w->failed_errno = errno;
        return;
    }
    w->bytes += (uint64_t)st.st_blocks * 512u;
    if (w->fix) {
        mode_t m = st.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID | S_IWGRP | S_IWOTH);

        if (!S_ISLNK(st.st_mode))
            m |= S_IRUSR | S_IRGRP | S_IROTH | (S_ISDIR(st.st_mode) || (m & 0111) ? 0555 : 0);
        if (fchownat(at, name, 0, 0, AT_SYMLINK_NOFOLLOW) < 0 ||
                (!S_ISLNK(st.st_mode) && fchmodat(at, name, m, 0) < 0)) {
            w->failed_errno = errno;
            return;
        }
    }
    if (!S_ISDIR(st.st_mode))
        return;
    if (depth > WALK_DEPTH) {
        w->failed_errno = ELOOP;
        return;
    }
    fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || !(d = fdopendir(fd))) {
        w->failed_errno = errno;
        if (fd >= 0)
            close(fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            walk_at(w, dirfd(d), e->d_name, depth + 1);
    closedir(d);
}

uint64_t deps_tree_bytes(const char *path, uint64_t limit)
{
    struct walk w = {.limit = limit};

    walk_at(&w, AT_FDCWD, path, 0);
    return w.bytes;
}

/* ---- the cache directory ----------------------------------------------- */

/* mkdir -p of the cache's deps directory: each part we create is ours and
 * private to us (0755 for root, whose sandboxes read sets through mounts;
 * 0700 otherwise); the last must be ours and writable only by us. */
static int cache_dir(const struct settings *s, char **ret, struct sbx_error **err)
{
    char *path = NULL;
    struct stat st;

    if (asprintf(&path, "%s/deps", s->cache_dir) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;

            *p = '\0';
            if (mkdir(path, geteuid() == 0 ? 0755 : 0700) < 0 && errno != EEXIST) {
                int e = errno;

                *p = c;
                sbx_error_set(err, SBX_E_IO, e, "cannot create the cache directory %s: %s", path,
                        strerror(e));
                free(path);
                return SBX_E_IO;
            }
            *p = c;
            if (!c)
                break;
        }
    }
    /* As root, sandboxes run as another uid, and the backend (bwrap runs
     * as that uid) must reach the sets to mount them */
    for (char *p = path + 1; geteuid() == 0; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            int bad;

            *p = '\0';
            bad = stat(path, &st) < 0 || !(st.st_mode & S_IXOTH);
            if (bad) {
                sbx_error_set(err, SBX_E_IO, EACCES,
                        "the sandbox uid cannot reach the cache: %s is not searchable by others "
                        "(each directory above LLM_SANDBOX_CACHE_DIR needs o+x, e.g. mode 0755)",
                        path);
                *p = c;
                free(path);
                return SBX_E_IO;
            }
            *p = c;
            if (!c)
                break;
        }
    }
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 022)) {
        sbx_error_set(err, SBX_E_IO, EPERM,
                "the cache directory %s must be a directory owned by uid %u and writable by "
                "no one else",
                path, (unsigned)geteuid());
        free(path);
        return SBX_E_IO;
    }
    *ret = path;
    return 0;
}

static bool set_ready(const struct deps_set *d)
{
    char *rec = NULL;
    struct stat st;
    bool ok;

    if (asprintf(&rec, "%s/%s", d->dir, SET_RECORD) < 0)
        return false;
    ok = lstat(rec, &st) == 0 && S_ISREG(st.st_mode);
    if (ok)
        (void)utimensat(AT_FDCWD, rec, NULL, AT_SYMLINK_NOFOLLOW); /* last used: now */
    free(rec);
    return ok;
}

/* flock with a deadline (flock itself cannot time out). */
static int lock_wait(int fd, int op, int64_t wait_ms)
{
    int64_t deadline = now_ms() + wait_ms;

    while (flock(fd, op | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        if (now_ms() >= deadline) {
            errno = ETIMEDOUT;
            return -1;
        }
        usleep(50 * 1000);
    }
    return 0;
}

/*
 * Lock the lock file at path (opening it unless *fd is open), and make sure
 * the lock is on the file that is there now: eviction unlinks lock files
 * nobody holds, so a lock taken on an unlinked one would exclude no one.
 * Converting a shared lock to exclusive is not atomic either; the same
 * check covers it.
 */
static int lock_current(int *fd, const char *path, int op, int64_t wait_ms)
{
    for (int tries = 0; tries < 100; tries++) {
        struct stat a, b;

        if (*fd < 0)
            *fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (*fd < 0 || lock_wait(*fd, op, wait_ms) < 0 || fstat(*fd, &a) < 0)
            return -1;
        if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return 0;
        close(*fd);
        *fd = -1;
    }
    errno = EAGAIN;
    return -1;
}

int deps_open(const struct settings *s, const char *lang, const char *key, int64_t uid, int64_t gid,
        int64_t wait_ms, struct deps_set **ret, struct sbx_error **err)
{
    struct deps_set *d = calloc(1, sizeof(*d));
    char *base = NULL, *lock = NULL;
    int rc;

    if (!d)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    d->lock_fd = -1;
    rc = cache_dir(s, &base, err);
    if (rc < 0) {
        free(d);
        return rc;
    }
    if (asprintf(&d->dir, "%s/%s-%.40s", base, lang, key) < 0 ||
            asprintf(&d->staging, "%s/.build-%s-%.40s", base, lang, key) < 0 ||
            asprintf(&d->sock, "%s/.proxy-%.40s.sock", base, key) < 0 ||
            asprintf(&lock, "%s/%s-%.40s.lock", base, lang, key) < 0) {
        rc = sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        goto out;
    }
    if (lock_current(&d->lock_fd, lock, LOCK_SH, wait_ms) < 0) {
        rc = sbx_error_set(err, SBX_E_IO, errno, "cannot lock %s: %s", lock, strerror(errno));
        goto out;
    }
    if (set_ready(d)) {
        d->ready = true;
        goto out;
    }
    /* build it: exclusively, and maybe someone finished meanwhile */
    if (lock_current(&d->lock_fd, lock, LOCK_EX, wait_ms) < 0) {
        rc = sbx_error_set(err, SBX_E_IO, errno,
                "waiting for another install of the same libraries: %s", strerror(errno));
        goto out;
    }
    if (set_ready(d)) {
        d->ready = true;
        (void)flock(d->lock_fd, LOCK_SH);
        goto out;
    }
    /* a dead builder's leftovers, or a set cut short by a crash */
    if (rm_tree(d->staging) < 0 || rm_tree(d->dir) < 0 ||
            (unlink(d->sock) < 0 && errno != ENOENT) || mkdir(d->staging, 0700) < 0 ||
            (uid >= 0 && chown(d->staging, (uid_t)uid, (gid_t)gid) < 0)) {
        rc = sbx_error_set(
                err, SBX_E_IO, errno, "cannot prepare %s: %s", d->staging, strerror(errno));
        goto out;
    }
out:
    free(base);
    free(lock);
    if (rc < 0) {
        if (d->lock_fd >= 0)
            close(d->lock_fd);
        free(d->dir);
        free(d->staging);
        free(d->sock);
        free(d);
        return rc;
    }
    *ret = d;
    return 0;
}

int deps_commit(struct deps_set *d, const char *info_json, struct sbx_error **err)
{
    struct walk w = {.limit = UINT64_MAX, .fix = geteuid() == 0};
    char *rec = NULL;
    int fd, e;

    /* root owns it now: the sandbox uid that wrote it can no longer change
     * it, even where a backend could not mount it read-only */
    walk_at(&w, AT_FDCWD, d->staging, 0);
    if (w.failed_errno)
        return sbx_error_set(err, SBX_E_IO, w.failed_errno, "cannot seal the dependency set: %s",
                strerror(w.failed_errno));
    if (asprintf(&rec, "%s/%s", d->staging, SET_RECORD) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    (void)unlinkat(AT_FDCWD, rec, 0); /* the install may have planted one */
    fd = open(rec, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    e = errno;
    free(rec);
    if (fd < 0 || write(fd, info_json, strlen(info_json)) != (ssize_t)strlen(info_json) ||
            close(fd) < 0 || rename(d->staging, d->dir) < 0) {
        e = fd < 0 ? e : errno;
        return sbx_error_set(
                err, SBX_E_IO, e, "cannot store the dependency set %s: %s", d->dir, strerror(e));
    }
    d->ready = true;
    (void)flock(d->lock_fd, LOCK_SH);
    return 0;
}

struct deps_set *deps_close(struct deps_set *d)
{
    if (!d)
        return NULL;
    if (!d->ready && d->lock_fd >= 0) { /* we hold the exclusive lock */
        if (rm_tree(d->staging) < 0)
            log_msg(SBX_LOG_WARN, NULL, "cannot remove %s: %s", d->staging, strerror(errno));
    }
    if (d->sock)
        (void)unlink(d->sock);
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    free(d->dir);
    free(d->staging);
    free(d->sock);
    free(d);
    return NULL;
}

struct deps_set *deps_share(const struct deps_set *d)
{
    struct deps_set *n = calloc(1, sizeof(*n));

    if (!n)
        return NULL;
    n->lock_fd = -1;
    if (!d->ready || !(n->dir = strdup(d->dir)) ||
            (n->lock_fd = fcntl(d->lock_fd, F_DUPFD_CLOEXEC, 3)) < 0)
        return deps_close(n);
    n->ready = true;
    return n;
}

int deps_read_file(const struct deps_set *d, const char *name, size_t max, char **ret_data,
        size_t *ret_len, struct sbx_error **err)
{
    int dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd = -1;
    struct stat st;
    char *buf = NULL;
    ssize_t n = -1;

    if (dfd >= 0)
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= max &&
            (buf = malloc((size_t)st.st_size + 1)))
        n = read(fd, buf, (size_t)st.st_size);
    if (dfd >= 0)
        close(dfd);
    if (fd >= 0)
        close(fd);
    if (n < 0 || (buf && n != (ssize_t)st.st_size)) {
        free(buf);
        return sbx_error_set(err, SBX_E_IO, errno,
                "the dependency set has no usable '%s' (a regular file of at most %zu bytes)", name,
                max);
    }
    buf[n] = '\0';
    *ret_data = buf;
    *ret_len = (size_t)n;
    return 0;
}

/* ---- eviction ------------------------------------------------------------ */

struct set_entry {
    char name[128];
    uint64_t bytes;
    struct timespec used;
};

static int by_use(const void *a, const void *b)
{
    const struct set_entry *x = a, *y = b;

    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* A lock file whose set does not exist (a failed install, an evicted
 * set) and that nobody holds. */
static void remove_orphan_lock(const char *base, const char *name)
{
    char lock[512], dir[512];
    size_t n = strlen(name) - strlen(".lock");
    int fd;

    if (n == 0 || strcmp(name + n, ".lock") != 0)
        return;
    snprintf(lock, sizeof(lock), "%s/%s", base, name);
    snprintf(dir, sizeof(dir), "%s/%.*s", base, (int)n, name);
    fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && access(dir, F_OK) < 0 && errno == ENOENT)
        (void)unlink(lock);
    close(fd);
}

int deps_evict(const struct settings *s)
{
    struct set_entry *sets = NULL;
    size_t n = 0, alloc = 0;
    uint64_t total = 0;
    char *base = NULL;
    int removed = 0;
    DIR *d;

    if (cache_dir(s, &base, NULL) < 0)
        return 0;
    d = opendir(base);
    for (struct dirent *e; d && (e = readdir(d));) {
        char rec[512];
        struct stat st;

        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(sets->name))
            continue;
        if (strstr(e->d_name, ".lock")) {
            remove_orphan_lock(base, e->d_name);
            continue;
        }
        snprintf(rec, sizeof(rec), "%s/%s/%s", base, e->d_name, SET_RECORD);
        if (lstat(rec, &st) < 0)
            continue;
        if (n == alloc) {
            struct set_entry *grown =
                    realloc(sets, (alloc = alloc ? 2 * alloc : 16) * sizeof(*sets));

            if (!grown)
                break;
            sets = grown;
        }
        memcpy(sets[n].name, e->d_name, strlen(e->d_name) + 1); /* shorter: checked above */
        snprintf(rec, sizeof(rec), "%s/%s", base, e->d_name);
        sets[n].bytes = deps_tree_bytes(rec, UINT64_MAX);
        sets[n].used = st.st_mtim;
        total += sets[n].bytes;
        n++;
    }
    if (d)
        closedir(d);
    qsort(sets, n, sizeof(*sets), by_use);
    for (size_t i = 0; i < n && total > s->cache_max_bytes; i++) {
        char path[512], lock[520];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", base, sets[i].name);
        snprintf(lock, sizeof(lock), "%s.lock", path);
        fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) { /* in use: leave it */
            if (rm_tree(path) == 0) {
                (void)unlink(lock); /* held: lock_current() sees the change */
                total -= sets[i].bytes;
                removed++;
                log_msg(SBX_LOG_INFO, NULL, "evicted dependency set %s", sets[i].name);
            }
        }
        close(fd);
    }
    free(sets);
    free(base);
    return removed;
}

/* ---- watching an install's size ---------------------------------------- */

struct deps_watch {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop, killed;
    char *dir;
    uint64_t limit;
    void (*kill)(void *arg);
    void *arg;
};

static void *watch_main(void *arg)
{
    struct deps_watch *w = arg;

    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += WATCH_EVERY * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cond, &w->lock, &ts);
        if (w->stop)
            break;
        pthread_mutex_unlock(&w->lock);
        if (deps_tree_bytes(w->dir, w->limit) > w->limit) {
            w->kill(w->arg);
            pthread_mutex_lock(&w->lock);
            w->killed = true;
            break;
        }
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct deps_watch *deps_watch_start(
        const char *dir, uint64_t limit, void (*kill)(void *arg), void *arg)
{
    struct deps_watch *w = calloc(1, sizeof(*w));

    if (!w || !(w->dir = strdup(dir))) {
        free(w);
        return NULL;
    }
    w->limit = limit;
    w->kill = kill;
    w->arg = arg;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w->dir);
        free(w);
        return NULL;
    }
    return w;
}

bool deps_watch_stop(struct deps_watch *w)
{
    bool killed;

    if (!w)
        return false;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    killed = w->killed;
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w->dir);
    free(w);
    return killed;
}
