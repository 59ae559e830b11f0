/* SPDX-License-Identifier: MIT */
/*
 * wsl2.h: the WSL2 backend's state. Its boxes are the bubblewrap plugin's
 * (plugins/bwrap/run.c and translate.c, built into this plugin too), started
 * through wsl.exe inside a chosen distribution; this plugin adds the probe
 * and the launcher. Plugin-private.
 */
#ifndef WSL2_WSL2_H
#define WSL2_WSL2_H

#include <llm-sandbox/plugin.h>

#include "../bwrap/bwrap.h" /* the boxes are bubblewrap's */

#define WSL2_LAUNCHER_WORDS 8

struct wsl2_state {
    struct bwrap_state b; /* first: bwrap's run.c takes this state as its own */
    struct bwrap_wsl wsl;
    char distro[65], user[33], opener[256];
    char words[512]; /* the launcher setting, split in place */
    const char *launcher[WSL2_LAUNCHER_WORDS + 1];
};

extern const struct sbx_backend_ops wsl2_ops;

int wsl2_probe(void *state, struct sbx_caps *caps, struct sbx_err *err);

#endif
