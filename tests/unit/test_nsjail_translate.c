/* SPDX-License-Identifier: MIT */
/*
 * test_nsjail_translate.c: golden tests of the NsJail translator. Each case
 * pins the whole configuration in tests/golden/nsjail/<case>.cfg; a change
 * in translation shows up as a diff to review. SBX_UPDATE_GOLDEN=1
 * rewrites the files instead. Properties that must hold whatever the
 * golden files say are checked separately.
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
static const char *const env[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", NULL};

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

static struct nsjail_input base_input(const struct sbx_policy *p)
{
    static const char *const ro[] = {"/etc/python3", NULL};

    return (struct nsjail_input){.box = {.policy = p,
                                         .tops = merged,
                                         .n_tops = 4,
                                         .ro_paths = ro,
                                         .envp = env,
                                         .sandbox_uid = 1000,
                                         .sandbox_gid = 1000},
            .agent_fd = 5,
            .seccomp_fd = 4};
}

static void check_golden(const char *name, const struct nsjail_config *cfg)
{
    golden_check("nsjail", name, "cfg", cfg->text);
}

static struct nsjail_config *translate_ok(const struct nsjail_input *in)
{
    struct nsjail_config *cfg = calloc(1, sizeof(*cfg));
    struct sbx_err err = {.size = sizeof(err)};

    assert_non_null(cfg);
    assert_int_equal(nsjail_translate(in, cfg, &err), 0);
    assert_int_equal(strlen(cfg->text), cfg->len);
    return cfg;
}

static void test_default(void **state)
{
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *cfg;

    (void)state;
    cfg = translate_ok(&in);
    check_golden("default", cfg);
    free(cfg);
}

/* Sizes round up to whole MiB (nsjail's unit); the agent sets the byte. */
static void test_small_file_size(void **state)
{
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *cfg;

    (void)state;
    p.file_size_bytes = 1;
    p.open_files_max = 7;
    cfg = translate_ok(&in);
    assert_non_null(strstr(cfg->text, "\nrlimit_fsize: 1\nrlimit_nofile: 7\n"));
    assert_non_null(strstr(cfg->text, "\nrlimit_as_type: HARD\n"));
    free(cfg);
}

static void test_network_on(void **state)
{
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *cfg;

    (void)state;
    p.network = SBX_NET_ON;
    cfg = translate_ok(&in);
    check_golden("network_on", cfg);
    free(cfg);
}

static void test_network_host_writable(void **state)
{
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *cfg;

    (void)state;
    p.network = SBX_NET_HOST;
    p.read_only_system = 0;
    p.workspace_bytes = 1u << 20;
    p.tmpfs_bytes = 1u << 20;
    in.box.tops = split;
    in.box.n_tops = 3;
    in.box.ro_paths = NULL;
    cfg = translate_ok(&in);
    check_golden("host_net_writable_split_usr", cfg);
    free(cfg);
}

/* The environment is the operator's (LLM_SANDBOX_ENV_ALLOW passes any
 * value): quotes, backslashes, newlines and non-ASCII bytes are escaped,
 * so no value can end its string and add configuration of its own. */
static void test_escaping(void **state)
{
    static const char *const hostile[] = {
            "A=\" } clone_newnet: false mount { src: \"/\" dst: \"/host\" is_bind: true rw: true",
            "B=back\\slash\nnew line\ttab\x01\x7f", "C=caf\xc3\xa9", NULL};
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *cfg;

    (void)state;
    in.box.envp = hostile;
    cfg = translate_ok(&in);
    assert_non_null(strstr(cfg->text, "envar: \"A=\\\" } clone_newnet: false mount { src: "
                                      "\\\"/\\\" dst: \\\"/host\\\" is_bind: true rw: true\"\n"));
    assert_non_null(
            strstr(cfg->text, "envar: \"B=back\\\\slash\\012new line\\011tab\\001\\177\"\n"));
    assert_non_null(strstr(cfg->text, "envar: \"C=caf\\303\\251\"\n"));
    assert_null(strstr(cfg->text, "clone_newnet: false\n"));
    free(cfg);
}

/* Properties that must hold whatever the golden files say. */
static void test_invariants(void **state)
{
    static const char *const never[] = {"keep_caps: true", "disable_no_new_privs: true",
            "keep_env: true", "skip_setsid: true", "clone_newuser: false", "clone_newpid: false",
            "clone_newns: false", "dst: \"/home", "dst: \"/root", "dst: \"/sys", "dst: \"/etc\"",
            "user_net", "cgroup_mem_max", "use_newidmap: true"};
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *cfg;

    (void)state;
    cfg = translate_ok(&in);
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
        if (strstr(cfg->text, never[i]))
            fail_msg("the configuration has '%s'", never[i]);
    assert_non_null(strstr(cfg->text, "clone_newnet: true\n"));
    assert_non_null(strstr(cfg->text, "seccomp_policy_file: \"/proc/self/fd/4\"\n"));
    assert_non_null(strstr(cfg->text, "exec_fd: true"));
    /* the root is read-only, every bind of a host path is */
    assert_non_null(strstr(cfg->text, "mount { dst: \"/\" fstype: \"tmpfs\" options: "
                                      "\"size=1048576,nr_inodes=1024,mode=0755\" rw: false"));
    for (const char *b = cfg->text; (b = strstr(b, "is_bind: true")); b++) {
        const char *line = b;

        while (line > cfg->text && line[-1] != '\n')
            line--;
        if (strncmp(line, "mount { src: \"/dev/", 19) != 0)
            assert_true(strncmp(b, "is_bind: true rw: false", 23) == 0);
    }
    free(cfg);
}

/* tmpfs is RAM charged to the memory limit: each mount gets at most 3/4 of
 * it, so a full disk ends as ENOSPC before an OOM kill; and an inode cap of
 * one per 4 KiB, since no rlimit counts the kernel memory of empty files. */
static void test_tmpfs_sizes(void **state)
{
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *cfg;

    (void)state;
    p.memory_bytes = 128u << 20;
    p.workspace_bytes = 1u << 30;
    p.tmpfs_bytes = 96u << 20; /* as the core derives it: test_policy */
    cfg = translate_ok(&in);
    assert_non_null(strstr(cfg->text, "dst: \"/workspace\" fstype: \"tmpfs\" options: "
                                      "\"size=100663296,nr_inodes=24576,mode=0755\""));
    assert_null(strstr(cfg->text, "size=1073741824"));
    for (const char *m = cfg->text; (m = strstr(m, "fstype: \"tmpfs\"")); m++) {
        const char *opts = strstr(m, "options: \"");

        assert_non_null(opts);
        assert_true(strncmp(strchr(opts + 10, ',') + 1, "nr_inodes=", 10) == 0);
    }
    free(cfg);
}

/* A zygote box (SBX_BOX_ZYGOTE): exactly bwrap's four capabilities, kept
 * by nsjail in the box's user namespace (keep_caps stays false, so nsjail
 * drops every other one, the bounding set included), and a writable /proc
 * for the zygote's user.max_user_namespaces; nothing else differs. */
static const char *const zygote_caps =
        "keep_caps: false\ncap: \"CAP_SYS_ADMIN\"\ncap: \"CAP_NET_ADMIN\"\n"
        "cap: \"CAP_SYS_RESOURCE\"\ncap: \"CAP_SETPCAP\"\nsilent: false\n";

static void test_zygote(void **state)
{
    static const char *const proc_rw = "mount { dst: \"/proc\" fstype: \"proc\" rw: true }\n";
    static const char *const proc_ro = "mount { dst: \"/proc\" fstype: \"proc\" rw: false }\n";
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *plain, *zyg;
    char *cap, *proc, *back;
    size_t caps_len =
            strlen(zygote_caps) - strlen("keep_caps: false\n") - strlen("silent: false\n");

    (void)state;
    plain = translate_ok(&in);
    in.box.zygote = true;
    zyg = translate_ok(&in);
    check_golden("zygote", zyg);
    cap = strstr(zyg->text, zygote_caps);
    assert_non_null(cap);
    assert_null(strstr(cap + strlen(zygote_caps), "\ncap: ")); /* none after them */
    assert_true(strstr(zyg->text, "\ncap: ") > cap);           /* nor before */
    assert_null(strstr(zyg->text, "keep_caps: true"));
    proc = strstr(zyg->text, proc_rw);
    assert_non_null(proc);
    assert_non_null(strstr(zyg->text, "seccomp_policy_file: \"/proc/self/fd/4\"\n"));
    /* the plain box has none of it */
    assert_null(strstr(plain->text, "cap: "));
    assert_non_null(strstr(plain->text, proc_ro));
    /* and the zygote's is the plain one with only those changes */
    back = calloc(1, sizeof(zyg->text));
    assert_non_null(back);
    cap += strlen("keep_caps: false\n");
    snprintf(back, sizeof(zyg->text), "%.*s%.*s%s%s", (int)(cap - zyg->text), zyg->text,
            (int)(proc - cap - (ptrdiff_t)caps_len), cap + caps_len, proc_ro,
            proc + strlen(proc_rw));
    assert_string_equal(back, plain->text);
    free(back);
    free(plain);
    free(zyg);
}

static void test_refusals(void **state)
{
    struct sbx_policy p = base_policy();
    struct nsjail_input in = base_input(&p);
    struct nsjail_config *cfg = calloc(1, sizeof(*cfg));
    struct sbx_err err = {.size = sizeof(err)};
    static char big[NSJAIL_CONFIG_MAX];
    const char *huge[] = {big, NULL};

    (void)state;
    p.network = SBX_NET_REGISTRIES;
    assert_int_equal(nsjail_translate(&in, cfg, &err), SBX_E_UNSUPPORTED);
    assert_string_equal(err.field, "network");
    p.network = SBX_NET_OFF;
    in.seccomp_fd = -1;
    assert_int_equal(nsjail_translate(&in, cfg, &err), SBX_E_INVALID);
    in.seccomp_fd = 4;
    memset(big, 'x', sizeof(big) - 1);
    in.box.envp = huge;
    assert_int_equal(nsjail_translate(&in, cfg, &err), SBX_E_LIMIT);
    assert_true(strlen(cfg->text) < NSJAIL_CONFIG_MAX);
    free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_default),
            cmocka_unit_test(test_small_file_size),
            cmocka_unit_test(test_network_on),
            cmocka_unit_test(test_network_host_writable),
            cmocka_unit_test(test_escaping),
            cmocka_unit_test(test_invariants),
            cmocka_unit_test(test_tmpfs_sizes),
            cmocka_unit_test(test_zygote),
            cmocka_unit_test(test_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
