/* SPDX-License-Identifier: MIT */
/*
 * mxc.h: shared between the MXC plugin's files (plugin.c, probe.c, run.c,
 * boxdir.c). Plugin-private; only llm-sandbox/plugin.h crosses to the core.
 */
#ifndef MXC_MXC_H
#define MXC_MXC_H

#include <stdbool.h>

#include <llm-sandbox/plugin.h>

#include "localjail.h"
#include "translate.h"

/* Box directories are named "<MXC_DIR_PREFIX><box id>-XXXXXX" in work_dir. */
#define MXC_DIR_PREFIX "llm-sandbox-mxc-"

struct mxc_state {
    const struct sbx_host *h;
    char exe[512];      /* the executor, lxc-exec (absolute) */
    char bwrap[256];    /* the bwrap it will find on PATH */
    char path_env[300]; /* "PATH=<bwrap's directory>:/usr/bin:/bin" for the executor */
    char work_dir[256]; /* where box directories are made (absolute) */
};

/* A box's directory on the host: the agent's copy (read-only in the box)
 * and the workspace (read-write, the agent's cwd). */
struct mxc_dir {
    char path[400];
    char agent[420];
    char workspace[420];
};

extern const struct sbx_backend_ops mxc_ops;

int mxc_probe(void *state, struct sbx_caps *caps, struct sbx_err *err);
int mxc_box_open(void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err);
int mxc_box_kill(void *box);
int mxc_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err);

/* Make a box's directory in st->work_dir (mode 0700; as root 0711 with the
 * workspace the sandbox uid's), with a copy of the core's agent in it. On
 * failure nothing is left behind. SBX_E_IO, SBX_E_LIMIT (path too long). */
int mxc_dir_make(
        const struct mxc_state *st, const char *id, struct mxc_dir *d, struct sbx_err *err);
/* Remove the directory and everything the box wrote there, following no
 * symlink. Call only once nothing of the box runs. d->path "" is a no-op. */
void mxc_dir_remove(const struct sbx_host *h, struct mxc_dir *d);
/* Remove the box directories in work_dir that dead instances of this user
 * left behind (a crash, a kill -9). */
void mxc_dir_sweep(const struct mxc_state *st);

#endif
