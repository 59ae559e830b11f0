/* SPDX-License-Identifier: MIT */
/*
 * test_manifest.c: cmocka tests for manifest.c. Valid backend, language and
 * data-only manifests are read field by field; each malformed case checks
 * the rc, the exact "FILE:LINE:COLUMN: " prefix and a key phrase of the
 * message; manifest_load is tried on a temporary directory (symlink,
 * directory, oversize file). Takes no arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "plugins/manifest.h"

#define P "/x/t.yaml:"

/* A valid backend header; line 7 is the first free line. */
#define HEAD                                                                                       \
    "name: t\n"                                                                                    \
    "kind: backend\n"                                                                              \
    "version: 1.0\n"                                                                               \
    "abi: 1.0\n"                                                                                   \
    "library: t.so\n"                                                                              \
    "description: d\n"

/* A valid data-only language; line 9 continues its language mapping. */
#define LHEAD                                                                                      \
    "name: l\n"                                                                                    \
    "kind: language\n"                                                                             \
    "version: 1.0\n"                                                                               \
    "abi: 1.0\n"                                                                                   \
    "description: d\n"                                                                             \
    "language:\n"                                                                                  \
    "  source_file: main.x\n"                                                                      \
    "  run: [x, \"{source_file}\"]\n"

static const char backend_yaml[] = "# the bwrap backend\n"
                                   "name: bwrap\n"
                                   "kind: backend\n"
                                   "version: 0.1.0\n"
                                   "abi: 1.0\n"
                                   "library: sbx-bwrap.so\n"
                                   "description: Bubblewrap sandboxes on the local host\n"
                                   "aliases: [bubblewrap, bw]\n"
                                   "requires:\n"
                                   "  binaries:\n"
                                   "    - name: bwrap\n"
                                   "      min_version: 0.4.0\n"
                                   "    - name: /usr/bin/true\n"
                                   "  kernel: [user_namespaces, seccomp]\n"
                                   "  host: [http]\n";

static const char language_yaml[] =
        "name: python\n"
        "kind: language\n"
        "version: 1.2.3-rc1\n"
        "abi: \"1.12\"\n"
        "library: sbx-lang-python.so\n"
        "description: \"Python 3 \\u00e9 from the host or the python image\"\n"
        "aliases: [py, python3]\n"
        "requires:\n"
        "  binaries:\n"
        "    - {name: python3, min_version: \"3.9\"}\n"
        "  kernel: []\n"
        "language:\n"
        "  source_file: main.py\n"
        "  extensions: [.py, .pyw]\n"
        "  build: [python3, -m, py_compile, \"{source_file}\"]\n"
        "  run: [python3, \"{source_file}\", \"--out={out_dir}\"]\n"
        "  env:\n"
        "    PYTHONDONTWRITEBYTECODE: \"1\"\n"
        "    PYTHONUNBUFFERED: 1\n"
        "    LANG: C.UTF-8\n"
        "    EMPTY:\n"
        "  image: python:3.12-slim\n"
        "  package_manager: pip\n"
        "  version_command: [python3, --version]\n"
        "  version_pattern: \"Python ([0-9.]+)\"\n"
        "  libraries_command: [python3, -c, \"print('numpy 1.0')\"]\n"
        "  host_paths: [/usr/lib/python3, /usr/bin/python3]\n"
        "  docs:\n"
        "    plot_libraries: [matplotlib, plotly]\n";

static struct manifest *parse_ok(const char *yaml, size_t len)
{
    struct manifest *m = NULL;
    struct sbx_error *err = NULL;
    int r = manifest_parse("/x/t.yaml", yaml, len, &m, &err);

    if (r != 0)
        fail_msg("unexpected error %d: %s", r, err ? err->msg : "(none)");
    assert_null(err);
    assert_non_null(m);
    return m;
}

static void assert_strv(char **v, const char *const *want)
{
    size_t i = 0;

    assert_non_null(v);
    for (; want[i]; i++) {
        assert_non_null(v[i]);
        assert_string_equal(v[i], want[i]);
    }
    assert_null(v[i]);
}

static void test_backend(void **state)
{
    struct manifest *m = parse_ok(backend_yaml, strlen(backend_yaml));

    (void)state;
    assert_string_equal(m->path, "/x/t.yaml");
    assert_string_equal(m->name, "bwrap");
    assert_int_equal(m->kind, SBX_KIND_BACKEND);
    assert_string_equal(m->version, "0.1.0");
    assert_int_equal(m->abi_major, 1);
    assert_int_equal(m->abi_minor, 0);
    assert_string_equal(m->library, "sbx-bwrap.so");
    assert_string_equal(m->description, "Bubblewrap sandboxes on the local host");
    assert_strv(m->aliases, (const char *const[]){"bubblewrap", "bw", NULL});
    assert_int_equal(m->n_binaries, 2);
    assert_string_equal(m->binaries[0].name, "bwrap");
    assert_string_equal(m->binaries[0].min_version, "0.4.0");
    assert_string_equal(m->binaries[1].name, "/usr/bin/true");
    assert_null(m->binaries[1].min_version);
    assert_strv(m->kernel_features, (const char *const[]){"user_namespaces", "seccomp", NULL});
    assert_strv(m->host_services, (const char *const[]){"http", NULL});
    assert_null(m->lang);
    assert_null(manifest_free(m));
}

static void test_language(void **state)
{
    struct manifest *m = parse_ok(language_yaml, strlen(language_yaml));
    struct manifest_lang *l;

    (void)state;
    assert_string_equal(m->name, "python");
    assert_int_equal(m->kind, SBX_KIND_LANGUAGE);
    assert_string_equal(m->version, "1.2.3-rc1");
    assert_int_equal(m->abi_major, 1);
    assert_int_equal(m->abi_minor, 12);
    assert_string_equal(m->library, "sbx-lang-python.so");
    assert_string_equal(m->description, "Python 3 \xc3\xa9 from the host or the python image");
    assert_strv(m->aliases, (const char *const[]){"py", "python3", NULL});
    assert_int_equal(m->n_binaries, 1);
    assert_string_equal(m->binaries[0].name, "python3");
    assert_string_equal(m->binaries[0].min_version, "3.9");
    assert_strv(m->kernel_features, (const char *const[]){NULL});
    l = m->lang;
    assert_non_null(l);
    assert_string_equal(l->source_file, "main.py");
    assert_strv(l->extensions, (const char *const[]){".py", ".pyw", NULL});
    assert_strv(
            l->build, (const char *const[]){"python3", "-m", "py_compile", "{source_file}", NULL});
    assert_strv(l->run, (const char *const[]){"python3", "{source_file}", "--out={out_dir}", NULL});
    assert_strv(l->env, (const char *const[]){"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1",
                                "LANG=C.UTF-8", "EMPTY=", NULL});
    assert_string_equal(l->image, "python:3.12-slim");
    assert_string_equal(l->package_manager, "pip");
    assert_strv(l->version_command, (const char *const[]){"python3", "--version", NULL});
    assert_string_equal(l->version_pattern, "Python ([0-9.]+)");
    assert_strv(l->libraries_command,
            (const char *const[]){"python3", "-c", "print('numpy 1.0')", NULL});
    assert_strv(l->docs.plot_libraries, (const char *const[]){"matplotlib", "plotly", NULL});
    assert_strv(l->host_paths, (const char *const[]){"/usr/lib/python3", "/usr/bin/python3", NULL});
    manifest_free(m);
}

/* No library, no optional key: every "may be empty" vector is empty, not NULL. */
static void test_data_only_language(void **state)
{
    static const char yaml[] = LHEAD;
    struct manifest *m = parse_ok(yaml, strlen(yaml));

    (void)state;
    assert_int_equal(m->kind, SBX_KIND_LANGUAGE);
    assert_null(m->library);
    assert_strv(m->aliases, (const char *const[]){NULL});
    assert_null(m->binaries);
    assert_int_equal(m->n_binaries, 0);
    assert_strv(m->kernel_features, (const char *const[]){NULL});
    assert_non_null(m->lang);
    assert_string_equal(m->lang->source_file, "main.x");
    assert_strv(m->lang->run, (const char *const[]){"x", "{source_file}", NULL});
    assert_strv(m->lang->extensions, (const char *const[]){NULL});
    assert_strv(m->lang->env, (const char *const[]){NULL});
    assert_strv(m->lang->host_paths, (const char *const[]){NULL});
    assert_null(m->lang->build);
    assert_null(m->lang->version_command);
    assert_null(m->lang->version_pattern);
    assert_null(m->lang->libraries_command);
    assert_strv(m->lang->docs.plot_libraries, (const char *const[]){NULL});
    assert_null(m->lang->image);
    assert_null(m->lang->package_manager);
    manifest_free(m);
}

/* A manifest of exactly MANIFEST_MAX_BYTES is accepted. */
static void test_size_boundary(void **state)
{
    char *buf = malloc(MANIFEST_MAX_BYTES);
    size_t head = strlen(HEAD);

    (void)state;
    assert_non_null(buf);
    memcpy(buf, HEAD, head);
    buf[head] = '#';
    memset(buf + head + 1, 'x', MANIFEST_MAX_BYTES - head - 2);
    buf[MANIFEST_MAX_BYTES - 1] = '\n';
    manifest_free(parse_ok(buf, MANIFEST_MAX_BYTES));
    free(buf);
}

/* settings: the names a plugin's settings are also read under (ABI 1.4). */
static void test_settings(void **state)
{
    static const char yaml[] =
            HEAD "settings:\n"
                 "  host: {env: [DOCKER_HOST, OTHER_HOST]}\n"
                 "  cert_path: {env: [DOCKER_CERT_PATH], default: \"~/.docker\"}\n"
                 "  image_*: {env: [SANDBOX_IMAGE_*]}\n"
                 "  quiet: {}\n";
    struct manifest *m = parse_ok(yaml, sizeof(yaml) - 1);
    const struct manifest_setting *st;

    (void)state;
    assert_int_equal(m->n_settings, 4);
    st = manifest_setting_find(m, "host");
    assert_non_null(st);
    assert_string_equal(st->env[0], "DOCKER_HOST");
    assert_string_equal(st->env[1], "OTHER_HOST");
    assert_null(st->env[2]);
    assert_null(st->default_value);
    st = manifest_setting_find(m, "cert_path");
    assert_string_equal(st->default_value, "~/.docker");
    /* a family answers for every key with its prefix, and nothing else */
    st = manifest_setting_find(m, "image_python");
    assert_non_null(st);
    assert_string_equal(st->key, "image_*");
    assert_null(manifest_setting_find(m, "image_"));
    assert_null(manifest_setting_find(m, "image"));
    assert_null(manifest_setting_find(m, "hosts"));
    st = manifest_setting_find(m, "quiet");
    assert_non_null(st);
    assert_null(st->env);
    assert_null(manifest_setting_find(NULL, "host"));
    manifest_free(m);
}

static void test_free_null(void **state)
{
    (void)state;
    assert_null(manifest_free(NULL));
}

struct bad_case {
    const char *what;
    const char *yaml;
    const char *prefix; /* "FILE:LINE:COLUMN: " */
    const char *phrase;
};

static const struct bad_case bad_cases[] = {
        {"unknown key", "name: t\nkind: backend\nnmae: x\n", P "3:1: ", "unknown key 'nmae'"},
        {"unknown nested key", LHEAD "  sorce_file: x\n", P "9:3: ", "unknown key 'sorce_file'"},
        {"unknown key shown safely", "\"a\\tb\": 1\n", P "1:1: ", "unknown key 'a?b'"},
        {"sequence for name", "name: [a, b]\n",
                P "1:7: ", "key 'name' must be a string, not a sequence"},
        {"mapping for aliases", HEAD "aliases: {a: b}\n",
                P "7:10: ", "key 'aliases' must be a sequence, not a mapping"},
        {"mapping in a list of strings", HEAD "aliases:\n  - {a: b}\n",
                P "8:5: ", "each entry of 'aliases' must be a string, not a mapping"},
        {"non-scalar key", "[a]: b\n", P "1:1: ", "mapping keys must be strings"},
        {"missing description", "name: t\nkind: backend\nversion: 1.0\nabi: 1.0\nlibrary: t.so\n",
                P "1:1: ", "missing required key 'description'"},
        {"missing run",
                "name: l\nkind: language\nversion: 1.0\nabi: 1.0\ndescription: d\n"
                "language:\n  source_file: a.x\n",
                P "7:3: ", "missing required key 'run'"},
        {"bad name", "name: Bad-Name\n", P "1:7: ", "key 'name' must be a name matching"},
        {"name too long", "name: abcdefghijabcdefghijabcdefghijabc\n",
                P "1:7: ", "key 'name' must be a name"},
        {"bad alias name", HEAD "aliases: [ok, 9lives]\n",
                P "7:15: ", "each entry of 'aliases' must be a name"},
        {"setting key", HEAD "settings:\n  Host: {env: [X]}\n",
                P "8:3: ", "a setting's key must match [a-z][a-z0-9_]{0,31}, or end in '_*'"},
        {"setting star inside", HEAD "settings:\n  im*age: {env: [X]}\n",
                P "8:3: ", "a setting's key must match"},
        {"setting env lower case", HEAD "settings:\n  host: {env: [docker_host]}\n", P "8:16: ",
                "setting 'host': variable 'docker_host' must match [A-Z][A-Z0-9_]{0,63}"},
        {"setting env ours", HEAD "settings:\n  host: {env: [LLM_SANDBOX_T_HOST]}\n",
                P "8:16: ", "must not start with LLM_SANDBOX_"},
        {"setting family env", HEAD "settings:\n  image_*: {env: [SANDBOX_IMAGE]}\n",
                P "8:19: ", "variable 'SANDBOX_IMAGE' must end in '_*', as the key does"},
        {"setting env star", HEAD "settings:\n  image: {env: [SANDBOX_IMAGE_*]}\n",
                P "8:17: ", "must match [A-Z][A-Z0-9_]{0,63}"},
        {"setting duplicate", HEAD "settings:\n  a: {env: [A]}\n  a: {env: [B]}\n",
                P "9:3: ", "duplicate setting 'a'"},
        {"setting unknown key", HEAD "settings:\n  a: {env: [A], defualt: x}\n",
                P "8:17: ", "unknown key 'defualt'"},
        {"setting not a mapping", HEAD "settings:\n  a: [A]\n",
                P "8:6: ", "setting 'a' must be a mapping, not a sequence"},
        {"bad host service", HEAD "requires:\n  host: [http, ftp]\n",
                P "8:16: ", "each entry of 'host' must be 'http' (the one host service)"},
        {"bad kind", "name: t\nkind: frontend\n",
                P "2:7: ", "key 'kind' must be 'backend' or 'language'"},
        {"library with '/'", "name: t\nkind: backend\nversion: 1.0\nabi: 1.0\nlibrary: lib/t.so\n",
                P "5:10: ", "key 'library' must be a file name ending in '.so'"},
        {"library not .so", "name: t\nkind: backend\nversion: 1.0\nabi: 1.0\nlibrary: t.dll\n",
                P "5:10: ", "key 'library' must be"},
        {"hidden library", "name: t\nkind: backend\nversion: 1.0\nabi: 1.0\nlibrary: .t.so\n",
                P "5:10: ", "key 'library' must be"},
        {"backend without library",
                "name: t\nkind: backend\nversion: 1.0\nabi: 1.0\ndescription: d\n",
                P "1:1: ", "missing required key 'library'"},
        {"language without section",
                "name: l\nkind: language\nversion: 1.0\nabi: 1.0\ndescription: d\n",
                P "1:1: ", "missing required key 'language'"},
        {"language section in a backend", HEAD "language:\n  source_file: a\n  run: [a]\n",
                P "7:1: ", "key 'language' is not allowed"},
        {"duplicate key", HEAD "name: u\n", P "7:1: ", "duplicate key 'name'"},
        {"duplicate nested key", LHEAD "  source_file: b.x\n",
                P "9:3: ", "duplicate key 'source_file'"},
        {"anchor", HEAD "aliases: &x [a]\n", P "7:10: ", "aliases and anchors are not allowed"},
        {"alias",
                "name: t\nkind: backend\nversion: 1.0\nabi: 1.0\nlibrary: t.so\ndescription: *d\n",
                P "6:14: ", "aliases and anchors are not allowed"},
        {"tag", "name: !!str t\n", P "1:7: ", "tags are not allowed"},
        {"local tag on a mapping", HEAD "requires: !x\n  kernel: []\n",
                P "7:11: ", "tags are not allowed"},
        {"unclosed flow sequence", "name: t\nkind: [backend\n", P "3:1: ", "YAML syntax error"},
        {"bad indentation", "name: t\n  kind: x\n",
                P "2:7: ", "YAML syntax error: mapping values are not allowed"},
        {"tab indentation", "name: t\nrequires:\n\tkernel: []\n", P "3:1: ", "YAML syntax error"},
        {"invalid UTF-8", "name: t\nkind: \xff\n", P "2:7: ", "YAML syntax error"},
        {"two documents", HEAD "---\nname: u\n", P "7:1: ", "only one YAML document is allowed"},
        {"too deep", HEAD "aliases: [[[[[[[[a]]]]]]]]\n", P "7:17: ", "nesting deeper than 8"},
        {"bad version", "name: t\nkind: backend\nversion: 1.2.3.4.5\n",
                P "3:10: ", "'version' must be a string like 1.2.3"},
        {"version with a v", "name: t\nkind: backend\nversion: v1.0\n",
                P "3:10: ", "'version' must be a string like 1.2.3"},
        {"version with empty suffix", "name: t\nkind: backend\nversion: 1.0-\n",
                P "3:10: ", "'version' must be"},
        {"version with empty part", "name: t\nkind: backend\nversion: 1..2\n",
                P "3:10: ", "'version' must be"},
        {"abi without minor", "name: t\nkind: backend\nversion: 1.0\nabi: 1\n",
                P "4:6: ", "key 'abi' must be a string like \"1.0\""},
        {"abi with three parts", "name: t\nkind: backend\nversion: 1.0\nabi: 1.0.0\n",
                P "4:6: ", "key 'abi' must be"},
        {"abi not a number", "name: t\nkind: backend\nversion: 1.0\nabi: one.0\n",
                P "4:6: ", "key 'abi' must be"},
        {"empty description", "name: t\ndescription: \"\"\n",
                P "2:14: ", "key 'description' must be one line of 1 to 500"},
        {"two-line description", "name: t\ndescription: \"a\\nb\"\n",
                P "2:14: ", "key 'description' must be one line of 1 to 500"},
        {"NUL in a string", "name: t\ndescription: \"a\\0b\"\n",
                P "2:14: ", "NUL characters are not allowed"},
        {"bad kernel feature", HEAD "requires:\n  kernel: [selinux]\n",
                P "8:12: ", "each entry of 'kernel' must be one of user_namespaces"},
        {"binary without name", HEAD "requires:\n  binaries:\n    - min_version: 1.0\n",
                P "9:7: ", "missing required key 'name'"},
        {"binary with spaces", HEAD "requires:\n  binaries:\n    - name: \"rm -rf\"\n",
                P "9:13: ", "key 'name' must be an absolute path or a command name"},
        {"binary not a mapping", HEAD "requires:\n  binaries: [bwrap]\n",
                P "8:14: ", "each entry of 'binaries' must be a mapping"},
        {"binary min_version",
                HEAD "requires:\n  binaries:\n    - {name: a, min_version: 1.0-rc1}\n",
                P "9:30: ", "key 'min_version' must be dotted numbers"},
        {"env key invalid", LHEAD "  env:\n    1BAD: x\n",
                P "10:5: ", "environment variable '1BAD' must match"},
        {"env value not a string", LHEAD "  env:\n    A: [x]\n",
                P "10:8: ", "environment variable 'A' must be a string"},
        {"env duplicate", LHEAD "  env:\n    A: x\n    A: y\n", P "11:5: ", "duplicate key 'A'"},
        {"bad placeholder in run",
                "name: l\nkind: language\nversion: 1.0\nabi: 1.0\ndescription: d\n"
                "language:\n  source_file: main.x\n  run: [x, \"{Source}\"]\n",
                P "8:12: ",
                "each entry of 'run' must be an argument whose '{' starts a placeholder"},
        {"unclosed placeholder in build", LHEAD "  build: [\"cc {source_file\"]\n",
                P "9:11: ", "each entry of 'build' must be an argument whose '{'"},
        {"shell braces in run", LHEAD "  build: [sh, -c, \"echo ${HOME}\"]\n",
                P "9:19: ", "placeholder"},
        {"empty build", LHEAD "  build: []\n", P "9:10: ", "key 'build' must not be an empty"},
        {"version_pattern does not compile", LHEAD "  version_pattern: \"([0-9\"\n", P "9:20: ",
                "key 'version_pattern' must be a valid POSIX extended regular expression"},
        {"version_pattern without group", LHEAD "  version_pattern: \"[0-9.]+\"\n", P "9:20: ",
                "key 'version_pattern' must be a regular expression with at least one group"},
        {"version_pattern with intervals",
                LHEAD "  version_pattern: \"((a{1,255}){1,255}){1,255}\"\n",
                P "9:20: ", "key 'version_pattern' must be a regular expression without {m,n}"},
        {"relative host path", LHEAD "  host_paths: [/usr/lib, usr/lib]\n",
                P "9:26: ", "each entry of 'host_paths' must be an absolute path"},
        {"host path with ..", LHEAD "  host_paths: [/usr/../etc]\n",
                P "9:16: ", "each entry of 'host_paths' must be a path without '..'"},
        {"host path ending in ..", LHEAD "  host_paths: [/usr/..]\n", P "9:16: ", "without '..'"},
        {"extension without dot", LHEAD "  extensions: [py]\n",
                P "9:16: ", "each entry of 'extensions' must be a file extension"},
        {"image with space", LHEAD "  image: \"a b\"\n", P "9:10: ", "key 'image' must be"},
        {"bad package manager", LHEAD "  package_manager: Pip\n",
                P "9:20: ", "key 'package_manager' must be a name"},
        {"empty version_command", LHEAD "  version_command: []\n",
                P "9:20: ", "key 'version_command' must not be an empty"},
        {"empty file", "", P "1:1: ", "the manifest is empty"},
        {"only a comment", "# nothing here\n\n", P "1:1: ", "the manifest is empty"},
        {"empty document", "---\n", P "2:1: ", "the top level must be a mapping, not a string"},
        {"sequence at the top", "- a\n- b\n",
                P "1:1: ", "the top level must be a mapping, not a sequence"},
        {"scalar at the top", "hello\n", P "1:1: ", "the top level must be a mapping"},
};

/* 0 when manifest_parse fails as expected; else prints why and returns 1. */
static int check_error(
        const char *what, const char *yaml, size_t len, const char *prefix, const char *phrase)
{
    struct manifest *m = NULL;
    struct sbx_error *err = NULL;
    int r = manifest_parse("/x/t.yaml", yaml, len, &m, &err);
    int bad = 0;

    if (r != SBX_E_INVALID || !err || err->rc != SBX_E_INVALID || m) {
        print_error("%s: rc %d, expected SBX_E_INVALID\n", what, r);
        bad = 1;
    } else if (strncmp(err->msg, prefix, strlen(prefix)) != 0 || !strstr(err->msg, phrase) ||
               strchr(err->msg, '\n')) {
        print_error("%s: got \"%s\", expected prefix \"%s\" and \"%s\"\n", what, err->msg, prefix,
                phrase);
        bad = 1;
    }
    manifest_free(m);
    sbx_error_free(err);
    return bad;
}

static void expect_error(
        const char *what, const char *yaml, size_t len, const char *prefix, const char *phrase)
{
    assert_int_equal(check_error(what, yaml, len, prefix, phrase), 0);
}

/* Modes replace build and run; address_space is a size. */
static void test_modes_and_address_space(void **state)
{
    static const char yaml[] = LHEAD "  build: [cc, \"{source}\"]\n"
                                     "  address_space: 2G\n"
                                     "  modes:\n"
                                     "    test:\n"
                                     "      source_file: main_test.x\n"
                                     "      run: [x, test, \"{source}\"]\n"
                                     "    quick:\n"
                                     "      build: [cc, -O0, \"{source}\"]\n"
                                     "      run: [./a.out]\n";
    struct manifest *m = parse_ok(yaml, strlen(yaml));

    (void)state;
    assert_int_equal(m->lang->address_space, 2ull << 30);
    assert_int_equal(m->lang->n_modes, 2);
    assert_string_equal(m->lang->modes[0].name, "test");
    assert_string_equal(m->lang->modes[0].source_file, "main_test.x");
    assert_null(m->lang->modes[0].build);
    assert_strv(m->lang->modes[0].run, (const char *const[]){"x", "test", "{source}", NULL});
    assert_string_equal(m->lang->modes[1].name, "quick");
    assert_null(m->lang->modes[1].source_file);
    assert_strv(m->lang->modes[1].build, (const char *const[]){"cc", "-O0", "{source}", NULL});
    manifest_free(m);
    expect_error("mode without run", LHEAD "  modes:\n    test:\n      source_file: t.x\n",
            sizeof(LHEAD "  modes:\n    test:\n      source_file: t.x\n") - 1,
            "/x/t.yaml:11:7: ", "missing required key 'run'");
    expect_error("bad mode name", LHEAD "  modes:\n    Test: {run: [x]}\n",
            sizeof(LHEAD "  modes:\n    Test: {run: [x]}\n") - 1,
            "/x/t.yaml:10:5: ", "a mode's name must match");
    expect_error("unknown mode key", LHEAD "  modes:\n    t: {run: [x], nope: 1}\n",
            sizeof(LHEAD "  modes:\n    t: {run: [x], nope: 1}\n") - 1,
            "/x/t.yaml:10:", "unknown key 'nope'");
    expect_error("bad address_space", LHEAD "  address_space: lots\n",
            sizeof(LHEAD "  address_space: lots\n") - 1,
            "/x/t.yaml:9:18: ", "key 'address_space' must be a size");
}

/* language.prestart: feed is 'name' (the default) or 'source'. */
static void test_prestart_feed(void **state)
{
#define PRE LHEAD "  prestart:\n    run: [x, \"{driver}\"]\n    driver: x-pre.x\n"
    static const char name[] = PRE, source[] = PRE "    feed: source\n",
                      bad[] = PRE "    feed: file\n";
    struct manifest *m = parse_ok(name, strlen(name));

    (void)state;
    assert_false(m->lang->prestart->feed_source);
    assert_null(m->lang->session);
    manifest_free(m);
    m = parse_ok(source, strlen(source));
    assert_true(m->lang->prestart->feed_source);
    assert_string_equal(m->lang->prestart->driver, "x-pre.x");
    manifest_free(m);
    expect_error("bad feed", bad, sizeof(bad) - 1,
            "/x/t.yaml:12:11: ", "key 'feed' must be 'name' or 'source'");
    expect_error("feed on a session", LHEAD "  session: {run: [x], driver: d.x, feed: source}\n",
            sizeof(LHEAD "  session: {run: [x], driver: d.x, feed: source}\n") - 1,
            "/x/t.yaml:9:", "unknown key 'feed'");
#undef PRE
}

/* language.session.libraries: optional code for a running session's
 * interpreter; a prestart driver has none. */
static void test_session_libraries(void **state)
{
    static const char with[] = LHEAD "  session:\n    run: [x, \"{driver}\"]\n    driver: d.x\n"
                                     "    libraries: \"path.add('{libs}/x')\"\n",
                      without[] = LHEAD "  session: {run: [x], driver: d.x}\n",
                      pre[] = LHEAD "  prestart: {run: [x], driver: d.x, libraries: y}\n";
    struct manifest *m = parse_ok(with, strlen(with));

    (void)state;
    assert_string_equal(m->lang->session->libraries, "path.add('{libs}/x')");
    manifest_free(m);
    m = parse_ok(without, strlen(without));
    assert_null(m->lang->session->libraries);
    manifest_free(m);
    expect_error("libraries on a prestart", pre, sizeof(pre) - 1,
            "/x/t.yaml:9:", "unknown key 'libraries'");
}

/* The hand-written docs keys that the libraries probe replaced still load
 * (a third-party manifest written for them keeps working), checked. */
static void test_old_docs_keys(void **state)
{
    static const char old[] = LHEAD "  docs:\n    preinstalled: [numpy, pandas]\n"
                                    "    visualization: true\n",
                      bad[] = LHEAD "  docs:\n    visualization: maybe\n",
                      nested[] = LHEAD "  docs:\n    preinstalled: [[numpy]]\n";
    struct manifest *m = parse_ok(old, strlen(old));

    (void)state;
    assert_strv(m->lang->docs.plot_libraries, (const char *const[]){NULL});
    manifest_free(m);
    expect_error("visualization not a boolean", bad, sizeof(bad) - 1,
            "/x/t.yaml:", "key 'visualization' must be true or false");
    expect_error("preinstalled not strings", nested, sizeof(nested) - 1,
            "/x/t.yaml:", "key 'preinstalled' must list strings");
}

static void test_malformed(void **state)
{
    int failures = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *b = &bad_cases[i];

        failures += check_error(b->what, b->yaml, strlen(b->yaml), b->prefix, b->phrase);
    }
    assert_int_equal(failures, 0);
}

static void test_source_file_with_slash(void **state)
{
    static const char yaml[] = "name: l\nkind: language\nversion: 1.0\nabi: 1.0\ndescription: d\n"
                               "language:\n  source_file: a/b.py\n  run: [x]\n";
    static const char dots[] = "name: l\nkind: language\nversion: 1.0\nabi: 1.0\ndescription: d\n"
                               "language:\n  source_file: a..py\n  run: [x]\n";

    (void)state;
    expect_error("source_file with /", yaml, strlen(yaml),
            P "7:16: ", "key 'source_file' must be a file name");
    expect_error("source_file with ..", dots, strlen(dots),
            P "7:16: ", "key 'source_file' must be a file name");
}

static void test_oversize(void **state)
{
    size_t len = MANIFEST_MAX_BYTES + 1;
    char *buf = malloc(len);

    (void)state;
    assert_non_null(buf);
    memset(buf, '#', len);
    expect_error("oversize", buf, len, P "1:1: ", "larger than 65536 bytes");
    free(buf);
}

static void test_too_many_entries(void **state)
{
    size_t n = 1100, len = 0;
    char *buf = malloc(32 + n * 2);

    (void)state;
    assert_non_null(buf);
    len += (size_t)snprintf(buf, 32, "aliases: [");
    for (size_t i = 0; i < n; i++) {
        buf[len++] = 'a';
        buf[len++] = i + 1 < n ? ',' : ']';
    }
    buf[len] = '\0';
    expect_error("too many entries", buf, len, P "1:2059: ", "more than 1024 entries");
    free(buf);
}

static void test_bad_arguments(void **state)
{
    struct manifest *m = NULL;
    struct sbx_error *err = NULL;

    (void)state;
    assert_int_equal(manifest_parse(NULL, "a: b", 4, &m, &err), SBX_E_INVALID);
    assert_null(m);
    err = sbx_error_free(err);
    assert_int_equal(manifest_parse("p", NULL, 4, &m, &err), SBX_E_INVALID);
    err = sbx_error_free(err);
    assert_int_equal(manifest_load("/tmp", "a/b.yaml", &m, &err), SBX_E_INVALID);
    assert_null(m);
    sbx_error_free(err);
}

/* ---- manifest_load on a temporary directory ---- */

static void write_file(int dfd, const char *name, const char *data, size_t len)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void expect_load_error(
        const char *dir, const char *name, int rc, int sys_errno, const char *phrase)
{
    struct manifest *m = NULL;
    struct sbx_error *err = NULL;
    int r = manifest_load(dir, name, &m, &err);

    assert_int_equal(r, rc);
    assert_null(m);
    assert_non_null(err);
    if (sys_errno)
        assert_int_equal(err->sys_errno, sys_errno);
    if (!strstr(err->msg, phrase))
        fail_msg("%s: got \"%s\", expected \"%s\"", name, err->msg, phrase);
    sbx_error_free(err);
}

static void test_load(void **state)
{
    char dir[] = "/tmp/test_manifest.XXXXXX";
    char path[64];
    struct manifest *m = NULL;
    struct sbx_error *err = NULL;
    char *big = malloc(MANIFEST_MAX_BYTES + 2);
    int dfd;

    (void)state;
    assert_non_null(big);
    assert_non_null(mkdtemp(dir));
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    write_file(dfd, "good.yaml", backend_yaml, strlen(backend_yaml));
    assert_int_equal(symlinkat("good.yaml", dfd, "link.yaml"), 0);
    assert_int_equal(mkdirat(dfd, "dir.yaml", 0755), 0);
    memset(big, '#', MANIFEST_MAX_BYTES + 1);
    write_file(dfd, "big.yaml", big, MANIFEST_MAX_BYTES + 1);
    write_file(dfd, "bad.yaml", "name: [x]\n", 10);

    assert_int_equal(manifest_load(dir, "good.yaml", &m, &err), 0);
    assert_null(err);
    snprintf(path, sizeof(path), "%s/good.yaml", dir);
    assert_string_equal(m->path, path);
    assert_string_equal(m->name, "bwrap");
    manifest_free(m);

    expect_load_error(dir, "link.yaml", SBX_E_IO, ELOOP, "symbolic link");
    expect_load_error(dir, "dir.yaml", SBX_E_INVALID, 0, "not a regular file");
    expect_load_error(dir, "big.yaml", SBX_E_INVALID, 0, "larger than 65536 bytes");
    expect_load_error(dir, "missing.yaml", SBX_E_IO, ENOENT, "missing.yaml: ");
    snprintf(path, sizeof(path), "%s/bad.yaml:1:7: ", dir);
    expect_load_error(dir, "bad.yaml", SBX_E_INVALID, 0, path);
    snprintf(path, sizeof(path), "%s/none", dir);
    expect_load_error(path, "good.yaml", SBX_E_IO, ENOENT, "none: ");

    unlinkat(dfd, "good.yaml", 0);
    unlinkat(dfd, "link.yaml", 0);
    unlinkat(dfd, "big.yaml", 0);
    unlinkat(dfd, "bad.yaml", 0);
    unlinkat(dfd, "dir.yaml", AT_REMOVEDIR);
    close(dfd);
    assert_int_equal(rmdir(dir), 0);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_backend),
            cmocka_unit_test(test_language),
            cmocka_unit_test(test_data_only_language),
            cmocka_unit_test(test_modes_and_address_space),
            cmocka_unit_test(test_prestart_feed),
            cmocka_unit_test(test_session_libraries),
            cmocka_unit_test(test_old_docs_keys),
            cmocka_unit_test(test_size_boundary),
            cmocka_unit_test(test_settings),
            cmocka_unit_test(test_free_null),
            cmocka_unit_test(test_malformed),
            cmocka_unit_test(test_source_file_with_slash),
            cmocka_unit_test(test_oversize),
            cmocka_unit_test(test_too_many_entries),
            cmocka_unit_test(test_bad_arguments),
            cmocka_unit_test(test_load),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
