/* SPDX-License-Identifier: MIT */
/*
 * test_k8s_kubeconfig.c: kubeconfig loading as kubectl does it, on files
 * the test writes: KUBECONFIG lists merged (first file wins for each
 * cluster, user and context name and for current-context; missing files
 * skipped), relative paths against their file, *-data decoded, flow-style
 * YAML, token and tokenFile, the refusals (insecure-skip-tls-verify unless
 * ignored, exec credentials, http://, aliases), and in-cluster
 * configuration from a service-account directory.
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
#include <unistd.h>

#include "k8s.h"
#include "kubeconfig.h"

static char dir[256];

static void put(const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *in_dir(const char *name)
{
    static char buf[4][600];
    static int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
    return buf[i];
}

/* "-----BEGIN X-----\n" as base64 is LS0tLS1CRUdJTiBYLS0tLS0K */
static const char file_a[] = "apiVersion: v1\n"
                             "kind: Config\n"
                             "current-context: ctx-a\n"
                             "clusters:\n"
                             "- name: c1\n"
                             "  cluster:\n"
                             "    server: https://127.0.0.1:6443/prefix/\n"
                             "    certificate-authority: pki/ca.crt\n"
                             "users:\n"
                             "- name: u1\n"
                             "  user:\n"
                             "    client-certificate-data: LS0tLS1CRUdJTiBYLS0tLS0K\n"
                             "    client-key: key.pem\n"
                             "contexts:\n"
                             "- name: ctx-a\n"
                             "  context: {cluster: c1, user: u1, namespace: ns-a}\n";

static const char file_b[] =
        "current-context: ctx-b\n"
        "clusters:\n"
        "- name: c1\n"
        "  cluster: {server: 'https://shadowed.example:1'}\n"
        "- name: c2\n"
        "  cluster:\n"
        "    server: \"https://[::1]:443\"\n"
        "    certificate-authority-data: LS0tLS1CRUdJTiBYLS0tLS0K\n"
        "- name: c3\n"
        "  cluster:\n"
        "    server: https://10.0.0.3\n"
        "    insecure-skip-tls-verify: true\n"
        "- name: c4\n"
        "  cluster: {server: 'http://10.0.0.4:8080'}\n"
        "users:\n"
        "- name: u2\n"
        "  user: {token: abc.def.ghi}\n"
        "- name: u3\n"
        "  user: {tokenFile: /run/secrets/token}\n"
        "- name: u4\n"
        "  user:\n"
        "    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}\n"
        "contexts:\n"
        "- name: ctx-b\n"
        "  context: {cluster: c2, user: u2}\n"
        "- name: ctx-c\n"
        "  context: {cluster: c2, user: u3, namespace: ns-c}\n"
        "- name: ctx-insecure\n"
        "  context: {cluster: c3, user: u2}\n"
        "- name: ctx-exec\n"
        "  context: {cluster: c2, user: u4}\n"
        "- name: ctx-http\n"
        "  context: {cluster: c4, user: u2}\n"
        "- name: ctx-a\n"
        "  context: {cluster: c2, user: u2}\n";

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/var/tmp/test-k8s-kubeconfig-XXXXXX");
    assert_non_null(mkdtemp(dir));
    put("a", file_a);
    put("b", file_b);
    put("alias", "x: &a {server: y}\ncurrent-context: *a\n");
    return 0;
}

static int teardown(void **state)
{
    char cmd[600];

    (void)state;
    snprintf(cmd, sizeof(cmd), "%s/a", dir);
    unlink(cmd);
    snprintf(cmd, sizeof(cmd), "%s/b", dir);
    unlink(cmd);
    snprintf(cmd, sizeof(cmd), "%s/alias", dir);
    unlink(cmd);
    snprintf(cmd, sizeof(cmd), "%s/namespace", dir);
    unlink(cmd);
    rmdir(dir);
    return 0;
}

static int merge(
        const char *list, const char *ctx, bool ignore, struct k8s_cluster *c, struct sbx_err *err)
{
    memset(c, 0, sizeof(*c));
    memset(err, 0, sizeof(*err));
    return k8s_kubeconfig_merge(list, ctx, ignore, c, err);
}

static void test_first_file_wins(void **state)
{
    struct k8s_cluster c;
    struct sbx_err err;
    char list[1300];

    (void)state;
    snprintf(list, sizeof(list), "%s:%s", in_dir("a"), in_dir("b"));
    assert_int_equal(merge(list, NULL, false, &c, &err), 0);
    assert_string_equal(c.endpoint, "https://127.0.0.1:6443");
    assert_string_equal(c.prefix, "/prefix");
    assert_string_equal(c.ca_file, in_dir("pki/ca.crt"));
    assert_null(c.ca_pem);
    assert_string_equal(c.cert_pem, "-----BEGIN X-----\n");
    assert_string_equal(c.key_file, in_dir("key.pem"));
    assert_null(c.token);
    assert_string_equal(c.ns, "ns-a");
    assert_string_equal(c.source, "kubeconfig context 'ctx-a'");
    k8s_cluster_done(&c);
}

static void test_missing_skipped_and_current_from_the_first(void **state)
{
    struct k8s_cluster c;
    struct sbx_err err;
    char list[1300];

    (void)state;
    snprintf(list, sizeof(list), "%s::%s:%s", in_dir("missing"), in_dir("b"), in_dir("a"));
    assert_int_equal(merge(list, NULL, false, &c, &err), 0);
    assert_string_equal(c.endpoint, "https://[::1]:443");
    assert_string_equal(c.prefix, "");
    assert_string_equal(c.ca_pem, "-----BEGIN X-----\n");
    assert_string_equal(c.token, "abc.def.ghi");
    assert_null(c.ns);
    k8s_cluster_done(&c);
    /* b names ctx-a too, and comes first here: its ctx-a wins */
    assert_int_equal(merge(list, "ctx-a", false, &c, &err), 0);
    assert_string_equal(c.endpoint, "https://[::1]:443");
    k8s_cluster_done(&c);
}

static void test_token_file_and_context_override(void **state)
{
    struct k8s_cluster c;
    struct sbx_err err;

    (void)state;
    assert_int_equal(merge(in_dir("b"), "ctx-c", false, &c, &err), 0);
    assert_null(c.token);
    assert_string_equal(c.token_file, "/run/secrets/token");
    assert_string_equal(c.ns, "ns-c");
    k8s_cluster_done(&c);
}

static void test_refusals(void **state)
{
    struct k8s_cluster c;
    struct sbx_err err;

    (void)state;
    assert_int_equal(merge(in_dir("b"), "ctx-insecure", false, &c, &err), SBX_E_INVALID);
    assert_non_null(strstr(err.msg, "insecure-skip-tls-verify"));
    k8s_cluster_done(&c);
    assert_int_equal(merge(in_dir("b"), "ctx-insecure", true, &c, &err), 0);
    assert_string_equal(c.endpoint, "https://10.0.0.3");
    k8s_cluster_done(&c);
    assert_int_equal(merge(in_dir("b"), "ctx-exec", false, &c, &err), SBX_E_INVALID);
    assert_non_null(strstr(err.msg, "'exec'"));
    k8s_cluster_done(&c);
    assert_int_equal(merge(in_dir("b"), "ctx-http", false, &c, &err), SBX_E_INVALID);
    assert_non_null(strstr(err.msg, "https://"));
    k8s_cluster_done(&c);
    assert_int_equal(merge(in_dir("b"), "nope", false, &c, &err), SBX_E_INVALID);
    assert_non_null(strstr(err.msg, "'nope'"));
    k8s_cluster_done(&c);
    assert_int_equal(merge(in_dir("alias"), NULL, false, &c, &err), SBX_E_INVALID);
    assert_non_null(strstr(err.msg, "aliases"));
    k8s_cluster_done(&c);
    assert_int_equal(merge(in_dir("none1"), NULL, false, &c, &err), SBX_E_UNAVAILABLE);
    k8s_cluster_done(&c);
}

static void test_in_cluster(void **state)
{
    struct k8s_config_opts o = {.service_host = "fd00::1", .service_port = "6443", .sa_dir = dir};
    struct k8s_cluster c = {0};
    struct sbx_err err = {.size = sizeof(err)};

    (void)state;
    put("namespace", "sandboxes\n");
    assert_int_equal(k8s_config_load(&o, &c, &err), 0);
    assert_string_equal(c.endpoint, "https://[fd00::1]:6443");
    assert_string_equal(c.ca_file, in_dir("ca.crt"));
    assert_string_equal(c.token_file, in_dir("token"));
    assert_string_equal(c.ns, "sandboxes");
    k8s_cluster_done(&c);
    /* KUBECONFIG wins over in-cluster */
    o.kubeconfig = in_dir("a");
    assert_int_equal(k8s_config_load(&o, &c, &err), 0);
    assert_string_equal(c.endpoint, "https://127.0.0.1:6443");
    k8s_cluster_done(&c);
    /* nothing at all */
    o = (struct k8s_config_opts){.home_kubeconfig = in_dir("none2"), .sa_dir = dir};
    assert_int_equal(k8s_config_load(&o, &c, &err), SBX_E_UNAVAILABLE);
    k8s_cluster_done(&c);
}

static void test_b64(void **state)
{
    size_t n;
    char *s;

    (void)state;
    s = k8s_b64_decode("aGVs\nbG8=", &n);
    assert_string_equal(s, "hello");
    assert_int_equal(n, 5);
    free(s);
    s = k8s_b64_decode("aGVsbG8", &n); /* padding optional */
    assert_string_equal(s, "hello");
    free(s);
    assert_null(k8s_b64_decode("aGV*bG8=", &n));
    assert_null(k8s_b64_decode("aG==VsbG8", &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_first_file_wins),
            cmocka_unit_test(test_missing_skipped_and_current_from_the_first),
            cmocka_unit_test(test_token_file_and_context_override),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_in_cluster),
            cmocka_unit_test(test_b64),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
