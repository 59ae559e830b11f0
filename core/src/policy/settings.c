/* SPDX-License-Identifier: MIT */
/*
 * settings.c: read the configuration from the environment and the optional
 * config file; the only file that calls secure_getenv (STYLE I3). Each
 * variable is looked up in the environment, then in the file's table
 * (config.c), so both take the same names and values. Reference-compatible
 * names (BACKEND, SANDBOX_MEMORY, SANDBOX_CPUS, SANDBOX_NETWORK_MODE, ...)
 * map onto the same policy fields as our LLM_SANDBOX_* names. A bad value
 * is an SBX_E_INVALID error naming the variable, after the file location
 * when the file gave it. Does no I/O but reading the config file.
 */
#include "policy/settings.h"

#include <assert.h>
#include <ctype.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/socket.h>
#endif
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "policy/config.h"

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
    /* Each numeric ceiling sits above its default, so a request may ask
     * for more than the default out of the box (README, "Limits"); the
     * network and the read-only system stay at the operator's setting. */
    s->ceilings = s->defaults;
    s->ceilings.wall_time_ms = 300000;
    s->ceilings.memory_bytes = 2048 * MIB;
    s->ceilings.cpu_millicores = 4000;
    s->ceilings.pids_max = 1024;
    s->ceilings.output_bytes = 8 * MIB;
    s->ceilings.file_size_bytes = 1024 * MIB;
    s->ceilings.workspace_bytes = 2048 * MIB;
    s->ceilings.read_only_system = 1;
    s->sandbox_uid = 1879048192u; /* 0x70000000: a uid no host user has */
    s->sandbox_gid = 1879048192u;
    s->uid_range_first = 1879113728u; /* 0x70010000: above any account */
    s->uid_range_count = 65536;
    s->cgroup_v1 = true;
    s->cgroup_v2 = true;
    s->log_level = SBX_LOG_WARN;
    s->max_code_bytes = 1 * MIB;
    s->max_stdin_bytes = 16 * MIB;
    s->cache_max_bytes = 4096 * MIB;
    s->install_max_bytes = 2048 * MIB;
    s->install_timeout_ms = 300000;
    s->session_idle_ms = 600000;
    s->session_lifetime_ms = 3600000;
    s->sessions_max = 8;
    s->file_max_bytes = 16 * MIB;
    s->artifacts_max = 64;
    s->artifacts_bytes = 16 * MIB;
    s->artifact_ttl_ms = 300000;
    s->pool_size = 2;
    s->pool_max = 8;
    s->pool_idle_ms = 300000;
    s->inline_images_max = 8;
    s->inline_image_bytes = 4 * MIB;
}

static int core_kind(const char *key);

const char *settings_lookup(const struct settings *s, const char *name)
{
    const char *v = secure_getenv(name);
    const struct config_entry *e;

    if (v && *v)
        return v;
    e = config_find(s->config, name);
    return e && e->value[0] ? e->value : NULL;
}

/* A core variable. A new one must be added to other_vars or limit_vars
 * (the config file's keys), which this assertion enforces in debug builds. */
static const char *env(const struct settings *s, const char *name)
{
    assert(core_kind(name) != CONFIG_KEY_UNKNOWN);
    return settings_lookup(s, name);
}

/* The first of two names that is set (reference name, then ours). */
static const char *env2(
        const struct settings *s, const char *a, const char *b, const char **ret_name)
{
    const char *v = env(s, a);

    *ret_name = a;
    if (!v) {
        v = env(s, b);
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

    v = lv->ref ? env2(s, lv->ref, lv->name, &name) : env(s, lv->name);
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
    v = env(s, lv->max);
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
    const char *v = env(s, "LLM_SANDBOX_NETWORK"), *ref = env(s, "SANDBOX_NETWORK_MODE");
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
                "LLM_SANDBOX_NETWORK=%s is not offered for programs in this version (only "
                "library installs go through the filtering proxy); use off or on",
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

static int load_bool(const struct settings *s, const char *name, bool *ret, struct sbx_error **err)
{
    const char *v = env(s, name);

    if (v && parse_bool(v, ret) < 0)
        return sbx_error_set_field(
                err, SBX_E_INVALID, name, "%s='%s' must be true or false", name, v);
    return 0;
}

static int load_list(const struct settings *s, const char *name, char ***ret, char sep)
{
    const char *v = env(s, name), *p;

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
    if (load_list(s, "LLM_SANDBOX_ENV_ALLOW", &s->env_allow, ',') < 0)
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

/* LLM_SANDBOX_UID_RANGE: "FIRST:COUNT", or "off". */
static int load_uid_range(struct settings *s, struct sbx_error **err)
{
    const char *v = env(s, "LLM_SANDBOX_UID_RANGE");
    const char *colon = v ? strchr(v, ':') : NULL;
    char first_s[16];
    uint64_t first, count;

    if (!v)
        return 0;
    if (strcmp(v, "off") == 0) {
        s->uid_range_count = 0;
        return 0;
    }
    if (!colon || (size_t)(colon - v) >= sizeof(first_s))
        goto bad;
    memcpy(first_s, v, (size_t)(colon - v));
    first_s[colon - v] = '\0';
    if (parse_u64(first_s, &first) < 0 || parse_u64(colon + 1, &count) < 0 || first == 0 ||
            count == 0 || first + count >= UINT32_MAX)
        goto bad;
    s->uid_range_first = (uint32_t)first;
    s->uid_range_count = (uint32_t)count;
    return 0;
bad:
    return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_UID_RANGE",
            "LLM_SANDBOX_UID_RANGE='%s' must be FIRST:COUNT (non-zero ids below 2^32-1) or off", v);
}

static int load_ids(struct settings *s, struct sbx_error **err)
{
    static const char *const names[] = {"LLM_SANDBOX_UID", "LLM_SANDBOX_GID"};
    uint32_t *dst[] = {&s->sandbox_uid, &s->sandbox_gid};

    for (int i = 0; i < 2; i++) {
        const char *v = env(s, names[i]);
        uint64_t id;

        if (!v)
            continue;
        if (parse_u64(v, &id) < 0 || id == 0 || id >= UINT32_MAX)
            return sbx_error_set_field(err, SBX_E_INVALID, names[i],
                    "%s='%s' must be a non-zero numeric id", names[i], v);
        *dst[i] = (uint32_t)id;
    }
    return load_uid_range(s, err);
}

/* How long sessions live, how many, how big a file moved in or out, and
 * how many artifacts a call returns and for how long. */
static int load_sessions(struct settings *s, struct sbx_error **err)
{
    static const struct {
        const char *name;
        enum kind kind;
        uint64_t min, max;
        const char *what;
    } vars[] = {
            {"LLM_SANDBOX_SESSION_IDLE", K_SECONDS, 1000, UINT64_MAX, "number of seconds >= 1"},
            {"LLM_SANDBOX_SESSION_LIFETIME", K_SECONDS, 1000, UINT64_MAX, "number of seconds >= 1"},
            {"LLM_SANDBOX_SESSIONS_MAX", K_COUNT, 1, 1024, "count from 1 to 1024"},
            {"LLM_SANDBOX_FILE_MAX", K_SIZE, 1, 256u << 20, "size from 1 to 256M"},
            {"LLM_SANDBOX_ARTIFACTS_MAX", K_COUNT, 0, 4096, "count from 0 to 4096"},
            {"LLM_SANDBOX_ARTIFACTS_BYTES", K_SIZE, 0, 256u << 20, "size from 0 to 256M"},
            {"LLM_SANDBOX_ARTIFACT_TTL", K_SECONDS, 1000, UINT64_MAX, "number of seconds >= 1"},
            {"LLM_SANDBOX_POOL", K_COUNT, 0, 64, "count from 0 (off) to 64"},
            {"LLM_SANDBOX_POOL_MAX", K_COUNT, 0, 256, "count from 0 to 256"},
            {"LLM_SANDBOX_POOL_IDLE", K_SECONDS, 1000, UINT64_MAX, "number of seconds >= 1"},
            {"LLM_SANDBOX_INLINE_IMAGES", K_COUNT, 0, 256, "count from 0 to 256"},
            {"LLM_SANDBOX_INLINE_IMAGE_BYTES", K_SIZE, 0, 64u << 20, "size from 0 to 64M"},
    };
    uint64_t *dst[] = {&s->session_idle_ms, &s->session_lifetime_ms, &s->sessions_max,
            &s->file_max_bytes, &s->artifacts_max, &s->artifacts_bytes, &s->artifact_ttl_ms,
            &s->pool_size, &s->pool_max, &s->pool_idle_ms, &s->inline_images_max,
            &s->inline_image_bytes};

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = env(s, vars[i].name);
        uint64_t x;

        if (!v)
            continue;
        if (parse_kind(vars[i].kind, v, &x) < 0 || x < vars[i].min || x > vars[i].max)
            return sbx_error_set_field(err, SBX_E_INVALID, vars[i].name, "%s='%s' must be a %s",
                    vars[i].name, v, vars[i].what);
        *dst[i] = x;
    }
    return 0;
}

/* Where dependency sets live, and how big and slow installs may get. */
static int load_installs(struct settings *s, struct sbx_error **err)
{
    static const struct {
        const char *name;
        enum kind kind;
        uint64_t min;
    } vars[] = {
            {"LLM_SANDBOX_CACHE_MAX", K_SIZE, 1u << 20},
            {"LLM_SANDBOX_INSTALL_MAX", K_SIZE, 1u << 20},
            {"LLM_SANDBOX_INSTALL_TIMEOUT", K_SECONDS, 1000},
    };
    uint64_t *dst[] = {&s->cache_max_bytes, &s->install_max_bytes, &s->install_timeout_ms};
    const char *v = env(s, "LLM_SANDBOX_CACHE_DIR");

    if (v) {
        if (v[0] != '/' || strstr(v, "/../") || strlen(v) > 512)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_CACHE_DIR",
                    "LLM_SANDBOX_CACHE_DIR='%s' must be an absolute path", v);
        s->cache_dir = strdup(v);
    } else if (geteuid() == 0) {
        s->cache_dir = strdup("/var/cache/llm-sandbox");
    } else {
        const char *xdg = secure_getenv("XDG_CACHE_HOME"), *home = secure_getenv("HOME");

        if (xdg && xdg[0] == '/')
            (void)!asprintf(&s->cache_dir, "%s/llm-sandbox", xdg);
        else if (home && home[0] == '/')
            (void)!asprintf(&s->cache_dir, "%s/.cache/llm-sandbox", home);
        else
            (void)!asprintf(&s->cache_dir, "/var/tmp/llm-sandbox-cache-%u", (unsigned)geteuid());
    }
    if (!s->cache_dir)
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    if ((v = env(s, "R_REPO"))) {
        char *kv = NULL;

        if (asprintf(&kv, "R_REPO=%s", v) < 0 || strv_push(&s->install_env, kv) < 0) {
            free(kv);
            return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
        }
        free(kv);
    }
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        uint64_t n;

        if (!(v = env(s, vars[i].name)))
            continue;
        if (parse_kind(vars[i].kind, v, &n) < 0 || n < vars[i].min)
            return sbx_error_set_field(err, SBX_E_INVALID, vars[i].name,
                    "%s='%s' must be %s of at least %s", vars[i].name, v,
                    vars[i].kind == K_SIZE ? "a size like 512M or 4G" : "a number of seconds",
                    vars[i].kind == K_SIZE ? "1M" : "1");
        *dst[i] = n;
    }
    return 0;
}

/* The MCP server's own settings. */
static int load_server(struct settings *s, struct sbx_error **err)
{
    const char *v;
    uint64_t n;

    if ((v = env(s, "LLM_SANDBOX_HTTP_TOKEN"))) {
        if (strlen(v) < 16)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_HTTP_TOKEN",
                    "LLM_SANDBOX_HTTP_TOKEN must be at least 16 characters long");
        if (!(s->http_token = strdup(v)))
            return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    }
    if ((v = env(s, "LLM_SANDBOX_AUDIT_LOG")) && !(s->audit_log = strdup(v)))
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    if ((v = env(s, "LLM_SANDBOX_MAX_CONCURRENT"))) {
        if (parse_u64(v, &n) < 0 || n == 0 || n > 1024)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_MAX_CONCURRENT",
                    "LLM_SANDBOX_MAX_CONCURRENT='%s' must be a count from 1 to 1024", v);
        s->max_concurrent = (unsigned)n;
    }
    if ((v = env(s, "LLM_SANDBOX_RESULT_TEXT"))) {
        if (strcmp(v, "readable") != 0 && strcmp(v, "json") != 0)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_RESULT_TEXT",
                    "LLM_SANDBOX_RESULT_TEXT='%s' must be 'readable' or 'json'", v);
        s->result_text_json = strcmp(v, "json") == 0;
    }
    return 0;
}

/* The reference's SANDBOX_CAP_DROP and SANDBOX_SECURITY_OPT may only add
 * restrictions. Sandboxes already run with no capabilities and
 * no_new_privs, so dropping capabilities is always honoured; a security
 * option we cannot honour (a profile, unconfined) is refused at start-up. */
static int load_hardening(struct settings *s, struct sbx_error **err)
{
    const char *v = env(s, "SANDBOX_SECURITY_OPT");
    char buf[256];
    char *save = NULL;

    if (!v)
        return 0;
    snprintf(buf, sizeof(buf), "%s", v);
    for (char *opt = strtok_r(buf, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
        if (strcmp(opt, "no-new-privileges") == 0 || strcmp(opt, "no-new-privileges:true") == 0 ||
                strcmp(opt, "no-new-privileges=true") == 0)
            continue;
        return sbx_error_set_field(err, SBX_E_UNSUPPORTED, "SANDBOX_SECURITY_OPT",
                "SANDBOX_SECURITY_OPT '%s' cannot be honoured: sandboxes always run with "
                "no-new-privileges and llm-sandbox's own seccomp policy; other options are "
                "refused rather than ignored",
                opt);
    }
    return 0;
}

static int load_misc(struct settings *s, struct sbx_error **err)
{
    const char *v;
    bool ro = true, priv = false;

    if ((v = env(s, "LLM_SANDBOX_LOG_LEVEL"))) {
        static const char *const lv[] = {"error", "warn", "info", "debug"};

        s->log_level = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(v, lv[i]) == 0)
                s->log_level = i;
        if (s->log_level < 0)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_LOG_LEVEL",
                    "LLM_SANDBOX_LOG_LEVEL='%s' must be error, warn, info or debug", v);
    }
    if ((v = env(s, "LLM_SANDBOX_CGROUP"))) {
        s->cgroup_v1 = strcmp(v, "auto") == 0 || strcmp(v, "v1") == 0;
        s->cgroup_v2 = strcmp(v, "auto") == 0 || strcmp(v, "v2") == 0;
        if (!s->cgroup_v1 && !s->cgroup_v2 && strcmp(v, "off") != 0)
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_CGROUP",
                    "LLM_SANDBOX_CGROUP='%s' must be auto, v1, v2 or off", v);
    }
    if (load_bool(s, "SANDBOX_READ_ONLY", &ro, err) < 0 ||
            load_bool(s, "SANDBOX_PRIVILEGED", &priv, err) < 0 ||
            load_bool(s, "LLM_SANDBOX_ALLOW_HOST_NETWORK", &s->allow_host_network, err) < 0 ||
            load_bool(s, "LLM_SANDBOX_ZYGOTE", &s->zygote, err) < 0)
        return (*err)->rc;
    if (priv)
        return sbx_error_set_field(err, SBX_E_UNSUPPORTED, "SANDBOX_PRIVILEGED",
                "SANDBOX_PRIVILEGED=true is refused: llm-sandbox never runs code privileged");
    if (!ro) {
        s->defaults.read_only_system = 0;
        s->ceilings.read_only_system = 0;
        s->explicit_mask |= 1u << SBX_CTL_READ_ONLY_SYSTEM;
    }
    if ((v = env(s, "BACKEND")) && !(s->backend = strdup(v)))
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    if (load_server(s, err) < 0 || load_hardening(s, err) < 0 || load_installs(s, err) < 0 ||
            load_sessions(s, err) < 0)
        return (*err)->rc;
    if ((v = env(s, "LLM_SANDBOX_DEFAULT_LANGUAGE")) && !(s->language = strdup(v)))
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    return 0;
}

/* LLM_SANDBOX_PLUGIN_PATH's separator: PATH's (';' on Windows, where ':'
 * follows every drive letter). */
#ifdef _WIN32
#define PLUGIN_PATH_SEP ';'
#else
#define PLUGIN_PATH_SEP ':'
#endif

/* Variables other than limit_vars', as config file keys. The list ones
 * may be YAML sequences there, joined with their separator. */
static const struct {
    const char *name;
    char sep;
} other_vars[] = {
        {"BACKEND", 0},
        {"LLM_SANDBOX_DEFAULT_LANGUAGE", 0},
        {"LLM_SANDBOX_PLUGIN_PATH", PLUGIN_PATH_SEP},
        {"LLM_SANDBOX_NETWORK", 0},
        {"SANDBOX_NETWORK_MODE", 0},
        {"LLM_SANDBOX_ALLOW_HOST_NETWORK", 0},
        {"SANDBOX_READ_ONLY", 0},
        {"SANDBOX_PRIVILEGED", 0},
        {"LLM_SANDBOX_ENV_ALLOW", ','},
        {"LLM_SANDBOX_UID", 0},
        {"LLM_SANDBOX_GID", 0},
        {"LLM_SANDBOX_UID_RANGE", 0},
        {"LLM_SANDBOX_CGROUP", 0},
        {"LLM_SANDBOX_LOG_LEVEL", 0},
        {"LLM_SANDBOX_HTTP_TOKEN", 0},
        {"LLM_SANDBOX_AUDIT_LOG", 0},
        {"LLM_SANDBOX_MAX_CONCURRENT", 0},
        {"LLM_SANDBOX_SOCKET", 0},
        {"LLM_SANDBOX_LANGUAGES", ','},
        {"LLM_SANDBOX_CACHE_DIR", 0},
        {"LLM_SANDBOX_CACHE_MAX", 0},
        {"LLM_SANDBOX_INSTALL_MAX", 0},
        {"LLM_SANDBOX_INSTALL_TIMEOUT", 0},
        {"LLM_SANDBOX_SESSION_IDLE", 0},
        {"LLM_SANDBOX_SESSION_LIFETIME", 0},
        {"LLM_SANDBOX_SESSIONS_MAX", 0},
        {"LLM_SANDBOX_FILE_MAX", 0},
        {"LLM_SANDBOX_ARTIFACTS_MAX", 0},
        {"LLM_SANDBOX_ARTIFACTS_BYTES", 0},
        {"LLM_SANDBOX_ARTIFACT_TTL", 0},
        {"LLM_SANDBOX_POOL", 0},
        {"LLM_SANDBOX_POOL_MAX", 0},
        {"LLM_SANDBOX_POOL_IDLE", 0},
        {"LLM_SANDBOX_ZYGOTE", 0},
        {"LLM_SANDBOX_INLINE_IMAGES", 0},
        {"LLM_SANDBOX_INLINE_IMAGE_BYTES", 0},
        {"LLM_SANDBOX_RESULT_TEXT", 0},
        {"SANDBOX_CAP_DROP", ','},
        {"SANDBOX_SECURITY_OPT", ','},
        /* the reference server's, for the R language's installs */
        {"R_REPO", 0},
};

#define PLUGIN_PREFIX "LLM_SANDBOX_"

/* A core variable: CONFIG_KEY_SCALAR or its list separator; else unknown. */
static int core_kind(const char *key)
{
    for (size_t i = 0; i < sizeof(other_vars) / sizeof(other_vars[0]); i++) {
        if (strcmp(key, other_vars[i].name) == 0)
            return other_vars[i].sep;
    }
    for (size_t i = 0; i < sizeof(limit_vars) / sizeof(limit_vars[0]); i++) {
        const struct limit_var *lv = &limit_vars[i];

        if ((lv->ref && strcmp(key, lv->ref) == 0) || strcmp(key, lv->name) == 0 ||
                strcmp(key, lv->max) == 0)
            return CONFIG_KEY_SCALAR;
    }
    return CONFIG_KEY_UNKNOWN;
}

/* LLM_SANDBOX_<PLUGIN>_<KEY> as plugin_setting_value() builds it; which
 * plugin is checked once plugins are found (plugins/plugin_settings.c). */
static bool is_plugin_key(const char *key)
{
    const char *rest, *us;

    if (strncmp(key, PLUGIN_PREFIX, strlen(PLUGIN_PREFIX)) != 0)
        return false;
    rest = key + strlen(PLUGIN_PREFIX);
    if (!(*rest >= 'A' && *rest <= 'Z'))
        return false;
    us = strchr(rest, '_');
    return us && us[1] && strspn(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen(rest);
}

/* A name a plugin may declare as a foreign name of one of its settings
 * (manifest settings:, e.g. DOCKER_HOST): upper case, outside our own
 * LLM_SANDBOX_ names. Checked against the manifests once they are read
 * (plugins/plugin_settings.c). */
static bool is_foreign_key(const char *key)
{
    size_t len = strlen(key);

    return len >= 1 && len <= 64 && key[0] >= 'A' && key[0] <= 'Z' &&
           strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len &&
           strncmp(key, PLUGIN_PREFIX, strlen(PLUGIN_PREFIX)) != 0;
}

bool settings_is_core_key(const char *key)
{
    return core_kind(key) != CONFIG_KEY_UNKNOWN;
}

static int key_kind(const char *key)
{
    int kind = core_kind(key);

    if (kind == CONFIG_KEY_UNKNOWN && (is_plugin_key(key) || is_foreign_key(key)))
        kind = CONFIG_KEY_SCALAR;
    return kind;
}

/* Put the file location before an error about a variable the file set (and
 * the environment did not). */
static void locate(const struct settings *s, struct sbx_error **err)
{
    const struct config_entry *e;
    const char *v;

    if (!err || !*err || !(*err)->field || !s->config)
        return;
    v = secure_getenv((*err)->field);
    e = config_find(s->config, (*err)->field);
    if ((!v || !*v) && e)
        sbx_error_wrap(err, "%s:%zu:%zu", s->config->path, e->line, e->col);
}

/* Which names exist is known only once plugins are found (loader.c). */
static int load_languages(struct settings *s, struct sbx_error **err)
{
    if (load_list(s, "LLM_SANDBOX_LANGUAGES", &s->languages, ',') < 0)
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    for (char **l = s->languages; l && *l; l++)
        if (!name_is_valid(*l))
            return sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_LANGUAGES",
                    "LLM_SANDBOX_LANGUAGES: '%.40s' is not a language name", *l);
    return 0;
}

/* Fill s (defaults set, config read) from the environment and the file. */
static int load(struct settings *s, struct sbx_error **err)
{
    const char *home, *run;

    if (load_misc(s, err) < 0 || load_network(s, err) < 0 || load_env_allow(s, err) < 0 ||
            load_ids(s, err) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(limit_vars) / sizeof(limit_vars[0]); i++) {
        if (load_limit(s, &limit_vars[i], err) < 0)
            return -1;
    }
    if (load_languages(s, err) < 0)
        return -1;
    if (load_list(s, "LLM_SANDBOX_PLUGIN_PATH", &s->plugin_path, PLUGIN_PATH_SEP) < 0 ||
            (!s->backend && !(s->backend = strdup("bwrap"))) ||
            (!s->language && !(s->language = strdup("python"))))
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    home = secure_getenv("HOME");
    if (!(s->home = strdup(home && home[0] == '/' ? home : "/root")))
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    run = secure_getenv("XDG_RUNTIME_DIR");
    if (run && run[0] == '/' && !(s->runtime_dir = strdup(run)))
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    return 0;
}

/* Takes cfg (transfer full), which may be NULL. */
static int load_with(struct config *cfg, struct settings **ret, struct sbx_error **err)
{
    struct settings *s = calloc(1, sizeof(*s));

    if (!s) {
        config_free(cfg);
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    }
    settings_init_defaults(s);
    s->config = cfg;
    if (load(s, err) < 0) {
        locate(s, err);
        settings_free(s);
        return err && *err ? (*err)->rc : SBX_E_INTERNAL;
    }
    *ret = s;
    return 0;
}

int settings_load_file(const char *config_path, struct settings **ret, struct sbx_error **err)
{
    struct config *cfg = NULL;
    const char *from_env = NULL;
    int r = 0;

    if (!config_path) {
        from_env = secure_getenv("LLM_SANDBOX_CONFIG");
        config_path = from_env && *from_env ? from_env : NULL;
    }
    if (config_path)
        r = config_load(config_path, key_kind, &cfg, err);
    if (r == SBX_E_IO && from_env)
        sbx_error_wrap(err, "LLM_SANDBOX_CONFIG");
    return r < 0 ? r : load_with(cfg, ret, err);
}

int settings_load(struct settings **ret, struct sbx_error **err)
{
    return settings_load_file(NULL, ret, err);
}

int settings_load_data(const char *path, const char *data, size_t len, struct settings **ret,
        struct sbx_error **err)
{
    struct config *cfg = NULL;
    int r = config_parse(path, data, len, key_kind, &cfg, err);

    return r < 0 ? r : load_with(cfg, ret, err);
}

struct settings *settings_free(struct settings *s)
{
    if (!s)
        return NULL;
    free(s->backend);
    free(s->home);
    free(s->runtime_dir);
    free(s->language);
    strv_free(s->plugin_path);
    strv_free(s->env_allow);
    strv_free(s->env_pass);
    free(s->http_token);
    strv_free(s->languages);
    free(s->audit_log);
    free(s->cache_dir);
    strv_free(s->install_env);
    config_free(s->config);
    free(s);
    return NULL;
}

/* ---- the MCP unix socket (serve --socket, session) ----------------------- */

#define SD_LISTEN_FDS_START 3 /* sd-daemon.h */

#define SOCKET_PATH_MAX 107 /* sizeof(sockaddr_un.sun_path), less its NUL */

int sbx_socket_path(const char *config_path, char **ret_path, struct sbx_error **err)
{
    struct settings *s = NULL;
    const char *v, *xdg = secure_getenv("XDG_RUNTIME_DIR");
    char *path = NULL;
    int r = settings_load_file(config_path, &s, err);

    if (r < 0)
        return r;
    v = env(s, "LLM_SANDBOX_SOCKET");
    if (v && (v[0] != '/' || strlen(v) > SOCKET_PATH_MAX)) {
        r = sbx_error_set_field(err, SBX_E_INVALID, "LLM_SANDBOX_SOCKET",
                "LLM_SANDBOX_SOCKET='%.200s' must be an absolute path of at most %d bytes", v,
                SOCKET_PATH_MAX);
        locate(s, err);
        settings_free(s);
        return r;
    }
    if (v)
        path = strdup(v);
    else if (geteuid() == 0)
        path = strdup("/run/llm-sandbox/mcp.sock");
    else if (xdg && xdg[0] == '/' && strlen(xdg) + 21 <= SOCKET_PATH_MAX)
        (void)!asprintf(&path, "%s/llm-sandbox/mcp.sock", xdg);
    else
        (void)!asprintf(&path, "/tmp/llm-sandbox-%u/mcp.sock", (unsigned)geteuid());
    settings_free(s);
    if (!path)
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    *ret_path = path;
    return 0;
}

/* sd_listen_fds(3)'s protocol, without libsystemd: the variables are ours
 * only when LISTEN_PID names this process; they are removed either way, so
 * nothing this process starts takes them for its own. */
#ifdef _WIN32
/* No systemd on Windows: never passed a socket. */
int sbx_socket_activation(int *ret_fd, struct sbx_error **err)
{
    (void)ret_fd;
    (void)err;
    return 0;
}
#else
int sbx_socket_activation(int *ret_fd, struct sbx_error **err)
{
    const char *pid_s = secure_getenv("LISTEN_PID"), *fds_s = secure_getenv("LISTEN_FDS");
    uint64_t pid = 0, n = 0;
    int type = 0, domain = 0, listening = 0;
    socklen_t len = sizeof(int);
    bool ours = pid_s && fds_s && parse_u64(pid_s, &pid) == 0 && pid == (uint64_t)getpid() &&
                parse_u64(fds_s, &n) == 0;

    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (!ours || n == 0)
        return 0;
    for (uint64_t i = 0; i < n && i < 1024; i++)
        (void)fcntl(SD_LISTEN_FDS_START + (int)i, F_SETFD, FD_CLOEXEC);
    if (n != 1)
        return sbx_error_set(err, SBX_E_INVALID, 0,
                "socket activation passed %llu sockets; serve --socket takes one "
                "(one ListenStream= in the .socket unit)",
                (unsigned long long)n);
    if (getsockopt(SD_LISTEN_FDS_START, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
            getsockopt(SD_LISTEN_FDS_START, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
            getsockopt(SD_LISTEN_FDS_START, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 ||
            type != SOCK_STREAM || domain != AF_UNIX || !listening)
        return sbx_error_set(err, SBX_E_INVALID, 0,
                "socket activation: fd %d is not a listening unix stream socket "
                "(ListenStream=/path in the .socket unit, Accept=no)",
                SD_LISTEN_FDS_START);
    *ret_fd = SD_LISTEN_FDS_START;
    return 1;
}
#endif
