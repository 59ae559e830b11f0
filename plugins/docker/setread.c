/* SPDX-License-Identifier: MIT */
/*
 * setread.c: read a writable volume (a set's install staging, volume.c)
 * back into its host directory once its box has stopped: GET archive of
 * the volume's path streams a tar into an unlinked temporary file, then
 * libarchive extracts it. Refuses absolute paths, '..' and writing through
 * symlinks (libarchive's secure extraction), keeps only files, directories
 * and links, drops set-id bits, and stops at DK_COLLECT_MAX bytes. The
 * core measures and commits the set afterwards; nothing here trusts the
 * container's tar.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "docker.h"

#define DK_COLLECT_MAX (2048ull << 20) /* the core's default install ceiling */

struct sink {
    int fd;
    uint64_t bytes;
    bool over;
};

static int on_tar(void *ud, const char *data, size_t len)
{
    struct sink *s = ud;
    size_t o = 0;

    s->bytes += len;
    if (s->bytes > DK_COLLECT_MAX) {
        s->over = true;
        return 1;
    }
    while (o < len) {
        ssize_t n = write(s->fd, data + o, len - o);

        if (n <= 0)
            return 1;
        o += (size_t)n;
    }
    return 0;
}

/* The entry's path beneath the archive's top directory, or NULL for the
 * top itself and for anything unsafe. Docker names entries by the
 * directory's base name ("deps/a/b"), Podman 4 from the directory itself
 * ("/a/b"). */
static const char *beneath_top(const char *p)
{
    const char *slash = p ? strchr(p, '/') : NULL;

    if (!slash || !slash[1])
        return NULL;
    p = slash + 1;
    for (const char *c = p; c; c = strchr(c, '/') ? strchr(c, '/') + 1 : NULL)
        if (strncmp(c, "..", 2) == 0 && (c[2] == '/' || c[2] == '\0'))
            return NULL;
    return p;
}

static int extract(int fd, const char *dir, struct sbx_err *err)
{
    struct archive *in = archive_read_new(), *out = archive_write_disk_new();
    struct archive_entry *e;
    char path[PATH_MAX], link[PATH_MAX];
    int r = 0, ar = ARCHIVE_OK;

    if (!in || !out || archive_read_support_format_tar(in) != ARCHIVE_OK ||
            archive_read_open_fd(in, fd, 65536) != ARCHIVE_OK)
        r = sbx_err_fill(err, SBX_E_IO, 0, "reading the volume's tar");
    archive_write_disk_set_options(out, ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME);
    for (ar = r == 0 ? archive_read_next_header(in, &e) : ARCHIVE_FATAL; r == 0 && ar == ARCHIVE_OK;
            ar = archive_read_next_header(in, &e)) {
        const char *rel = beneath_top(archive_entry_pathname(e));
        const char *hard = archive_entry_hardlink(e);
        mode_t type = archive_entry_filetype(e);

        if (!rel || (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        archive_entry_set_pathname(e, path);
        archive_entry_set_perm(e, archive_entry_perm(e) & 0755);
        if (hard) {
            const char *hrel = beneath_top(hard);

            if (!hrel)
                continue;
            snprintf(link, sizeof(link), "%s/%s", dir, hrel);
            archive_entry_set_hardlink(e, link);
        }
        if (archive_write_header(out, e) != ARCHIVE_OK) {
            r = sbx_err_fill(
                    err, SBX_E_IO, 0, "extracting '%s': %s", rel, archive_error_string(out));
            break;
        }
        for (const void *buf; r == 0;) {
            size_t len;
            la_int64_t off;
            int rr = archive_read_data_block(in, &buf, &len, &off);

            if (rr == ARCHIVE_EOF)
                break;
            if (rr != ARCHIVE_OK || archive_write_data_block(out, buf, len, off) != ARCHIVE_OK)
                r = sbx_err_fill(err, SBX_E_IO, 0, "extracting '%s': %s", rel,
                        archive_error_string(rr != ARCHIVE_OK ? in : out));
        }
        archive_write_finish_entry(out);
    }
    if (r == 0 && ar != ARCHIVE_EOF)
        r = sbx_err_fill(
                err, SBX_E_IO, 0, "reading the volume's tar: %s", archive_error_string(in));
    if (in)
        archive_read_free(in);
    if (out)
        archive_write_free(out);
    return r;
}

static int collect_one(struct dk_state *st, const char *cid, const char *target, const char *dir,
        struct sbx_err *err)
{
    char esc[600], path[800];
    struct sink s = {.fd = dk_tmpfile_fd(err)};
    struct sbx_http_resp resp = {.size = sizeof(resp)};
    int r;

    if (s.fd < 0)
        return err->rc;
    dk_escape(target, esc, sizeof(esc));
    snprintf(path, sizeof(path), "%s/containers/%s/archive?path=%s", DK_API, cid, esc);
    struct sbx_http req = {.size = sizeof(req),
            .endpoint = st->endpoint,
            .tls_dir = st->tls_dir[0] ? st->tls_dir : NULL,
            .method = "GET",
            .path = path,
            .on_body = on_tar,
            .userdata = &s,
            .timeout_ms = DK_FILL_MS,
            .cancel_fd = -1};
    r = st->h->http_request(st->h, &req, &resp, err);
    if (s.over)
        r = sbx_err_fill(err, SBX_E_LIMIT, 0, "the installed set is larger than %llu bytes",
                (unsigned long long)DK_COLLECT_MAX);
    else if (r == 0 && resp.status >= 400)
        r = sbx_err_fill(err, SBX_E_BACKEND, 0, "GET archive of %s: HTTP %ld", target, resp.status);
    if (r == 0 && lseek(s.fd, 0, SEEK_SET) < 0)
        r = sbx_err_fill(err, SBX_E_IO, errno, "lseek: %s", strerror(errno));
    if (r == 0)
        r = extract(s.fd, dir, err);
    close(s.fd);
    return r;
}

int dk_volumes_collect(
        struct dk_state *st, const char *cid, const struct dk_vols *v, struct sbx_err *err)
{
    int r = 0;

    for (size_t i = 0; r == 0 && i < v->n; i++)
        if (v->v[i].rw)
            r = collect_one(st, cid, v->v[i].target, v->v[i].source, err);
    return r;
}
