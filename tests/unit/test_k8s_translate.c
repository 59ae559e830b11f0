/* SPDX-License-Identifier: MIT */
/*
 * test_k8s_translate.c: golden tests of the Kubernetes translator. Each
 * case pins the whole Pod manifest (pretty JSON, keys in insertion order)
 * in tests/golden/k8s/<case>.json, and the deny-all NetworkPolicy and the
 * label patch likewise; a change in translation shows up as a diff to
 * review. SBX_UPDATE_GOLDEN=1 rewrites the files. Also: the modes and
 * identities the translator refuses.
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

#include "golden.h"
#include "k8s.h"
#include "translate.h"

static struct sbx_policy base_policy(void)
{
    return (struct sbx_policy){.size = sizeof(struct sbx_policy),
            .network = SBX_NET_OFF,
            .wall_time_ms = 30000,
            .memory_bytes = 512u << 20,
            .cpu_millicores = 1000,
            .pids_max = 256,
            .output_bytes = 1u << 20,
            .file_size_bytes = 256u << 20,
            .workspace_bytes = 512u << 20,
            .tmpfs_bytes = 384u << 20,
            .open_files_max = 1024,
            .read_only_system = 1};
}

static struct k8s_pod_input base_input(const struct sbx_policy *p)
{
    static const char *const env[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "NOEQUALS", NULL};

    return (struct k8s_pod_input){.policy = p,
            .name = "sbx-p42t4242h0123456789abcdef-7",
            .image = "python:3.11-slim",
            .owner = "p42t4242h0123456789abcdef",
            .pull_policy = "IfNotPresent",
            .envp = env,
            .uid = 1879048192,
            .gid = 1879048192,
            .request_percent = 10,
            .netcheck_len = 780688,
            .agent_len = 869376,
            .agent_sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            .witness_port = 10250,
            .netpol_ms = 10000,
            .life_s = 210};
}

static void check_golden(const char *name, struct json_object *o)
{
    golden_check("k8s", name, "json",
            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
}

static void check_pod(const char *name, const struct k8s_pod_input *in)
{
    struct sbx_err err = {.size = sizeof(err)};
    struct json_object *o = k8s_pod_json(in, &err);

    if (!o)
        fail_msg("%s: %s", name, err.msg);
    check_golden(name, o);
    json_object_put(o);
}

/* A run's pod: proven network (the check runs, no label yet), the agent. */
static void test_pod_default(void **state)
{
    struct sbx_policy p = base_policy();
    struct k8s_pod_input in = base_input(&p);

    (void)state;
    check_pod("pod_default", &in);
}

/* Small limits, no CPU quota, a writable system, all requests at 100 %. */
static void test_pod_small_limits(void **state)
{
    struct sbx_policy p = base_policy();
    struct k8s_pod_input in = base_input(&p);

    (void)state;
    p.memory_bytes = 96u << 20;
    p.tmpfs_bytes = 72u << 20;
    p.cpu_millicores = 0;
    p.read_only_system = 0;
    in.request_percent = 100;
    check_pod("pod_small_limits", &in);
}

/* The probe's pod: the check, no agent. */
static void test_pod_probe(void **state)
{
    struct sbx_policy p = base_policy();
    struct k8s_pod_input in = base_input(&p);

    (void)state;
    in.agent_len = 0;
    in.agent_sha = NULL;
    in.envp = NULL;
    check_pod("pod_probe", &in);
}

/* The operator accepted an unproven policy: labelled from the start, no check. */
static void test_pod_unproven(void **state)
{
    struct sbx_policy p = base_policy();
    struct k8s_pod_input in = base_input(&p);

    (void)state;
    in.labelled_off = true;
    in.netcheck_len = 0;
    check_pod("pod_unproven", &in);
}

/* A policy from a 1.3 core has no tmpfs_bytes: the same rule here. */
static void test_pod_old_policy_tmpfs(void **state)
{
    struct sbx_policy p = base_policy();
    struct k8s_pod_input in = base_input(&p);
    struct sbx_err err = {.size = sizeof(err)};
    struct json_object *o, *spec, *vols, *ed, *v;

    (void)state;
    p.size = (uint32_t)offsetof(struct sbx_policy, tmpfs_bytes);
    p.memory_bytes = 100u << 20;
    o = k8s_pod_json(&in, &err);
    assert_non_null(o);
    assert_true(json_object_object_get_ex(o, "spec", &spec));
    assert_true(json_object_object_get_ex(spec, "volumes", &vols));
    assert_true(json_object_object_get_ex(json_object_array_get_idx(vols, 0), "emptyDir", &ed));
    assert_true(json_object_object_get_ex(ed, "sizeLimit", &v));
    assert_string_equal(json_object_get_string(v), "78643200"); /* 3/4 of 100 MiB */
    json_object_put(o);
}

static void test_refusals(void **state)
{
    static const uint32_t modes[] = {
            SBX_NET_REGISTRIES, SBX_NET_ALLOWLIST, SBX_NET_ON, SBX_NET_HOST};
    struct sbx_policy p = base_policy();
    struct k8s_pod_input in = base_input(&p);
    struct sbx_err err = {.size = sizeof(err)};

    (void)state;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        p.network = modes[i];
        memset(&err, 0, sizeof(err));
        assert_null(k8s_pod_json(&in, &err));
        assert_int_equal(err.rc, SBX_E_UNSUPPORTED);
        assert_string_equal(err.field, "network");
    }
    p.network = SBX_NET_OFF;
    in.uid = 0;
    assert_null(k8s_pod_json(&in, &err));
    assert_int_equal(err.rc, SBX_E_INVALID);
}

static void test_netpol_and_label(void **state)
{
    struct json_object *o =
            k8s_netpol_json("llm-sandbox-p42t4242h0123456789abcdef", "p42t4242h0123456789abcdef");

    (void)state;
    check_golden("netpol", o);
    json_object_put(o);
    o = k8s_label_off_json();
    check_golden("label_off", o);
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_pod_default),
            cmocka_unit_test(test_pod_small_limits),
            cmocka_unit_test(test_pod_probe),
            cmocka_unit_test(test_pod_unproven),
            cmocka_unit_test(test_pod_old_policy_tmpfs),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_netpol_and_label),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
