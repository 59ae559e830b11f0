/* SPDX-License-Identifier: MIT */
/*
 * nsjail.h: shared between the NsJail plugin's files (plugin.c, run.c,
 * probe.c). Plugin-private; only llm-sandbox/plugin.h crosses to the core.
 */
#ifndef NSJAIL_NSJAIL_H
#define NSJAIL_NSJAIL_H

#include <stdbool.h>

#include <llm-sandbox/plugin.h>

#include "jailbox.h"
#include "translate.h"

struct nsjail_state {
    const struct sbx_host *h;
    char nsjail[256]; /* absolute path */
    char pasta[256];  /* absolute path, or "" */
    struct jail_tops tops;
    bool tun_ok; /* /dev/net/tun usable by the sandbox uid */
};

extern const struct sbx_backend_ops nsjail_ops;

int nsjail_probe(void *state, struct sbx_caps *caps, struct sbx_err *err);
/* As root: a private /run/user/UID for nsjail's mount tree (run.c). */
void nsjail_run_dir(const struct sbx_host *h, uint32_t uid, uint32_t gid);
int nsjail_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err);
int nsjail_box_kill(void *box);
int nsjail_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err);

#endif
