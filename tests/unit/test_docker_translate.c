/* SPDX-License-Identifier: MIT */
/*
 * test_docker_translate.c: golden tests of the Docker translator. Each case
 * pins the whole container-create body (pretty JSON, keys in insertion
 * order) in tests/golden/docker/<case>.json, and the seccomp profile made
 * from a small fixed rule set in seccomp.json; a change in translation
 * shows up as a diff to review. SBX_UPDATE_GOLDEN=1 rewrites the files.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"
#include "golden.h"
#include "translate.h"

static const struct sbx_seccomp_rule rule_set[] = {
        {.name = "read"},
        {.name = "ptrace", .errno_value = EPERM},
        {.name = "socket", .n_conds = 1, .conds = {{.arg = 0, .mask = 0xffffffff, .value = 1}}},
        {.name = "clone",
                .n_conds = 2,
                .conds = {{.arg = 0, .mask = 0x7e020000, .value = 0},
                        {.arg = 2, .mask = 0xff, .value = 0}}},
};
static const struct sbx_seccomp_rules rules = {
        .size = sizeof(rules), .default_errno = ENOSYS, .rules = rule_set, .n_rules = 4};

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

static struct dk_input base_input(const struct sbx_policy *p)
{
    static const char *const env[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", NULL};

    return (struct dk_input){.policy = p,
            .image = "llm-sandbox-agent:0123456789abcdef-fedcba9876543210",
            .envp = env,
            .owner = "p42t4242",
            .run_id = "p42t4242-7",
            .seccomp = &rules,
            .uid = 1879048192,
            .gid = 1879048192};
}

/* The body with the (long, separately pinned) seccomp profile replaced. */
static void check_body(const char *name, const struct dk_input *in)
{
    struct sbx_err err = {.size = sizeof(err)};
    struct json_object *o = dk_translate(in, &err), *hc, *sec;

    assert_non_null(o);
    assert_true(json_object_object_get_ex(o, "HostConfig", &hc));
    assert_true(json_object_object_get_ex(hc, "SecurityOpt", &sec));
    assert_int_equal(json_object_array_length(sec), 2);
    assert_string_equal(
            json_object_get_string(json_object_array_get_idx(sec, 0)), "no-new-privileges");
    assert_memory_equal(json_object_get_string(json_object_array_get_idx(sec, 1)), "seccomp={", 9);
    json_object_array_put_idx(sec, 1, json_object_new_string("seccomp=<seccomp.json>"));
    golden_check("docker", name, "json",
            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

static void test_default(void **state)
{
    struct sbx_policy p = base_policy();
    struct dk_input in = base_input(&p);

    (void)state;
    check_body("default", &in);
}

static void test_host_network_small_limits(void **state)
{
    struct sbx_policy p = base_policy();
    struct dk_input in = base_input(&p);

    (void)state;
    p.network = SBX_NET_HOST;
    p.memory_bytes = 96u << 20;
    p.tmpfs_bytes = 72u << 20; /* 3/4 of it, below the workspace size (test_policy) */
    p.cpu_millicores = 500;
    p.pids_max = 40;
    p.read_only_system = 0;
    check_body("host_network_small_limits", &in);
}

/* Podman's dialect: the profile by path, tmpfs "U", an nproc ulimit. */
static void test_podman(void **state)
{
    struct sbx_policy p = base_policy();
    struct dk_input in = base_input(&p);
    struct sbx_err err = {.size = sizeof(err)};
    struct json_object *o;

    (void)state;
    in.podman = true;
    in.seccomp_path = "/proc/42/fd/7";
    o = dk_translate(&in, &err);
    assert_non_null(o);
    golden_check("docker", "podman", "json",
            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* A set's install: network only through the core's proxy socket (bound
 * read-only), the staging as a writable volume, a set read-only. */
static void test_install_volumes_and_proxy(void **state)
{
    struct sbx_policy p = base_policy();
    struct dk_input in = base_input(&p);
    const struct dk_mount m[] = {{.volume = "sbx-p42t4242-7-0", .target = "/deps"},
            {.volume = "sbx-set-0123456789abcdef", .target = "/repo", .read_only = true}};

    (void)state;
    p.network = SBX_NET_REGISTRIES;
    in.mounts = m;
    in.n_mounts = 2;
    in.proxy_socket = "/var/cache/llm-sandbox/deps/python-abc.sock";
    check_body("install_volumes_and_proxy", &in);
}

static void test_seccomp_profile(void **state)
{
    char *text = dk_seccomp_profile(&rules);
    struct json_object *o = json_tokener_parse(text);

    (void)state;
    assert_non_null(o);
    golden_check("docker", "seccomp", "json",
            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
    json_object_put(o);
    free(text);
}

static void test_refusals(void **state)
{
    struct sbx_policy p = base_policy();
    struct dk_input in = base_input(&p);
    struct sbx_err err = {.size = sizeof(err)};
    const uint32_t refused[] = {SBX_NET_ON, SBX_NET_REGISTRIES, SBX_NET_ALLOWLIST, 99};

    (void)state;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        p.network = refused[i];
        memset(&err, 0, sizeof(err));
        assert_null(dk_translate(&in, &err));
        assert_int_equal(err.rc, SBX_E_UNSUPPORTED);
        assert_string_equal(err.field, "network");
    }
    /* the proxy socket opens only the proxied modes */
    in.proxy_socket = "/run/proxy.sock";
    p.network = SBX_NET_ON;
    memset(&err, 0, sizeof(err));
    assert_null(dk_translate(&in, &err));
    assert_int_equal(err.rc, SBX_E_UNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_default),
            cmocka_unit_test(test_host_network_small_limits),
            cmocka_unit_test(test_podman),
            cmocka_unit_test(test_install_volumes_and_proxy),
            cmocka_unit_test(test_seccomp_profile),
            cmocka_unit_test(test_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
