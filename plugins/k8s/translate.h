/* SPDX-License-Identifier: MIT */
/*
 * translate.h: the policy -> a Pod manifest and the deny-all
 * NetworkPolicy, as JSON for the API server. Pure (no I/O), so golden
 * tests pin both (tests/golden/k8s/).
 */
#ifndef K8S_TRANSLATE_H
#define K8S_TRANSLATE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>

struct k8s_pod_input {
    const struct sbx_policy *policy;
    const char *name;        /* the pod's */
    const char *image;       /* the language's */
    const char *owner;       /* instance id: the owner label */
    const char *pull_policy; /* IfNotPresent, Always, Never */
    const char *const *envp; /* the agent's environment */
    uint32_t uid, gid;
    unsigned request_percent; /* requests = this share of the limits (1-100) */
    /* selected by the deny-all from its creation (no check in the pod):
     * only when the operator accepted an unproven policy */
    bool labelled_off;
    size_t netcheck_len; /* the network check's size; 0: none runs */
    size_t agent_len;    /* the agent's size; 0: a probe pod, no agent */
    const char *agent_sha;
    int64_t witness_port; /* the node's port the check aims at */
    int64_t netpol_ms;    /* how long the check waits for the deny-all */
    int64_t life_s;       /* activeDeadlineSeconds: the pod's backstop */
};

/* The pod (transfer full), or NULL with err (SBX_E_UNSUPPORTED for a
 * network mode this backend cannot give, SBX_E_INVALID, SBX_E_NOMEM). */
struct json_object *k8s_pod_json(const struct k8s_pod_input *in, struct sbx_err *err);
/* The deny-all NetworkPolicy named name, selecting the owner's pods
 * labelled network=off. (transfer full) */
struct json_object *k8s_netpol_json(const char *name, const char *owner);
/* The merge patch that puts a pod under the deny-all. (transfer full) */
struct json_object *k8s_label_off_json(void);

/* What the boot script prints before the agent starts (one line each). */
#define K8S_BOOT_REACH   "sbx-k8s: reach ok"
#define K8S_BOOT_BLOCKED "sbx-k8s: blocked ok"

#endif
