/* SPDX-License-Identifier: MIT */
/*
 * bwrap.h: shared between the bubblewrap plugin's files (plugin.c, run.c,
 * probe.c), and by the WSL2 plugin, which builds run.c and translate.c
 * too. Plugin-private; only llm-sandbox/plugin.h crosses to the core.
 */
#ifndef BWRAP_BWRAP_H
#define BWRAP_BWRAP_H

#include <stdbool.h>

#include <llm-sandbox/plugin.h>

#include "jailbox.h"
#include "translate.h"

struct bwrap_state {
    const struct sbx_host *h;
    char bwrap[256]; /* absolute path */
    char pasta[256]; /* absolute path, or "" */
    struct jail_tops tops;
    char version[32];
    bool tun_ok; /* /dev/net/tun usable by the sandbox uid */
    /* plugins/wsl2, which runs this file's boxes inside a WSL2 distribution:
     * the launcher (its absolute path) and what follows it; NULL here */
    const struct bwrap_wsl *wsl;
    char launcher[256];
    /* WSL2: the limits go to the opener, which makes the box's cgroup in
     * the distribution (its probe found one); false: the agent's rlimits.
     * The core's cgroup, here, is never used under WSL2. */
    bool wsl_cgroup;
};

extern const struct sbx_backend_ops bwrap_ops;

int bwrap_probe(void *state, struct sbx_caps *caps, struct sbx_err *err);
int bwrap_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err);
int bwrap_box_kill(void *box);
int bwrap_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err);

#endif
