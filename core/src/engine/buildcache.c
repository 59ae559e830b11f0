/* SPDX-License-Identifier: MIT */
/*
 * buildcache.c: the compile cache (language.build_outputs). A build's
 * outputs depend on everything build_key() hashes; an entry (in the cache,
 * cache/deps.h, as a set named build-LANG) holds the outputs, their modes
 * and the compiler's diagnostics. The engine's build step (program.c)
 * replays a ready entry instead of building, or, after a successful build,
 * fetches the outputs from the box before the program runs, so nothing the
 * program does can change what is cached. Only the host writes entries; a
 * failure to keep one only loses it.
 */
#include "engine/buildcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "cache/deps.h"
#include "cache/key.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"

#define BUILD_OUTPUT_MAX (64u << 20) /* larger outputs are not cached */

/* The entry's list of outputs: "MODE PATH" lines (octal mode, a path
 * relative to the workspace), written by buildcache_save(). */
#define BUILD_FILES ".build-files"

/* Everything a build's outputs depend on: the toolchain, the expanded
 * build command and its environment, the program, every staged file, and
 * the libraries' set. */
static int build_key(const struct run *r, char out[65])
{
    const struct manifest_lang *ml = r->lang->m->lang;
    struct sha256_ctx ctx, *md = &ctx;
    char tool[CACHE_TOOL_MAX];

    cache_toolchain_id(r->lang->m, tool, sizeof(tool));
    sha256_init(md);
    cache_key_field(md, "format", "llm-sandbox build 1", 19);
    cache_key_field(md, "backend", r->backend->name, strlen(r->backend->name));
    cache_key_field(md, "language", r->lang->name, strlen(r->lang->name));
    cache_key_field(md, "version", r->lang->m->version, strlen(r->lang->m->version));
    cache_key_field(md, "image", ml->image ? ml->image : "", ml->image ? strlen(ml->image) : 0);
    cache_key_field(md, "toolchain", tool, strlen(tool));
    for (char **a = r->plan->build; *a; a++)
        cache_key_field(md, "arg", *a, strlen(*a));
    for (char **e = r->env; e && *e; e++)
        if (!strv_has_key(r->rt->settings->env_pass, *e))
            cache_key_field(md, "env", *e, strlen(*e));
    cache_key_field(md, "source", r->plan->source_name, strlen(r->plan->source_name));
    cache_key_field(md, "code", r->req->code, r->req->code_len);
    for (size_t i = 0; i < r->req->n_files; i++) {
        cache_key_field(md, "file", r->req->files[i].path, strlen(r->req->files[i].path));
        cache_key_field(md, "data", r->req->files[i].data, r->req->files[i].len);
    }
    cache_key_field(md, "deps", r->deps ? r->deps->dir : "", r->deps ? strlen(r->deps->dir) : 0);
    cache_key_hex(md, out);
    return 0;
}

int buildcache_open(struct run *r, struct sbx_error **err)
{
    const struct settings *s = r->rt->settings;
    struct sbx_error *e = NULL;
    char key[65], name[48];

    if (!r->lang->m->lang->build_outputs || !r->plan->build || r->probe_argv)
        return 0;
    if (build_key(r, key) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    snprintf(name, sizeof(name), "build-%s", r->lang->name);
    /* owned by the server: only the host writes a build's outputs there */
    if (deps_open(s, name, key, -1, -1, (int64_t)s->install_timeout_ms, &r->build, &e) < 0) {
        log_msg(SBX_LOG_WARN, r->lang->name, "no compile cache: %s", e->msg);
        sbx_error_free(e);
        return 0;
    }
    r->ex->has_build_cache = true;
    r->ex->build_cached = r->build->ready;
    return 0;
}

int buildcache_replay(struct run *r, int64_t deadline)
{
    static const char *const streams[] = {".build-stdout", ".build-stderr"};
    struct sbx_error *e = NULL;
    char *list = NULL, *save = NULL;
    size_t llen = 0;
    int end = 0;

    if (deps_read_file(r->build, BUILD_FILES, STAGE_FILE_MAX, &list, &llen, &e) < 0) {
        log_msg(SBX_LOG_WARN, r->lang->name, "%s", e->msg);
        sbx_error_free(e);
        return SBX_E_IO;
    }
    for (char *line = strtok_r(list, "\n", &save); end == 0 && line;
            line = strtok_r(NULL, "\n", &save)) {
        char *path = strchr(line, ' '), *data = NULL;
        unsigned long mode = strtoul(line, NULL, 8);
        size_t len = 0;

        if (!path || !rel_path_is_valid(path + 1) ||
                deps_read_file(r->build, path + 1, BUILD_OUTPUT_MAX, &data, &len, &e) < 0) {
            log_msg(SBX_LOG_WARN, r->lang->name, "compile cache: %s",
                    e ? e->msg : "a bad list of outputs");
            sbx_error_free(e);
            free(list);
            return SBX_E_IO;
        }
        end = agentc_put(r->ac, path + 1, (uint32_t)(mode & 0755), data, len, deadline);
        free(data);
    }
    free(list);
    for (int i = 0; end == 0 && i < 2; i++) { /* the compiler's diagnostics, as it wrote them */
        char *data = NULL;
        size_t len = 0;

        if (deps_read_file(r->build, streams[i], BUILD_OUTPUT_MAX, &data, &len, &e) == 0)
            agentc_sink_write(&r->sink, i == 0 ? SBX_STREAM_STDOUT : SBX_STREAM_STDERR, data, len);
        e = sbx_error_free(e);
        free(data);
    }
    return end;
}

/* Create dir/name (name may have directories, made as needed). */
static int write_new(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
    char path[PATH_MAX];
    int fd, rc = 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    if (len && write(fd, data, len) != (ssize_t)len)
        rc = -1;
    if (close(fd) < 0)
        rc = -1;
    return rc;
}

/* The build's outputs as files: a directory output ("classes/") is listed
 * by the agent. (transfer full) */
static int output_files(struct run *r, int64_t deadline, char ***ret)
{
    char **files = NULL;
    int rc = 0;

    for (char **o = r->lang->m->lang->build_outputs; rc == 0 && *o; o++) {
        size_t n = strlen(*o);
        char **listed = NULL;

        if ((*o)[n - 1] != '/') {
            rc = strv_push(&files, *o);
            continue;
        }
        char *dir = strndup(*o, n - 1);

        rc = dir ? agentc_list(r->ac, dir, &listed, deadline) : SBX_E_NOMEM;
        free(dir);
        for (char **l = listed; rc == 0 && l && *l; l++)
            rc = rel_path_is_valid(*l) ? strv_push(&files, *l) : SBX_E_IO;
        strv_free(listed);
    }
    if (rc != 0) {
        strv_free(files);
        return rc;
    }
    *ret = files;
    return 0;
}

void buildcache_save(struct run *r, size_t out0, size_t err0, int64_t deadline)
{
    struct sbx_error *e = NULL;
    struct dynbuf list;
    char **files = NULL;
    int rc;

    if (!r->build || r->build->ready)
        return;
    dynbuf_init(&list, STAGE_FILE_MAX);
    /* fetched from the box before the program runs: nothing the program
     * does can change what is cached */
    rc = output_files(r, deadline, &files);
    for (char **f = files; rc == 0 && f && *f; f++) {
        char *data = NULL;
        size_t len = 0;
        uint32_t mode = 0;

        rc = agentc_get(r->ac, *f, BUILD_OUTPUT_MAX, &data, &len, &mode, deadline);
        if (rc == 0)
            rc = write_new(r->build->staging, *f, data, len, 0644) < 0 ||
                                 dynbuf_printf(&list, "%o %s\n", mode & 0755, *f) < 0
                         ? -1
                         : 0;
        free(data);
    }
    strv_free(files);
    if (rc == 0 && (write_new(r->build->staging, BUILD_FILES, list.buf ? list.buf : "", list.len,
                            0644) < 0 ||
                           write_new(r->build->staging, ".build-stdout", r->sink.out.buf.buf + out0,
                                   r->sink.out.buf.len - out0, 0644) < 0 ||
                           write_new(r->build->staging, ".build-stderr", r->sink.err.buf.buf + err0,
                                   r->sink.err.buf.len - err0, 0644) < 0))
        rc = -1;
    dynbuf_done(&list);
    if (rc == 0 && deps_commit(r->build, "{\"build\":true}", &e) == 0)
        return;
    log_msg(SBX_LOG_DEBUG, r->lang->name, "the build is not cached: %s",
            e ? e->msg : agentc_last_error(r->ac));
    sbx_error_free(e);
    r->build = deps_close(r->build); /* let a waiting identical build go on */
}
