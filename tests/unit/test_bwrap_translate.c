/* SPDX-License-Identifier: MIT */
/*
 * test_bwrap_translate.c: golden tests of the bubblewrap translator. Each
 * case pins the whole argv (one argument per line) in
 * tests/golden/bwrap/<case>.argv; a change in translation shows up as a
 * diff to review. SBX_UPDATE_GOLDEN=1 rewrites the files instead. The WSL2
 * plugin's use of the same translator (its launcher, environment and
 * refusals) is pinned in tests/golden/wsl2/.
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
#include "translate.h"

static const struct jail_top merged[] = {
        {"/bin", "usr/bin"},
        {"/sbin", "usr/sbin"},
        {"/lib", "usr/lib"},
        {"/lib64", "usr/lib64"},
};
static const struct jail_top split[] = {{"/bin", NULL}, {"/lib", NULL}, {"/lib64", "usr/lib64"}};

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

static struct bwrap_input base_input(const struct sbx_policy *p)
{
    static const char *const ro[] = {"/etc/python3", NULL};

    return (struct bwrap_input){.box = {.policy = p,
                                        .tops = merged,
                                        .n_tops = 4,
                                        .ro_paths = ro,
                                        .sandbox_uid = 1000,
                                        .sandbox_gid = 1000},
            .seccomp_fd = 3,
            .agent_fd = 4,
            .passwd_fd = 5,
            .group_fd = 6,
            .hosts_fd = 7,
            .info_fd = 8,
            .block_fd = -1};
}

static char *join(const struct bwrap_argv *av)
{
    size_t len = 1;
    char *s, *p;

    for (size_t i = 0; i < av->argc; i++)
        len += strlen(av->argv[i]) + 1;
    s = p = malloc(len);
    assert_non_null(s);
    for (size_t i = 0; i < av->argc; i++)
        p += sprintf(p, "%s\n", av->argv[i]);
    *p = '\0';
    return s;
}

static void check_golden(const char *name, const struct bwrap_argv *av)
{
    char *got = join(av);

    golden_check("bwrap", name, "argv", got);
    free(got);
}

static void translate_ok(const struct bwrap_input *in, struct bwrap_argv *av)
{
    struct sbx_err err = {.size = sizeof(err)};

    assert_int_equal(bwrap_translate(in, av, &err), 0);
    assert_null(av->argv[av->argc]);
    assert_string_equal(av->argv[0], "bwrap");
    assert_string_equal(av->argv[av->argc - 1], BWRAP_AGENT);
}

static void test_default(void **state)
{
    struct sbx_policy p = base_policy();
    struct bwrap_input in = base_input(&p);
    struct bwrap_argv *av = calloc(1, sizeof(*av));

    (void)state;
    translate_ok(&in, av);
    check_golden("default", av);
    free(av);
}

static void test_network_on(void **state)
{
    struct sbx_policy p = base_policy();
    struct bwrap_input in = base_input(&p);
    struct bwrap_argv *av = calloc(1, sizeof(*av));

    (void)state;
    p.network = SBX_NET_ON;
    in.block_fd = 9;
    translate_ok(&in, av);
    check_golden("network_on", av);
    free(av);
}

static void test_network_host_writable(void **state)
{
    struct sbx_policy p = base_policy();
    struct bwrap_input in = base_input(&p);
    struct bwrap_argv *av = calloc(1, sizeof(*av));

    (void)state;
    p.network = SBX_NET_HOST;
    p.read_only_system = 0;
    p.workspace_bytes = 1u << 20;
    p.tmpfs_bytes = 1u << 20;
    in.box.tops = split;
    in.box.n_tops = 3;
    in.box.ro_paths = NULL;
    translate_ok(&in, av);
    check_golden("host_net_writable_split_usr", av);
    free(av);
}

/* Properties that must hold whatever the golden files say. */
static void test_invariants(void **state)
{
    struct sbx_policy p = base_policy();
    struct bwrap_input in = base_input(&p);
    struct bwrap_argv *av = calloc(1, sizeof(*av));
    int unshare_net = 0, seccomp = 0, remount_root = 0, remount_dev = 0, disable_userns = 0;

    (void)state;
    translate_ok(&in, av);
    for (size_t i = 0; i < av->argc; i++) {
        const char *a = av->argv[i];

        unshare_net += strcmp(a, "--unshare-net") == 0;
        seccomp += strcmp(a, "--seccomp") == 0;
        if (strcmp(a, "--remount-ro") == 0 && i + 1 < av->argc) {
            remount_root += strcmp(av->argv[i + 1], "/") == 0;
            remount_dev += strcmp(av->argv[i + 1], "/dev") == 0; /* bwrap's /dev has no size */
        }
        disable_userns += strcmp(a, "--disable-userns") == 0;
        /* never the host's home, /root, /sys or all of /etc */
        if (i > 0 && (strcmp(av->argv[i - 1], "--ro-bind") == 0 ||
                             strcmp(av->argv[i - 1], "--ro-bind-try") == 0 ||
                             strcmp(av->argv[i - 1], "--bind") == 0)) {
            assert_true(strncmp(a, "/home", 5) != 0 && strncmp(a, "/root", 5) != 0 &&
                        strncmp(a, "/sys", 4) != 0 && strcmp(a, "/etc") != 0 &&
                        strcmp(a, "/") != 0);
        }
        assert_true(strcmp(a, "--bind") != 0 && strcmp(a, "--dev-bind") != 0 &&
                    strcmp(a, "--share-net") != 0 && strcmp(a, "--cap-add") != 0);
    }
    assert_int_equal(unshare_net, 1);
    assert_int_equal(seccomp, 1);
    assert_int_equal(remount_root, 1);
    assert_int_equal(remount_dev, 1);
    assert_int_equal(disable_userns, 1);
    free(av);
}

/* Each tmpfs is sized as the policy says (tmpfs_bytes, which the core
 * derives from the workspace and memory: test_policy checks that rule). */
static void test_tmpfs_sizes(void **state)
{
    struct sbx_policy p = base_policy();
    struct bwrap_input in = base_input(&p);
    struct bwrap_argv *av = calloc(1, sizeof(*av));
    const char *want;
    int sizes = 0;

    (void)state;
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            p.tmpfs_bytes = 1u << 20;
        want = round == 0 ? "402653184" : "1048576";
        translate_ok(&in, av);
        for (size_t i = 0; i + 1 < av->argc; i++) {
            if (strcmp(av->argv[i], "--size") == 0) {
                assert_string_equal(av->argv[i + 1], want);
                sizes++;
            }
        }
    }
    assert_int_equal(sizes, 6);
    free(av);
}

static void test_refusals(void **state)
{
    struct sbx_policy p = base_policy();
    struct bwrap_input in = base_input(&p);
    struct bwrap_argv *av = calloc(1, sizeof(*av));
    struct sbx_err err = {.size = sizeof(err)};

    (void)state;
    in.seccomp_fd = -1;
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_INVALID);
    in = base_input(&p);
    p.network = SBX_NET_ON; /* without the block fd */
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_INVALID);
    p.network = SBX_NET_REGISTRIES;
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_UNSUPPORTED);
    assert_string_equal(err.field, "network");
    free(av);
}

/* WSL2 (plugins/wsl2): the same argv behind wsl.exe's words. */
static const char *const wsl_env[] = {"PATH=/usr/bin:/mnt/c/Windows/system32:bin:/mnt:/bin",
        "HOME=/tmp", "LANG=C.UTF-8", "WSL_INTEROP=/run/WSL/1_interop", "WSLENV=", "=odd",
        "NOEQUALS", "PYTHONPATH=/tmp/.sbx/python", NULL};
static const char *const wsl_exe[] = {"wsl.exe", NULL};

static struct bwrap_wsl wsl_of(const char *const *launcher)
{
    return (struct bwrap_wsl){.launcher = launcher,
            .distro = "Debian",
            .user = "sbx",
            .opener = "/usr/lib/x86_64-linux-gnu/llm-sandbox/plugins/wsl2-open",
            .bwrap = "/usr/bin/bwrap"};
}

/* Under WSL2 only stdin, stdout and stderr cross: no info fd (the blobs'
 * numbers are where the opener puts them). */
static struct bwrap_input wsl_input(const struct sbx_policy *p, const struct bwrap_wsl *w)
{
    struct bwrap_input in = base_input(p);

    in.info_fd = -1;
    in.block_fd = -1;
    in.wsl = w;
    return in;
}

static void check_wsl(const char *name, const struct bwrap_input *in, struct bwrap_argv *av)
{
    struct sbx_err err = {.size = sizeof(err)};
    char *got;

    assert_int_equal(bwrap_translate(in, av, &err), 0);
    assert_null(av->argv[av->argc]);
    assert_string_equal(av->argv[av->argc - 1], BWRAP_AGENT);
    got = join(av);
    golden_check("wsl2", name, "argv", got);
    free(got);
}

static void test_wsl_default(void **state)
{
    struct sbx_policy p = base_policy();
    struct bwrap_wsl w = wsl_of(wsl_exe);
    struct bwrap_input in = wsl_input(&p, &w);
    struct bwrap_argv *av = calloc(1, sizeof(*av));

    (void)state;
    in.box.envp = wsl_env;
    in.wsl = &w;
    check_wsl("default", &in, av);
    free(av);
}

static void test_wsl_launcher_words_and_proxy(void **state)
{
    static const char *const shim[] = {"/opt/wsl-shim", "--trace", NULL};
    static const char *const env[] = {"PATH=/mnt/c/Windows", "LANG=C.UTF-8", NULL};
    static const struct sbx_mount deps[] = {
            {.source = "/var/cache/llm-sandbox/deps/x", .target = "/deps", .flags = 0}};
    struct sbx_policy p = base_policy();
    struct bwrap_wsl w = wsl_of(shim);
    struct bwrap_input in = wsl_input(&p, &w);
    struct bwrap_argv *av = calloc(1, sizeof(*av));

    (void)state;
    p.network = SBX_NET_REGISTRIES;
    in.box.proxy_socket = "/run/llm-sandbox/proxy.sock";
    in.box.mounts = deps;
    in.box.n_mounts = 1;
    in.box.envp = env; /* PATH all Windows: left empty */
    w.distro = "Ubuntu-24.04";
    w.user = "_sbx-1";
    in.wsl = &w;
    check_wsl("launcher_words_proxy", &in, av);
    free(av);
}

/* Properties of every WSL2 argv, whatever the golden files say. */
static void test_wsl_invariants(void **state)
{
    struct sbx_policy p = base_policy();
    struct bwrap_wsl w = wsl_of(wsl_exe);
    struct bwrap_input in = wsl_input(&p, &w);
    struct bwrap_argv *av = calloc(1, sizeof(*av));
    struct sbx_err err = {.size = sizeof(err)};
    size_t exec_at = 0, clearenv_at = 0, setenvs = 0;

    (void)state;
    in.box.envp = wsl_env;
    in.wsl = &w;
    assert_int_equal(bwrap_translate(&in, av, &err), 0);
    for (size_t i = 0; i < av->argc; i++) {
        const char *a = av->argv[i];

        if (strcmp(a, "--exec") == 0 && !exec_at)
            exec_at = i;
        /* nothing but stdio crosses wsl.exe: no info fd */
        assert_string_not_equal(a, "--info-fd");
        if (strcmp(a, "--clearenv") == 0)
            clearenv_at = i;
        if (strcmp(a, "--setenv") == 0) {
            assert_true(clearenv_at > 0 && i + 2 < av->argc);
            assert_true(strncmp(av->argv[i + 1], "WSL", 3) != 0); /* no interop variables */
            if (strcmp(av->argv[i + 1], "PATH") == 0)
                assert_string_equal(av->argv[i + 2], "/usr/bin:/bin");
            setenvs++;
        }
        /* nothing of a Windows drive is bound */
        if (i > 0 && strstr(av->argv[i - 1], "bind"))
            assert_true(strncmp(a, "/mnt", 4) != 0);
    }
    /* wsl.exe -d D -u U --cd / --exec OPENER /usr/bin/bwrap: no shell between */
    assert_int_equal(exec_at, 7);
    assert_string_equal(
            av->argv[exec_at + 1], "/usr/lib/x86_64-linux-gnu/llm-sandbox/plugins/wsl2-open");
    assert_string_equal(av->argv[exec_at + 2], "/usr/bin/bwrap");
    assert_string_equal(av->argv[exec_at + 3], "--unshare-user");
    assert_int_equal(setenvs, 4); /* PATH, HOME, LANG, PYTHONPATH */
    free(av);
}

static void test_wsl_refusals(void **state)
{
    static const char *const no_words[] = {NULL};
    static const char *const ro_drive[] = {"/usr/share/x", "/mnt/c/Python", NULL};
    static const struct sbx_mount on_drive[] = {
            {.source = "/mnt/d/deps", .target = "/deps", .flags = 0}};
    static const char *const bad_distros[] = {"-u", "", "Deb ian", "a/b", "x;y",
            "01234567890123456789012345678901234567890123456789012345678901234"};
    static const char *const bad_users[] = {
            "Root", "-x", "1abc", "a b", "a$", "abcdefghijklmnopqrstuvwxyz0123456"};
    struct sbx_policy p = base_policy();
    struct bwrap_wsl w = wsl_of(wsl_exe);
    struct bwrap_input in = wsl_input(&p, &w);
    struct bwrap_argv *av = calloc(1, sizeof(*av));
    struct sbx_err err = {.size = sizeof(err)};

    (void)state;
    in.wsl = &w;
    for (size_t i = 0; i < sizeof(bad_distros) / sizeof(bad_distros[0]); i++) {
        w.distro = bad_distros[i];
        assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_INVALID);
    }
    w = wsl_of(wsl_exe);
    for (size_t i = 0; i < sizeof(bad_users) / sizeof(bad_users[0]); i++) {
        w.user = bad_users[i];
        assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_INVALID);
    }
    w = wsl_of(no_words);
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_INVALID);
    w = wsl_of(wsl_exe);
    w.bwrap = "bwrap"; /* relative: wsl.exe would search the distribution's PATH */
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_INVALID);
    w = wsl_of(wsl_exe);
    w.opener = "wsl2-open"; /* relative, likewise */
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_INVALID);
    w = wsl_of(wsl_exe);
    /* an inherited descriptor would not cross wsl.exe */
    in.info_fd = 8;
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_INVALID);
    assert_non_null(strstr(err.msg, "only stdin, stdout and stderr"));
    in.info_fd = -1;
    p.network = SBX_NET_ON; /* pasta cannot attach inside the distribution */
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_UNSUPPORTED);
    assert_string_equal(err.field, "network");
    p.network = SBX_NET_OFF;
    in.box.ro_paths = ro_drive;
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "/mnt/c/Python"));
    in = wsl_input(&p, &w);
    in.box.mounts = on_drive;
    in.box.n_mounts = 1;
    assert_int_equal(bwrap_translate(&in, av, &err), SBX_E_UNSUPPORTED);
    assert_string_equal(err.field, "mounts");
    /* /mnt2 is no drive */
    static const struct sbx_mount beside[] = {{.source = "/mnt2/deps", .target = "/deps"}};
    in.box.mounts = beside;
    assert_int_equal(bwrap_translate(&in, av, &err), 0);
    free(av);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_default),
            cmocka_unit_test(test_network_on),
            cmocka_unit_test(test_network_host_writable),
            cmocka_unit_test(test_invariants),
            cmocka_unit_test(test_tmpfs_sizes),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_wsl_default),
            cmocka_unit_test(test_wsl_launcher_words_and_proxy),
            cmocka_unit_test(test_wsl_invariants),
            cmocka_unit_test(test_wsl_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
