/* SPDX-License-Identifier: MIT */
/*
 * api.c: the Docker Engine API calls the plugin makes, through the core's
 * HTTP client (host->http_request): JSON in and out, the daemon's error
 * messages, images (inspect, pull with progress, the derived image that
 * holds the agent) and the sweep of containers left by dead instances.
 * The tar of the agent is written with libarchive.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker.h"
#include "translate.h"

#define RESP_CAP       (1024u * 1024u)
#define AGENT_MAX      (64u * 1024u * 1024u)
#define PULL_TIMEOUT   (30 * 60 * 1000)
#define API_TIMEOUT_MS 60000
/* Bump when agent_tar's layout changes: derived images are named by it. */
#define DK_IMAGE_LAYOUT 3u

bool dk_escape(const char *s, char *out, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (o + 4 >= len)
            return false;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                strchr("-._~", c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return true;
}

/* The daemon's {"message": "..."} or the start of the body. */
static const char *daemon_message(struct json_object *j, const char *body)
{
    struct json_object *m;

    if (j && json_object_object_get_ex(j, "message", &m))
        return json_object_get_string(m);
    return body[0] ? body : "no message";
}

int dk_api(struct dk_state *st, const struct dk_call *c, long *ret_status,
        struct json_object **ret_json, struct sbx_err *err)
{
    const struct sbx_host *h = st->h;
    char path[4200];
    const char *text = NULL;
    struct sbx_http_resp resp = {.size = sizeof(resp), .cap = RESP_CAP};
    struct json_object *j = NULL;
    int r;

    snprintf(path, sizeof(path), "%s%s", c->libpod ? DK_LIBPOD_API : DK_API, c->path);
    if (c->body)
        text = json_object_to_json_string_ext(c->body, JSON_C_TO_STRING_PLAIN);
    struct sbx_http req = {.size = sizeof(req),
            .endpoint = st->endpoint,
            .tls_dir = st->tls_dir[0] ? st->tls_dir : NULL,
            .method = c->method,
            .path = path,
            .content_type = c->raw ? "application/x-tar" : "application/json",
            .body = c->raw ? c->raw : text,
            .body_len = c->raw ? c->raw_len : (text ? strlen(text) : 0),
            .timeout_ms = c->timeout_ms ? c->timeout_ms : API_TIMEOUT_MS,
            .cancel_fd = -1};
    resp.body = malloc(RESP_CAP);
    if (!resp.body)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    r = h->http_request(h, &req, &resp, err);
    while (r == 0 && resp.len && strchr(" \r\n", resp.body[resp.len - 1])) /* for messages */
        resp.body[--resp.len] = '\0';
    if (r == 0 && resp.truncated)
        r = sbx_err_fill(err, SBX_E_LIMIT, 0, "%s %s: the answer exceeds %u bytes", c->method,
                c->path, RESP_CAP);
    if (r == 0 && resp.len)
        j = json_tokener_parse(resp.body);
    if (r == 0 && ret_status)
        *ret_status = resp.status;
    if (r == 0 && resp.status >= 400 && !(resp.status == 404 && c->missing_ok))
        r = sbx_err_fill(err, resp.status == 404 ? SBX_E_UNAVAILABLE : SBX_E_BACKEND, 0,
                "%s %s: %s (HTTP %ld)", c->method, c->path, daemon_message(j, resp.body),
                resp.status);
    free(resp.body);
    if (r == 0 && ret_json)
        *ret_json = j;
    else
        json_object_put(j);
    return r;
}

/* Pull progress: one line of JSON per event; log each status change. */
struct pull {
    struct dk_state *st;
    char error[200];
    char last[120];
};

static int on_pull(void *ud, const char *data, size_t len)
{
    struct pull *p = ud;
    char line[1024];
    const char *s = data, *end = data + len;

    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = (size_t)((nl ? nl : end) - s);
        struct json_object *j, *v;

        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), s);
        j = json_tokener_parse(line);
        if (j && (json_object_object_get_ex(j, "error", &v) ||
                         json_object_object_get_ex(j, "message", &v)))
            snprintf(p->error, sizeof(p->error), "%s", json_object_get_string(v));
        else if (j && json_object_object_get_ex(j, "status", &v) &&
                 strcmp(p->last, json_object_get_string(v)) != 0) {
            snprintf(p->last, sizeof(p->last), "%s", json_object_get_string(v));
            p->st->h->log(p->st->h, SBX_LOG_INFO, "pull: %s", p->last);
        }
        json_object_put(j);
        s += n + 1;
    }
    return 0;
}

static int pull(struct dk_state *st, const char *image, int cancel_fd, struct sbx_err *err)
{
    struct pull p = {.st = st};
    char esc[1024], path[1200];
    struct sbx_http_resp resp = {.size = sizeof(resp)};
    int r;

    if (!dk_escape(image, esc, sizeof(esc)))
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "image name too long");
    snprintf(path, sizeof(path), "%s/images/create?fromImage=%s", DK_API, esc);
    st->h->log(st->h, SBX_LOG_INFO, "image '%s' is not here; pulling it", image);
    struct sbx_http req = {.size = sizeof(req),
            .endpoint = st->endpoint,
            .tls_dir = st->tls_dir[0] ? st->tls_dir : NULL,
            .method = "POST",
            .path = path,
            .on_body = on_pull,
            .userdata = &p,
            .timeout_ms = PULL_TIMEOUT,
            .cancel_fd = cancel_fd};
    r = st->h->http_request(st->h, &req, &resp, err);
    if (r < 0)
        return r;
    if (resp.status >= 400 || p.error[0])
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                "image '%s' is not present on the %s daemon and pulling it failed: %s", image,
                st->name, p.error[0] ? p.error : "HTTP error");
    return 0;
}

int dk_image_id(struct dk_state *st, const char *image, struct dk_fetch *f, char *id, size_t len,
        struct sbx_err *err)
{
    char esc[1024], path[1100];
    struct json_object *j = NULL, *v;
    long status = 0;
    int r;

    if (!dk_escape(image, esc, sizeof(esc)))
        return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "image name too long");
    snprintf(path, sizeof(path), "/images/%s/json", esc);
    struct dk_call c = {.method = "GET", .path = path, .missing_ok = true};
    r = dk_api(st, &c, &status, &j, err);
    if (r == 0 && status == 404 && f->no_pull)
        r = sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                "image '%s' is not present on the %s daemon (a probe pulls nothing; the first "
                "run pulls it)",
                image, st->name);
    else if (r == 0 && status == 404) {
        f->pulled = true;
        r = pull(st, image, f->cancel_fd, err);
        if (r == 0) {
            json_object_put(j);
            j = NULL;
            c.missing_ok = false;
            r = dk_api(st, &c, &status, &j, err);
        }
    }
    if (r == 0 && !json_object_object_get_ex(j, "Id", &v))
        r = sbx_err_fill(err, SBX_E_BACKEND, 0, "image '%s' has no Id", image);
    if (r == 0)
        snprintf(id, len, "%s", json_object_get_string(v));
    json_object_put(j);
    return r;
}

/* The agent binary, read whole, and an FNV-1a hash naming its version. */
static int read_agent(struct dk_state *st, char **ret_buf, size_t *ret_len, uint64_t *ret_hash,
        struct sbx_err *err)
{
    struct stat sb;
    char *buf;
    size_t o = 0;
    uint64_t hash = 1469598103934665603ull;
    uint32_t uid, gid;
    int fd = -1;

    if (st->h->agent_fd(st->h, &fd, err) < 0)
        return err->rc;
    if (fstat(fd, &sb) < 0 || sb.st_size <= 0 || (uint64_t)sb.st_size > AGENT_MAX) {
        close(fd);
        return sbx_err_fill(err, SBX_E_IO, errno, "the sandbox agent is unreadable or too large");
    }
    buf = malloc((size_t)sb.st_size);
    while (buf && o < (size_t)sb.st_size) {
        ssize_t n = read(fd, buf + o, (size_t)sb.st_size - o);

        if (n <= 0)
            break;
        o += (size_t)n;
    }
    close(fd);
    if (!buf || o != (size_t)sb.st_size) {
        free(buf);
        return sbx_err_fill(err, SBX_E_IO, errno, "cannot read the sandbox agent");
    }
    for (size_t i = 0; i < o; i++)
        hash = (hash ^ (unsigned char)buf[i]) * 1099511628211ull;
    hash = (hash ^ DK_IMAGE_LAYOUT) * 1099511628211ull; /* what agent_tar adds */
    st->h->sandbox_ids(st->h, &uid, &gid);              /* /etc/passwd names them */
    hash = (hash ^ uid) * 1099511628211ull;
    hash = (hash ^ gid) * 1099511628211ull;
    *ret_buf = buf, *ret_len = o, *ret_hash = hash;
    return 0;
}

static bool add_file(struct archive *a, struct archive_entry *e, const char *path, int mode,
        const char *data, size_t len)
{
    archive_entry_clear(e);
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, (mode_t)mode);
    archive_entry_set_size(e, (la_int64_t)len);
    return archive_write_header(a, e) == ARCHIVE_OK &&
           archive_write_data(a, data, len) == (la_ssize_t)len;
}

/* The image's /etc/passwd and /etc/group: root, sandbox (the core's
 * sandbox ids, then each id of block, when not 0: the same name for each,
 * which getpwuid finds and getpwnam does not need) and nobody. */
static int id_files(uint32_t uid, uint32_t gid, uint32_t block, char **ret_passwd, char **ret_group)
{
    size_t n = block ? DK_UID_BLOCK : 0, pcap = 160 + 64 * (n + 1), gcap = 64 + 32 * (n + 1);
    char *p = malloc(pcap), *g = malloc(gcap);
    size_t po = 0, go = 0;

    if (!p || !g) {
        free(p);
        free(g);
        return -1;
    }
    po += (size_t)snprintf(p, pcap, "root:x:0:0:root:/root:/usr/sbin/nologin\n");
    go += (size_t)snprintf(g, gcap, "root:x:0:\n");
    for (size_t i = 0; i <= n; i++) {
        uint32_t u = i == 0 ? uid : block + (uint32_t)(i - 1);
        uint32_t gg = i == 0 ? gid : u;

        if (i > 0 && (u == uid || u == gid))
            continue;
        po += (size_t)snprintf(p + po, pcap - po, "sandbox:x:%u:%u:sandbox:/tmp:/bin/sh\n", u, gg);
        go += (size_t)snprintf(g + go, gcap - go, "sandbox:x:%u:\n", gg);
    }
    snprintf(p + po, pcap - po, "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    snprintf(g + go, gcap - go, "nogroup:x:65534:\n");
    *ret_passwd = p;
    *ret_group = g;
    return 0;
}

/* A tar holding .sbx/ (0755) and .sbx/agent (0555), both root's, an
 * /etc/passwd and /etc/group naming the sandbox uid "sandbox" (replacing
 * the image's: as in the local jails, only root, sandbox and nobody; a box
 * of its own host uid runs unnamed), and an empty /deps, mode 1777: a new
 * volume mounted there (a set's install, one box's alone) takes that mode
 * from the image, so whichever uid the box has may write it. */
static int agent_tar(struct dk_state *st, const char *data, size_t len, uint32_t block, char **ret,
        size_t *ret_len, struct sbx_err *err)
{
    char *passwd = NULL, *group = NULL;
    uint32_t uid, gid;

    st->h->sandbox_ids(st->h, &uid, &gid);
    if (id_files(uid, gid, block, &passwd, &group) < 0)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    size_t cap = len + strlen(passwd) + strlen(group) + 16384, used = 0;
    char *out = malloc(cap);
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    int ok;

    ok = out && a && e && archive_write_set_format_pax_restricted(a) == ARCHIVE_OK &&
         archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
         archive_write_open_memory(a, out, cap, &used) == ARCHIVE_OK;
    if (ok) {
        archive_entry_set_pathname(e, ".sbx");
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        ok = archive_write_header(a, e) == ARCHIVE_OK;
    }
    if (ok) {
        archive_entry_clear(e);
        archive_entry_set_pathname(e, "deps");
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 01777);
        archive_entry_set_uid(e, uid);
        archive_entry_set_gid(e, gid);
        ok = archive_write_header(a, e) == ARCHIVE_OK;
    }
    ok = ok && add_file(a, e, ".sbx/agent", 0555, data, len) &&
         add_file(a, e, "etc/passwd", 0644, passwd, strlen(passwd)) &&
         add_file(a, e, "etc/group", 0644, group, strlen(group)) &&
         archive_write_close(a) == ARCHIVE_OK;
    if (!ok)
        sbx_err_fill(err, SBX_E_INTERNAL, 0, "building the agent's tar: %s",
                a ? archive_error_string(a) : "out of memory");
    archive_entry_free(e);
    if (a)
        archive_write_free(a);
    free(passwd);
    free(group);
    if (!ok) {
        free(out);
        return err->rc;
    }
    *ret = out, *ret_len = used;
    return 0;
}

/* Create a stopped container from base, put the agent in, commit it as
 * ref (labelled), remove the container. */
static int make_agent_image(struct dk_state *st, const char *base, const char *tag,
        const char *data, size_t len, uint32_t block, struct sbx_err *err)
{
    struct json_object *body = json_object_new_object(), *ep = json_object_new_array(), *res = NULL,
                       *v, *labels = json_object_new_object();
    char path[1400], cid[80] = "", esc[200], *tar = NULL;
    size_t tar_len = 0;
    int r;

    json_object_array_add(ep, json_object_new_string(DK_AGENT));
    json_object_object_add(body, "Image", json_object_new_string(base));
    json_object_object_add(body, "Entrypoint", ep);
    json_object_object_add(body, "Cmd", json_object_new_array());
    struct dk_call c = {.method = "POST", .path = "/containers/create", .body = body};
    r = dk_api(st, &c, NULL, &res, err);
    if (r == 0 && json_object_object_get_ex(res, "Id", &v))
        snprintf(cid, sizeof(cid), "%s", json_object_get_string(v));
    else if (r == 0)
        r = sbx_err_fill(err, SBX_E_BACKEND, 0, "container create returned no Id");
    json_object_put(res);
    json_object_put(body);
    if (r == 0)
        r = agent_tar(st, data, len, block, &tar, &tar_len, err);
    if (r == 0) {
        snprintf(path, sizeof(path), "/containers/%s/archive?path=%%2F", cid);
        struct dk_call put = {.method = "PUT", .path = path, .raw = tar, .raw_len = tar_len};
        r = dk_api(st, &put, NULL, NULL, err);
    }
    free(tar);
    if (r == 0) {
        json_object_object_add(labels, DK_LABEL_RUN, json_object_new_string("agent-image"));
        body = json_object_new_object();
        json_object_object_add(body, "Labels", labels);
        labels = NULL;
        dk_escape(tag, esc, sizeof(esc));
        snprintf(
                path, sizeof(path), "/commit?container=%s&repo=%s&tag=%s", cid, DK_AGENT_REPO, esc);
        struct dk_call cm = {.method = "POST", .path = path, .body = body};
        r = dk_api(st, &cm, NULL, NULL, err);
        json_object_put(body);
    }
    json_object_put(labels);
    if (cid[0]) {
        struct sbx_err e2 = {.size = sizeof(e2)};

        snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", cid);
        struct dk_call rm = {.method = "DELETE", .path = path, .missing_ok = true};
        dk_api(st, &rm, NULL, NULL, &e2);
    }
    return r;
}

int dk_agent_image(struct dk_state *st, const char *image, uint32_t uid, struct dk_fetch *f,
        char *ret_ref, size_t len, struct sbx_err *err)
{
    uint32_t block = uid - uid % DK_UID_BLOCK;
    char id[160], tag[64], ref[128], esc[200], path[300], *agent = NULL;
    const char *hex;
    size_t agent_len = 0;
    uint64_t hash = 0;
    long status = 0;
    int r;

    f->pulled = false;
    r = dk_image_id(st, image, f, id, sizeof(id), err);
    if (r == 0)
        r = read_agent(st, &agent, &agent_len, &hash, err);
    if (r < 0)
        return r;
    if (block)
        hash = (hash ^ block) * 1099511628211ull; /* what id_files adds */
    hex = strncmp(id, "sha256:", 7) == 0 ? id + 7 : id;
    snprintf(tag, sizeof(tag), "%.16s-%016" PRIx64, hex, hash);
    snprintf(ref, sizeof(ref), "%s:%s", DK_AGENT_REPO, tag);
    dk_escape(ref, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/images/%s/json", esc);
    pthread_mutex_lock(&st->lock);
    struct dk_call c = {.method = "GET", .path = path, .missing_ok = true};
    r = dk_api(st, &c, &status, NULL, err);
    if (r == 0 && status == 404)
        r = make_agent_image(st, image, tag, agent, agent_len, block, err);
    pthread_mutex_unlock(&st->lock);
    free(agent);
    if (r == 0)
        snprintf(ret_ref, len, "%s", ref);
    return r;
}

/* Is the instance a live process, or not ours to judge? The core decides
 * (ABI 1.4's instance_dead): only an instance of the same scope (kernel
 * boot and pid namespace) sees its pid, so another host's server on a
 * shared daemon, or one in another container, is never called dead. */
static bool owner_alive(struct dk_state *st, const char *owner)
{
    return st->h->instance_dead(st->h, owner) != 1;
}

/* Volumes of dead instances (a box's writable ones), and copies of sets
 * whose host directory is gone (evicted from the cache). */
static void sweep_volumes(struct dk_state *st)
{
    struct json_object *res = NULL, *list;
    struct sbx_err err = {.size = sizeof(err)};
    struct dk_call c = {.method = "GET",
            .path = "/volumes?filters=%7B%22label%22%3A%5B%22" DK_LABEL_RUN "%22%5D%7D"};

    if (dk_api(st, &c, NULL, &res, &err) < 0 || !json_object_object_get_ex(res, "Volumes", &list) ||
            !json_object_is_type(list, json_type_array)) {
        json_object_put(res);
        return;
    }
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        struct json_object *vol = json_object_array_get_idx(list, i), *labels, *owner, *src, *name;
        char path[200];
        struct stat sb;

        if (!json_object_object_get_ex(vol, "Labels", &labels) ||
                !json_object_object_get_ex(vol, "Name", &name))
            continue;
        if (json_object_object_get_ex(labels, DK_LABEL, &owner)
                        ? owner_alive(st, json_object_get_string(owner))
                        : !json_object_object_get_ex(labels, DK_LABEL_SOURCE, &src) ||
                                  stat(json_object_get_string(src), &sb) == 0)
            continue;
        snprintf(path, sizeof(path), "/volumes/%s?force=1", json_object_get_string(name));
        struct dk_call rm = {.method = "DELETE", .path = path, .missing_ok = true};
        dk_api(st, &rm, NULL, NULL, &err);
    }
    json_object_put(res);
}

void dk_sweep(struct dk_state *st)
{
    struct json_object *list = NULL;
    struct sbx_err err = {.size = sizeof(err)};
    struct dk_call c = {.method = "GET",
            .path = "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22" DK_LABEL "%22%5D%7D"};

    /* Owners are processes of this host: judge them only on a local daemon
     * (a shared remote one holds other hosts' containers too). */
    if (strncmp(st->endpoint, "unix://", 7) != 0)
        return;
    if (dk_api(st, &c, NULL, &list, &err) < 0 || !json_object_is_type(list, json_type_array)) {
        json_object_put(list);
        return;
    }
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        struct json_object *ct = json_object_array_get_idx(list, i), *labels, *owner, *id;
        char path[200];

        if (!json_object_object_get_ex(ct, "Labels", &labels) ||
                !json_object_object_get_ex(labels, DK_LABEL, &owner) ||
                !json_object_object_get_ex(ct, "Id", &id) ||
                owner_alive(st, json_object_get_string(owner)))
            continue;
        st->h->log(st->h, SBX_LOG_INFO, "removing container %.12s of dead instance %s",
                json_object_get_string(id), json_object_get_string(owner));
        snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", json_object_get_string(id));
        struct dk_call rm = {.method = "DELETE", .path = path, .missing_ok = true};
        dk_api(st, &rm, NULL, NULL, &err);
    }
    json_object_put(list);
    sweep_volumes(st);
}
