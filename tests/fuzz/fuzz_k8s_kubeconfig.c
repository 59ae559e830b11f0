/* SPDX-License-Identifier: MIT */
/*
 * fuzz_k8s_kubeconfig.c: libFuzzer target for the Kubernetes plugin's
 * kubeconfig reader (plugins/k8s/kubeconfig.c: libyaml into json-c, then
 * kubectl's merge). Byte 0 holds options: bit 0 ignore
 * insecure-skip-tls-verify, bits 1-2 the context to ask for, bit 3 a
 * missing file at the end of the list. The rest is the file; a NUL byte
 * in it splits it into two files, merged as a KUBECONFIG list. The files
 * live in memory (memfd, named by /proc/self/fd/N). Each input is loaded
 * twice, with the current-context and with a named context. A load
 * either succeeds with a usable cluster (an https:// endpoint without a
 * path, a prefix "" or "/...", absolute paths, data or file but not both,
 * token or token file but not both) or fails with one of the documented
 * codes, a message, and the result untouched. The file's text
 * also goes through k8s_b64_decode. A crash, a sanitizer report, a leak
 * or an abort() is a bug. Build with clang -fsanitize=fuzzer, or link
 * with replay.c to replay a corpus.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <llm-sandbox/plugin.h>

#include "kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static bool is_abs(const char *p)
{
    return !p || p[0] == '/';
}

static bool all_null(const struct k8s_cluster *c)
{
    static const struct k8s_cluster zero;

    return memcmp(c, &zero, sizeof(zero)) == 0;
}

static void check_cluster(const struct k8s_cluster *c, const char *context)
{
    const char *host;

    check(c->endpoint && strncmp(c->endpoint, "https://", 8) == 0);
    host = c->endpoint + 8;
    check(strchr(host, '/') == NULL);
    check(c->prefix && (c->prefix[0] == '\0' || c->prefix[0] == '/'));
    check(!(c->ca_pem && c->ca_file) && !(c->cert_pem && c->cert_file) &&
            !(c->key_pem && c->key_file) && !(c->token && c->token_file));
    check(is_abs(c->ca_file) && is_abs(c->cert_file) && is_abs(c->key_file) &&
            is_abs(c->token_file));
    check(c->source && strncmp(c->source, "kubeconfig context '", 20) == 0);
    if (context)
        check(strstr(c->source, context) != NULL);
}

static void load(const char *list, const char *context, bool ignore_insecure)
{
    struct k8s_cluster c = {0};
    struct sbx_err err;
    int r;

    memset(&err, 0, sizeof(err));
    r = k8s_kubeconfig_merge(list, context, ignore_insecure, &c, &err);
    if (r == 0) {
        check_cluster(&c, context);
        k8s_cluster_done(&c);
        check(all_null(&c));
        k8s_cluster_done(&c); /* twice is harmless */
        return;
    }
    check(r == SBX_E_INVALID || r == SBX_E_UNAVAILABLE || r == SBX_E_NOMEM);
    check(err.rc == r && all_null(&c));
    check(memchr(err.msg, '\0', sizeof(err.msg)) != NULL && err.msg[0] != '\0');
}

/* The memfd now holds p[0..n). */
static void put(int fd, const uint8_t *p, size_t n)
{
    check(ftruncate(fd, 0) == 0);
    check(n == 0 || pwrite(fd, p, n, 0) == (ssize_t)n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const contexts[4] = {"kind-kind", "dev", "prod", ""};
    static int fd[2] = {-1, -1};
    const uint8_t *text, *nul;
    char list[128], *s, *out;
    size_t n, len, out_len = 0;
    bool insecure;
    const char *context;

    if (size < 1)
        return 0;
    if (fd[0] < 0) {
        fd[0] = memfd_create("fuzz-k8s-kubeconfig-a", MFD_CLOEXEC);
        fd[1] = memfd_create("fuzz-k8s-kubeconfig-b", MFD_CLOEXEC);
        check(fd[0] >= 0 && fd[1] >= 0);
    }
    insecure = data[0] & 1;
    context = contexts[(data[0] >> 1) & 3];
    text = data + 1;
    n = size - 1;
    nul = memchr(text, '\0', n);
    if (nul) {
        put(fd[0], text, (size_t)(nul - text));
        put(fd[1], nul + 1, n - (size_t)(nul - text) - 1);
        snprintf(list, sizeof(list), "/proc/self/fd/%d:/proc/self/fd/%d", fd[0], fd[1]);
    } else {
        put(fd[0], text, n);
        snprintf(list, sizeof(list), "/proc/self/fd/%d", fd[0]);
    }
    if (data[0] & 8)
        strncat(list, ":/nonexistent/fuzz-k8s-kubeconfig", sizeof(list) - strlen(list) - 1);
    load(list, NULL, insecure);
    load(list, context, insecure);

    /* the text as base64: NULL, or at most three bytes for every four */
    len = nul ? (size_t)(nul - text) : n;
    s = malloc(len + 1);
    check(s != NULL);
    memcpy(s, text, len);
    s[len] = '\0';
    out = k8s_b64_decode(s, &out_len);
    if (out) {
        check(out_len <= len / 4 * 3 + 2 && out[out_len] == '\0');
        free(out);
    }
    free(s);
    return 0;
}
