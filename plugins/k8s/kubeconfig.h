/* SPDX-License-Identifier: MIT */
/*
 * kubeconfig.h: where the API server is and who we are to it, from
 * kubeconfig files (merged as kubectl merges KUBECONFIG) or from the
 * in-cluster service account. No network I/O; files only. Unit-tested
 * (tests/unit/test_k8s_kubeconfig.c).
 */
#ifndef K8S_KUBECONFIG_H
#define K8S_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/plugin.h>

/* Everything is heap-allocated (k8s_cluster_done) or NULL when unset. */
struct k8s_cluster {
    char *endpoint; /* https://host[:port], for sbx_http.endpoint */
    char *prefix;   /* the server URL's path: "" or "/some/path" */
    char *ca_pem, *ca_file;
    char *cert_pem, *cert_file;
    char *key_pem, *key_file;
    char *token, *token_file; /* a bearer token, or a file holding one */
    char *ns;                 /* the context's or service account's namespace */
    char *source;             /* where this came from, for messages */
};

struct k8s_config_opts {
    const char *kubeconfig;      /* a list of files as KUBECONFIG has it, or NULL */
    const char *home_kubeconfig; /* tried when neither the list nor in-cluster applies */
    const char *context;         /* NULL: the files' current-context */
    const char *service_host;    /* in-cluster: KUBERNETES_SERVICE_HOST/PORT */
    const char *service_port;
    const char *sa_dir; /* the service account's token, ca.crt and namespace */
    /* accept a cluster marked insecure-skip-tls-verify: the flag is
     * ignored and the server verified all the same */
    bool ignore_insecure;
};

/* Load the configuration: the kubeconfig list when set, else in-cluster
 * when service_host is set, else home_kubeconfig. SBX_E_UNAVAILABLE when
 * there is none, SBX_E_INVALID for a malformed or unsupported one (named). */
int k8s_config_load(const struct k8s_config_opts *o, struct k8s_cluster *ret, struct sbx_err *err);
/* The files of a KUBECONFIG-style list (':' separated) merged as kubectl
 * does: the first file to name a cluster, user or context wins, and the
 * first current-context; missing files are skipped, relative paths are
 * relative to the file that holds them. */
int k8s_kubeconfig_merge(const char *list, const char *context, bool ignore_insecure,
        struct k8s_cluster *ret, struct sbx_err *err);
void k8s_cluster_done(struct k8s_cluster *c);
/* Decode base64 (RFC 4648, padding optional, whitespace skipped) into a
 * NUL-terminated buffer. (transfer full) NULL when malformed. */
char *k8s_b64_decode(const char *in, size_t *ret_len);

#endif
