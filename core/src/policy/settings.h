/* SPDX-License-Identifier: MIT */
/*
 * settings.h: server configuration. settings.c is the only reader of the
 * environment (STYLE I3). Every variable is listed in the README's
 * configuration table; a bad value is an error naming the variable, never a
 * silent default.
 *
 * The optional config file (config.h) gives the same variables as YAML
 * keys. Precedence: built-in defaults < config file < environment (a
 * variable set and non-empty in the environment wins) < request.
 *
 * Each limit has a default (what a request gets when it asks for nothing)
 * and a ceiling (the most a request may ask for). Setting the default above
 * the built-in ceiling raises the ceiling with it; the ceiling variables
 * (LLM_SANDBOX_MAX_*) set it on their own.
 */
#ifndef SBX_SETTINGS_H
#define SBX_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

struct config;

struct settings {
    char *backend;      /* BACKEND (canonical or alias), default "bwrap" */
    char *language;     /* LLM_SANDBOX_DEFAULT_LANGUAGE, default "python" */
    char **plugin_path; /* LLM_SANDBOX_PLUGIN_PATH, NULL-terminated */
    struct sbx_policy defaults;
    struct sbx_policy ceilings; /* network: the widest mode allowed */
    uint32_t explicit_mask;     /* bit per enum sbx_control set by the operator */
    bool allow_host_network;    /* LLM_SANDBOX_ALLOW_HOST_NETWORK */
    char **env_allow;           /* LLM_SANDBOX_ENV_ALLOW: names passed through */
    char **env_pass;            /* "K=V" of those names found in our environment */
    uint32_t sandbox_uid;       /* LLM_SANDBOX_UID, when running as root */
    uint32_t sandbox_gid;       /* LLM_SANDBOX_GID */
    bool cgroup_v1;             /* LLM_SANDBOX_CGROUP=auto|v1|v2|off */
    bool cgroup_v2;
    int log_level;            /* LLM_SANDBOX_LOG_LEVEL */
    uint64_t max_code_bytes;  /* LLM_SANDBOX_MAX_CODE_BYTES, default 1 MiB */
    uint64_t max_stdin_bytes; /* LLM_SANDBOX_MAX_STDIN_BYTES, default 16 MiB */
    char *home;               /* $HOME (absolute) or /root: "~/" in a plugin's defaults */
    char *runtime_dir;        /* $XDG_RUNTIME_DIR (absolute) or NULL: the user's D-Bus */
    char *http_token;         /* LLM_SANDBOX_HTTP_TOKEN: bearer token for MCP over HTTP */
    char *audit_log;          /* LLM_SANDBOX_AUDIT_LOG: file for one JSON line per call */
    unsigned max_concurrent;  /* LLM_SANDBOX_MAX_CONCURRENT: tool calls at once, 0: CPUs */
    char **languages;         /* LLM_SANDBOX_LANGUAGES: the only ones offered, or NULL: all */
    /* LLM_SANDBOX_UID_RANGE "FIRST:COUNT" (or "off": count 0, every sandbox
     * is sandbox_uid): as root each sandbox runs as its own uid (and gid of
     * the same number) of the range */
    uint32_t uid_range_first, uid_range_count;
    /* Dependency installs (deps.c) */
    char *cache_dir;             /* LLM_SANDBOX_CACHE_DIR, default /var/cache/llm-sandbox as
                                    root, else $XDG_CACHE_HOME/llm-sandbox (~/.cache/...) */
    uint64_t cache_max_bytes;    /* LLM_SANDBOX_CACHE_MAX: all dependency sets, default 4G */
    uint64_t install_max_bytes;  /* LLM_SANDBOX_INSTALL_MAX: one set, default 2G */
    uint64_t install_timeout_ms; /* LLM_SANDBOX_INSTALL_TIMEOUT: seconds, default 300 */
    char **install_env;          /* "K=V" of the reference's install variables set (R_REPO):
                                    they replace the same key of a manifest's install env */
    /* Sessions (session.c) */
    uint64_t session_idle_ms;     /* LLM_SANDBOX_SESSION_IDLE: seconds unused, default 600 */
    uint64_t session_lifetime_ms; /* LLM_SANDBOX_SESSION_LIFETIME: seconds, default 3600 */
    uint64_t sessions_max;        /* LLM_SANDBOX_SESSIONS_MAX: open at once, default 8 */
    uint64_t file_max_bytes;      /* LLM_SANDBOX_FILE_MAX: one upload or download, 16M */
    /* Artifacts (artifacts.c) */
    uint64_t artifacts_max;   /* LLM_SANDBOX_ARTIFACTS_MAX: files per call, default 64 */
    uint64_t artifacts_bytes; /* LLM_SANDBOX_ARTIFACTS_BYTES: fetched per call, 16M */
    uint64_t artifact_ttl_ms; /* LLM_SANDBOX_ARTIFACT_TTL: a run's kept, default 300 s */
    /* Warm one-shot runs (pool.c) */
    uint64_t pool_size;    /* LLM_SANDBOX_POOL: ready sandboxes per kind in use, 0: off; 2 */
    uint64_t pool_max;     /* LLM_SANDBOX_POOL_MAX: ready sandboxes of all kinds, default 8 */
    uint64_t pool_idle_ms; /* LLM_SANDBOX_POOL_IDLE: a kind unused this long is emptied, 300 s */
    bool zygote;           /* LLM_SANDBOX_ZYGOTE: one-shot runs fork from a zygote box where
                              the language and backend have them (pool.c); false */
    /* MCP tool results (core/mcp/results.c) */
    uint64_t inline_images_max;  /* LLM_SANDBOX_INLINE_IMAGES: per result, default 8 */
    uint64_t inline_image_bytes; /* LLM_SANDBOX_INLINE_IMAGE_BYTES: their bytes, default 4M */
    bool result_text_json;       /* LLM_SANDBOX_RESULT_TEXT=json: the text block is the JSON */
    struct config *config;       /* the config file read, or NULL */
};

/* Built-in defaults only (no environment). */
void settings_init_defaults(struct settings *s);
/* Defaults, then the config file named by LLM_SANDBOX_CONFIG (if set),
 * then the environment. (transfer full) */
int settings_load(struct settings **ret, struct sbx_error **err);
/* The same with the config file config_path (NULL: LLM_SANDBOX_CONFIG, if
 * set). Errors: SBX_E_IO (the file cannot be read), SBX_E_INVALID (a bad
 * file, key or value: "FILE:LINE:COLUMN: " before the variable's usual
 * message when the value came from the file), SBX_E_UNSUPPORTED,
 * SBX_E_NOMEM. */
int settings_load_file(const char *config_path, struct settings **ret, struct sbx_error **err);
/* The same with the config file's contents given (path for messages);
 * for tests and fuzzing. */
int settings_load_data(const char *path, const char *data, size_t len, struct settings **ret,
        struct sbx_error **err);
struct settings *settings_free(struct settings *s);

/* A variable from the environment, else from the config file; empty
 * counts as unset in both. (transfer none) */
const char *settings_lookup(const struct settings *s, const char *name);
/* Is key one of the core's own variables (not a plugin's)? */
bool settings_is_core_key(const char *key);

/* Names and parsing of network modes ("off", "registries", "allowlist",
 * "on", "host"); -1 when unknown. */
int network_from_str(const char *s);
const char *network_str(uint32_t net);

#endif
