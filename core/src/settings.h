/* SPDX-License-Identifier: MIT */
/*
 * settings.h: server configuration. settings.c is the only reader of the
 * environment (STYLE I3). Every variable is listed in the README's
 * configuration table; a bad value is an error naming the variable, never a
 * silent default.
 *
 * Each limit has a default (what a request gets when it asks for nothing)
 * and a ceiling (the most a request may ask for). Setting the default above
 * the built-in ceiling raises the ceiling with it; the ceiling variables
 * (LLM_SANDBOX_MAX_*) set it on their own.
 */
#ifndef SBX_SETTINGS_H
#define SBX_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

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
};

/* Built-in defaults only (no environment). */
void settings_init_defaults(struct settings *s);
/* Defaults, then the environment. (transfer full) */
int settings_load(struct settings **ret, struct sbx_error **err);
struct settings *settings_free(struct settings *s);

/* A plugin's setting KEY from LLM_SANDBOX_<PLUGIN>_<KEY> (upper-cased), or
 * NULL. (transfer none: points into the environment) */
const char *settings_plugin_value(const char *plugin, const char *key);

/* Names and parsing of network modes ("off", "registries", "allowlist",
 * "on", "host"); -1 when unknown. */
int network_from_str(const char *s);
const char *network_str(uint32_t net);

#endif
