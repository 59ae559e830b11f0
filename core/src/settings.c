/* SPDX-License-Identifier: MIT */
/*
 * settings.c: read the configuration from the environment, the only file
 * that calls secure_getenv (STYLE I3). Reference-compatible names
 * (BACKEND, SANDBOX_MEMORY, SANDBOX_CPUS, SANDBOX_NETWORK_MODE, ...) map
 * onto the same policy fields as our LLM_SANDBOX_* names. A bad value is
 * an SBX_E_INVALID error naming the variable. Does no other I/O.
 */
#include "settings.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "error.h"
#include "log.h"
#include "util.h"

#define MIB (1024ull * 1024ull)

static const char *const network_names[] = {"off", "registries", "allowlist", "on", "host"};

int network_from_str(const char *s)
{
    for (int i = 0; i < 5; i++) {
        if (s && strcmp(s, network_names[i]) == 0)
            return i;
    }
    return -1;
}

const char *network_str(uint32_t net)
{
    return net < 5 ? network_names[net] : "unknown";
}

void settings_init_defaults(struct settings *s)
{
    memset(s, 0, sizeof(*s));
    s->defaults = (struct sbx_policy){
            .size = sizeof(struct sbx_policy),
            .network = SBX_NET_OFF,
            .wall_time_ms = 30000,
            .memory_bytes = 512 * MIB,
            .cpu_millicores = 1000,
            .pids_max = 256,
            .output_bytes = 1 * MIB,
            .file_size_bytes = 256 * MIB,
            .workspace_bytes = 512 * MIB,
            .open_files_max = 1024,
            .read_only_system = 1,
    };
    s->ceilings = s->defaults;
    s->ceilings.wall_time_ms = 300000;
    s->ceilings.read_only_system = 1;
    s->sandbox_uid = 1879048192u; /* 0x70000000: a uid no host user has */
    s->sandbox_gid = 1879048192u;
    s->cgroup_v1 = true;
    s->cgroup_v2 = true;
    s->log_level = SBX_LOG_WARN;
    s->max_code_bytes = 1 * MIB;
    s->max_stdin_bytes = 16 * MIB;
}

static const char *env(const char *name)
{
    const char *v = secure_getenv(name);

    return v && *v ? v : NULL;
}

/* The first of two names that is set (reference name, then ours). */
static const char *env2(const char *a, const char *b, const char **ret_name)
{
    const char *v = env(a);

    *ret_name = a;
    if (!v) {
        v = env(b);
        *ret_name = b;
    }
    return v;
}

enum kind { K_SIZE, K_SECONDS, K_CORES, K_COUNT };

static int parse_kind(enum kind k, const char *v, uint64_t *ret)
{
    switch (k) {
    case K_SIZE: return parse_size(v, ret);
    case K_SECONDS: return parse_seconds_ms(v, ret);
    case K_CORES: return parse_millicores(v, ret);
    case K_COUNT: return parse_u64(v, ret);
    }
    return SBX_E_INVALID;
}

struct limit_var {
    const char *ref;  /* reference implementation's name, or NULL */
    const char *name; /* ours: the default */
    const char *max;  /* ours: the ceiling */
    enum kind kind;
    size_t offset; /* of the uint64_t in struct sbx_policy */
    enum sbx_control ctl;
};

#define OFF(f) offsetof(struct sbx_policy, f)
static const struct limit_var limit_vars[] = {
        {NULL, "LLM_SANDBOX_TIMEOUT", "LLM_SANDBOX_MAX_TIMEOUT", K_SECONDS, OFF(wall_time_ms),
                SBX_CTL_WALL_TIME},
        {"SANDBOX_MEMORY", "SANDBOX_MEM_LIMIT", "LLM_SANDBOX_MAX_MEMORY", K_SIZE, OFF(memory_bytes),
                SBX_CTL_MEMORY},
        {"SANDBOX_CPUS", "SANDBOX_CPU_COUNT", "LLM_SANDBOX_MAX_CPUS", K_CORES, OFF(cpu_millicores),
                SBX_CTL_CPU},
        {NULL, "LLM_SANDBOX_PIDS", "LLM_SANDBOX_MAX_PIDS", K_COUNT, OFF(pids_max), SBX_CTL_PIDS},
        {NULL, "LLM_SANDBOX_OUTPUT_BYTES", "LLM_SANDBOX_MAX_OUTPUT_BYTES", K_SIZE,
                OFF(output_bytes), SBX_CTL_OUTPUT},
        {NULL, "LLM_SANDBOX_FILE_SIZE", "LLM_SANDBOX_MAX_FILE_SIZE", K_SIZE, OFF(file_size_bytes),
                SBX_CTL_FILE_SIZE},
        {NULL, "LLM_SANDBOX_WORKSPACE_SIZE", "LLM_SANDBOX_MAX_WORKSPACE_SIZE", K_SIZE,
                OFF(workspace_bytes), SBX_CTL_WORKSPACE},
};

static uint64_t *field(struct sbx_policy *p, size_t off)
{
    return (uint64_t *)(void *)((char *)p + off);
}

static int load_limit(struct settings *s, const struct limit_var *lv, struct sbx_error **err)
{
    const char *name = lv->name, *v;
    uint64_t val, max;

    v = lv->ref ? env2(lv->ref, lv->name, &name) : env(lv->name);
    if (v) {
        if (parse_kind(lv->kind, v, &val) < 0 || (val == 0 && lv->kind != K_CORES))
            return sbx_error_set_field(err, SBX_E_INVALID, name, "%s='%s' is not a valid %s", name,
                    v,
                    lv->kind == K_SIZE    ? "size (e.g. 512M, 1G)"
                    : lv->kind == K_COUNT ? "positive count"
                                          : "positive number");
        *field(&s->defaults, lv->offset) = val;
        if (*field(&s->ceilings, lv->offset) < val)
            *field(&s->ceilings, lv->offset) = val;
        s->explicit_mask |= 1u << lv->ctl;
    }
    v = env(lv->max);
    if (v) {
        if (parse_kind(lv->kind, v, &max) < 0 || max == 0)
            return sbx_error_set_field(
                    err, SBX_E_INVALID, lv->max, "%s='%s' is not valid", lv->max, v);
        if (max < *field(&s->defaults, lv->offset))
            return sbx_error_set_field(err, SBX_E_INVALID, lv->max,
                    "%s='%s' is below the configured default", lv->max, v);
        *field(&s->ceilings, lv->offset) = max;
    }
    return 0;
}

/* SANDBOX_NETWORK_MODE (Docker's words) or LLM_SANDBOX_NETWORK (ours). */
static int load_network(struct settings *s, struct sbx_error **err)
{
    const char *v = env("LLM_SANDBOX_NETWORK"), *ref = env("SANDBOX_NETWORK_MODE");
    int net = -1;

    if (v) {
        net = network_from_str(v);
        if (net < 0)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_NETWORK",
                    "LLM_SANDBOX_NETWORK='%s' must be off, on or host", v);
    } else if (ref) {
        if (strcmp(ref, "none") == 0)
            net = SBX_NET_OFF;
        else if (strcmp(ref, "bridge") == 0 || strcmp(ref, "default") == 0)
            net = SBX_NET_ON;
        else if (strcmp(ref, "host") == 0)
            net = SBX_NET_HOST;
        else
            return sbx_error_set_field(err, SBX_E_INVALID, "SANDBOX_NETWORK_MODE",
                    "SANDBOX_NETWORK_MODE='%s' must be none, bridge or host", ref);
    }
    if (net < 0)
        return 0;
    if (net == SBX_NET_REGISTRIES || net == SBX_NET_ALLOWLIST)
        return sbx_error_set_field(err, SBX_E_UNSUPPORTED, "LLM_SANDBOX_NETWORK",
                "LLM_SANDBOX_NETWORK=%s needs the filtering proxy, which this version lacks",
                network_str((uint32_t)net));
    if (net == SBX_NET_HOST && !s->allow_host_network)
        return sbx_error_set_field(err, SBX_E_UNSUPPORTED,
                v ? "LLM_SANDBOX_NETWORK" : "SANDBOX_NETWORK_MODE",
                "%s=host: sharing the host's network needs LLM_SANDBOX_ALLOW_HOST_NETWORK=1 "
                "as well",
                v ? "LLM_SANDBOX_NETWORK" : "SANDBOX_NETWORK_MODE");
    s->defaults.network = (uint32_t)net;
    s->ceilings.network = (uint32_t)net;
    s->explicit_mask |= 1u << SBX_CTL_NET_OFF;
    return 0;
}

static int load_bool(const char *name, bool *ret, struct sbx_error **err)
{
    const char *v = env(name);

    if (v && parse_bool(v, ret) < 0)
        return sbx_error_set_field(
                err, SBX_E_INVALID, name, "%s='%s' must be true or false", name, v);
    return 0;
}

static int load_list(const char *name, char ***ret, char sep)
{
    const char *v = env(name), *p;

    if (!v)
        return 0;
    for (p = v; *p;) {
        const char *e = strchr(p, sep);
        size_t n = e ? (size_t)(e - p) : strlen(p);

        if (n > 0) {
            cleanup_free char *item = strndup(p, n);

            if (!item || strv_push(ret, item) < 0)
                return SBX_E_NOMEM;
        }
        p += n + (e ? 1 : 0);
    }
    return 0;
}

static int load_env_allow(struct settings *s, struct sbx_error **err)
{
    if (load_list("LLM_SANDBOX_ENV_ALLOW", &s->env_allow, ',') < 0)
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    for (size_t i = 0; s->env_allow && s->env_allow[i]; i++) {
        const char *k = s->env_allow[i], *v;

        if (!env_key_is_valid(k))
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_ENV_ALLOW",
                    "LLM_SANDBOX_ENV_ALLOW: '%s' is not a variable name", k);
        v = secure_getenv(k);
        if (v && strv_pushf(&s->env_pass, "%s=%s", k, v) < 0)
            return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    }
    return 0;
}

static int load_ids(struct settings *s, struct sbx_error **err)
{
    static const char *const names[] = {"LLM_SANDBOX_UID", "LLM_SANDBOX_GID"};
    uint32_t *dst[] = {&s->sandbox_uid, &s->sandbox_gid};

    for (int i = 0; i < 2; i++) {
        const char *v = env(names[i]);
        uint64_t id;

        if (!v)
            continue;
        if (parse_u64(v, &id) < 0 || id == 0 || id >= UINT32_MAX)
            return sbx_error_set_field(err, SBX_E_INVALID, names[i],
                    "%s='%s' must be a non-zero numeric id", names[i], v);
        *dst[i] = (uint32_t)id;
    }
    return 0;
}

static int load_misc(struct settings *s, struct sbx_error **err)
{
    const char *v;
    bool ro = true, priv = false;

    if ((v = env("LLM_SANDBOX_LOG_LEVEL"))) {
        static const char *const lv[] = {"error", "warn", "info", "debug"};

        s->log_level = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(v, lv[i]) == 0)
                s->log_level = i;
        if (s->log_level < 0)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_LOG_LEVEL",
                    "LLM_SANDBOX_LOG_LEVEL='%s' must be error, warn, info or debug", v);
    }
    if ((v = env("LLM_SANDBOX_CGROUP"))) {
        s->cgroup_v1 = strcmp(v, "auto") == 0 || strcmp(v, "v1") == 0;
        s->cgroup_v2 = strcmp(v, "auto") == 0 || strcmp(v, "v2") == 0;
        if (!s->cgroup_v1 && !s->cgroup_v2 && strcmp(v, "off") != 0)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_CGROUP",
                    "LLM_SANDBOX_CGROUP='%s' must be auto, v1, v2 or off", v);
    }
    if (load_bool("SANDBOX_READ_ONLY", &ro, err) < 0 ||
            load_bool("SANDBOX_PRIVILEGED", &priv, err) < 0 ||
            load_bool("LLM_SANDBOX_ALLOW_HOST_NETWORK", &s->allow_host_network, err) < 0)
        return (*err)->rc;
    if (priv)
        return sbx_error_set_field(err, SBX_E_UNSUPPORTED, "SANDBOX_PRIVILEGED",
                "SANDBOX_PRIVILEGED=true is refused: llm-sandbox never runs code privileged");
    if (!ro) {
        s->defaults.read_only_system = 0;
        s->ceilings.read_only_system = 0;
        s->explicit_mask |= 1u << SBX_CTL_READ_ONLY_SYSTEM;
    }
    if ((v = env("BACKEND")) && !(s->backend = strdup(v)))
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    if ((v = env("LLM_SANDBOX_DEFAULT_LANGUAGE")) && !(s->language = strdup(v)))
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    return 0;
}

int settings_load(struct settings **ret, struct sbx_error **err)
{
    struct settings *s = calloc(1, sizeof(*s));

    if (!s)
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    settings_init_defaults(s);
    if (load_misc(s, err) < 0 || load_network(s, err) < 0 || load_env_allow(s, err) < 0 ||
            load_ids(s, err) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof(limit_vars) / sizeof(limit_vars[0]); i++) {
        if (load_limit(s, &limit_vars[i], err) < 0)
            goto fail;
    }
    if (load_list("LLM_SANDBOX_PLUGIN_PATH", &s->plugin_path, ':') < 0) {
        sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
        goto fail;
    }
    if ((!s->backend && !(s->backend = strdup("bwrap"))) ||
            (!s->language && !(s->language = strdup("python")))) {
        sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
        goto fail;
    }
    *ret = s;
    return 0;
fail:
    settings_free(s);
    return err && *err ? (*err)->rc : SBX_E_INTERNAL;
}

struct settings *settings_free(struct settings *s)
{
    if (!s)
        return NULL;
    free(s->backend);
    free(s->language);
    strv_free(s->plugin_path);
    strv_free(s->env_allow);
    strv_free(s->env_pass);
    free(s);
    return NULL;
}

const char *settings_plugin_value(const char *plugin, const char *key)
{
    char name[128];
    size_t o = 0;

    for (const char *p = "LLM_SANDBOX_"; *p; p++)
        name[o++] = *p;
    for (const char *parts[] = {plugin, "_", key}, **q = parts; q < parts + 3; q++) {
        for (const char *p = *q; *p && o + 1 < sizeof(name); p++)
            name[o++] = (char)toupper((unsigned char)*p);
    }
    name[o] = '\0';
    return env(name);
}
