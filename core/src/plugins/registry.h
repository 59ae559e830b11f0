/* SPDX-License-Identifier: MIT */
/*
 * registry.h: the plugins the loader found (struct plugin), looked up by
 * name or alias, and the data files beside their manifests. Written only
 * while sbx_runtime_new runs (main thread, before any worker starts,
 * STYLE C1) and read-only afterwards, except each backend's lazily made
 * probe, guarded by its own mutex (host_table.h).
 */
#ifndef SBX_PLUGINS_REGISTRY_H
#define SBX_PLUGINS_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

struct manifest;
struct sbx_runtime;

/* The host table lent to one plugin; the table comes first so a
 * `const struct sbx_host *` can be turned back into its context. */
struct host_ctx {
    struct sbx_host host;
    struct sbx_runtime *rt;
    struct plugin *plugin;
};

/* What every platform's host table (host_table.c, platform/win_host.c)
 * shares: the context of a table, a core error copied into a plugin's
 * report (freed; returns its code), the log, setting, sandbox ids and
 * instance services. */
static inline const struct host_ctx *host_ctx_of(const struct sbx_host *h)
{
    return (const struct host_ctx *)(const void *)h;
}

struct sbx_error;
int host_ctx_error(struct sbx_err *perr, struct sbx_error *e);
void host_ctx_log(const struct sbx_host *h, int level, const char *fmt, ...) SBX_PRINTF(3, 4);
const char *host_ctx_setting(const struct sbx_host *h, const char *key);
void host_ctx_sandbox_ids(const struct sbx_host *h, uint32_t *ret_uid, uint32_t *ret_gid);
const char *host_ctx_instance_id(const struct sbx_host *h);

enum plugin_state {
    PLUGIN_OK = 0,
    PLUGIN_BROKEN = 1,   /* manifest, library, ABI or init failed: see error */
    PLUGIN_SHADOWED = 2, /* an earlier directory has a plugin of this name */
    PLUGIN_DISABLED = 3, /* a language left out by LLM_SANDBOX_LANGUAGES */
    PLUGIN_UNLOADED = 4, /* a backend a server does not run: library not opened */
};

struct plugin {
    char *dir;
    char *file; /* manifest file name */
    char *name; /* manifest name, or the file's stem when unreadable */
    struct manifest *m;
    enum plugin_state state;
    char *error;
    void *handle; /* lt_dlhandle */
    const struct sbx_plugin *desc;
    void *pstate;
    struct host_ctx hctx;
    /* backends: the probe, made once on first use */
    pthread_mutex_t probe_lock;
    bool probed;
    int probe_rc;
    char *probe_error;
    struct sbx_caps caps;
    bool agent_filter; /* the backend applies no seccomp policy: the agent applies ours */
    /* languages: the toolchain's version and its libraries, probed in a
     * sandbox of the default backend once per toolchain (runtime/details.c),
     * under probe_lock */
    bool version_probed;
    char *version;
    char **libraries;  /* "NAME VERSION", sorted, or NULL */
    char *details_key; /* the toolchain they were probed for, or NULL */
    char *paths;       /* the directories they came from, with their stamps */
};

/* Is name the plugin's name or one of its aliases? */
bool plugin_has_name(const struct plugin *pl, const char *name);
/* A usable plugin of that kind by name or alias, or NULL. */
struct plugin *registry_find(struct sbx_runtime *rt, enum sbx_plugin_kind kind, const char *name);
/* Any plugin (even broken) of that kind by name or alias, or NULL. */
struct plugin *registry_find_any(
        struct sbx_runtime *rt, enum sbx_plugin_kind kind, const char *name);
/* "bwrap, nsjail" (usable plugins of a kind). (transfer full) */
char *registry_names(struct sbx_runtime *rt, enum sbx_plugin_kind kind);
/* The same for every plugin of kind found with a readable manifest,
 * whatever its state (usable, broken, not loaded, disabled), aliases
 * left out. */
char *registry_names_found(struct sbx_runtime *rt, enum sbx_plugin_kind kind);

/* A data file beside the plugin's manifest (a language's driver or support
 * file), NUL-terminated; NULL with err set (SBX_E_UNAVAILABLE, SBX_E_NOMEM)
 * when missing, empty or over 256 KiB. (transfer full) */
char *plugin_file_read(
        const struct plugin *pl, const char *name, size_t *ret_len, struct sbx_error **err);

#endif
