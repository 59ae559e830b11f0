/* SPDX-License-Identifier: MIT */
/*
 * translate.h: policy -> nsjail configuration (protobuf text format), a
 * pure function (no I/O, no allocation) so golden tests can pin it. The
 * runner inspects the host and opens the fds; the translator only writes
 * the configuration that refers to them.
 */
#ifndef NSJAIL_TRANSLATE_H
#define NSJAIL_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/plugin.h>

#include "localjail.h"

#define NSJAIL_CONFIG_MAX 32768

struct nsjail_input {
    const struct sbx_policy *policy;
    const struct jail_top *tops; /* the merged-usr entries present on the host */
    size_t n_tops;
    const char *const *ro_paths;    /* language host paths, NULL-terminated or NULL */
    const struct sbx_mount *mounts; /* the core's directories (dependency sets) */
    size_t n_mounts;
    const char *proxy_socket; /* network registries/allowlist: the core's proxy */
    const char *const *envp;  /* the agent's environment, NULL-terminated */
    /* fd numbers as nsjail sees them */
    int agent_fd;   /* the agent binary, executed by fd (nsjail opens it first) */
    int seccomp_fd; /* the core's policy as Kafel */
    uint32_t sandbox_uid, sandbox_gid; /* ids inside the sandbox */
};

struct nsjail_config {
    char text[NSJAIL_CONFIG_MAX];
    size_t len;
};

/* Fill out (NUL-terminated text). 0, or SBX_E_LIMIT / SBX_E_INVALID /
 * SBX_E_UNSUPPORTED with err filled. */
int nsjail_translate(const struct nsjail_input *in, struct nsjail_config *out, struct sbx_err *err);

#endif
