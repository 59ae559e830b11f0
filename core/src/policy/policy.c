/* SPDX-License-Identifier: MIT */
/*
 * policy.c: resolve defaults < configuration < request and check the result
 * against a backend's capabilities; read a request's limits from the text
 * front ends take (sbx_req_limit_parse). Decides policy; does no I/O.
 * Error convention: error.h. The rules are stated in policy.h.
 */
#include "policy/policy.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "policy/settings.h"

static const char *const control_names[SBX_CTL_COUNT] = {
        [SBX_CTL_WALL_TIME] = "wall_time",
        [SBX_CTL_MEMORY] = "memory",
        [SBX_CTL_CPU] = "cpu",
        [SBX_CTL_PIDS] = "pids",
        [SBX_CTL_OUTPUT] = "output",
        [SBX_CTL_FILE_SIZE] = "file_size",
        [SBX_CTL_WORKSPACE] = "workspace",
        [SBX_CTL_NET_OFF] = "network_off",
        [SBX_CTL_NET_REGISTRIES] = "network_registries",
        [SBX_CTL_NET_ALLOWLIST] = "network_allowlist",
        [SBX_CTL_NET_ON] = "network_on",
        [SBX_CTL_NET_HOST] = "network_host",
        [SBX_CTL_READ_ONLY_SYSTEM] = "read_only_system",
        [SBX_CTL_ENV] = "environment",
        [SBX_CTL_SECCOMP] = "seccomp",
        [SBX_CTL_NO_NEW_PRIVS] = "no_new_privs",
        [SBX_CTL_UNPRIVILEGED] = "unprivileged",
        [SBX_CTL_HOST_MOUNTS] = "host_mounts",
};

const char *policy_control_name(enum sbx_control c)
{
    return (unsigned)c < SBX_CTL_COUNT ? control_names[c] : NULL;
}

/* What each kind of value is, in a refusal's words. */
enum req_kind { RK_SECONDS, RK_CORES, RK_SIZE, RK_COUNT };

static int parse_req_kind(enum req_kind k, const char *text, uint64_t *ret)
{
    switch (k) {
    case RK_SECONDS: return parse_seconds_ms(text, ret);
    case RK_CORES: return parse_millicores(text, ret);
    case RK_SIZE: return parse_size(text, ret);
    case RK_COUNT: return parse_u64(text, ret);
    }
    return SBX_E_INVALID;
}

struct req_field {
    uint32_t bit;
    enum sbx_control ctl;
    size_t req_off, pol_off;
    const char *max_var; /* the operator's setting of the ceiling (settings.c) */
    enum req_kind kind;  /* how a front end's text spells it, and prints it */
};

#define ROFF(f) offsetof(struct sbx_req_limits, f)
#define POFF(f) offsetof(struct sbx_policy, f)
static const struct req_field req_fields[] = {
        {SBX_REQ_WALL_TIME, SBX_CTL_WALL_TIME, ROFF(wall_time_ms), POFF(wall_time_ms),
                "LLM_SANDBOX_MAX_TIMEOUT", RK_SECONDS},
        {SBX_REQ_MEMORY, SBX_CTL_MEMORY, ROFF(memory_bytes), POFF(memory_bytes),
                "LLM_SANDBOX_MAX_MEMORY", RK_SIZE},
        {SBX_REQ_CPU, SBX_CTL_CPU, ROFF(cpu_millicores), POFF(cpu_millicores),
                "LLM_SANDBOX_MAX_CPUS", RK_CORES},
        {SBX_REQ_PIDS, SBX_CTL_PIDS, ROFF(pids_max), POFF(pids_max), "LLM_SANDBOX_MAX_PIDS",
                RK_COUNT},
        {SBX_REQ_OUTPUT, SBX_CTL_OUTPUT, ROFF(output_bytes), POFF(output_bytes),
                "LLM_SANDBOX_MAX_OUTPUT_BYTES", RK_SIZE},
        {SBX_REQ_FILE_SIZE, SBX_CTL_FILE_SIZE, ROFF(file_size_bytes), POFF(file_size_bytes),
                "LLM_SANDBOX_MAX_FILE_SIZE", RK_SIZE},
        {SBX_REQ_WORKSPACE, SBX_CTL_WORKSPACE, ROFF(workspace_bytes), POFF(workspace_bytes),
                "LLM_SANDBOX_MAX_WORKSPACE_SIZE", RK_SIZE},
};

/* The unit of the stored value (messages that must be exact). */
static const char *const base_units[] = {[RK_SECONDS] = "ms",
        [RK_CORES] = "millicores",
        [RK_SIZE] = "bytes",
        [RK_COUNT] = "processes"};

/* A value in the units a person reads: "4 GiB", "1.5 s", "0.5 cores",
 * "300 processes" (at most 2 decimals, trailing zeros dropped). */
static void human(char *buf, size_t n, enum req_kind k, uint64_t v)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    uint64_t div = 1;
    const char *unit = "";
    size_t u = 0;
    int len;

    switch (k) {
    case RK_SECONDS: div = 1000, unit = "s"; break;
    case RK_CORES: div = 1000, unit = v == 1000 ? "core" : "cores"; break;
    case RK_COUNT: unit = v == 1 ? "process" : "processes"; break;
    case RK_SIZE:
        while (u + 1 < sizeof(units) / sizeof(units[0]) && v / div >= 1024)
            div *= 1024, u++;
        unit = units[u];
        break;
    }
    len = snprintf(buf, n, "%" PRIu64 ".%02" PRIu64, v / div,
            (uint64_t)((long double)(v % div) * 100 / (long double)div));
    while (len > 0 && (size_t)len < n && (buf[len - 1] == '0' || buf[len - 1] == '.')) {
        bool dot = buf[len - 1] == '.';

        buf[--len] = '\0';
        if (dot)
            break;
    }
    snprintf(buf + len, n - (size_t)len, " %s", unit);
}

static uint64_t get_u64(const void *base, size_t off)
{
    uint64_t v;

    memcpy(&v, (const char *)base + off, sizeof(v));
    return v;
}

static void set_u64(void *base, size_t off, uint64_t v)
{
    memcpy((char *)base + off, &v, sizeof(v));
}

static enum sbx_control network_control(uint32_t net)
{
    switch (net) {
    case SBX_NET_REGISTRIES: return SBX_CTL_NET_REGISTRIES;
    case SBX_NET_ALLOWLIST: return SBX_CTL_NET_ALLOWLIST;
    case SBX_NET_ON: return SBX_CTL_NET_ON;
    case SBX_NET_HOST: return SBX_CTL_NET_HOST;
    default: return SBX_CTL_NET_OFF;
    }
}

int sbx_req_limit_parse(struct sbx_req_limits *l, enum sbx_req_field field, const char *text,
        struct sbx_error **err)
{
    static const char *const what[] = {
            [RK_SECONDS] = "a number of seconds, at most 3 decimals (30, 1.5)",
            [RK_CORES] = "a number of cores, at most 3 decimals (1, 0.5)",
            /* one string, in two pieces */
            [RK_SIZE] = ("a size: digits, at most 3 decimals, and an optional unit k, M, G or T "
                         "(binary: 1M is 1048576 bytes)"),
            [RK_COUNT] = "a whole number",
    };
    const struct req_field *f = NULL;
    const char *name;
    enum req_kind k;
    uint64_t v = 0;
    int r;

    if (!l || !text)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "sbx_req_limit_parse: missing argument");
    if (field == SBX_REQ_NETWORK) {
        l->network = text;
        l->set |= SBX_REQ_NETWORK;
        return 0;
    }
    for (size_t i = 0; i < sizeof(req_fields) / sizeof(req_fields[0]); i++)
        if (req_fields[i].bit == (uint32_t)field)
            f = &req_fields[i];
    if (!f)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "sbx_req_limit_parse: unknown field");
    name = control_names[f->ctl];
    k = f->kind;
    r = parse_req_kind(k, text, &v);
    if (r == SBX_E_LIMIT)
        return sbx_error_set_field(err, SBX_E_INVALID, name,
                "%s '%.40s' is out of range (above 2^64-1 %s)", name, text, base_units[k]);
    if (r < 0)
        return sbx_error_set_field(
                err, SBX_E_INVALID, name, "%s '%.40s' is not %s", name, text, what[k]);
    if (v == 0)
        return sbx_error_set_field(
                err, SBX_E_INVALID, name, "%s '%.40s' must be greater than 0", name, text);
    set_u64(l, f->req_off, v);
    l->set |= f->bit;
    return 0;
}

uint64_t policy_tmpfs_bytes(const struct sbx_policy *p)
{
    uint64_t cap = p->memory_bytes - p->memory_bytes / 4;

    return p->workspace_bytes < cap ? p->workspace_bytes : cap;
}

/* "memory 4 GiB is above the ceiling of 2 GiB; the operator raises it
 * with LLM_SANDBOX_MAX_MEMORY": exact units when rounding hides the gap. */
static int refuse_ceiling(
        const struct req_field *f, uint64_t v, uint64_t ceiling, struct sbx_error **err)
{
    const char *name = control_names[f->ctl];
    char want[48], max[48];

    human(want, sizeof(want), f->kind, v);
    human(max, sizeof(max), f->kind, ceiling);
    if (strcmp(want, max) == 0) {
        snprintf(want, sizeof(want), "%" PRIu64 " %s", v, base_units[f->kind]);
        snprintf(max, sizeof(max), "%" PRIu64 " %s", ceiling, base_units[f->kind]);
    }
    return sbx_error_set_field(err, SBX_E_UNSUPPORTED, name,
            "%s %s is above the ceiling of %s; the operator raises it with %s", name, want, max,
            f->max_var);
}

int policy_resolve(const struct settings *s, const struct sbx_req_limits *req,
        struct sbx_policy *ret, uint32_t *ret_explicit, struct sbx_error **err)
{
    struct sbx_policy p = s->defaults;
    uint32_t explicit_mask = s->explicit_mask;

    for (size_t i = 0; req && i < sizeof(req_fields) / sizeof(req_fields[0]); i++) {
        const struct req_field *f = &req_fields[i];
        const char *name = control_names[f->ctl];
        uint64_t v, ceiling;

        if (!(req->set & f->bit))
            continue;
        v = get_u64(req, f->req_off);
        ceiling = get_u64(&s->ceilings, f->pol_off);
        if (v == 0)
            return sbx_error_set_field(err, SBX_E_INVALID, name, "%s must be greater than 0", name);
        if (v > ceiling)
            return refuse_ceiling(f, v, ceiling, err);
        set_u64(&p, f->pol_off, v);
        explicit_mask |= 1u << f->ctl;
    }
    if (req && (req->set & SBX_REQ_NETWORK)) {
        int net = network_from_str(req->network);

        if (net < 0)
            return sbx_error_set_field(err, SBX_E_INVALID, "network",
                    "network '%s' must be one of off, registries, allowlist, on, host",
                    req->network ? req->network : "");
        /* only an install box gets the filtering proxy (install.c); a
         * program's box would be refused by the backend when opened */
        if (net == SBX_NET_REGISTRIES || net == SBX_NET_ALLOWLIST)
            return sbx_error_set_field(err, SBX_E_UNSUPPORTED, "network",
                    "network '%s' (control %s) is offered only to library installs in this "
                    "version; a program gets no filtering proxy: use network 'off' or 'on'",
                    req->network, control_names[network_control((uint32_t)net)]);
        if ((uint32_t)net > s->ceilings.network)
            return sbx_error_set_field(err, SBX_E_UNSUPPORTED, "network",
                    "network '%s' is wider than the configured '%s'; the operator allows it "
                    "with LLM_SANDBOX_NETWORK",
                    req->network, network_str(s->ceilings.network));
        p.network = (uint32_t)net;
        explicit_mask |= 1u << SBX_CTL_NET_OFF;
    }
    p.size = sizeof(p);
    p.tmpfs_bytes = policy_tmpfs_bytes(&p);
    *ret = p;
    *ret_explicit = explicit_mask;
    return 0;
}

static int refuse_control(struct sbx_error **err, enum sbx_control c, const char *backend,
        const struct sbx_caps *caps)
{
    const char *why = caps->note[c][0] ? caps->note[c] : "not supported";

    return sbx_error_set_field(err, SBX_E_UNSUPPORTED, control_names[c],
            "backend '%s' cannot enforce %s on this host (%s)", backend, control_names[c], why);
}

int policy_check(const struct sbx_policy *p, uint32_t explicit_mask, const struct sbx_caps *caps,
        const char *backend, char ***warnings, struct sbx_error **err)
{
    static const enum sbx_control always[] = {SBX_CTL_WALL_TIME, SBX_CTL_OUTPUT, SBX_CTL_ENV,
            SBX_CTL_SECCOMP, SBX_CTL_NO_NEW_PRIVS, SBX_CTL_UNPRIVILEGED};
    static const enum sbx_control limits[] = {
            SBX_CTL_MEMORY, SBX_CTL_CPU, SBX_CTL_PIDS, SBX_CTL_FILE_SIZE, SBX_CTL_WORKSPACE};
    enum sbx_control net = network_control(p->network);

    for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++) {
        if (caps->level[always[i]] != SBX_ENF_FULL)
            return refuse_control(err, always[i], backend, caps);
    }
    /* A network mode at fallback: the backend's operator accepted a weaker
     * guarantee (Kubernetes: a NetworkPolicy the cluster was not seen to
     * enforce); every result says so. No backend reports it otherwise. */
    if (caps->level[net] == SBX_ENF_NONE)
        return refuse_control(err, net, backend, caps);
    if (caps->level[net] == SBX_ENF_FALLBACK &&
            strv_pushf(warnings, "%s enforced by a fallback: %s", control_names[net],
                    caps->note[net]) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    if (p->read_only_system && caps->level[SBX_CTL_READ_ONLY_SYSTEM] != SBX_ENF_FULL)
        return refuse_control(err, SBX_CTL_READ_ONLY_SYSTEM, backend, caps);
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        enum sbx_control c = limits[i];
        int r = 0;

        if (c == SBX_CTL_CPU && p->cpu_millicores == 0)
            continue;
        if (caps->level[c] == SBX_ENF_FULL)
            continue;
        if (caps->level[c] == SBX_ENF_NONE && (explicit_mask & (1u << c)))
            return refuse_control(err, c, backend, caps);
        if (caps->level[c] == SBX_ENF_NONE)
            r = strv_pushf(warnings, "%s limit not enforced: %s", control_names[c], caps->note[c]);
        else
            r = strv_pushf(warnings, "%s limit enforced by a fallback: %s", control_names[c],
                    caps->note[c]);
        if (r < 0)
            return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    }
    return 0;
}

char *policy_to_text(const struct sbx_policy *p)
{
    struct json_object *o = policy_to_json(p);
    char *s = o ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) : NULL;

    json_object_put(o);
    return s;
}

struct json_object *policy_to_json(const struct sbx_policy *p)
{
    struct json_object *o = json_object_new_object();

    if (!o)
        return NULL;
    json_object_object_add(o, "wall_time_ms", json_object_new_uint64(p->wall_time_ms));
    json_object_object_add(o, "memory_bytes", json_object_new_uint64(p->memory_bytes));
    json_object_object_add(o, "cpu_millicores", json_object_new_uint64(p->cpu_millicores));
    json_object_object_add(o, "pids_max", json_object_new_uint64(p->pids_max));
    json_object_object_add(o, "output_bytes", json_object_new_uint64(p->output_bytes));
    json_object_object_add(o, "file_size_bytes", json_object_new_uint64(p->file_size_bytes));
    json_object_object_add(o, "workspace_bytes", json_object_new_uint64(p->workspace_bytes));
    json_object_object_add(o, "open_files_max", json_object_new_uint64(p->open_files_max));
    json_object_object_add(o, "network", json_object_new_string(network_str(p->network)));
    json_object_object_add(
            o, "read_only_system", json_object_new_boolean(p->read_only_system != 0));
    return o;
}
