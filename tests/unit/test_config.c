/* SPDX-License-Identifier: MIT */
/*
 * test_config.c: the YAML config file (config.c through settings.c). A
 * valid file sets values, the environment beats the file, sequences become
 * joined lists, plugin keys are served and checked against plugin names;
 * each malformed file fails with the exact "FILE:LINE:COLUMN: " prefix and a
 * key phrase; a bad value carries the variable's usual message after the
 * location. Files are written to a temporary directory. Takes no arguments.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "plugins/manifest.h"
#include "plugins/plugin_settings.h"
#include "policy/config.h"
#include "policy/settings.h"

#define P   "/c/t.yaml:"
#define MIB (1024ull * 1024ull)

/* Every variable a case sets, cleared before each test. */
static const char *const vars[] = {"BACKEND", "SANDBOX_MEMORY", "SANDBOX_MEM_LIMIT", "SANDBOX_CPUS",
        "SANDBOX_CPU_COUNT", "SANDBOX_NETWORK_MODE", "SANDBOX_READ_ONLY", "SANDBOX_PRIVILEGED",
        "LLM_SANDBOX_TIMEOUT", "LLM_SANDBOX_MAX_TIMEOUT", "LLM_SANDBOX_MAX_MEMORY",
        "LLM_SANDBOX_PIDS", "LLM_SANDBOX_NETWORK", "LLM_SANDBOX_ALLOW_HOST_NETWORK",
        "LLM_SANDBOX_ENV_ALLOW", "LLM_SANDBOX_UID", "LLM_SANDBOX_GID", "LLM_SANDBOX_UID_RANGE",
        "LLM_SANDBOX_CGROUP", "LLM_SANDBOX_LOG_LEVEL", "LLM_SANDBOX_PLUGIN_PATH",
        "LLM_SANDBOX_DEFAULT_LANGUAGE", "LLM_SANDBOX_CONFIG", "LLM_SANDBOX_BWRAP_PATH",
        "CFG_TEST_A", "CFG_TEST_B", "DOCKER_HOST", "DOCKER_CERT_PATH", "LLM_SANDBOX_DOCKER_HOST",
        "SANDBOX_IMAGE_PYTHON", "HOME"};

static char tmpdir[64];

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    return 0;
}

static struct settings *load_ok(const char *yaml)
{
    struct settings *s = NULL;
    struct sbx_error *e = NULL;

    if (settings_load_data("/c/t.yaml", yaml, strlen(yaml), &s, &e) < 0)
        fail_msg("settings_load_data: %s", e->msg);
    assert_non_null(s);
    return s;
}

/* Loading fails with rc, a message starting with prefix (NULL: any) and
 * holding phrase. */
static void load_fails(const char *yaml, int rc, const char *prefix, const char *phrase)
{
    struct settings *s = NULL;
    struct sbx_error *e = NULL;
    int r = settings_load_data("/c/t.yaml", yaml, strlen(yaml), &s, &e);

    assert_int_equal(r, rc);
    assert_null(s);
    assert_non_null(e);
    assert_int_equal(e->rc, rc);
    if (prefix && strncmp(e->msg, prefix, strlen(prefix)) != 0)
        fail_msg("'%s' does not start with '%s'", e->msg, prefix);
    if (!strstr(e->msg, phrase))
        fail_msg("'%s' does not contain '%s'", e->msg, phrase);
    assert_null(strchr(e->msg, '\n'));
    sbx_error_free(e);
}

static void write_file(const char *name, const char *data, size_t len, char *path, size_t size)
{
    int fd;

    snprintf(path, size, "%s/%s", tmpdir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void test_valid_file(void **state)
{
    struct settings *s;

    (void)state;
    s = load_ok("# an operator's config\n"
                "BACKEND: bubblewrap\n"
                "LLM_SANDBOX_DEFAULT_LANGUAGE: python\n"
                "LLM_SANDBOX_TIMEOUT: 12\n"
                "SANDBOX_MEMORY: 256M\n"
                "LLM_SANDBOX_MAX_MEMORY: \"1G\"\n"
                "SANDBOX_CPUS: 0.5\n"
                "LLM_SANDBOX_PIDS: 64\n"
                "SANDBOX_READ_ONLY: false\n"
                "LLM_SANDBOX_CGROUP: v2\n"
                "LLM_SANDBOX_LOG_LEVEL: info\n"
                "LLM_SANDBOX_UID: 4242\n"
                "LLM_SANDBOX_BWRAP_PATH: /opt/bwrap\n");
    assert_string_equal(s->backend, "bubblewrap");
    assert_int_equal(s->defaults.wall_time_ms, 12000);
    assert_int_equal(s->defaults.memory_bytes, 256 * MIB);
    assert_int_equal(s->ceilings.memory_bytes, 1024 * MIB);
    assert_int_equal(s->defaults.cpu_millicores, 500);
    assert_int_equal(s->defaults.pids_max, 64);
    assert_int_equal(s->defaults.read_only_system, 0);
    assert_false(s->cgroup_v1);
    assert_true(s->cgroup_v2);
    assert_int_equal(s->log_level, 2);
    assert_int_equal(s->sandbox_uid, 4242);
    assert_non_null(s->config);
    assert_string_equal(s->config->path, "/c/t.yaml");
    assert_int_equal(s->config->n, 12);
    assert_string_equal(plugin_setting_value(s, NULL, "bwrap", "path"), "/opt/bwrap");
    assert_null(plugin_setting_value(s, NULL, "bwrap", "pasta"));
    settings_free(s);
}

static void test_empty_file(void **state)
{
    struct settings *s;

    (void)state;
    s = load_ok("# nothing set yet\n");
    assert_int_equal(s->config->n, 0);
    assert_string_equal(s->backend, "bwrap");
    assert_int_equal(s->defaults.wall_time_ms, 30000);
    settings_free(s);
    s = load_ok("");
    assert_int_equal(s->config->n, 0);
    settings_free(s);
}

static void test_environment_beats_file(void **state)
{
    struct settings *s;

    (void)state;
    setenv("LLM_SANDBOX_TIMEOUT", "7", 1);
    setenv("LLM_SANDBOX_BWRAP_PATH", "/env/bwrap", 1);
    setenv("SANDBOX_MEMORY", "", 1); /* empty counts as unset: the file's value holds */
    s = load_ok("LLM_SANDBOX_TIMEOUT: 12\nSANDBOX_MEMORY: 100M\nLLM_SANDBOX_PIDS: 9\n"
                "LLM_SANDBOX_BWRAP_PATH: /file/bwrap\n");
    assert_int_equal(s->defaults.wall_time_ms, 7000);
    assert_int_equal(s->defaults.memory_bytes, 100 * MIB);
    assert_int_equal(s->defaults.pids_max, 9);
    assert_string_equal(plugin_setting_value(s, NULL, "bwrap", "path"), "/env/bwrap");
    settings_free(s);
    /* a bad value in the file is not reached when the environment sets it */
    setenv("SANDBOX_MEMORY", "64M", 1);
    s = load_ok("SANDBOX_MEMORY: lots\n");
    assert_int_equal(s->defaults.memory_bytes, 64 * MIB);
    settings_free(s);
}

static void test_reference_name_from_file(void **state)
{
    struct settings *s;

    (void)state;
    /* the environment's reference name beats our name in the file, as it
     * beats our name in the environment */
    setenv("SANDBOX_MEMORY", "64M", 1);
    s = load_ok("SANDBOX_MEM_LIMIT: 32M\n");
    assert_int_equal(s->defaults.memory_bytes, 64 * MIB);
    settings_free(s);
    unsetenv("SANDBOX_MEMORY");
    s = load_ok("SANDBOX_MEM_LIMIT: 32M\n");
    assert_int_equal(s->defaults.memory_bytes, 32 * MIB);
    settings_free(s);
}

static void test_sequences(void **state)
{
    struct settings *s;

    (void)state;
    setenv("CFG_TEST_A", "1", 1);
    setenv("CFG_TEST_B", "two", 1);
    s = load_ok("LLM_SANDBOX_ENV_ALLOW: [CFG_TEST_A, CFG_TEST_B, CFG_TEST_UNSET]\n"
                "LLM_SANDBOX_PLUGIN_PATH:\n  - /opt/a\n  - /opt/b\n");
    assert_string_equal(s->env_allow[0], "CFG_TEST_A");
    assert_string_equal(s->env_allow[1], "CFG_TEST_B");
    assert_string_equal(s->env_allow[2], "CFG_TEST_UNSET");
    assert_null(s->env_allow[3]);
    assert_string_equal(s->env_pass[0], "CFG_TEST_A=1");
    assert_string_equal(s->env_pass[1], "CFG_TEST_B=two");
    assert_null(s->env_pass[2]);
    assert_string_equal(s->plugin_path[0], "/opt/a");
    assert_string_equal(s->plugin_path[1], "/opt/b");
    assert_null(s->plugin_path[2]);
    assert_string_equal(config_find(s->config, "LLM_SANDBOX_PLUGIN_PATH")->value, "/opt/a:/opt/b");
    settings_free(s);
    /* the plain string form still works */
    s = load_ok("LLM_SANDBOX_ENV_ALLOW: CFG_TEST_A,CFG_TEST_B\n");
    assert_string_equal(s->env_allow[1], "CFG_TEST_B");
    settings_free(s);
    /* an empty sequence sets nothing */
    s = load_ok("LLM_SANDBOX_ENV_ALLOW: []\n");
    assert_null(s->env_allow);
    settings_free(s);
}

static void test_unknown_keys(void **state)
{
    (void)state;
    load_fails("backend: bwrap\n", SBX_E_INVALID,
            P "1:1: ", "unknown key 'backend' (keys are upper case: 'BACKEND')");
    load_fails("LLM_SANDBOX_CONFIG: /x\n", SBX_E_INVALID, P "1:1: ", "unknown key");
    load_fails("LLM_SANDBOX_TIMEOUTS: 3\n", SBX_E_INVALID, P "1:1: ", "unknown key");
    load_fails("\"a b\": 3\n", SBX_E_INVALID, P "1:1: ", "unknown key 'a b'");
    load_fails("[a]: 3\n", SBX_E_INVALID, P "1:1: ", "keys must be strings, not a sequence");
}

static void test_wrong_types(void **state)
{
    (void)state;
    load_fails("SANDBOX_MEMORY:\n  size: 1G\n", SBX_E_INVALID,
            P "2:3: ", "key 'SANDBOX_MEMORY' must be a string, number or boolean, not a mapping");
    load_fails("SANDBOX_MEMORY: [1G]\n", SBX_E_INVALID, P "1:17: ", "not a sequence");
    load_fails("LLM_SANDBOX_ENV_ALLOW: {A: 1}\n", SBX_E_INVALID,
            P "1:24: ", "must be a string or a sequence of strings, not a mapping");
    load_fails("LLM_SANDBOX_ENV_ALLOW: [A, [B]]\n", SBX_E_INVALID,
            P "1:28: ", "each entry of 'LLM_SANDBOX_ENV_ALLOW' must be a string, not a sequence");
    load_fails("LLM_SANDBOX_ENV_ALLOW: [A, 'B,C']\n", SBX_E_INVALID,
            P "1:28: ", "must be a non-empty line without ','");
    load_fails("LLM_SANDBOX_PLUGIN_PATH: ['/a:/b']\n", SBX_E_INVALID, P "1:27: ", "without ':'");
    load_fails("LLM_SANDBOX_ENV_ALLOW: ['']\n", SBX_E_INVALID, P "1:25: ", "non-empty");
    load_fails("BACKEND:\n", SBX_E_INVALID, P "1:9: ", "key 'BACKEND' has no value");
    load_fails("BACKEND: \"bw\\nrap\"\n", SBX_E_INVALID,
            P "1:10: ", "the value of 'BACKEND' must be one line without control characters");
    load_fails("BACKEND: bw\n\n  rap\n", SBX_E_INVALID, P "1:10: ", "one line");
    load_fails("LLM_SANDBOX_ENV_ALLOW: [\"A\\tB\"]\n", SBX_E_INVALID,
            P "1:25: ", "non-empty line without ','");
    load_fails("- BACKEND\n", SBX_E_INVALID,
            P "1:1: ", "the top level must be a mapping, not a sequence");
    load_fails("bwrap\n", SBX_E_INVALID, P "1:1: ", "the top level must be a mapping");
}

/* The file's location, then exactly what the environment variable gets. */
static void test_bad_values(void **state)
{
    struct settings *s = NULL;
    struct sbx_error *e = NULL;
    char want[512];

    (void)state;
    setenv("SANDBOX_MEMORY", "lots", 1);
    assert_int_equal(settings_load(&s, &e), SBX_E_INVALID);
    snprintf(want, sizeof(want), P "3:1: %s", e->msg);
    unsetenv("SANDBOX_MEMORY");
    load_fails("BACKEND: bwrap\n# memory\nSANDBOX_MEMORY: lots\n", SBX_E_INVALID, want,
            "SANDBOX_MEMORY='lots' is not a valid size");
    sbx_error_free(e);
    load_fails("LLM_SANDBOX_TIMEOUT: -3\n", SBX_E_INVALID, P "1:1: LLM_SANDBOX_TIMEOUT='-3'",
            "is not a valid");
    load_fails("SANDBOX_READ_ONLY: maybe\n", SBX_E_INVALID,
            P "1:1: ", "SANDBOX_READ_ONLY='maybe' must be true or false");
    load_fails("LLM_SANDBOX_LOG_LEVEL: loud\n", SBX_E_INVALID,
            P "1:1: ", "must be error, warn, info or debug");
    load_fails("LLM_SANDBOX_ENV_ALLOW: [OK, 9bad]\n", SBX_E_INVALID,
            P "1:1: ", "'9bad' is not a variable name");
    load_fails("SANDBOX_MEMORY: 1G\nLLM_SANDBOX_MAX_MEMORY: 512M\n", SBX_E_INVALID,
            P "2:1: ", "below the configured default");
    load_fails("SANDBOX_PRIVILEGED: true\n", SBX_E_UNSUPPORTED, P "1:1: ", "is refused");
    load_fails("SANDBOX_NETWORK_MODE: host\n", SBX_E_UNSUPPORTED,
            P "1:1: ", "needs LLM_SANDBOX_ALLOW_HOST_NETWORK=1");
    /* an error about a variable the environment set carries no file location */
    setenv("LLM_SANDBOX_PIDS", "many", 1);
    load_fails("LLM_SANDBOX_PIDS: 5\n", SBX_E_INVALID, "LLM_SANDBOX_PIDS='many'", "positive count");
}

static void test_yaml_refusals(void **state)
{
    char big[CONFIG_MAX_BYTES + 64];

    (void)state;
    load_fails("BACKEND: &b bwrap\n", SBX_E_INVALID, P "1:10: ", "aliases and anchors");
    load_fails("A: &a x\nBACKEND: *a\n", SBX_E_INVALID, P "1:4: ", "aliases and anchors");
    load_fails("BACKEND: bwrap\nSANDBOX_MEMORY: *m\n", SBX_E_INVALID,
            P "2:17: ", "aliases and anchors are not allowed");
    load_fails("BACKEND: !!str bwrap\n", SBX_E_INVALID, P "1:10: ", "tags are not allowed");
    load_fails("BACKEND: bwrap\nBACKEND: docker\n", SBX_E_INVALID,
            P "2:1: ", "duplicate key 'BACKEND'");
    load_fails("BACKEND: bwrap\n---\nBACKEND: docker\n", SBX_E_INVALID,
            P "2:1: ", "only one YAML document");
    load_fails("LLM_SANDBOX_ENV_ALLOW: [[[a]]]\n", SBX_E_INVALID,
            P "1:26: ", "nesting deeper than 3 levels");
    load_fails("BACKEND: [bwrap\n", SBX_E_INVALID, P, "YAML syntax error");
    load_fails("BACKEND: \xff\n", SBX_E_INVALID, P "1:10: ", "YAML syntax error");
    memset(big, '#', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    load_fails(big, SBX_E_INVALID, P "1:1: ", "the config file is larger than 65536 bytes");
}

/* Two manifests as the loader would have them: python, and bwrap. */
static struct manifest m_python = {.name = (char *)"python"};
static struct manifest m_bwrap = {.name = (char *)"bwrap"};

/* A docker-like manifest declaring foreign names (settings:). */
static char *host_env[] = {(char *)"DOCKER_HOST", NULL};
static char *cert_env[] = {(char *)"DOCKER_CERT_PATH", NULL};
static char *image_env[] = {(char *)"SANDBOX_IMAGE_*", NULL};
static struct manifest_setting docker_settings[] = {
        {.key = (char *)"host", .env = host_env},
        {.key = (char *)"cert_path", .env = cert_env, .default_value = NULL},
        {.key = (char *)"image_*", .env = image_env},
};
static struct manifest m_docker = {
        .name = (char *)"docker", .settings = docker_settings, .n_settings = 3};

static void test_plugin_keys(void **state)
{
    const struct manifest *const ms[] = {&m_python, &m_bwrap};
    struct settings *s;
    struct sbx_error *e = NULL;

    (void)state;
    s = load_ok("BACKEND: bwrap\nLLM_SANDBOX_BWRAP_PASTA: /usr/bin/pasta\n");
    assert_int_equal(plugin_settings_check_keys(s, ms, 2, &e), 0);
    assert_int_equal(plugin_settings_check_keys(s, ms, 1, &e), SBX_E_INVALID);
    assert_string_equal(e->field, "LLM_SANDBOX_BWRAP_PASTA");
    assert_non_null(strstr(e->msg, P "2:1: unknown key 'LLM_SANDBOX_BWRAP_PASTA'"));
    e = sbx_error_free(e);
    settings_free(s);
    s = load_ok("LLM_SANDBOX_MAX_TIMEOUTS: 3\n"); /* a typo shaped like a plugin key */
    assert_int_equal(plugin_settings_check_keys(s, ms, 2, &e), SBX_E_INVALID);
    assert_non_null(strstr(e->msg, P "1:1: unknown key 'LLM_SANDBOX_MAX_TIMEOUTS'"));
    e = sbx_error_free(e);
    settings_free(s);
    /* an upper-case typo is taken while the file is read (a plugin may
     * declare the name) and refused once the manifests say none does */
    s = load_ok("BACKEND: bwrap\nSANDBOX_MEMROY: 1G\n");
    assert_int_equal(plugin_settings_check_keys(s, ms, 2, &e), SBX_E_INVALID);
    assert_string_equal(e->field, "SANDBOX_MEMROY");
    assert_non_null(strstr(e->msg, P "2:1: unknown key 'SANDBOX_MEMROY'"));
    e = sbx_error_free(e);
    settings_free(s);
}

/* Foreign names come from the manifests (ABI 1.4): none is built in. */
static void test_declared_names(void **state)
{
    const struct manifest *const ms[] = {&m_python, &m_docker};
    struct settings *s;
    struct sbx_error *e = NULL;

    (void)state;
    s = load_ok("DOCKER_HOST: unix:///file.sock\nSANDBOX_IMAGE_PYTHON: img:file\n");
    assert_int_equal(plugin_settings_check_keys(s, ms, 2, &e), 0);
    /* without the manifest that declares them they are typos */
    assert_int_equal(plugin_settings_check_keys(s, ms, 1, &e), SBX_E_INVALID);
    assert_string_equal(e->field, "DOCKER_HOST");
    e = sbx_error_free(e);
    /* the file's foreign name, then the environment's, then our own name */
    assert_string_equal(plugin_setting_value(s, &m_docker, "docker", "host"), "unix:///file.sock");
    setenv("DOCKER_HOST", "unix:///env.sock", 1);
    assert_string_equal(plugin_setting_value(s, &m_docker, "docker", "host"), "unix:///env.sock");
    setenv("LLM_SANDBOX_DOCKER_HOST", "unix:///ours.sock", 1);
    assert_string_equal(plugin_setting_value(s, &m_docker, "docker", "host"), "unix:///ours.sock");
    /* another plugin reading the same key does not see docker's names */
    assert_null(plugin_setting_value(s, &m_python, "python", "host"));
    assert_null(plugin_setting_value(s, NULL, "podman", "host"));
    /* a family: the rest of the key, upper-cased, in place of the star */
    assert_string_equal(plugin_setting_value(s, &m_docker, "docker", "image_python"), "img:file");
    assert_null(plugin_setting_value(s, &m_docker, "docker", "image_ruby"));
    assert_null(plugin_setting_value(s, &m_docker, "docker", "image_"));
    settings_free(s);
}

/* A default with "~/" is the server's home, expanded once at load. */
static void test_declared_defaults(void **state)
{
    char *dflt = strdup("~/.docker");
    struct manifest_setting st = {
            .key = (char *)"cert_path", .env = cert_env, .default_value = dflt};
    struct manifest m = {.name = (char *)"docker", .settings = &st, .n_settings = 1};
    struct settings *s;

    (void)state;
    setenv("HOME", "/home/tester", 1);
    s = load_ok("");
    assert_int_equal(plugin_settings_expand_defaults(s, &m), 0);
    assert_string_equal(st.default_value, "/home/tester/.docker");
    assert_string_equal(plugin_setting_value(s, &m, "docker", "cert_path"), "/home/tester/.docker");
    setenv("DOCKER_CERT_PATH", "/etc/certs", 1);
    assert_string_equal(plugin_setting_value(s, &m, "docker", "cert_path"), "/etc/certs");
    settings_free(s);
    free(st.default_value);
}

static void test_files(void **state)
{
    struct settings *s = NULL;
    struct sbx_error *e = NULL;
    char path[128], missing[128];
    static char big[CONFIG_MAX_BYTES + 2];

    (void)state;
    write_file("ok.yaml", "LLM_SANDBOX_TIMEOUT: 9\n", 23, path, sizeof(path));
    assert_int_equal(settings_load_file(path, &s, &e), 0);
    assert_int_equal(s->defaults.wall_time_ms, 9000);
    assert_string_equal(s->config->path, path);
    s = settings_free(s);
    /* LLM_SANDBOX_CONFIG names it when no path is given */
    setenv("LLM_SANDBOX_CONFIG", path, 1);
    assert_int_equal(settings_load(&s, &e), 0);
    assert_int_equal(s->defaults.wall_time_ms, 9000);
    s = settings_free(s);
    /* a missing file: SBX_E_IO naming it and the reason */
    snprintf(missing, sizeof(missing), "%s/missing.yaml", tmpdir);
    setenv("LLM_SANDBOX_CONFIG", missing, 1);
    assert_int_equal(settings_load(&s, &e), SBX_E_IO);
    assert_null(s);
    assert_int_equal(e->sys_errno, ENOENT);
    assert_non_null(strstr(e->msg, "LLM_SANDBOX_CONFIG: cannot read config file"));
    assert_non_null(strstr(e->msg, missing));
    assert_non_null(strstr(e->msg, "No such file"));
    e = sbx_error_free(e);
    unsetenv("LLM_SANDBOX_CONFIG");
    assert_int_equal(settings_load_file(missing, &s, &e), SBX_E_IO);
    assert_non_null(strstr(e->msg, "cannot read config file"));
    e = sbx_error_free(e);
    /* not a regular file */
    assert_int_equal(settings_load_file(tmpdir, &s, &e), SBX_E_INVALID);
    assert_non_null(strstr(e->msg, "not a regular file"));
    e = sbx_error_free(e);
    /* oversize */
    memset(big, '#', sizeof(big));
    write_file("big.yaml", big, sizeof(big), path, sizeof(path));
    assert_int_equal(settings_load_file(path, &s, &e), SBX_E_INVALID);
    assert_non_null(strstr(e->msg, "larger than 65536 bytes"));
    e = sbx_error_free(e);
    /* a bad value names the file as given */
    write_file("bad.yaml", "\nSANDBOX_MEMORY: lots\n", 22, path, sizeof(path));
    assert_int_equal(settings_load_file(path, &s, &e), SBX_E_INVALID);
    assert_non_null(strstr(e->msg, ".yaml:2:1: SANDBOX_MEMORY='lots' is not a valid size"));
    assert_string_equal(e->field, "SANDBOX_MEMORY");
    e = sbx_error_free(e);
}

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_config.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    static const char *const names[] = {"ok.yaml", "big.yaml", "bad.yaml"};
    char path[128];

    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup(test_valid_file, clear_env),
            cmocka_unit_test_setup(test_empty_file, clear_env),
            cmocka_unit_test_setup(test_environment_beats_file, clear_env),
            cmocka_unit_test_setup(test_reference_name_from_file, clear_env),
            cmocka_unit_test_setup(test_sequences, clear_env),
            cmocka_unit_test_setup(test_unknown_keys, clear_env),
            cmocka_unit_test_setup(test_wrong_types, clear_env),
            cmocka_unit_test_setup(test_bad_values, clear_env),
            cmocka_unit_test_setup(test_yaml_refusals, clear_env),
            cmocka_unit_test_setup(test_plugin_keys, clear_env),
            cmocka_unit_test_setup(test_declared_names, clear_env),
            cmocka_unit_test_setup(test_declared_defaults, clear_env),
            cmocka_unit_test_setup(test_files, clear_env),
    };

    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
