/* SPDX-License-Identifier: MIT */
/*
 * runtime.h: the runtime object behind sbx.h and the plugin registry the
 * loader fills. Private to core/src. The registry is written only during
 * sbx_runtime_new (main thread, before any worker starts, STYLE C1) and
 * read-only afterwards, except each backend's lazily made probe, guarded by
 * its own mutex.
 */
#ifndef SBX_RUNTIME_H
#define SBX_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

struct settings;
struct manifest;
struct cg_service;
struct sessions;
struct artifact_store;
struct pools;
struct sbx_runtime;
struct plugin;

/* The host table lent to one plugin; the table comes first so a
 * `const struct sbx_host *` can be turned back into its context. */
struct host_ctx {
    struct sbx_host host;
    struct sbx_runtime *rt;
    struct plugin *plugin;
};

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
    /* languages: the toolchain's version, probed once in a sandbox */
    bool version_probed;
    char *version;
};

struct sbx_runtime {
    struct settings *settings;
    struct plugin **plugins;
    size_t n_plugins;
    struct cg_service *cg;
    char *plugin_dir; /* the compiled-in one, relative to the executable */
    char *agent_path;
    char owner[64]; /* "p<pid>t<starttime>h<scope>" (owner.h): names cgroups and boxes */
    atomic_uint_fast64_t seq;
    bool ltdl_ready;
    bool only_default_backend;        /* sbx_runtime_opts */
    int audit_fd;                     /* LLM_SANDBOX_AUDIT_LOG, opened for appending, or -1 */
    struct sessions *sessions;        /* session.c's registry */
    struct artifact_store *artifacts; /* artifacts.c: one-shot runs' files, for a while */
    struct pools *pools;              /* pool.c: ready boxes for one-shot runs */
};

/* session.c: the registry, made with the runtime; freeing it closes every
 * session. */
struct sessions *sessions_new(void);
void sessions_free(struct sessions *ss);

/* pool.c: made with the runtime, idle until pools_start (a server's
 * sbx_runtime_warm); freeing it closes every ready box. */
struct pools *pools_new(struct sbx_runtime *rt);
int pools_start(struct pools *ps, bool ready_default, struct sbx_error **err);
void pools_free(struct pools *ps);

/* loader.c */
int loader_load_all(struct sbx_runtime *rt, struct sbx_error **err);
void loader_unload_all(struct sbx_runtime *rt);
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

/* run.c: run argv (instead of a program) in a fresh sandbox of the default
 * backend with the language's environment; output capped at 4 KiB. */
int run_probe(struct sbx_runtime *rt, const char *language, char **argv, struct sbx_execution **ret,
        struct sbx_error **err);

/* host.c */
void host_init(struct host_ctx *hc, struct sbx_runtime *rt, struct plugin *pl);
/* Run the backend's probe once; later calls return the cached result. */
int backend_probe(struct sbx_runtime *rt, struct plugin *pl, struct sbx_error **err);

#endif
