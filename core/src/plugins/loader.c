/* SPDX-License-Identifier: MIT */
/*
 * loader.c: find plugins, validate manifests, open libraries with libltdl,
 * negotiate the ABI and call init. The only user of ltdl.h.
 *
 * Search order: the compiled-in plugin directory (relative to the
 * executable), then LLM_SANDBOX_PLUGIN_PATH. A directory is flat: NAME.yaml
 * beside the library it names. The manifest is read and validated before
 * the library is opened, and the descriptor must agree with it. Every
 * problem (bad manifest, missing library or symbol, ABI mismatch, duplicate
 * name, failed init) marks that one plugin broken with a message; nothing
 * here stops the other plugins or the core. Runs once, on the main thread,
 * before workers exist (libltdl is not meant for threads). A server opens
 * only its own backend's library (sbx_runtime_opts.only_default_backend):
 * the others stay PLUGIN_UNLOADED, with their manifests read. libcurl is
 * opened here, before the library of a plugin that says requires.host:
 * [http].
 */
#include "plugins/loader.h"

#include <dirent.h>
#ifndef _WIN32
#include <dlfcn.h>
#endif
#include <errno.h>
#include <ltdl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "base/dynbuf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "net/http.h"
#include "plugins/host_table.h"
#include "plugins/manifest.h"
#include "plugins/plugin_settings.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"

/* The part of struct sbx_plugin every 1.x descriptor has. */
#define DESC_MIN_SIZE (offsetof(struct sbx_plugin, language) + sizeof(void *))

static int plugin_fail(struct plugin *pl, const char *fmt, ...) SBX_PRINTF(2, 3);

static int plugin_fail(struct plugin *pl, const char *fmt, ...)
{
    va_list ap;
    char *msg = NULL;

    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    free(pl->error);
    pl->error = msg;
    pl->state = PLUGIN_BROKEN;
    return -1;
}

/* Check the descriptor against the manifest and the core's ABI. */
static int check_descriptor(struct plugin *pl, const struct sbx_plugin *d)
{
    const struct manifest *m = pl->m;

    if (!d)
        return plugin_fail(pl, "%s: entry point returned no descriptor", m->library);
    if (d->abi_major != SBX_ABI_MAJOR)
        return plugin_fail(pl, "%s: built for plugin ABI %u.x, this core provides %u.%u",
                m->library, d->abi_major, SBX_ABI_MAJOR, SBX_ABI_MINOR);
    if (d->abi_minor > SBX_ABI_MINOR)
        return plugin_fail(pl,
                "%s: needs plugin ABI %u.%u, this core provides %u.%u; upgrade "
                "llm-sandbox",
                m->library, d->abi_major, d->abi_minor, SBX_ABI_MAJOR, SBX_ABI_MINOR);
    if (d->size < DESC_MIN_SIZE)
        return plugin_fail(pl, "%s: descriptor size %u is too small", m->library, d->size);
    if (m->abi_major != d->abi_major)
        return plugin_fail(pl, "manifest says ABI %u, library says %u", m->abi_major, d->abi_major);
    if ((uint32_t)m->kind != d->kind)
        return plugin_fail(pl, "manifest kind and library kind differ");
    if (!d->version || strcmp(d->version, m->version) != 0)
        return plugin_fail(pl, "manifest version '%s' but library version '%s'", m->version,
                d->version ? d->version : "(none)");
    if (m->kind == SBX_KIND_BACKEND) {
        bool found = false;

        for (const char *const *n = d->backend_names; n && *n; n++)
            found = found || strcmp(*n, m->name) == 0;
        if (!found)
            return plugin_fail(pl, "library does not serve backend '%s'", m->name);
        /* ABI 1.3 appended the optional image_id */
        if (!d->backend || d->backend->size < offsetof(struct sbx_backend_ops, image_id) ||
                !d->backend->probe || !d->backend->box_open || !d->backend->box_read ||
                !d->backend->box_write || !d->backend->box_poll_fd || !d->backend->box_write_fd ||
                !d->backend->box_kill || !d->backend->box_close)
            return plugin_fail(pl, "backend operations are missing");
    } else {
        if (!d->name || strcmp(d->name, m->name) != 0)
            return plugin_fail(pl, "manifest name '%s' but library name '%s'", m->name,
                    d->name ? d->name : "(none)");
        /* ABI 1.2 appended the optional prepare_install (install.c reads
         * it only when the size covers it) */
        if (!d->language || d->language->size < offsetof(struct sbx_language_ops, prepare_install))
            return plugin_fail(pl, "language operations are missing");
    }
    return 0;
}

/* libltdl reports every failure as "file not found"; ask the dynamic
 * loader itself for the reason (a bad ELF header, a missing dependency). */
#ifndef _WIN32
static const char *load_reason(const char *path, const char *fallback)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const char *e = dlerror();

    if (h)
        dlclose(h);
    return !h && e ? e : fallback;
}
#endif

static int open_library(struct sbx_runtime *rt, struct plugin *pl)
{
    cleanup_free char *path = NULL;
    const struct sbx_plugin *desc;
    struct sbx_err perr;
    sbx_plugin_entry_fn entry;
    lt_dlhandle h;
    struct stat st;

    /* Refuse by the manifest's word before running any of its code. */
    if (pl->m->abi_major != SBX_ABI_MAJOR)
        return plugin_fail(pl, "manifest says plugin ABI %u.%u, this core provides %u.%u",
                pl->m->abi_major, pl->m->abi_minor, SBX_ABI_MAJOR, SBX_ABI_MINOR);
    if (pl->m->abi_minor > SBX_ABI_MINOR)
        return plugin_fail(pl,
                "manifest says plugin ABI %u.%u, this core provides %u.%u; "
                "upgrade llm-sandbox",
                pl->m->abi_major, pl->m->abi_minor, SBX_ABI_MAJOR, SBX_ABI_MINOR);
#ifdef _WIN32
    /* The same manifests on Windows: library NAME.so names NAME.dll (the
     * manifest rule makes every library end in ".so"). */
    if (asprintf(&path, "%s/%.*s.dll", pl->dir, (int)(strlen(pl->m->library) - 3), pl->m->library) <
            0)
        return plugin_fail(pl, "out of memory");
#else
    if (asprintf(&path, "%s/%s", pl->dir, pl->m->library) < 0)
        return plugin_fail(pl, "out of memory");
#endif
    if (lstat(path, &st) < 0)
        return plugin_fail(pl, "library %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return plugin_fail(pl, "library %s is not a regular file", path);
    sbx_err_init(&perr);
    if (strv_contains(pl->m->host_services, "http") && http_open(&perr) < 0)
        return plugin_fail(pl, "%s", perr.msg);
    h = lt_dlopen(path);
    if (!h) {
        const char *lterr = lt_dlerror();

#ifdef _WIN32
        return plugin_fail(pl, "cannot load %s: %s (a DLL it needs may be missing beside it)", path,
                lterr ? lterr : "unknown error");
#else
        return plugin_fail(pl, "cannot load %s: %s (check its dependencies with 'ldd %s')", path,
                load_reason(path, lterr ? lterr : "unknown error"), path);
#endif
    }
    pl->handle = h;
    entry = (sbx_plugin_entry_fn)(uintptr_t)lt_dlsym(h, SBX_PLUGIN_ENTRY_SYMBOL);
    if (!entry)
        return plugin_fail(pl, "%s does not export %s", path, SBX_PLUGIN_ENTRY_SYMBOL);
    desc = entry();
    if (check_descriptor(pl, desc) < 0)
        return -1;
    pl->desc = desc;
    host_init(&pl->hctx, rt, pl);
    sbx_err_init(&perr);
    if (pl->desc->init && pl->desc->init(&pl->hctx.host, pl->name, &pl->pstate, &perr) < 0) {
        pl->desc = NULL;
        return plugin_fail(pl, "init failed: %s", perr.msg[0] ? perr.msg : "no message");
    }
    return 0;
}

static struct plugin *plugin_new(const char *dir, const char *file)
{
    struct plugin *pl = calloc(1, sizeof(*pl));

    if (!pl)
        return NULL;
    pthread_mutex_init(&pl->probe_lock, NULL);
    pl->dir = strdup(dir);
    pl->file = strdup(file);
    pl->name = strndup(file, strlen(file) - 5); /* without ".yaml" */
    if (!pl->dir || !pl->file || !pl->name) {
        free(pl->dir), free(pl->file), free(pl->name), free(pl);
        return NULL;
    }
    return pl;
}

static void plugin_load(struct sbx_runtime *rt, struct plugin *pl, bool builtin_dir)
{
    cleanup_error struct sbx_error *e = NULL;
    struct plugin *prev;

    if (manifest_load(pl->dir, pl->file, &pl->m, &e) < 0) {
        plugin_fail(pl, "%s", e->msg);
        return;
    }
    if (plugin_settings_expand_defaults(rt->settings, pl->m) < 0) {
        plugin_fail(pl, "out of memory");
        return;
    }
    if (strcmp(pl->m->name, pl->name) != 0) {
        plugin_fail(pl, "%s/%s: file must be named after the plugin ('%s.yaml')", pl->dir, pl->file,
                pl->m->name);
        return;
    }
    prev = registry_find_any(rt, pl->m->kind, pl->m->name);
    if (prev && prev != pl) {
        pl->state = PLUGIN_SHADOWED;
        if (asprintf(&pl->error, "ignored: a plugin named '%s' was already found in %s%s", pl->name,
                    prev->dir, builtin_dir ? "" : " (the installed one wins)") < 0)
            pl->error = NULL;
        return;
    }
    if (!pl->m->library) {
        if (pl->m->kind == SBX_KIND_BACKEND)
            plugin_fail(pl, "a backend needs a library");
        return; /* a data-only language */
    }
    if (pl->m->kind == SBX_KIND_BACKEND && rt->only_default_backend &&
            !plugin_has_name(pl, rt->settings->backend)) {
        /* what it would map (libcurl, libarchive, TLS) stays out of an
         * idle server; `llm-sandbox plugins` opens every one */
        pl->state = PLUGIN_UNLOADED;
        if (asprintf(&pl->error,
                    "not loaded by this server, which runs backend '%s' (BACKEND); "
                    "'llm-sandbox plugins' checks it",
                    rt->settings->backend) < 0)
            pl->error = NULL;
        return;
    }
    open_library(rt, pl);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int scan_dir(struct sbx_runtime *rt, const char *dir, bool builtin_dir)
{
    cleanup_strv char **files = NULL;
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t n;

    if (!d) {
        if (errno != ENOENT || !builtin_dir)
            log_msg(SBX_LOG_WARN, NULL, "plugin directory %s: %s", dir, strerror(errno));
        return 0;
    }
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);

        if (len > 5 && strcmp(de->d_name + len - 5, ".yaml") == 0 && de->d_name[0] != '.' &&
                strv_push(&files, de->d_name) < 0) {
            closedir(d);
            return SBX_E_NOMEM;
        }
    }
    closedir(d);
    n = strv_len(files);
    if (n)
        qsort(files, n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < n; i++) {
        struct plugin *pl = plugin_new(dir, files[i]), **np;

        if (!pl)
            return SBX_E_NOMEM;
        np = realloc(rt->plugins, (rt->n_plugins + 1) * sizeof(*np));
        if (!np) {
            pthread_mutex_destroy(&pl->probe_lock);
            free(pl->dir), free(pl->file), free(pl->name), free(pl);
            return SBX_E_NOMEM;
        }
        rt->plugins = np;
        rt->plugins[rt->n_plugins++] = pl;
        plugin_load(rt, pl, builtin_dir);
        if (pl->state == PLUGIN_BROKEN)
            log_msg(SBX_LOG_INFO, pl->name, "%s", pl->error);
    }
    return 0;
}

/* The config file's plugin keys (LLM_SANDBOX_<PLUGIN>_<KEY>, and the
 * foreign names manifests declare) must belong to a plugin found, loaded or
 * not; a typo must not pass as a plugin setting. */
static int check_config_keys(struct sbx_runtime *rt, struct sbx_error **err)
{
    cleanup_free const struct manifest **ms = calloc(rt->n_plugins + 1, sizeof(*ms));

    if (!ms)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    for (size_t i = 0; i < rt->n_plugins; i++)
        ms[i] = rt->plugins[i]->m;
    if (plugin_settings_check_keys(rt->settings, ms, rt->n_plugins, err) < 0)
        return sbx_error_wrap(err, "configuration");
    return 0;
}

/* LLM_SANDBOX_LANGUAGES: every language not named is disabled; a name
 * that no usable language answers to is a start-up error. */
static int apply_allowed_languages(struct sbx_runtime *rt, struct sbx_error **err)
{
    char **allowed = rt->settings->languages;

    if (!allowed)
        return 0;
    for (char **l = allowed; *l; l++)
        if (!registry_find(rt, SBX_KIND_LANGUAGE, *l))
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_LANGUAGES",
                    "LLM_SANDBOX_LANGUAGES names '%s', which is not an installed, usable "
                    "language",
                    *l);
    for (size_t i = 0; i < rt->n_plugins; i++) {
        struct plugin *pl = rt->plugins[i];
        bool keep = false;

        if (pl->state != PLUGIN_OK || pl->m->kind != SBX_KIND_LANGUAGE)
            continue;
        for (char **l = allowed; *l && !keep; l++)
            keep = plugin_has_name(pl, *l);
        if (!keep) {
            pl->state = PLUGIN_DISABLED;
            free(pl->error);
            pl->error = strdup("not offered: LLM_SANDBOX_LANGUAGES leaves it out");
        }
    }
    return 0;
}

int loader_load_all(struct sbx_runtime *rt, struct sbx_error **err)
{
    if (lt_dlinit() != 0)
        return sbx_error_set(err, SBX_E_INTERNAL, 0, "libltdl: %s", lt_dlerror());
    rt->ltdl_ready = true;
    if (scan_dir(rt, rt->plugin_dir, true) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    for (char **d = rt->settings->plugin_path; d && *d; d++) {
        if (scan_dir(rt, *d, false) < 0)
            return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    if (check_config_keys(rt, err) < 0)
        return (*err)->rc;
    return apply_allowed_languages(rt, err);
}

void loader_unload_all(struct sbx_runtime *rt)
{
    for (size_t i = 0; i < rt->n_plugins; i++) {
        struct plugin *pl = rt->plugins[i];

        if (pl->desc && pl->desc->fini)
            pl->desc->fini(pl->pstate);
        if (pl->handle)
            lt_dlclose((lt_dlhandle)pl->handle);
        manifest_free(pl->m);
        pthread_mutex_destroy(&pl->probe_lock);
        free(pl->dir), free(pl->file), free(pl->name), free(pl->error), free(pl->probe_error);
        free(pl->version), free(pl->details_key), free(pl->paths);
        strv_free(pl->libraries);
        free(pl);
    }
    free(rt->plugins);
    rt->plugins = NULL;
    rt->n_plugins = 0;
    if (rt->ltdl_ready)
        lt_dlexit();
    rt->ltdl_ready = false;
}
