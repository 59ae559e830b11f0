/* SPDX-License-Identifier: MIT */
/*
 * mxc.h: shared between the MXC plugin's files (plugin.c, probe.c, run.c,
 * tree.c, agentdir.c). Plugin-private; only llm-sandbox/plugin.h crosses to the core.
 */
#ifndef MXC_MXC_H
#define MXC_MXC_H

#include <stdbool.h>

#include <llm-sandbox/plugin.h>

#include "jailbox.h"
#include "localjail.h"
#include "translate.h"

/* The agent's directory is "<MXC_DIR_PREFIX><instance id>-XXXXXX" in work_dir. */
#define MXC_DIR_PREFIX "llm-sandbox-mxc-"

struct mxc_state {
    const struct sbx_host *h;
    char exe[512];       /* the executor, lxc-exec (absolute) */
    char bwrap[256];     /* the bwrap it will find on PATH */
    char path_env[300];  /* "PATH=<bwrap's directory>:/usr/bin:/bin" for the executor */
    char work_dir[256];  /* where the agent's copy is kept (absolute) */
    char agent_dir[400]; /* the copy's directory, or "" */
    char agent[420];     /* the copy, bound read-only into every box */
    uint32_t uid, gid;   /* who the box runs as, inside and out */
};

/* pidfds on the processes below lxc-exec (its bwrap, and the box's pid 1) */
#define MXC_TREE_MAX 4
struct mxc_tree {
    int fd[MXC_TREE_MAX];
    size_t n;
};

extern const struct sbx_backend_ops mxc_ops;

int mxc_probe(void *state, struct sbx_caps *caps, struct sbx_err *err);
int mxc_box_open(void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err);
int mxc_box_kill(void *box);
int mxc_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err);

/* Copy the core's agent into a fresh directory in st->work_dir (mode 0700;
 * 0711 as root, for the sandbox uid) and set st->agent_dir and st->agent.
 * On failure nothing is left behind. SBX_E_IO, or the agent_fd's error. */
int mxc_agent_make(struct mxc_state *st, struct sbx_err *err);
/* Remove the copy and its directory (when made). */
void mxc_agent_remove(struct mxc_state *st);
/* Remove the agent directories in work_dir that dead instances of this
 * user left behind (a crash, a kill -9). */
void mxc_agent_sweep(const struct mxc_state *st);

/* Take pidfds on pid's children and grandchildren (once: a tree already
 * watched is left as it is). Call before killing them. */
void mxc_tree_watch(struct mxc_tree *t, int pid);
/* Wait until each has exited (at most timeout_ms in all; a warning when
 * one has not), and close the pidfds. */
void mxc_tree_await(const struct sbx_host *h, struct mxc_tree *t, int64_t timeout_ms);

#endif
