/* SPDX-License-Identifier: MIT */
/*
 * test_loader.c: the loader against plugins broken on purpose
 * (tests/plugins/, one directory per case under SBX_TEST_PLUGINS, all/ with
 * every case). Each broken plugin must be reported broken or shadowed with
 * a message naming the reason, while the real bwrap and python keep loading
 * and running. Reads the report through sbx_runtime_plugins_json() and
 * sbx_runtime_doctor_json() as the front ends do; peeks into struct
 * sbx_runtime (runtime.h) only to find the build's plugin directory and
 * agent. Exit 77 (skipped) when every test passed but bwrap is missing.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <json-c/json.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llm-sandbox/sbx.h>

#include "plugins/registry.h"
#include "runtime_state.h"

/* What the whole file shares, found once in group_setup. */
static struct {
    char *base;      /* SBX_TEST_PLUGINS */
    char *prefix;    /* "" or "<the build's plugin dir>:" for LLM_SANDBOX_PLUGIN_PATH */
    char *agent;     /* the build's sbx-agent, canonical */
    bool have_bwrap; /* bwrap is installed: the run test can run */
} g;

struct loader_case {
    const char *dir;        /* under SBX_TEST_PLUGINS */
    const char *name;       /* the plugin's name in the report */
    const char *status;     /* "ok", "broken" or "shadowed" */
    const char *needles[3]; /* each must be in the error (NULL-terminated) */
    bool located;           /* the error is "FILE:LINE:COLUMN: ..." on the manifest */
};

static const struct loader_case cases[] = {
        {"abi_major", "abi_major", "broken", {"abi_major.so", "ABI 2", NULL}, false},
        {"abi_minor_newer", "abi_minor_newer", "broken", {"1.99", "upgrade", NULL}, false},
        {"abi_manifest", "abi_manifest", "broken", {"manifest says plugin ABI 2.0", NULL}, false},
        {"no_entry", "no_entry", "broken", {"no_entry.so", "does not export sbx_plugin_entry_v1"},
                false},
        {"name_mismatch", "name_mismatch", "broken",
                {"manifest name 'name_mismatch' but library name 'other_name'", NULL}, false},
        {"version_mismatch", "version_mismatch", "broken",
                {"manifest version '1.0.0' but library version '2.0.0'", NULL}, false},
        {"init_fails", "init_fails", "broken",
                {"init failed: the test plugin refuses to start", NULL}, false},
        {"missing_ops", "missing_ops", "broken", {"backend operations are missing", NULL}, false},
        {"bad_yaml", "bad_yaml", "broken", {"YAML syntax error", NULL}, true},
        {"unknown_key", "unknown_key", "broken", {"unknown key 'descripton'", NULL}, true},
        {"missing_library", "missing_library", "broken",
                {"missing_library.so", "No such file or directory", NULL}, false},
        {"garbage_library", "garbage_library", "broken",
                {"garbage_library.so", "invalid ELF header", "ldd"}, false},
        {"wrong_filename", "wrong_filename", "broken",
                {"wrong_filename.yaml", "must be named after the plugin ('right_name.yaml')", NULL},
                false},
        {"shadow", "python", "shadowed", {"'python'", "already found", NULL}, false},
        {"data_only", "data_only", "ok", {NULL}, false},
        /* loaded, but its probe fails: never listed as ok */
        {"ok_backend", "ok_backend", "unusable", {NULL}, false},
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int r;

    va_start(ap, fmt);
    r = vasprintf(&s, fmt, ap);
    va_end(ap);
    assert_true(r >= 0);
    return s;
}

/* The directory part of path ("." when it has none). (transfer full) */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (!slash)
        return strdup(".");
    return strndup(path, (size_t)(slash - path));
}

/* Where the bwrap plugin looks (plugins/bwrap/probe.c): its setting, else
 * a few fixed directories, not PATH. */
static bool bwrap_installed(void)
{
    static const char *const dirs[] = {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"};
    const char *setting = getenv("LLM_SANDBOX_BWRAP_PATH");

    if (setting && *setting)
        return access(setting, X_OK) == 0;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        if (access(dirs[i], X_OK) == 0)
            return true;
    }
    return false;
}

/* Paths a test binary gets wrong: the runtime looks for its plugin
 * directory relative to /proc/self/exe, and this binary is not the
 * llm-sandbox executable. Put the executable's own plugin directory
 * (SBX_BIN's directory plus the compiled-in relative path) first in
 * LLM_SANDBOX_PLUGIN_PATH unless it is the same directory anyway. */
static int group_setup(void **state)
{
    const char *base = getenv("SBX_TEST_PLUGINS"), *bin = getenv("SBX_BIN");
    const char *agent = getenv("SBX_AGENT");
    struct sbx_runtime *rt = NULL;
    struct sbx_error *err = NULL;
    char exe[PATH_MAX], *exe_dir, *bin_dir, *want, *real, *builtin;
    ssize_t n;

    (void)state;
    if (!base || !bin || !agent) {
        print_error("SBX_TEST_PLUGINS, SBX_BIN and SBX_AGENT must be set (run through ctest)\n");
        return -1;
    }
    unsetenv("LLM_SANDBOX_PLUGIN_PATH");
    if (sbx_runtime_new(&rt, &err) < 0) {
        print_error("sbx_runtime_new: %s\n", err ? err->msg : "?");
        sbx_error_free(err);
        return -1;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    exe_dir = dir_of(exe);
    if (strncmp(rt->plugin_dir, exe_dir, strlen(exe_dir)) != 0 ||
            rt->plugin_dir[strlen(exe_dir)] != '/') {
        print_error("plugin dir %s is not under %s\n", rt->plugin_dir, exe_dir);
        return -1;
    }
    bin_dir = dir_of(bin);
    want = xasprintf("%s/%s", bin_dir, rt->plugin_dir + strlen(exe_dir) + 1);
    real = realpath(want, NULL);
    builtin = realpath(rt->plugin_dir, NULL);
    if (!real) {
        print_error("%s: the build's plugin directory is missing\n", want);
        return -1;
    }
    g.base = strdup(base);
    g.prefix = builtin && strcmp(builtin, real) == 0 ? strdup("") : xasprintf("%s:", real);
    g.agent = realpath(agent, NULL);
    g.have_bwrap = bwrap_installed();
    free(exe_dir), free(bin_dir), free(want), free(real), free(builtin);
    sbx_runtime_free(rt);
    return g.base && g.prefix && g.agent ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    free(g.base), free(g.prefix), free(g.agent);
    return 0;
}

/* A runtime whose plugin path is the build's plugins, then case_dir. */
static struct sbx_runtime *runtime_for(const char *case_dir)
{
    struct sbx_runtime *rt = NULL;
    struct sbx_error *err = NULL;
    char *path = xasprintf("%s%s/%s", g.prefix, g.base, case_dir), *agent;
    int r;

    assert_int_equal(setenv("LLM_SANDBOX_PLUGIN_PATH", path, 1), 0);
    free(path);
    r = sbx_runtime_new(&rt, &err);
    if (r < 0) {
        print_error("sbx_runtime_new: %s\n", err ? err->msg : "?");
        sbx_error_free(err);
        fail();
    }
    assert_non_null(rt);
    /* The agent, like the plugins, is found relative to the executable. */
    agent = realpath(rt->agent_path, NULL);
    if (!agent || strcmp(agent, g.agent) != 0) {
        free(rt->agent_path);
        rt->agent_path = strdup(g.agent);
        assert_non_null(rt->agent_path);
    }
    free(agent);
    return rt;
}

static const char *str_of(struct json_object *o, const char *key)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* A string member that must be there. (transfer none) */
static const char *str_req(struct json_object *o, const char *key)
{
    const char *s = str_of(o, key);

    if (!s)
        fail_msg("no string '%s' in %s", key, json_object_to_json_string(o));
    return s;
}

/* Is the entry's manifest in one of the test plugin directories? */
static bool in_test_dirs(struct json_object *entry)
{
    const char *manifest = str_of(entry, "manifest");
    size_t len = strlen(g.base);

    return manifest && strncmp(manifest, g.base, len) == 0 && manifest[len] == '/';
}

/* Is the entry's manifest in case_dir? */
static bool in_dir(struct json_object *entry, const char *case_dir)
{
    const char *manifest = str_of(entry, "manifest");
    char *prefix;
    bool yes;

    prefix = xasprintf("%s/%s/", g.base, case_dir);
    yes = manifest && strncmp(manifest, prefix, strlen(prefix)) == 0;
    free(prefix);
    return yes;
}

/* The only entry named name in case_dir (NULL: outside every case dir). */
static struct json_object *find_plugin(
        struct json_object *list, const char *name, const char *case_dir)
{
    struct json_object *found = NULL;

    for (size_t i = 0; i < json_object_array_length(list); i++) {
        struct json_object *e = json_object_array_get_idx(list, i);
        const char *n = str_of(e, "name");
        bool match = case_dir ? in_dir(e, case_dir) : !in_test_dirs(e);

        if (n && strcmp(n, name) == 0 && match) {
            if (found)
                fail_msg("two plugins named '%s' in %s", name, case_dir ? case_dir : "the build");
            found = e;
        }
    }
    if (!found)
        fail_msg("no plugin named '%s' in %s", name, case_dir ? case_dir : "the build");
    return found;
}

/* Loaded: "ok", or for a backend whose probe fails on this host (its
 * daemon or tool missing) "unusable". */
static void assert_loaded(struct json_object *e)
{
    const char *status = str_req(e, "status");

    if (strcmp(status, "unusable") == 0)
        assert_string_equal(str_req(e, "probe"), "failed");
    else
        assert_string_equal(status, "ok");
}

/* The real plugins are unharmed by whatever case_dir holds. */
static void assert_real_plugins_ok(struct json_object *list)
{
    assert_loaded(find_plugin(list, "bwrap", NULL));
    assert_string_equal(str_req(find_plugin(list, "python", NULL), "status"), "ok");
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        struct json_object *e = json_object_array_get_idx(list, i);

        if (!in_test_dirs(e))
            assert_loaded(e);
    }
}

static void assert_located(const char *error, const struct loader_case *c)
{
    char *pattern = xasprintf("^/.*/%s\\.yaml:[0-9]+:[0-9]+: ", c->name);
    regex_t re;

    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    if (regexec(&re, error, 0, NULL, 0) != 0)
        fail_msg("'%s' does not start with FILE:LINE:COLUMN of %s.yaml", error, c->name);
    regfree(&re);
    free(pattern);
}

/* The verdict on one case's plugin, found in case_dir. */
static void check_case(struct json_object *list, const struct loader_case *c, const char *case_dir)
{
    struct json_object *e = find_plugin(list, c->name, case_dir);
    const char *status = str_req(e, "status"), *error = str_of(e, "error");

    if (strcmp(status, c->status) != 0)
        fail_msg("%s: status '%s', expected '%s' (error: %s)", c->dir, status, c->status,
                error ? error : "none");
    if (strcmp(c->status, "ok") == 0 || strcmp(c->status, "unusable") == 0) {
        assert_null(error);
        return;
    }
    assert_non_null(error);
    assert_null(strchr(error, '\n')); /* one line (STYLE E7) */
    for (size_t i = 0; i < 3 && c->needles[i]; i++) {
        if (!strstr(error, c->needles[i]))
            fail_msg("%s: error '%s' does not mention '%s'", c->dir, error, c->needles[i]);
    }
    if (c->located)
        assert_located(error, c);
}

/* Extra checks for the cases that load. */
static void check_loaded(struct json_object *list, const char *case_dir)
{
    struct json_object *e;
    const char *probe_error;

    if (strcmp(case_dir, "ok_backend") == 0 || strcmp(case_dir, "all") == 0) {
        e = find_plugin(list, "ok_backend", case_dir);
        assert_string_equal(str_req(e, "kind"), "backend");
        assert_string_equal(str_req(e, "probe"), "failed");
        probe_error = str_req(e, "probe_error");
        assert_non_null(strstr(probe_error, "test backend"));
    }
    if (strcmp(case_dir, "data_only") == 0 || strcmp(case_dir, "all") == 0) {
        e = find_plugin(list, "data_only", case_dir);
        assert_string_equal(str_req(e, "kind"), "language");
        assert_string_equal(str_req(e, "source_file"), "main.txt");
    }
}

/* What one test owns; freed by fixture_teardown even when it fails. */
struct fixture {
    const struct loader_case *c; /* test_case only */
    struct sbx_runtime *rt;
    struct json_object *json;
    struct sbx_execution *ex;
};

static int fixture_setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    f->c = *state;
    *state = f;
    return 0;
}

static int fixture_teardown(void **state)
{
    struct fixture *f = *state;

    json_object_put(f->json);
    sbx_execution_free(f->ex);
    sbx_runtime_free(f->rt);
    free(f);
    return 0;
}

/* One case directory alone after the build's plugins. */
static void test_case(void **state)
{
    struct fixture *f = *state;
    const struct loader_case *c = f->c;
    size_t in_case = 0;

    f->rt = runtime_for(c->dir);
    f->json = sbx_runtime_plugins_json(f->rt);
    assert_non_null(f->json);
    for (size_t i = 0; i < json_object_array_length(f->json); i++)
        in_case += in_dir(json_object_array_get_idx(f->json, i), c->dir);
    assert_int_equal(in_case, 1);
    check_case(f->json, c, c->dir);
    check_loaded(f->json, c->dir);
    assert_real_plugins_ok(f->json);
}

/* Every case at once: the same verdicts, and nothing leaks between them. */
static void test_all_report(void **state)
{
    struct fixture *f = *state;
    size_t in_all = 0;

    f->rt = runtime_for("all");
    f->json = sbx_runtime_plugins_json(f->rt);
    assert_non_null(f->json);
    for (size_t i = 0; i < json_object_array_length(f->json); i++)
        in_all += in_dir(json_object_array_get_idx(f->json, i), "all");
    assert_int_equal(in_all, N_CASES);
    for (size_t i = 0; i < N_CASES; i++)
        check_case(f->json, &cases[i], "all");
    check_loaded(f->json, "all");
    assert_real_plugins_ok(f->json);
}

/* The check named name in the doctor's list, or NULL. */
static struct json_object *find_check(struct json_object *checks, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(checks); i++) {
        struct json_object *c = json_object_array_get_idx(checks, i);
        const char *n = str_of(c, "check");

        if (n && strcmp(n, name) == 0)
            return c;
    }
    return NULL;
}

/* Doctor: not ok, one check per plugin problem, carrying the loader's message. */
static void test_all_doctor(void **state)
{
    struct fixture *f = *state;
    struct json_object *ok, *checks, *plugins, *chk;

    f->rt = runtime_for("all");
    f->json = sbx_runtime_doctor_json(f->rt);
    assert_non_null(f->json);
    assert_true(json_object_object_get_ex(f->json, "ok", &ok));
    assert_false(json_object_get_boolean(ok));
    assert_true(json_object_object_get_ex(f->json, "checks", &checks));
    assert_true(json_object_object_get_ex(f->json, "plugins", &plugins));
    for (size_t i = 0; i < N_CASES; i++) {
        const struct loader_case *c = &cases[i];
        const char *want = strcmp(c->status, "broken") == 0 ? "fail" : "warn";
        char name[96];

        snprintf(name, sizeof(name), "plugin:%s", c->name);
        chk = find_check(checks, name);
        if (strcmp(c->dir, "data_only") == 0) {
            assert_null(chk); /* a language that loads has no plugin check */
        } else if (strcmp(c->dir, "ok_backend") == 0) {
            /* its probe says it is unavailable here, and it is not the
             * configured backend: a warning, not a failure */
            assert_non_null(chk);
            assert_string_equal(str_req(chk, "status"), "warn");
            assert_non_null(strstr(str_req(chk, "detail"), "test backend"));
        } else {
            if (!chk)
                fail_msg("doctor has no check '%s'", name);
            assert_string_equal(str_req(chk, "status"), want);
            assert_string_equal(
                    str_req(chk, "detail"), str_req(find_plugin(plugins, c->name, "all"), "error"));
            str_req(chk, "fix");
        }
    }
    chk = find_check(checks, "plugin:bwrap");
    assert_non_null(chk);
    if (g.have_bwrap && strcmp(str_req(chk, "status"), "ok") != 0)
        fail_msg("bwrap's probe failed: %s", str_req(chk, "detail"));
}

/* A request for a broken plugin is refused with the loader's reason. */
static void test_all_refuses_broken(void **state)
{
    struct fixture *f = *state;
    struct sbx_request req = {.code = "x", .code_len = 1};
    struct sbx_error *err = NULL;

    f->rt = runtime_for("all");
    req.language = "init_fails";
    req.backend = "bwrap";
    assert_int_equal(sbx_run(f->rt, &req, &f->ex, &err), 0);
    assert_int_equal(f->ex->status, SBX_STATUS_REFUSED);
    assert_non_null(f->ex->message);
    assert_non_null(strstr(f->ex->message, "init failed: the test plugin refuses to start"));
    f->ex = sbx_execution_free(f->ex);
    req.language = "python";
    req.backend = "missing_ops";
    assert_int_equal(sbx_run(f->rt, &req, &f->ex, &err), 0);
    assert_int_equal(f->ex->status, SBX_STATUS_REFUSED);
    assert_non_null(f->ex->message);
    assert_non_null(strstr(f->ex->message, "backend operations are missing"));
    assert_null(err);
}

/* With every broken plugin beside them, bwrap and python still run code. */
static void test_all_python_runs(void **state)
{
    static const char code[] = "print(6*7)";
    struct fixture *f = *state;
    struct sbx_request req = {
            .language = "python", .backend = "bwrap", .code = code, .code_len = sizeof(code) - 1};
    struct sbx_error *err = NULL;
    struct sbx_execution *ex;

    if (!g.have_bwrap)
        skip();
    f->rt = runtime_for("all");
    if (sbx_run(f->rt, &req, &f->ex, &err) < 0) {
        print_error("sbx_run: %s\n", err ? err->msg : "?");
        sbx_error_free(err);
        fail();
    }
    ex = f->ex;
    assert_non_null(ex);
    if (ex->status != SBX_STATUS_OK)
        fail_msg("status %s: %s; stderr: %s", sbx_status_str(ex->status),
                ex->message ? ex->message : "", ex->stderr_buf ? ex->stderr_buf : "");
    assert_string_equal(ex->stdout_buf, "42\n");
    assert_string_equal(ex->language, "python");
    assert_string_equal(ex->backend, "bwrap");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, fixture_setup, fixture_teardown)

int main(void)
{
    struct CMUnitTest tests[N_CASES + 4];
    int failed;

    for (size_t i = 0; i < N_CASES; i++) {
        tests[i] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
                test_case, fixture_setup, fixture_teardown, (void *)&cases[i]);
        tests[i].name = cases[i].dir;
    }
    tests[N_CASES] = (struct CMUnitTest)TEST(test_all_report);
    tests[N_CASES + 1] = (struct CMUnitTest)TEST(test_all_doctor);
    tests[N_CASES + 2] = (struct CMUnitTest)TEST(test_all_refuses_broken);
    tests[N_CASES + 3] = (struct CMUnitTest)TEST(test_all_python_runs);
    failed = _cmocka_run_group_tests("loader", tests, N_CASES + 4, group_setup, group_teardown);
    if (failed == 0 && !g.have_bwrap)
        return 77;
    return failed;
}
