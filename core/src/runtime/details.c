/* SPDX-License-Identifier: MIT */
/*
 * details.c: a language's version and preinstalled libraries as they are
 * where its programs run, never typed by hand: the manifest's
 * version_command and libraries_command, run in a sandbox of the default
 * backend (so a container backend reports its image's, not the host's).
 * Each answer is kept per toolchain, in memory and in the cache directory
 * (details/KEY.json), and probed again only when the toolchain changes:
 * the key holds the backend, the commands and the image's ID (container
 * backends) or the binary's stamp (local ones), and a local backend's entry
 * also records the directories its libraries came from, stamped, so that
 * an apt or pip install beside the same interpreter is seen.
 */
#include "runtime/details.h"

#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llm-sandbox/plugin.h>

#include "base/cleanup.h"
#include "base/dynbuf.h"
#include "base/util.h"
#include "cache/key.h"
#include "plugins/host_table.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime/run.h"
#include "runtime_state.h"

#define LIBS_OUTPUT_MAX (256u * 1024u) /* a probe's listing */
#define LIBS_MAX        2000           /* entries kept from it */
#define PATHS_MAX       (64u * 1024u)  /* the stamped directories */

/* The version from a probe's output: the pattern's first group, else the
 * first line. (transfer full) */
static char *version_from(const char *pattern, const char *text)
{
    regmatch_t m[2];
    regex_t re;
    size_t n;

    if (pattern && regcomp(&re, pattern, REG_EXTENDED) == 0) {
        char *v = NULL;

        if (regexec(&re, text, 2, m, 0) == 0 && m[1].rm_so >= 0)
            v = strndup(text + m[1].rm_so, (size_t)(m[1].rm_eo - m[1].rm_so));
        regfree(&re);
        if (v)
            return v;
    }
    n = strcspn(text, "\n");
    return n ? strndup(text, n > 80 ? 80 : n) : NULL;
}

static void key_strv(struct sha256_ctx *md, const char *tag, char *const *v)
{
    for (size_t i = 0; v && v[i]; i++)
        cache_key_field(md, tag, v[i], strlen(v[i]));
}

/* The image a box of the default backend would run for pl, by its ID,
 * without pulling it: 1 with the ID, 0 when the backend has no images, -1
 * when it has but cannot say (no daemon, no image). */
static int image_id(
        struct sbx_runtime *rt, struct plugin *be, struct plugin *pl, char *id, size_t len)
{
    const struct sbx_backend_ops *ops = be->desc->backend;
    struct sbx_box_spec spec;
    struct sbx_err perr;

    if (be->desc->abi_minor < 3 ||
            ops->size < offsetof(struct sbx_backend_ops, image_id) + sizeof(ops->image_id) ||
            !ops->image_id)
        return 0;
    memset(&spec, 0, sizeof(spec));
    spec.size = sizeof(spec);
    spec.policy = &rt->settings->defaults;
    spec.id = "details";
    spec.language = pl->name;
    spec.image = pl->m->lang->image;
    spec.cancel_fd = -1;
    spec.flags = SBX_BOX_PROBE;
    sbx_err_init(&perr);
    if (ops->image_id(be->pstate, &spec, id, len, &perr) < 0)
        return -1;
    id[len - 1] = '\0';
    return 1;
}

/* The key of pl's toolchain on the default backend: 0; 1 for a container
 * backend (its entries record no host directories); -1 when none can be
 * made (the backend is unusable, its daemon or image missing). */
static int details_key(struct sbx_runtime *rt, struct plugin *pl, char key[65])
{
    const struct manifest_lang *ml = pl->m->lang;
    struct plugin *be = registry_find(rt, SBX_KIND_BACKEND, rt->settings->backend);
    char tool[CACHE_TOOL_MAX];
    struct sha256_ctx md;
    int img;

    if (!be || backend_probe(rt, be, NULL) < 0)
        return -1;
    img = image_id(rt, be, pl, tool, sizeof(tool));
    if (img < 0)
        return -1;
    if (img == 0)
        cache_toolchain_id(pl->m, tool, sizeof(tool));
    sha256_init(&md);
    cache_key_field(&md, "format", "llm-sandbox language details 1", 30);
    cache_key_field(&md, "backend", be->name, strlen(be->name));
    cache_key_field(&md, "language", pl->name, strlen(pl->name));
    cache_key_field(&md, "plugin", pl->m->version, strlen(pl->m->version));
    cache_key_field(&md, img ? "image" : "toolchain", tool, strlen(tool));
    key_strv(&md, "version", ml->version_command);
    key_strv(&md, "libraries", ml->libraries_command);
    cache_key_hex(&md, key);
    return img;
}

/* A directory's stamp: what changes when an entry is added or removed. */
static void stamp(const char *path, char *out, size_t len)
{
    struct stat st;

    if (stat(path, &st) < 0)
        snprintf(out, len, "missing");
    else
        snprintf(out, len, "%ju:%ju:%jd.%09ld", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/* Are the "PATH\tSTAMP\n" lines of paths what the directories say now? */
static bool paths_fresh(const char *paths)
{
    char path[PATH_MAX], now[96];

    for (const char *p = paths; p && *p;) {
        const char *tab = strchr(p, '\t'), *nl = strchr(p, '\n');

        if (!tab || !nl || tab > nl || (size_t)(tab - p) >= sizeof(path))
            return false;
        memcpy(path, p, (size_t)(tab - p));
        path[tab - p] = '\0';
        stamp(path, now, sizeof(now));
        if (strlen(now) != (size_t)(nl - tab - 1) || memcmp(now, tab + 1, strlen(now)) != 0)
            return false;
        p = nl + 1;
    }
    return true;
}

static int cmp_ci(const void *a, const void *b)
{
    return strcasecmp(*(const char *const *)a, *(const char *const *)b);
}

/* The libraries probe's output: "NAME VERSION" lines into *libs (sorted),
 * absolute directories, stamped, into *paths (local backends only). */
static void parse_listing(char *out, bool local, char ***libs, struct dynbuf *paths)
{
    char *save = NULL, st[96];

    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t n = strcspn(line, " \t\r");

        if (line[0] == '/') {
            line[strcspn(line, "\r")] = '\0';
            if (local) {
                stamp(line, st, sizeof(st));
                (void)dynbuf_printf(paths, "%s\t%s\n", line, st);
            }
        } else if (n > 0 && line[n] == ' ' && strv_len(*libs) < LIBS_MAX) {
            line[n + 1 + strcspn(line + n + 1, " \t\r")] = '\0';
            if (utf8_is_valid(line, strlen(line)) && strv_push(libs, line) < 0)
                return;
        }
    }
    if (*libs)
        qsort(*libs, strv_len(*libs), sizeof(char *), cmp_ci);
}

/* Run argv in a sandbox: its stdout, or NULL when it could not run or did
 * not exit 0. with_stderr (a version probe: javac prints there, and some
 * exit non-zero): stdout and stderr, whatever the exit status. */
static char *probe_output(
        struct sbx_runtime *rt, struct plugin *pl, char **argv, size_t cap, bool with_stderr)
{
    struct sbx_execution *ex = NULL;
    struct sbx_error *e = NULL;
    char *text = NULL;

    if (run_probe(rt, pl->name, argv, cap, &ex, &e) == 0 &&
            (ex->status == SBX_STATUS_OK || (with_stderr && ex->status == SBX_STATUS_ERROR))) {
        if (asprintf(&text, "%s%s", ex->stdout_buf, with_stderr ? ex->stderr_buf : "") < 0)
            text = NULL;
    }
    sbx_execution_free(ex);
    sbx_error_free(e);
    return text;
}

/* Probe both commands into pl. true when every command answered. */
static bool probe(struct sbx_runtime *rt, struct plugin *pl, bool local)
{
    const struct manifest_lang *ml = pl->m->lang;
    cleanup_free char *vout = NULL, *lout = NULL;
    struct dynbuf paths;
    bool ok = true;

    free(pl->version), free(pl->paths);
    pl->libraries = strv_free(pl->libraries);
    pl->version = pl->paths = NULL;
    if (ml->version_command) {
        vout = probe_output(rt, pl, ml->version_command, 4096, true);
        pl->version = vout ? version_from(ml->version_pattern, vout) : NULL;
        ok = pl->version != NULL;
    }
    if (ml->libraries_command) {
        lout = probe_output(rt, pl, ml->libraries_command, LIBS_OUTPUT_MAX, false);
        dynbuf_init(&paths, PATHS_MAX);
        if (lout)
            parse_listing(lout, local, &pl->libraries, &paths);
        pl->paths = dynbuf_take(&paths, NULL);
        ok = ok && lout != NULL;
    }
    return ok;
}

/* ---- the cache directory's entries --------------------------------------- */

static char *entry_path(const struct sbx_runtime *rt, const char *key)
{
    char *p = NULL;

    return asprintf(&p, "%s/details/%s.json", rt->settings->cache_dir, key) < 0 ? NULL : p;
}

static bool load(struct sbx_runtime *rt, struct plugin *pl, const char *key)
{
    cleanup_free char *path = entry_path(rt, key);
    struct json_object *o = path ? json_object_from_file(path) : NULL, *v, *libs;
    bool ok = false;

    if (o && json_object_object_get_ex(o, "paths", &v) &&
            json_object_is_type(v, json_type_string) && paths_fresh(json_object_get_string(v)) &&
            json_object_object_get_ex(o, "libraries", &libs) &&
            json_object_is_type(libs, json_type_array)) {
        free(pl->version), free(pl->paths);
        pl->libraries = strv_free(pl->libraries);
        pl->paths = strdup(json_object_get_string(v));
        pl->version = json_object_object_get_ex(o, "version", &v) && json_object_get_string(v)
                              ? strdup(json_object_get_string(v))
                              : NULL;
        ok = true;
        for (size_t i = 0; i < json_object_array_length(libs) && i < LIBS_MAX; i++)
            if (strv_push(&pl->libraries,
                        json_object_get_string(json_object_array_get_idx(libs, i))) < 0)
                ok = false;
    }
    json_object_put(o);
    return ok;
}

/* mkdir -p with the modes cache/deps.c gives what it creates: 0755 as
 * root (the sandbox uid must reach the sets below), else 0700. */
static int mkdirs(char *path)
{
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            int r;

            *p = '\0';
            r = mkdir(path, geteuid() == 0 ? 0755 : 0700);
            *p = c;
            if (r < 0 && errno != EEXIST)
                return -1;
            if (!c)
                return 0;
        }
    }
}

/* Write the entry whole or not at all (a temporary file, renamed); a
 * failure only means the next runtime probes again. */
static void save(struct sbx_runtime *rt, const struct plugin *pl, const char *key)
{
    cleanup_free char *path = entry_path(rt, key), *tmp = NULL, *dir = NULL;
    struct json_object *o = json_object_new_object(), *libs = json_object_new_array();

    for (size_t i = 0; pl->libraries && pl->libraries[i]; i++)
        json_object_array_add(libs, json_object_new_string(pl->libraries[i]));
    json_object_object_add(o, "version", pl->version ? json_object_new_string(pl->version) : NULL);
    json_object_object_add(o, "libraries", libs);
    json_object_object_add(o, "paths", json_object_new_string(pl->paths ? pl->paths : ""));
    if (path && asprintf(&tmp, "%s.%ld.tmp", path, (long)getpid()) >= 0 &&
            (dir = strndup(path, (size_t)(strrchr(path, '/') - path))) && mkdirs(dir) == 0) {
        if (json_object_to_file_ext(tmp, o, JSON_C_TO_STRING_PLAIN) < 0 || rename(tmp, path) < 0)
            (void)unlink(tmp);
    }
    json_object_put(o);
}

void details_refresh(struct sbx_runtime *rt, struct plugin *pl)
{
    char key[65];
    int kind;

    pthread_mutex_lock(&pl->probe_lock);
    if (atomic_load(&rt->probes_stopped)) { /* the runtime is ending */
        pthread_mutex_unlock(&pl->probe_lock);
        return;
    }
    kind = details_key(rt, pl, key);
    if (kind < 0) {
        /* no key: probe once for this runtime, keep nothing on disk */
        if (!pl->version_probed)
            (void)probe(rt, pl, false);
    } else if (!pl->details_key || strcmp(pl->details_key, key) != 0 || !paths_fresh(pl->paths)) {
        if (!load(rt, pl, key) && probe(rt, pl, kind == 0))
            save(rt, pl, key);
        free(pl->details_key);
        pl->details_key = strdup(key);
    }
    pl->version_probed = true;
    pthread_mutex_unlock(&pl->probe_lock);
}
