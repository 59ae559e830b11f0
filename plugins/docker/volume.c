/* SPDX-License-Identifier: MIT */
/*
 * volume.c: the core's directories (dependency sets, a set's install
 * staging; struct sbx_mount) delivered to a container as named volumes,
 * never as host bind mounts: the daemon may be remote, and a bind would
 * hand the container a live view of a host path.
 *
 *   read-only   sbx-set-<hash of path, device, inode, ctime>: filled once
 *               with a tar of the directory (libarchive) through a helper
 *               container that is never started, then marked complete by
 *               an empty volume <name>-ok; later boxes mount it read-only.
 *   writable    sbx-<box id>-<i>, owned by the box (labels), mounted where
 *               the image has the directory owned by the sandbox uid (the
 *               daemon copies that ownership into a new volume); read back
 *               after the box stopped (GET archive) into the host directory
 *               and removed.
 *
 * Reading a writable volume back is setread.c.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker.h"
#include "translate.h"

#define DK_TAR_DEPTH 64

int dk_tmpfile_fd(struct sbx_err *err)
{
    int fd = open("/var/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    if (fd < 0)
        sbx_err_fill(err, SBX_E_IO, errno, "a temporary file in /var/tmp: %s", strerror(errno));
    return fd;
}

struct tarw {
    struct archive *a;
    struct archive_entry *e;
    char path[PATH_MAX];
};

static bool tar_file(struct tarw *t, int dfd, const char *name)
{
    char buf[65536];
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = 0;
    bool ok = fd >= 0;

    for (n = ok ? read(fd, buf, sizeof(buf)) : 0; ok && n > 0; n = read(fd, buf, sizeof(buf)))
        ok = archive_write_data(t->a, buf, (size_t)n) == n;
    if (fd >= 0)
        close(fd);
    return ok && n == 0;
}

/* Every entry beneath dfd, named t->path (relative, "" at the top) plus its
 * name; owner root, mode without set-id bits or write for others. */
static bool tar_tree(struct tarw *t, int dfd, int depth)
{
    size_t base = strlen(t->path);
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;
    bool ok = d != NULL && depth < DK_TAR_DEPTH;

    if (!d && fd >= 0)
        close(fd);
    for (de = ok ? readdir(d) : NULL; de; de = ok ? readdir(d) : NULL) {
        struct stat sb;
        char link[PATH_MAX];
        ssize_t ln;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
                (size_t)snprintf(t->path + base, sizeof(t->path) - base, "%s%s", base ? "/" : "",
                        de->d_name) >= sizeof(t->path) - base) {
            ok = false;
            continue;
        }
        archive_entry_clear(t->e);
        archive_entry_set_pathname(t->e, t->path);
        archive_entry_set_perm(t->e, sb.st_mode & 0755);
        archive_entry_set_mtime(t->e, sb.st_mtime, 0);
        if (S_ISREG(sb.st_mode)) {
            archive_entry_set_filetype(t->e, AE_IFREG);
            archive_entry_set_size(t->e, sb.st_size);
            ok = archive_write_header(t->a, t->e) == ARCHIVE_OK && tar_file(t, dfd, de->d_name);
        } else if (S_ISDIR(sb.st_mode)) {
            int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            archive_entry_set_filetype(t->e, AE_IFDIR);
            ok = sub >= 0 && archive_write_header(t->a, t->e) == ARCHIVE_OK &&
                 tar_tree(t, sub, depth + 1);
            if (sub >= 0)
                close(sub);
        } else if (S_ISLNK(sb.st_mode)) {
            ln = readlinkat(dfd, de->d_name, link, sizeof(link) - 1);
            ok = ln > 0;
            if (ok) {
                link[ln] = '\0';
                archive_entry_set_filetype(t->e, AE_IFLNK);
                archive_entry_set_symlink(t->e, link);
                ok = archive_write_header(t->a, t->e) == ARCHIVE_OK;
            }
        } /* sockets, fifos and devices stay behind */
        t->path[base] = '\0';
    }
    if (d)
        closedir(d);
    return ok;
}

/* A tar of dir in an unlinked temporary file: its fd and size. */
static int tar_dir(const char *dir, int *ret_fd, size_t *ret_len, struct sbx_err *err)
{
    struct tarw t = {.a = archive_write_new(), .e = archive_entry_new()};
    int fd = dk_tmpfile_fd(err), dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat sb;
    bool ok = fd >= 0 && dfd >= 0 && t.a && t.e &&
              archive_write_set_format_pax_restricted(t.a) == ARCHIVE_OK &&
              archive_write_open_fd(t.a, fd) == ARCHIVE_OK && tar_tree(&t, dfd, 0) &&
              archive_write_close(t.a) == ARCHIVE_OK && fstat(fd, &sb) == 0;

    if (!ok && fd >= 0)
        sbx_err_fill(err, SBX_E_IO, errno, "packing '%s' for the container: %s", dir,
                t.a && archive_error_string(t.a) ? archive_error_string(t.a) : strerror(errno));
    archive_entry_free(t.e);
    if (t.a)
        archive_write_free(t.a);
    if (dfd >= 0)
        close(dfd);
    if (!ok) {
        if (fd >= 0)
            close(fd);
        return err->rc;
    }
    *ret_fd = fd, *ret_len = (size_t)sb.st_size;
    return 0;
}

static int volume_create(struct dk_state *st, const char *name, const char *run, const char *source,
        struct sbx_err *err)
{
    struct json_object *body = json_object_new_object(), *labels = json_object_new_object();
    int r;

    json_object_object_add(labels, DK_LABEL_RUN, json_object_new_string(run));
    if (source)
        json_object_object_add(labels, DK_LABEL_SOURCE, json_object_new_string(source));
    else
        json_object_object_add(labels, DK_LABEL, json_object_new_string(st->h->instance_id(st->h)));
    json_object_object_add(body, "Name", json_object_new_string(name));
    json_object_object_add(body, "Labels", labels);
    struct dk_call c = {.method = "POST", .path = "/volumes/create", .body = body};
    r = dk_api(st, &c, NULL, NULL, err);
    json_object_put(body);
    return r;
}

static int volume_remove(struct dk_state *st, const char *name, struct sbx_err *err)
{
    char path[160];

    snprintf(path, sizeof(path), "/volumes/%s?force=1", name);
    struct dk_call c = {.method = "DELETE", .path = path, .missing_ok = true};
    return dk_api(st, &c, NULL, NULL, err);
}

static bool volume_exists(struct dk_state *st, const char *name)
{
    struct sbx_err err = {.size = sizeof(err)};
    char path[160];
    long status = 0;

    snprintf(path, sizeof(path), "/volumes/%s", name);
    struct dk_call c = {.method = "GET", .path = path, .missing_ok = true};
    return dk_api(st, &c, &status, NULL, &err) == 0 && status == 200;
}

int dk_fill_container(struct dk_state *st, const char *image, const char *volume, const char *dir,
        const char *target, char *ret_cid, size_t len, struct sbx_err *err)
{
    struct json_object *body = json_object_new_object(), *hc = json_object_new_object(), *ep,
                       *res = NULL, *v;
    char esc[600], path[800];
    size_t tar_len = 0;
    void *map = MAP_FAILED;
    int fd = -1, r;

    ep = json_object_new_array();
    json_object_array_add(ep, json_object_new_string(DK_AGENT));
    json_object_object_add(body, "Image", json_object_new_string(image));
    json_object_object_add(body, "Entrypoint", ep);
    json_object_object_add(body, "Cmd", json_object_new_array());
    if (volume) {
        struct json_object *mounts = json_object_new_array(), *m = json_object_new_object();

        json_object_object_add(m, "Type", json_object_new_string("volume"));
        json_object_object_add(m, "Source", json_object_new_string(volume));
        json_object_object_add(m, "Target", json_object_new_string(target));
        json_object_array_add(mounts, m);
        json_object_object_add(hc, "Mounts", mounts);
    }
    json_object_object_add(hc, "NetworkMode", json_object_new_string("none"));
    json_object_object_add(body, "HostConfig", hc);
    struct dk_call c = {.method = "POST", .path = "/containers/create", .body = body};
    r = dk_api(st, &c, NULL, &res, err);
    json_object_put(body);
    if (r == 0 && json_object_object_get_ex(res, "Id", &v))
        snprintf(ret_cid, len, "%s", json_object_get_string(v));
    else if (r == 0)
        r = sbx_err_fill(err, SBX_E_BACKEND, 0, "container create returned no Id");
    json_object_put(res);
    if (r == 0)
        r = tar_dir(dir, &fd, &tar_len, err);
    if (r == 0 && tar_len) {
        map = mmap(NULL, tar_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
            r = sbx_err_fill(err, SBX_E_IO, errno, "mmap: %s", strerror(errno));
    }
    if (r == 0) {
        dk_escape(target, esc, sizeof(esc));
        snprintf(path, sizeof(path), "/containers/%s/archive?path=%s", ret_cid, esc);
        struct dk_call put = {.method = "PUT",
                .path = path,
                .raw = map,
                .raw_len = tar_len,
                .timeout_ms = DK_FILL_MS};
        r = dk_api(st, &put, NULL, NULL, err);
    }
    if (map != MAP_FAILED)
        munmap(map, tar_len);
    if (fd >= 0)
        close(fd);
    return r;
}

/* Put the tar of dir into volume name through a container that is never
 * started (the archive API writes into a stopped container's volumes). */
static int volume_fill(struct dk_state *st, const char *name, const char *image, const char *dir,
        struct sbx_err *err)
{
    struct sbx_err e2 = {.size = sizeof(e2)};
    char cid[80] = "", path[200];
    int r = dk_fill_container(st, image, name, dir, "/.sbx-fill", cid, sizeof(cid), err);

    if (cid[0]) {
        snprintf(path, sizeof(path), "/containers/%s?force=1", cid);
        struct dk_call rm = {.method = "DELETE", .path = path, .missing_ok = true};
        dk_api(st, &rm, NULL, NULL, &e2);
    }
    return r;
}

/* The cached copy of a read-only directory: made once, reused while the
 * directory (by device, inode and ctime) is the same. */
static int volume_of_dir(struct dk_state *st, const char *dir, const char *image, char *name,
        size_t len, struct sbx_err *err)
{
    char ok[120];
    uint64_t h;
    int r = 0;

    if ((r = dk_dir_hash(dir, NULL, &h, err)) < 0)
        return r;
    snprintf(name, len, "sbx-set-%016" PRIx64, h);
    snprintf(ok, sizeof(ok), "%s-ok", name);
    /* one filler at a time, across processes too: the set directory
     * itself is the lock (another server may be filling this volume) */
    int lock = dk_lock_dir(dir);

    pthread_mutex_lock(&st->lock);
    if (!volume_exists(st, ok)) {
        st->h->log(st->h, SBX_LOG_INFO, "copying '%s' into volume %s", dir, name);
        r = volume_remove(st, name, err); /* a fill that did not finish */
        if (r == 0)
            r = volume_create(st, name, "deps-set", dir, err);
        if (r == 0)
            r = volume_fill(st, name, image, dir, err);
        if (r == 0)
            r = volume_create(st, ok, "deps-set", dir, err);
    }
    pthread_mutex_unlock(&st->lock);
    if (lock >= 0)
        close(lock);
    return r;
}

int dk_dir_hash(const char *dir, const char *salt, uint64_t *ret, struct sbx_err *err)
{
    struct stat sb;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
        return sbx_err_fill(err, SBX_E_IO, errno, "'%s' is not a directory", dir);
    for (const char *p = salt; p && *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (const char *p = dir; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    uint64_t id[] = {
            sb.st_dev, sb.st_ino, (uint64_t)sb.st_ctim.tv_sec, (uint64_t)sb.st_ctim.tv_nsec};
    for (size_t i = 0; i < sizeof(id) / sizeof(id[0]); i++)
        h = (h ^ id[i]) * 1099511628211ull;
    *ret = h;
    return 0;
}

int dk_lock_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    while (fd >= 0 && flock(fd, LOCK_EX) < 0 && errno == EINTR)
        ;
    return fd;
}

static bool target_is_valid(const char *t)
{
    return t && t[0] == '/' && strlen(t) < 256 && !strstr(t, "/..") && !strstr(t, "//");
}

int dk_volumes_open(struct dk_state *st, const struct sbx_box_spec *spec, const char *image,
        const char *skip, struct dk_vols *v, struct sbx_err *err)
{
    size_t n = SBX_HAS_FIELD(struct sbx_box_spec, spec, mounts) ? spec->n_mounts : 0;
    int r = 0;

    if (n > DK_MOUNTS_MAX)
        return sbx_err_fill(err, SBX_E_LIMIT, 0, "%zu mounts; at most %d", n, DK_MOUNTS_MAX);
    for (size_t i = 0; r == 0 && i < n; i++) {
        const struct sbx_mount *m = &spec->mounts[i];

        size_t k = v->n;

        if (!m->source || m->source[0] != '/' || !target_is_valid(m->target))
            return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "mount %zu is malformed", i);
        if (skip && !(m->flags & SBX_MOUNT_RW) && strcmp(m->target, skip) == 0)
            continue; /* the image holds it (COMMIT_CONTAINER) */
        v->v[k].source = strdup(m->source);
        if (!v->v[k].source)
            return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        snprintf(v->v[k].target, sizeof(v->v[k].target), "%s", m->target);
        v->v[k].rw = (m->flags & SBX_MOUNT_RW) != 0;
        v->n = k + 1;
        if (v->v[k].rw) {
            snprintf(v->v[k].name, sizeof(v->v[k].name), "sbx-%s-%zu", spec->id, i);
            r = volume_create(st, v->v[k].name, spec->id, NULL, err);
        } else {
            r = volume_of_dir(st, m->source, image, v->v[k].name, sizeof(v->v[k].name), err);
        }
    }
    return r;
}

void dk_volumes_close(struct dk_state *st, struct dk_vols *v)
{
    for (size_t i = 0; i < v->n; i++) {
        struct sbx_err err = {.size = sizeof(err)};

        if (v->v[i].rw && v->v[i].name[0] && volume_remove(st, v->v[i].name, &err) < 0)
            st->h->log(st->h, SBX_LOG_WARN, "volume %s: %s", v->v[i].name, err.msg);
        free(v->v[i].source);
    }
    v->n = 0;
}
