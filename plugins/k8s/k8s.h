/* SPDX-License-Identifier: MIT */
/*
 * k8s.h: shared between the Kubernetes plugin's files: the plugin's state
 * (where the API server is, what the probe found), REST calls through the
 * core's libcurl, and the pod lifecycle. Plugin-private; only
 * llm-sandbox/plugin.h crosses to the core.
 */
#ifndef K8S_K8S_H
#define K8S_K8S_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>

#include <llm-sandbox/plugin.h>

#include "kubeconfig.h"

#define K8S_LABEL_OWNER   "llm-sandbox.org/owner"   /* the instance id */
#define K8S_LABEL_NET     "llm-sandbox.org/network" /* "off": our deny-all selects it */
#define K8S_LABEL_MANAGED "app.kubernetes.io/managed-by"
#define K8S_MANAGER       "llm-sandbox"
#define K8S_CONTAINER     "sandbox"
#define K8S_RETRY_MAX     16   /* deletions to try again at unload */
#define K8S_DELETE_MS     3000 /* a deletion on a call's path, or at unload */

struct k8s_state {
    const struct sbx_host *h;
    struct k8s_cluster cl;
    char ns[64];     /* the namespace every object of ours lives in */
    char owner[64];  /* host->instance_id: the owner label */
    char policy[96]; /* our deny-all NetworkPolicy's name */
    uint32_t uid, gid;
    char pull_policy[16];
    unsigned request_percent; /* requests = this share of the limits */
    int64_t witness_port;     /* the node port a pod's network check aims at */
    int64_t netpol_ms;        /* how long a pod may wait for its deny-all */
    int64_t start_ms;         /* a pod's start, from create to a ready agent */
    int64_t proof_ttl_s;      /* how long the probe's proof is remembered (proof.c) */
    char probe_image[256];
    /* what the probe found: each pod proves its deny-all before the agent
     * starts (prove), or the operator accepted an unproven one (accepted) */
    bool prove, accepted;
    /* the agent and the network check, read once (boot.c) */
    pthread_mutex_t lock;
    char *agent, *netcheck;
    size_t agent_len, netcheck_len;
    char agent_sha[65];
    char retry[K8S_RETRY_MAX][128]; /* pods whose deletion failed */
};

/* util.c: fill err and return rc. */
int k8s_fail(struct sbx_err *err, int rc, int sys_errno, const char *fmt, ...) SBX_PRINTF(4, 5);
/* A monotonic clock in ms (boot.c). */
int64_t k8s_now_ms(void);
/* A boolean setting (true, 1, yes), dflt when unset. */
bool k8s_setting_true(const struct k8s_state *st, const char *key, bool dflt);

/* api.c: one REST call. body (borrowed) goes as JSON (merge patch when
 * patch is set). HTTP status >= 400 becomes an error naming the API
 * server's message (SBX_E_UNAVAILABLE for 401/403, SBX_E_BACKEND
 * otherwise), except 404 with missing_ok and 409 with exists_ok;
 * *ret_status gets the status either way. */
struct k8s_call {
    const char *method;
    const char *path; /* beneath the server's prefix, query included */
    struct json_object *body;
    bool patch;
    int64_t timeout_ms;
    int cancel_fd;
    bool missing_ok, exists_ok;
    /* stream the body to this callback instead (a watch); it returns
     * nonzero to stop */
    int (*on_body)(void *userdata, const char *data, size_t len);
    void *userdata;
};
int k8s_api(struct k8s_state *st, const struct k8s_call *c, long *ret_status,
        struct json_object **ret_json, struct sbx_err *err);
/* A request to path with our TLS material and credentials: fills req;
 * auth (the caller's buffer, freed with k8s_http_done) holds the header. */
struct k8s_http {
    struct sbx_http req;
    char path[2048];
    char *auth;
    const char *headers[2];
};
int k8s_http_init(struct k8s_state *st, struct k8s_http *hr, const char *method, const char *path,
        struct sbx_err *err);
void k8s_http_done(struct k8s_http *hr);
/* Delete one object of ours, kind "pods" (grace 0) or "networkpolicies",
 * within timeout_ms; a missing one is no error. */
int k8s_delete(struct k8s_state *st, const char *kind, const char *name, int64_t timeout_ms,
        struct sbx_err *err);
/* Delete a pod now (grace 0), or remember it for k8s_retry_flush. */
int k8s_delete_pod(struct k8s_state *st, const char *name, int64_t timeout_ms, struct sbx_err *err);
void k8s_retry_flush(struct k8s_state *st, int64_t deadline);

/* probe.c */
int k8s_init(const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err);
void k8s_fini(void *state);
int k8s_probe(void *state, struct sbx_caps *caps, struct sbx_err *err);
/* Delete pods of dead owners of our scope, and ended pods of any owner. */
void k8s_sweep(struct k8s_state *st);

/* proof.c: a proof of NetworkPolicy enforcement younger than
 * proof_ttl_s for this cluster; keep one now. */
bool k8s_proof_fresh(struct k8s_state *st);
void k8s_proof_keep(struct k8s_state *st);

/* run.c: the box operations */
int k8s_box_open(void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err);
int k8s_box_poll_fd(void *box);
int k8s_box_write_fd(void *box);
int64_t k8s_box_read(void *box, void *buf, size_t len);
int64_t k8s_box_write(void *box, const void *buf, size_t len);
int k8s_box_kill(void *box);
int k8s_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err);

#endif
