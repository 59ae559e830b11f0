/* SPDX-License-Identifier: MIT */
/*
 * box.h: one container box, shared by run.c (open it, its channel),
 * close.c (kill it, decide its outcome, remove it) and reaper.c (remove it
 * after the result is out). Plugin-private.
 */
#ifndef DOCKER_BOX_H
#define DOCKER_BOX_H

#include "demux.h"
#include "docker.h"

struct dk_box {
    struct dk_box *next; /* in the reaper's queue */
    struct dk_state *st;
    struct sbx_conn *conn;
    struct dk_demux demux;
    char id[80];    /* container id */
    char diag[256]; /* the agent's last diagnostics */
    size_t diag_len;
    int seccomp_fd; /* Podman: the profile's memfd, or -1 */
    bool attached;  /* the channel was open at close: the agent was not killed */
    bool cg_fresh;  /* the last sample (after the last read) saw the cgroup */
    struct dk_vols vols;
    struct dk_cg cg;
    /* KEEP_TEMPLATE=false: the pulled base, agent and committed images */
    char release[3][160];
};

/* close.c: a number (or boolean) of the container's State; -1 unknown. */
int64_t dk_inspect_state(struct dk_box *b, const char *key);
/* Stop and remove the container, its writable volumes (read back first),
 * the images KEEP_TEMPLATE=false releases; free b. With stats, fill them
 * from the stopped container's state first. 0, or the first error. */
int dk_box_finish(struct dk_box *b, struct sbx_box_stats *stats, struct sbx_err *err);

/* reaper.c: finish b (transfer full) on the plugin's reaper thread. */
void dk_reap(struct dk_box *b);
int dk_init(const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err);
void dk_fini(void *state);
void dk_reaper_init(struct dk_state *st);
/* Finish every queued box, retry failed removals, end the thread. */
void dk_reaper_stop(struct dk_state *st);

#endif
