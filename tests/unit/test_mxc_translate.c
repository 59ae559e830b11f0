/* SPDX-License-Identifier: MIT */
/*
 * test_mxc_translate.c: golden tests of the MXC translator. Each case pins
 * the whole configuration (pretty JSON, keys in insertion order) in
 * tests/golden/mxc/<case>.json; a change in translation shows up as a diff
 * to review, and tests/integration/test_mxc.py has the real lxc-exec
 * validate every one of those files (--dry-run), the Windows-targeted ones
 * too. SBX_UPDATE_GOLDEN=1 rewrites the files.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "translate.h"

/* the agent's copy (agentdir.c) */
#define AGENT "/var/tmp/llm-sandbox-mxc-p42t4242h0123456789abcdef-AbCdEf/sbx-agent"

static const char *const linux_ro[] = {MXC_LINUX_RO_PATHS, "/etc/python3", NULL};
static const char *const linux_env[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp",
        "LANG=C.UTF-8", "USER=sandbox", "LOGNAME=sandbox", "PYTHONUNBUFFERED=1", NULL};

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

static struct mxc_input linux_input(const struct sbx_policy *p)
{
    return (struct mxc_input){.policy = p,
            .target = MXC_TARGET_LINUX,
            .agent = AGENT,
            .uid = 1879048192,
            .gid = 1879048192,
            .config_fd = 3,
            .envp = linux_env,
            .ro = linux_ro};
}

/* What the Windows executor would be given: the agent and the workspace in
 * the box's directory under ProgramData, a Windows environment. */
static struct mxc_input windows_input(const struct sbx_policy *p)
{
    static const char *const env[] = {"PATH=C:\\Windows\\System32;C:\\Program Files\\Python312",
            "SystemRoot=C:\\Windows", "TEMP=C:\\ProgramData\\llm-sandbox\\box-7\\tmp",
            "PYTHONUNBUFFERED=1", NULL};
    static const char *const ro[] = {"C:\\Program Files\\Python312", NULL};
    static const char *const denied[] = {"C:\\Users", NULL};

    return (struct mxc_input){.policy = p,
            .target = MXC_TARGET_WINDOWS,
            .agent = "C:\\ProgramData\\llm-sandbox\\box-7\\sbx-agent.exe",
            .workspace = "C:\\ProgramData\\llm-sandbox\\box-7\\workspace",
            .envp = env,
            .ro = ro,
            .denied = denied};
}

static void check_golden(const char *name, const char *got)
{
    golden_check("mxc", name, "json", got);
}

static struct json_object *translate_ok(const struct mxc_input *in)
{
    struct sbx_err err = {.size = sizeof(err)};
    struct json_object *o = mxc_translate(in, &err);

    if (!o)
        fail_msg("translation failed: %s", err.msg);
    return o;
}

static void golden(const char *name, const struct mxc_input *in)
{
    struct json_object *o = translate_ok(in);

    check_golden(name,
            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

static void test_linux_default(void **state)
{
    struct sbx_policy p = base_policy();
    struct mxc_input in = linux_input(&p);

    (void)state;
    golden("linux_default", &in);
}

/* A session's box: the core's backstop lifetime is far above the u32 of
 * milliseconds the contract allows; a quote in the agent's path; an
 * unprivileged server's own uid; a path denied besides the fixed ones. */
static void test_linux_long_life_quoted_path(void **state)
{
    static const char *const denied[] = {"/srv/private", NULL};
    struct sbx_policy p = base_policy();
    struct mxc_input in = linux_input(&p);

    (void)state;
    p.wall_time_ms = 1ull << 40;
    in.agent = "/srv/it's here/sbx-agent";
    in.uid = 1000;
    in.gid = 100;
    in.config_fd = -1;
    in.ro = NULL;
    in.denied = denied;
    golden("linux_long_life_quoted_path", &in);
}

static void test_windows_default(void **state)
{
    struct sbx_policy p = base_policy();
    struct mxc_input in = windows_input(&p);

    (void)state;
    golden("windows_default", &in);
}

static void test_windows_small(void **state)
{
    struct sbx_policy p = base_policy();
    struct mxc_input in = windows_input(&p);

    (void)state;
    p.wall_time_ms = 2000;
    p.memory_bytes = 64u << 20;
    in.ro = NULL;
    in.denied = NULL;
    golden("windows_small", &in);
}

static void expect_error(const struct mxc_input *in, int rc, const char *field, const char *msg)
{
    struct sbx_err err = {.size = sizeof(err)};

    assert_null(mxc_translate(in, &err));
    assert_int_equal(err.rc, rc);
    assert_string_equal(err.field, field);
    if (!strstr(err.msg, msg))
        fail_msg("message '%s' lacks '%s'", err.msg, msg);
}

/* Refused, naming the control: MXC gives a box no other network here. */
static void test_network_modes_refused(void **state)
{
    static const struct {
        uint32_t net;
        const char *name;
    } modes[] = {{SBX_NET_ON, "'on'"}, {SBX_NET_HOST, "'host'"},
            {SBX_NET_REGISTRIES, "'registries'"}, {SBX_NET_ALLOWLIST, "'allowlist'"}};
    struct sbx_policy p = base_policy();
    struct mxc_input in = linux_input(&p);

    (void)state;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        p.network = modes[i].net;
        expect_error(&in, SBX_E_UNSUPPORTED, "network", modes[i].name);
    }
}

static void test_bad_paths(void **state)
{
    static const char *const rel[] = {"usr/lib", NULL};
    struct sbx_policy p = base_policy();
    struct mxc_input in = linux_input(&p);
    struct mxc_input win = windows_input(&p);

    (void)state;
    in.workspace = "/var/tmp/ws"; /* Linux makes its workspace in the box */
    expect_error(&in, SBX_E_INVALID, "", "workspace");
    in = linux_input(&p);
    in.ro = rel;
    expect_error(&in, SBX_E_INVALID, "", "'usr/lib'");
    in = linux_input(&p);
    in.agent = NULL;
    expect_error(&in, SBX_E_INVALID, "", "agent");
    win.agent = "C:\\box\\\"quoted\".exe"; /* CreateProcess could not carry it */
    expect_error(&win, SBX_E_INVALID, "", "agent");
    win = windows_input(&p);
    win.workspace = "/var/tmp/workspace"; /* a Linux path for the Windows executor */
    expect_error(&win, SBX_E_INVALID, "", "workspace");
    win.workspace = NULL; /* Windows has no shell to make one */
    expect_error(&win, SBX_E_INVALID, "", "workspace");
}

static const char *str_at(struct json_object *o, const char *a, const char *b)
{
    struct json_object *x = NULL, *y = NULL;

    assert_true(json_object_object_get_ex(o, a, &x));
    if (!b)
        return json_object_get_string(x);
    assert_true(json_object_object_get_ex(x, b, &y));
    return json_object_get_string(y);
}

static bool array_has(struct json_object *arr, const char *s)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), s) == 0)
            return true;
    return false;
}

/* Properties that must hold whatever the golden files say. */
static void test_invariants(void **state)
{
    static const char *const top[] = {
            "version", "containment", "process", "filesystem", "network", "telemetry"};
    struct sbx_policy p = base_policy();
    struct mxc_input in = linux_input(&p);
    struct json_object *o = translate_ok(&in), *proc, *fs, *env, *ro, *denied, *x;
    const char *cmd;

    (void)state;
    assert_int_equal(json_object_object_length(o), sizeof(top) / sizeof(top[0]));
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
        assert_true(json_object_object_get_ex(o, top[i], NULL));
    assert_string_equal(str_at(o, "version", NULL), "1.0.0");
    assert_string_equal(str_at(o, "containment", NULL), "process");
    assert_true(json_object_object_get_ex(o, "process", &proc));
    /* the environment is exactly the agent's, never layered on MXC's */
    assert_false(json_object_object_get_ex(proc, "inheritDefaultEnv", NULL));
    assert_true(json_object_object_get_ex(proc, "env", &env));
    assert_int_equal(json_object_array_length(env), sizeof(linux_env) / sizeof(linux_env[0]) - 1);
    for (size_t i = 0; linux_env[i]; i++)
        assert_string_equal(
                json_object_get_string(json_object_array_get_idx(env, i)), linux_env[i]);
    /* the workspace is made fresh in the box (mkdir fails on one that exists),
     * and the agent replaces the shell */
    assert_string_equal(str_at(proc, "cwd", NULL), "/");
    cmd = str_at(proc, "commandLine", NULL);
    /* the configuration's fd, which MXC passes on, is closed first */
    assert_memory_equal(cmd, "exec 3<&- && ", 13);
    assert_non_null(strstr(cmd, "mkdir /workspace && "));
    assert_non_null(strstr(cmd, "sandbox:x:1879048192:1879048192:"));
    assert_non_null(strstr(cmd, " && cd /workspace && exec '" AGENT "'"));
    assert_string_equal(cmd + strlen(cmd) - strlen(AGENT) - 7, "exec '" AGENT "'");
    assert_true(json_object_object_get_ex(proc, "timeout", &x));
    assert_int_equal(json_object_get_int64(x), 30000 + MXC_TIMEOUT_SLACK_MS);
    /* no host path is writable; /etc as a whole is denied */
    assert_true(json_object_object_get_ex(o, "filesystem", &fs));
    assert_false(json_object_object_get_ex(fs, "readwritePaths", NULL));
    assert_true(json_object_object_get_ex(fs, "readonlyPaths", &ro));
    assert_true(json_object_object_get_ex(fs, "deniedPaths", &denied));
    assert_true(
            array_has(denied, "/etc") && array_has(denied, "/root") && array_has(denied, "/home"));
    assert_true(array_has(ro, AGENT) && !array_has(ro, "/etc") && !array_has(ro, "/"));
    assert_false(array_has(ro, "/etc/passwd") || array_has(ro, "/etc/shadow"));
    /* no network, no telemetry */
    assert_true(json_object_object_get_ex(o, "network", &x));
    assert_string_equal(str_at(x, "egress", "default"), "deny");
    assert_string_equal(str_at(x, "ingress", "hostLoopback"), "deny");
    assert_string_equal(str_at(x, "ingress", "default"), "deny");
    assert_string_equal(str_at(o, "telemetry", "enabled"), "false");
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_linux_default),
            cmocka_unit_test(test_linux_long_life_quoted_path),
            cmocka_unit_test(test_windows_default),
            cmocka_unit_test(test_windows_small),
            cmocka_unit_test(test_network_modes_refused),
            cmocka_unit_test(test_bad_paths),
            cmocka_unit_test(test_invariants),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
