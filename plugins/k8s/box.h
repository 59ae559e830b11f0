/* SPDX-License-Identifier: MIT */
/*
 * box.h: one pod box, shared by boot.c (start the pod, prove its network
 * is closed, send the agent), run.c (the box operations), cgroup.c (its
 * counters when this host is its node) and probe.c (the probe's pod).
 * Plugin-private.
 */
#ifndef K8S_BOX_H
#define K8S_BOX_H

#include "channel.h"
#include "k8s.h"
#include "translate.h"

/* The pod's memory cgroup, read on this host when it is the pod's node:
 * OOM kills of any process in it (the program, not only pid 1). */
struct k8s_cg {
    int fd;            /* memory.events (v2) or memory.oom_control (v1), or -1 */
    int64_t oom_kills; /* the highest count seen */
};

struct k8s_box {
    struct k8s_state *st;
    char name[128]; /* the pod's */
    char uid[64];   /* its metadata.uid */
    char cid[96];   /* its container's id, without the runtime's prefix */
    char rv[32];    /* the resourceVersion the create answered */
    struct sbx_ws *ws;
    int ready_fd; /* an eventfd that is always readable (stdout is buffered) */
    int cancel_fd;
    bool created; /* the pod exists: delete it at close */
    bool killed;  /* box_kill ran: deleted already */
    struct k8s_cg cg;
    char line[256]; /* the boot script's last line */
    char diag[512]; /* the agent's last diagnostics (stderr) */
    size_t diag_len;
    struct kch ch;
};

/* run.c: a box for the pod sbx-<name> (no I/O yet), and the manifest's
 * input for it from the plugin's state and a policy. */
struct k8s_box *k8s_box_new(struct k8s_state *st, const char *name, int cancel_fd);
void k8s_pod_input_init(struct k8s_state *st, struct k8s_pod_input *in, const struct sbx_policy *p,
        const char *name, const char *image);

/* boot.c */
/* The agent and the network check, read once into st. */
int k8s_binaries(struct k8s_state *st, struct sbx_err *err);
/* Create the pod, wait until it runs (deadline, the box's cancel fd),
 * attach to its container. */
int k8s_pod_start(
        struct k8s_box *b, const struct k8s_pod_input *in, int64_t deadline, struct sbx_err *err);
/* Send the network check, label the pod once the node answered, wait
 * until the node is refused. SBX_E_UNSUPPORTED with the check's own words
 * when the node never answered, or still answers at the end. */
int k8s_pod_prove(struct k8s_box *b, int64_t deadline, struct sbx_err *err);
/* Send len bytes on the pod's stdin before the deadline. */
int k8s_pod_send(
        struct k8s_box *b, const char *data, size_t len, int64_t deadline, struct sbx_err *err);
/* Close the stream and delete the pod (grace 0); free b. */
void k8s_box_free(struct k8s_box *b);

/* cgroup.c */
void k8s_cg_open(struct k8s_cg *c, const char *pod_uid, const char *cid);
void k8s_cg_sample(struct k8s_cg *c);
void k8s_cg_close(struct k8s_cg *c);

#endif
