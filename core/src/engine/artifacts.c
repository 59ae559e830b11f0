/* SPDX-License-Identifier: MIT */
/*
 * artifacts.c: what a run left in its workspace. After the program ended,
 * the agent lists the workspace with sizes and times; every regular file
 * that is new or changed (a session compares with the listing taken
 * before the call) and is not one of the call's inputs (staged files, the
 * program, its build's outputs, a dependency set's directory) is an
 * artifact, in the order the files were last written.
 *
 * A one-shot run's box is gone a moment later, so its artifacts' bytes
 * are fetched now (within LLM_SANDBOX_ARTIFACTS_BYTES) and kept in a store
 * for LLM_SANDBOX_ARTIFACT_TTL seconds, as sandbox://runs/ID/files/PATH
 * (ID random, so only whoever got the result can name it). A session's
 * stay in its workspace, as sandbox://sessions/ID/files/PATH, read when
 * asked. Images up to the same budget come with the result either way,
 * for clients to show inline. At most LLM_SANDBOX_ARTIFACTS_MAX per call;
 * the result says when some were left out. A caller that will not read
 * them (the CLI) asks for the list only (req->keep_artifacts false).
 */
#include "engine/artifacts.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"

#define STORE_MAX    (256u << 20) /* every kept run's bytes together */
#define RUN_ID_BYTES 16           /* a kept run's random id: 128 bits, as a session's */

struct stored {
    struct stored *next;
    char id[2 * RUN_ID_BYTES + 1];
    char *owner; /* the request's (NULL: ""): only its owner reads the files */
    int64_t expires_ms;
    struct sbx_artifact *a;
    size_t n;
    uint64_t bytes;
};

struct artifact_store {
    pthread_mutex_t lock;
    struct stored *head;
    uint64_t bytes;
};

static const struct {
    const char *ext, *mime;
} mimes[] = {
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"webp", "image/webp"},
        {"svg", "image/svg+xml"},
        {"pdf", "application/pdf"},
        {"html", "text/html"},
        {"htm", "text/html"},
        {"csv", "text/csv"},
        {"tsv", "text/tab-separated-values"},
        {"json", "application/json"},
        {"txt", "text/plain"},
        {"log", "text/plain"},
        {"md", "text/markdown"},
        {"xml", "application/xml"},
        {"yaml", "application/yaml"},
        {"yml", "application/yaml"},
        {"zip", "application/zip"},
        {"gz", "application/gzip"},
        {"tar", "application/x-tar"},
        {"parquet", "application/vnd.apache.parquet"},
        {"wav", "audio/wav"},
        {"mp3", "audio/mpeg"},
        {"mp4", "video/mp4"},
};

const char *artifact_mime(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');

    if (dot && (!slash || dot > slash))
        for (size_t i = 0; i < sizeof(mimes) / sizeof(mimes[0]); i++)
            if (strcasecmp(dot + 1, mimes[i].ext) == 0)
                return mimes[i].mime;
    return "application/octet-stream";
}

static bool is_image(const char *mime)
{
    return strncmp(mime, "image/", 6) == 0;
}

/* The raster image the bytes are, by their magic, or NULL. */
static const char *image_magic(const char *data, size_t len)
{
    if (len >= 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0)
        return "image/png";
    if (len >= 3 && memcmp(data, "\xff\xd8\xff", 3) == 0)
        return "image/jpeg";
    if (len >= 6 && (memcmp(data, "GIF87a", 6) == 0 || memcmp(data, "GIF89a", 6) == 0))
        return "image/gif";
    if (len >= 12 && memcmp(data, "RIFF", 4) == 0 && memcmp(data + 8, "WEBP", 4) == 0)
        return "image/webp";
    return NULL;
}

/* A fetched file's type: a raster image only when its bytes are one (an
 * HTML page or an ELF named x.png is not, whatever its name says, and is
 * never shown inline); SVG, having no magic, keeps its name's type and is
 * never an inline image (results.c). */
static const char *mime_by_bytes(const char *by_name, const char *data, size_t len)
{
    const char *magic = image_magic(data, len);

    if (magic)
        return magic;
    if (is_image(by_name) && strcmp(by_name, "image/svg+xml") != 0)
        return "application/octet-stream";
    return by_name;
}

struct artifact_store *artifact_store_new(void)
{
    struct artifact_store *st = calloc(1, sizeof(*st));

    if (st)
        pthread_mutex_init(&st->lock, NULL);
    return st;
}

void artifacts_free(struct sbx_artifact *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++) {
        free(a[i].path);
        free(a[i].uri);
        free(a[i].data);
    }
    free(a);
}

static void stored_free(struct stored *s)
{
    artifacts_free(s->a, s->n);
    free(s->owner);
    free(s);
}

void artifact_store_free(struct artifact_store *st)
{
    if (!st)
        return;
    while (st->head) {
        struct stored *s = st->head;

        st->head = s->next;
        stored_free(s);
    }
    pthread_mutex_destroy(&st->lock);
    free(st);
}

/* Drop what expired, then the oldest until `need` more bytes fit. Called
 * with the lock held. */
static void store_trim(struct artifact_store *st, uint64_t need)
{
    int64_t now = now_ms();

    for (struct stored **p = &st->head; *p;) {
        struct stored *s = *p;

        if (s->expires_ms <= now || (st->bytes + need > STORE_MAX && !s->next)) {
            *p = s->next;
            st->bytes -= s->bytes;
            stored_free(s);
            p = &st->head; /* start over: the oldest is last */
            continue;
        }
        p = &s->next;
    }
}

/* ---- naming ------------------------------------------------------------- */

static bool unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~' || c == '/';
}

/* prefix + path, percent-encoded but for '/'. */
static char *make_uri(const char *prefix, const char *path)
{
    size_t n = strlen(prefix), len = strlen(path);
    char *u = malloc(n + 3 * len + 1), *o;

    if (!u)
        return NULL;
    memcpy(u, prefix, n);
    o = u + n;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (unreserved(*p)) {
            *o++ = (char)*p;
        } else {
            snprintf(o, 4, "%%%02X", *p);
            o += 3;
        }
    }
    *o = '\0';
    return u;
}

/* The path of a URI's tail, decoded; NULL when malformed. */
char *artifact_uri_path(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;

    while (out && *s) {
        unsigned v;

        if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1 && v > 0 && s[1] && s[2]) {
            *o++ = (char)v;
            s += 3;
        } else if (*s == '%') {
            free(out);
            return NULL;
        } else {
            *o++ = *s++;
        }
    }
    if (out)
        *o = '\0';
    return out;
}

/* ---- collecting --------------------------------------------------------- */

static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* One of the call's inputs, or the build's outputs. */
static bool is_input(const struct run *r, const char *path)
{
    const struct manifest_lang *l = r->lang->m->lang;

    if (r->plan && strcmp(path, r->plan->source_name) == 0 && r->staged_source)
        return true;
    for (size_t i = 0; i < r->req->n_files; i++)
        if (strcmp(path, r->req->files[i].path) == 0)
            return true;
    if (r->deps)
        for (char **f = l->install->stage; *f; f++)
            if (strcmp(path, *f) == 0)
                return true;
    if (r->deps && l->install->workspace_dir && under(path, l->install->workspace_dir))
        return true;
    for (char **o = l->build_outputs; r->plan && r->plan->build && o && *o; o++) {
        size_t n = strlen(*o);

        if ((*o)[n - 1] == '/' ? strncmp(path, *o, n) == 0 : strcmp(path, *o) == 0)
            return true;
    }
    return false;
}

static bool unchanged(const struct agentc_entry *e, const struct agentc_entry *before, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(before[i].path, e->path) == 0)
            return before[i].size == e->size && before[i].mtime_ns == e->mtime_ns;
    return false;
}

static int by_mtime(const void *a, const void *b)
{
    const struct agentc_entry *x = a, *y = b;

    if (x->mtime_ns != y->mtime_ns)
        return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return strcmp(x->path, y->path);
}

int artifacts_snapshot(struct run *r, struct agentc_entry **ret, size_t *ret_n)
{
    int end = agentc_list_stat(r->ac, ".", ret, ret_n, now_ms() + SETUP_TIMEOUT_MS);

    if (end != 0) {
        *ret = NULL;
        *ret_n = 0;
    }
    for (size_t i = 0; i < *ret_n; i++) /* "./x" -> "x" */
        memmove((*ret)[i].path, (*ret)[i].path + 2, strlen((*ret)[i].path + 2) + 1);
    return end;
}

/* Fetch one file's bytes into a, or leave it without. */
static void fetch(struct run *r, struct sbx_artifact *a)
{
    uint32_t mode;
    size_t len;
    int end = agentc_get(r->ac, a->path, (size_t)a->size + 1, &a->data, &len, &mode,
            now_ms() + SETUP_TIMEOUT_MS);

    if (end == 0) {
        a->len = len;
        a->size = len;
        a->mime_type = mime_by_bytes(a->mime_type, a->data, len);
    } else {
        a->data = NULL;
        log_msg(SBX_LOG_DEBUG, NULL, "artifact %s not fetched: %s", a->path,
                agentc_last_error(r->ac));
    }
}

/* Keep a one-shot run's files for a while: the store takes the bytes and
 * the execution keeps only its images'. */
static void keep_run(struct run *r, const char *id, struct sbx_artifact *a, size_t n)
{
    struct artifact_store *st = r->rt->artifacts;
    struct stored *s = calloc(1, sizeof(*s));
    struct sbx_artifact *copy = calloc(n, sizeof(*copy));
    char *owner = strdup(r->req->owner ? r->req->owner : "");
    uint64_t bytes = 0;

    if (!s || !copy || !owner) {
        free(s);
        free(copy);
        free(owner);
        return;
    }
    s->owner = owner;
    for (size_t i = 0; i < n; i++) {
        copy[i] = a[i];
        copy[i].path = strdup(a[i].path);
        copy[i].uri = a[i].uri ? strdup(a[i].uri) : NULL;
        copy[i].data = a[i].data; /* moved */
        bytes += a[i].len;
        a[i].data = NULL;
        a[i].len = 0;
        if (copy[i].data && is_image(copy[i].mime_type) && (a[i].data = malloc(copy[i].len + 1))) {
            memcpy(a[i].data, copy[i].data, copy[i].len + 1);
            a[i].len = copy[i].len;
        }
    }
    memcpy(s->id, id, sizeof(s->id));
    s->a = copy;
    s->n = n;
    s->bytes = bytes;
    s->expires_ms = now_ms() + (int64_t)r->rt->settings->artifact_ttl_ms;
    pthread_mutex_lock(&st->lock);
    store_trim(st, bytes);
    s->next = st->head;
    st->head = s;
    st->bytes += bytes;
    pthread_mutex_unlock(&st->lock);
}

void artifacts_collect(struct run *r, const struct agentc_entry *before, size_t n_before)
{
    const struct settings *set = r->rt->settings;
    struct agentc_entry *e = NULL;
    struct sbx_artifact *a;
    size_t n = 0, k = 0;
    uint64_t budget = set->artifacts_bytes;
    bool keep = r->req->keep_artifacts;
    char id[2 * RUN_ID_BYTES + 1] = "", prefix[128];
    int end = agentc_list_stat(r->ac, ".", &e, &n, now_ms() + SETUP_TIMEOUT_MS);

    if (end != 0) {
        /* too many files (AGENT_LIST_MAX) or too deep: say some are missing */
        r->ex->artifacts_truncated = end == SBX_E_IO;
        return;
    }
    for (size_t i = 0; i < n; i++) { /* "./x" -> "x"; drop inputs and what did not change */
        memmove(e[i].path, e[i].path + 2, strlen(e[i].path + 2) + 1);
        if (is_input(r, e[i].path) || unchanged(&e[i], before, n_before)) {
            free(e[i].path);
            e[i].path = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (e[i].path)
            e[k++] = e[i];
    n = k;
    if (n == 0 || (keep && !r->sess && random_hex(id, RUN_ID_BYTES) < 0)) {
        agentc_entries_free(e, n);
        return;
    }
    qsort(e, n, sizeof(*e), by_mtime);
    if (n > set->artifacts_max) {
        r->ex->artifacts_truncated = true;
        n = (size_t)set->artifacts_max;
    }
    a = calloc(n, sizeof(*a));
    if (r->sess)
        snprintf(prefix, sizeof(prefix), "sandbox://sessions/%s/files/", r->ex->session_id);
    else
        snprintf(prefix, sizeof(prefix), "sandbox://runs/%s/files/", id);
    for (size_t i = 0; a && i < n; i++) {
        a[i].path = strdup(e[i].path);
        a[i].size = e[i].size;
        a[i].mime_type = artifact_mime(e[i].path);
        a[i].uri = keep || r->sess ? make_uri(prefix, e[i].path) : NULL;
        /* a one-shot's files now or never; a session's images to show */
        if (!keep)
            continue;
        if ((!r->sess || is_image(a[i].mime_type)) && e[i].size <= budget &&
                e[i].size <= set->file_max_bytes) {
            fetch(r, &a[i]);
            budget -= a[i].len < budget ? a[i].len : budget; /* it may have grown */
        } else if (!r->sess) {
            r->ex->artifacts_truncated = true; /* listed, but not kept */
        }
    }
    agentc_entries_free(e, k);
    if (!a)
        return;
    if (!r->sess && keep)
        keep_run(r, id, a, n);
    r->ex->artifacts = a;
    r->ex->n_artifacts = n;
}

/* ---- reading ------------------------------------------------------------ */

int artifacts_read_run(struct sbx_runtime *rt, const char *owner, const char *rest, char **ret,
        size_t *ret_len, const char **ret_mime, struct sbx_error **err)
{
    struct artifact_store *st = rt->artifacts;
    const char *slash = strchr(rest, '/');
    cleanup_free char *path = NULL;
    int rc = 1;

    if (!slash || (size_t)(slash - rest) != 2 * RUN_ID_BYTES || strncmp(slash, "/files/", 7) != 0 ||
            !(path = artifact_uri_path(slash + 7)))
        return 1;
    pthread_mutex_lock(&st->lock);
    store_trim(st, 0);
    for (struct stored *s = st->head; s && rc == 1; s = s->next) {
        /* another owner's run is one that never existed */
        if (strncmp(s->id, rest, 2 * RUN_ID_BYTES) != 0 ||
                strcmp(s->owner, owner ? owner : "") != 0)
            continue;
        for (size_t i = 0; i < s->n && rc == 1; i++) {
            if (strcmp(s->a[i].path, path) != 0 || !s->a[i].data)
                continue;
            *ret = malloc(s->a[i].len + 1);
            if (!*ret) {
                rc = sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
                break;
            }
            memcpy(*ret, s->a[i].data, s->a[i].len + 1);
            *ret_len = s->a[i].len;
            *ret_mime = s->a[i].mime_type;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}
