/* SPDX-License-Identifier: MIT */
/*
 * test_policy.c: settings from the environment and policy resolution:
 * defaults < configuration < request, narrowing only, refusals naming the
 * control, and the capability check (refuse, warn, accept).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "policy/policy.h"
#include "policy/settings.h"

static const char *const vars[] = {"BACKEND", "SANDBOX_MEMORY", "SANDBOX_MEM_LIMIT", "SANDBOX_CPUS",
        "SANDBOX_CPU_COUNT", "SANDBOX_NETWORK_MODE", "SANDBOX_READ_ONLY", "SANDBOX_PRIVILEGED",
        "LLM_SANDBOX_TIMEOUT", "LLM_SANDBOX_MAX_TIMEOUT", "LLM_SANDBOX_MAX_MEMORY",
        "LLM_SANDBOX_PIDS", "LLM_SANDBOX_NETWORK", "LLM_SANDBOX_ALLOW_HOST_NETWORK",
        "LLM_SANDBOX_ENV_ALLOW", "LLM_SANDBOX_UID", "LLM_SANDBOX_UID_RANGE", "LLM_SANDBOX_CGROUP",
        "LLM_SANDBOX_LOG_LEVEL", "LLM_SANDBOX_PLUGIN_PATH", "TZ_TEST"};

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    return 0;
}

static struct settings *load_ok(void)
{
    struct settings *s = NULL;
    struct sbx_error *e = NULL;

    if (settings_load(&s, &e) < 0)
        fail_msg("settings_load: %s", e->msg);
    return s;
}

static void load_fails(const char *var, const char *val, const char *phrase)
{
    struct settings *s = NULL;
    struct sbx_error *e = NULL;

    setenv(var, val, 1);
    assert_true(settings_load(&s, &e) < 0);
    assert_null(s);
    assert_non_null(strstr(e->msg, phrase));
    assert_non_null(strstr(e->msg, var));
    sbx_error_free(e);
    unsetenv(var);
}

static void test_defaults(void **state)
{
    struct settings *s = load_ok();

    (void)state;
    assert_string_equal(s->backend, "bwrap");
    assert_string_equal(s->language, "python");
    assert_int_equal(s->defaults.wall_time_ms, 30000);
    assert_int_equal(s->ceilings.wall_time_ms, 300000);
    assert_int_equal(s->defaults.memory_bytes, 512u << 20);
    assert_int_equal(s->defaults.cpu_millicores, 1000);
    assert_int_equal(s->defaults.pids_max, 256);
    assert_int_equal(s->defaults.output_bytes, 1u << 20);
    assert_int_equal(s->defaults.file_size_bytes, 256u << 20);
    assert_int_equal(s->defaults.workspace_bytes, 512u << 20);
    assert_int_equal(s->defaults.network, SBX_NET_OFF);
    assert_int_equal(s->defaults.read_only_system, 1);
    assert_int_equal(s->explicit_mask, 0);
    /* each numeric ceiling above its default (README, "Limits"); the
     * network and the read-only system stay where the operator put them */
    assert_int_equal(s->ceilings.memory_bytes, 2048u << 20);
    assert_int_equal(s->ceilings.cpu_millicores, 4000);
    assert_int_equal(s->ceilings.pids_max, 1024);
    assert_int_equal(s->ceilings.output_bytes, 8u << 20);
    assert_int_equal(s->ceilings.file_size_bytes, 1024u << 20);
    assert_int_equal(s->ceilings.workspace_bytes, 2048u << 20);
    assert_int_equal(s->ceilings.network, SBX_NET_OFF);
    assert_int_equal(s->ceilings.read_only_system, 1);
    settings_free(s);
}

static void test_reference_names(void **state)
{
    struct settings *s;

    (void)state;
    setenv("BACKEND", "bubblewrap", 1);
    setenv("SANDBOX_MEMORY", "1g", 1);
    setenv("SANDBOX_CPU_COUNT", "0.5", 1);
    setenv("SANDBOX_NETWORK_MODE", "bridge", 1);
    setenv("LLM_SANDBOX_TIMEOUT", "60", 1);
    s = load_ok();
    assert_string_equal(s->backend, "bubblewrap");
    assert_int_equal(s->defaults.memory_bytes, 1u << 30);
    assert_int_equal(s->ceilings.memory_bytes, 2u << 30); /* the default's is above it */
    assert_int_equal(s->defaults.cpu_millicores, 500);
    assert_int_equal(s->defaults.network, SBX_NET_ON);
    assert_int_equal(s->defaults.wall_time_ms, 60000);
    assert_int_equal(s->ceilings.wall_time_ms, 300000);
    assert_true(s->explicit_mask & (1u << SBX_CTL_MEMORY));
    assert_true(s->explicit_mask & (1u << SBX_CTL_CPU));
    assert_false(s->explicit_mask & (1u << SBX_CTL_PIDS));
    settings_free(s);
}

static void test_bad_values(void **state)
{
    (void)state;
    load_fails("SANDBOX_MEMORY", "lots", "not a valid");
    load_fails("SANDBOX_MEMORY", "-5M", "not a valid");
    load_fails("LLM_SANDBOX_TIMEOUT", "0", "not a valid");
    load_fails("LLM_SANDBOX_PIDS", "12x", "not a valid");
    load_fails("SANDBOX_NETWORK_MODE", "weird", "none, bridge or host");
    load_fails("SANDBOX_NETWORK_MODE", "host", "LLM_SANDBOX_ALLOW_HOST_NETWORK");
    load_fails("SANDBOX_PRIVILEGED", "true", "never runs code privileged");
    load_fails("SANDBOX_READ_ONLY", "maybe", "true or false");
    load_fails("LLM_SANDBOX_UID", "0", "non-zero");
    load_fails("LLM_SANDBOX_UID_RANGE", "5", "FIRST:COUNT");
    load_fails("LLM_SANDBOX_UID_RANGE", "0:10", "FIRST:COUNT");
    load_fails("LLM_SANDBOX_UID_RANGE", "100:0", "FIRST:COUNT");
    load_fails("LLM_SANDBOX_UID_RANGE", "4294967000:1000", "FIRST:COUNT");
    load_fails("LLM_SANDBOX_UID_RANGE", "1x:10", "FIRST:COUNT");
    load_fails("LLM_SANDBOX_ENV_ALLOW", "OK,BAD-NAME", "not a variable name");
    load_fails("LLM_SANDBOX_CGROUP", "v3", "auto, v1, v2 or off");
    setenv("LLM_SANDBOX_TIMEOUT", "60", 1);
    load_fails("LLM_SANDBOX_MAX_TIMEOUT", "10", "below the configured default");
}

/* LLM_SANDBOX_UID_RANGE: its default, a range, and off. */
static void test_uid_range(void **state)
{
    struct settings *s = load_ok();

    (void)state;
    assert_int_equal(s->uid_range_first, 1879113728u);
    assert_int_equal(s->uid_range_count, 65536);
    settings_free(s);
    setenv("LLM_SANDBOX_UID_RANGE", "200000:1000", 1);
    s = load_ok();
    assert_int_equal(s->uid_range_first, 200000);
    assert_int_equal(s->uid_range_count, 1000);
    settings_free(s);
    setenv("LLM_SANDBOX_UID_RANGE", "off", 1);
    s = load_ok();
    assert_int_equal(s->uid_range_count, 0);
    settings_free(s);
    unsetenv("LLM_SANDBOX_UID_RANGE");
}

static void test_host_network_override(void **state)
{
    struct settings *s;

    (void)state;
    setenv("SANDBOX_NETWORK_MODE", "host", 1);
    setenv("LLM_SANDBOX_ALLOW_HOST_NETWORK", "1", 1);
    s = load_ok();
    assert_int_equal(s->defaults.network, SBX_NET_HOST);
    settings_free(s);
}

static void test_env_allow(void **state)
{
    struct settings *s;

    (void)state;
    setenv("TZ_TEST", "Europe/Paris", 1);
    setenv("LLM_SANDBOX_ENV_ALLOW", "TZ_TEST,NOT_SET_ANYWHERE", 1);
    s = load_ok();
    assert_int_equal(strv_len(s->env_pass), 1);
    assert_string_equal(s->env_pass[0], "TZ_TEST=Europe/Paris");
    settings_free(s);
}

static void test_resolve_narrowing(void **state)
{
    struct settings s;
    struct sbx_req_limits req = {0};
    struct sbx_policy p;
    struct sbx_error *e = NULL;
    uint32_t mask = 0;

    (void)state;
    settings_init_defaults(&s);
    req.set = SBX_REQ_WALL_TIME | SBX_REQ_MEMORY | SBX_REQ_PIDS;
    req.wall_time_ms = 120000; /* above the default, within the ceiling */
    req.memory_bytes = 64u << 20;
    req.pids_max = 10;
    assert_int_equal(policy_resolve(&s, &req, &p, &mask, &e), 0);
    assert_int_equal(p.wall_time_ms, 120000);
    assert_int_equal(p.memory_bytes, 64u << 20);
    assert_int_equal(p.pids_max, 10);
    assert_int_equal(p.cpu_millicores, 1000);
    assert_true(mask & (1u << SBX_CTL_MEMORY));
    assert_false(mask & (1u << SBX_CTL_CPU));
}

/* A fresh install takes requests above the defaults, up to the ceilings:
 * --memory 1G was refused when the ceilings equalled the defaults. */
static void test_resolve_above_defaults(void **state)
{
    struct settings s;
    struct sbx_req_limits req = {0};
    struct sbx_policy p;
    struct sbx_error *e = NULL;
    uint32_t mask = 0;

    (void)state;
    settings_init_defaults(&s);
    req.set = SBX_REQ_MEMORY | SBX_REQ_CPU | SBX_REQ_PIDS | SBX_REQ_OUTPUT | SBX_REQ_FILE_SIZE |
              SBX_REQ_WORKSPACE;
    req.memory_bytes = 1u << 30;
    req.cpu_millicores = 4000;
    req.pids_max = 1024;
    req.output_bytes = 8u << 20;
    req.file_size_bytes = 1u << 30;
    req.workspace_bytes = 2u << 30;
    assert_int_equal(policy_resolve(&s, &req, &p, &mask, &e), 0);
    assert_int_equal(p.memory_bytes, 1u << 30);
    assert_int_equal(p.cpu_millicores, 4000);
    assert_int_equal(p.pids_max, 1024);
    assert_int_equal(p.output_bytes, 8u << 20);
    assert_int_equal(p.workspace_bytes, 2u << 30);
    assert_int_equal(p.tmpfs_bytes, 768u << 20); /* 3/4 of the memory */
}

/* The tmpfs size every backend mounts is derived once, here: the workspace
 * size, but at most 3/4 of memory (tmpfs is RAM charged to the memory
 * limit: a full workspace must end as ENOSPC, not as an OOM kill). */
static void test_resolve_tmpfs_bytes(void **state)
{
    static const struct {
        uint64_t memory, workspace, want;
    } cases[] = {
            {512u << 20, 512u << 20, 384u << 20},
            {512u << 20, 1u << 20, 1u << 20},
            {128u << 20, 512u << 20, 96u << 20},
            {96u << 20, 72u << 20, 72u << 20},
    };
    struct settings s;
    struct sbx_policy p;
    struct sbx_error *e = NULL;
    uint32_t mask = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sbx_req_limits req = {.set = SBX_REQ_MEMORY | SBX_REQ_WORKSPACE,
                .memory_bytes = cases[i].memory,
                .workspace_bytes = cases[i].workspace};

        settings_init_defaults(&s);
        assert_int_equal(policy_resolve(&s, &req, &p, &mask, &e), 0);
        assert_int_equal(p.size, sizeof(p));
        assert_int_equal(p.tmpfs_bytes, cases[i].want);
    }
    /* with nothing asked: the defaults' (512M, 512M) */
    settings_init_defaults(&s);
    assert_int_equal(policy_resolve(&s, NULL, &p, &mask, &e), 0);
    assert_int_equal(p.tmpfs_bytes, 384u << 20);
}

static void refused(const struct sbx_req_limits *req, int rc, const char *field, const char *phrase)
{
    struct settings s;
    struct sbx_policy p;
    struct sbx_error *e = NULL;
    uint32_t mask = 0;

    settings_init_defaults(&s);
    assert_int_equal(policy_resolve(&s, req, &p, &mask, &e), rc);
    assert_non_null(e);
    assert_string_equal(e->field, field);
    assert_non_null(strstr(e->msg, phrase));
    sbx_error_free(e);
}

static void test_resolve_refusals(void **state)
{
    struct sbx_req_limits r = {0};

    (void)state;
    r.set = SBX_REQ_WALL_TIME, r.wall_time_ms = 301000;
    refused(&r, SBX_E_UNSUPPORTED, "wall_time",
            "wall_time 301 s is above the ceiling of 300 s; the operator raises it with "
            "LLM_SANDBOX_MAX_TIMEOUT");
    /* rounding would hide the gap: the exact values */
    r.wall_time_ms = 300001;
    refused(&r, SBX_E_UNSUPPORTED, "wall_time",
            "wall_time 300001 ms is above the ceiling of "
            "300000 ms");
    r.set = SBX_REQ_WALL_TIME, r.wall_time_ms = 0;
    refused(&r, SBX_E_INVALID, "wall_time", "greater than 0");
    r.set = SBX_REQ_MEMORY, r.memory_bytes = 4ull << 30;
    refused(&r, SBX_E_UNSUPPORTED, "memory",
            "memory 4 GiB is above the ceiling of 2 GiB; the operator raises it with "
            "LLM_SANDBOX_MAX_MEMORY");
    r.memory_bytes = (2ull << 30) + (512u << 20);
    refused(&r, SBX_E_UNSUPPORTED, "memory", "memory 2.5 GiB is above the ceiling of 2 GiB");
    r.set = SBX_REQ_CPU, r.cpu_millicores = 4500;
    refused(&r, SBX_E_UNSUPPORTED, "cpu",
            "cpu 4.5 cores is above the ceiling of 4 cores; the operator raises it with "
            "LLM_SANDBOX_MAX_CPUS");
    r.set = SBX_REQ_PIDS, r.pids_max = 100000;
    refused(&r, SBX_E_UNSUPPORTED, "pids",
            "pids 100000 processes is above the ceiling of 1024 processes; the operator raises "
            "it with LLM_SANDBOX_MAX_PIDS");
    r.set = SBX_REQ_OUTPUT, r.output_bytes = 9u << 20;
    refused(&r, SBX_E_UNSUPPORTED, "output",
            "output 9 MiB is above the ceiling of 8 MiB; the operator raises it with "
            "LLM_SANDBOX_MAX_OUTPUT_BYTES");
    r.set = SBX_REQ_FILE_SIZE, r.file_size_bytes = (1ull << 30) + 1;
    refused(&r, SBX_E_UNSUPPORTED, "file_size",
            "file_size 1073741825 bytes is above the ceiling of 1073741824 bytes; the operator "
            "raises it with LLM_SANDBOX_MAX_FILE_SIZE");
    r.set = SBX_REQ_WORKSPACE, r.workspace_bytes = 3ull << 30;
    refused(&r, SBX_E_UNSUPPORTED, "workspace",
            "workspace 3 GiB is above the ceiling of 2 GiB; the operator raises it with "
            "LLM_SANDBOX_MAX_WORKSPACE_SIZE");
    r.set = SBX_REQ_NETWORK, r.network = "on";
    refused(&r, SBX_E_UNSUPPORTED, "network",
            "wider than the configured 'off'; the operator allows it with LLM_SANDBOX_NETWORK");
    r.network = "sideways";
    refused(&r, SBX_E_INVALID, "network", "must be one of");
    /* a program's box never gets the installs' proxy: refused here, not
     * by the backend when the box is opened */
    r.network = "registries";
    refused(&r, SBX_E_UNSUPPORTED, "network", "control network_registries");
    r.network = "allowlist";
    refused(&r, SBX_E_UNSUPPORTED, "network", "control network_allowlist");
}

/* Even under a ceiling that is wide enough (LLM_SANDBOX_NETWORK=on). */
static void test_resolve_registries_for_a_program(void **state)
{
    struct settings s;
    struct sbx_req_limits r = {.set = SBX_REQ_NETWORK, .network = "registries"};
    struct sbx_policy p;
    struct sbx_error *e = NULL;
    uint32_t mask = 0;

    (void)state;
    settings_init_defaults(&s);
    s.ceilings.network = SBX_NET_ON;
    assert_int_equal(policy_resolve(&s, &r, &p, &mask, &e), SBX_E_UNSUPPORTED);
    assert_string_equal(e->field, "network");
    assert_non_null(strstr(e->msg, "network 'registries' (control network_registries)"));
    sbx_error_free(e);
    e = NULL;
    r.network = "on";
    assert_int_equal(policy_resolve(&s, &r, &p, &mask, &e), 0);
    assert_int_equal(p.network, SBX_NET_ON);
}

static struct sbx_caps full_caps(void)
{
    struct sbx_caps c;

    memset(&c, 0, sizeof(c));
    c.size = sizeof(c);
    for (int i = 0; i < SBX_CTL_COUNT; i++)
        c.level[i] = SBX_ENF_FULL;
    c.level[SBX_CTL_NET_REGISTRIES] = SBX_ENF_NONE;
    return c;
}

/* The one parser of the front ends' limits: the CLI's units, every field
 * through one function, out of range refused rather than wrapped (a
 * 64-bit shift of 17179869185G used to come back as 1 GiB). */
static void test_req_limit_parse(void **state)
{
    struct sbx_req_limits l = {0};
    struct sbx_error *e = NULL;

    (void)state;
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_MEMORY, "1.5G", &e), 0);
    assert_int_equal(l.memory_bytes, UINT64_C(3) << 29);
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_WALL_TIME, "2.5", &e), 0);
    assert_int_equal(l.wall_time_ms, 2500);
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_CPU, "0.5", &e), 0);
    assert_int_equal(l.cpu_millicores, 500);
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_PIDS, "64", &e), 0);
    assert_int_equal(l.pids_max, 64);
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_OUTPUT, "4k", &e), 0);
    assert_int_equal(l.output_bytes, 4096);
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_NETWORK, "on", &e), 0);
    assert_string_equal(l.network, "on");
    assert_int_equal(l.set, SBX_REQ_MEMORY | SBX_REQ_WALL_TIME | SBX_REQ_CPU | SBX_REQ_PIDS |
                                    SBX_REQ_OUTPUT | SBX_REQ_NETWORK);

    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_MEMORY, "17179869185G", &e), SBX_E_INVALID);
    assert_non_null(strstr(e->msg, "'17179869185G' is out of range"));
    assert_string_equal(e->field, "memory");
    e = sbx_error_free(e);
    assert_int_equal(l.memory_bytes, UINT64_C(3) << 29); /* unchanged on failure */
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_MEMORY, "lots", &e), SBX_E_INVALID);
    assert_non_null(strstr(e->msg, "'lots' is not a size"));
    e = sbx_error_free(e);
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_WALL_TIME, "0", &e), SBX_E_INVALID);
    assert_non_null(strstr(e->msg, "must be greater than 0"));
    e = sbx_error_free(e);
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_WALL_TIME, "1e3", &e), SBX_E_INVALID);
    e = sbx_error_free(e);
    assert_int_equal(sbx_req_limit_parse(&l, SBX_REQ_PIDS, "-3", &e), SBX_E_INVALID);
    e = sbx_error_free(e);
}

static void test_check(void **state)
{
    struct settings s;
    struct sbx_caps c = full_caps();
    struct sbx_error *e = NULL;
    char **warn = NULL;

    (void)state;
    settings_init_defaults(&s);
    assert_int_equal(policy_check(&s.defaults, 0, &c, "t", &warn, &e), 0);
    assert_null(warn);

    /* default cpu not enforceable: a warning; asked for: refused */
    c.level[SBX_CTL_CPU] = SBX_ENF_NONE;
    snprintf(c.note[SBX_CTL_CPU], sizeof(c.note[0]), "no writable cgroup");
    assert_int_equal(policy_check(&s.defaults, 0, &c, "t", &warn, &e), 0);
    assert_int_equal(strv_len(warn), 1);
    assert_non_null(strstr(warn[0], "cpu limit not enforced: no writable cgroup"));
    warn = strv_free(warn);
    assert_int_equal(
            policy_check(&s.defaults, 1u << SBX_CTL_CPU, &c, "t", &warn, &e), SBX_E_UNSUPPORTED);
    assert_string_equal(e->field, "cpu");
    assert_non_null(strstr(e->msg, "backend 't' cannot enforce cpu on this host (no writable"));
    e = sbx_error_free(e);
    warn = strv_free(warn);

    /* memory by a fallback: accepted with a warning even when asked for */
    c = full_caps();
    c.level[SBX_CTL_MEMORY] = SBX_ENF_FALLBACK;
    assert_int_equal(policy_check(&s.defaults, 1u << SBX_CTL_MEMORY, &c, "t", &warn, &e), 0);
    assert_non_null(strstr(warn[0], "fallback"));
    warn = strv_free(warn);

    /* isolation is never downgraded */
    c = full_caps();
    c.level[SBX_CTL_SECCOMP] = SBX_ENF_FALLBACK;
    assert_int_equal(policy_check(&s.defaults, 0, &c, "t", &warn, &e), SBX_E_UNSUPPORTED);
    assert_string_equal(e->field, "seccomp");
    e = sbx_error_free(e);
    c = full_caps();
    s.defaults.network = SBX_NET_REGISTRIES;
    assert_int_equal(policy_check(&s.defaults, 0, &c, "t", &warn, &e), SBX_E_UNSUPPORTED);
    assert_string_equal(e->field, "network_registries");
    e = sbx_error_free(e);
    s.defaults.network = SBX_NET_OFF;
    /* a network mode at fallback: its operator accepted it; a warning */
    c.level[SBX_CTL_NET_OFF] = SBX_ENF_FALLBACK;
    snprintf(c.note[SBX_CTL_NET_OFF], sizeof(c.note[0]), "a policy not seen enforced");
    assert_int_equal(policy_check(&s.defaults, 0, &c, "t", &warn, &e), 0);
    assert_int_equal(strv_len(warn), 1);
    assert_string_equal(warn[0], "network_off enforced by a fallback: a policy not seen enforced");
    warn = strv_free(warn);
    c.level[SBX_CTL_NET_OFF] = SBX_ENF_NONE;
    assert_int_equal(policy_check(&s.defaults, 0, &c, "t", &warn, &e), SBX_E_UNSUPPORTED);
    assert_string_equal(e->field, "network_off");
    e = sbx_error_free(e);
    c = full_caps();
    c.level[SBX_CTL_READ_ONLY_SYSTEM] = SBX_ENF_NONE;
    assert_int_equal(policy_check(&s.defaults, 0, &c, "t", &warn, &e), SBX_E_UNSUPPORTED);
    e = sbx_error_free(e);
    s.defaults.read_only_system = 0; /* not asked for: fine */
    assert_int_equal(policy_check(&s.defaults, 0, &c, "t", &warn, &e), 0);
    strv_free(warn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup(test_defaults, clear_env),
            cmocka_unit_test_setup(test_reference_names, clear_env),
            cmocka_unit_test_setup(test_bad_values, clear_env),
            cmocka_unit_test_setup(test_uid_range, clear_env),
            cmocka_unit_test_setup(test_host_network_override, clear_env),
            cmocka_unit_test_setup(test_env_allow, clear_env),
            cmocka_unit_test_setup(test_resolve_narrowing, clear_env),
            cmocka_unit_test_setup(test_resolve_above_defaults, clear_env),
            cmocka_unit_test_setup(test_resolve_tmpfs_bytes, clear_env),
            cmocka_unit_test_setup(test_resolve_refusals, clear_env),
            cmocka_unit_test_setup(test_resolve_registries_for_a_program, clear_env),
            cmocka_unit_test_setup(test_req_limit_parse, clear_env),
            cmocka_unit_test_setup(test_check, clear_env),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
