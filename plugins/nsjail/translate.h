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
    struct jail_input box; /* policy, host layout, mounts, proxy, ids (localjail.h) */
    /* fd numbers as nsjail sees them */
    int agent_fd;   /* the agent binary, executed by fd (nsjail opens it first) */
    int seccomp_fd; /* the core's policy as Kafel */
};

struct nsjail_config {
    char text[NSJAIL_CONFIG_MAX];
    size_t len;
};

/* Fill out (NUL-terminated text). 0, or SBX_E_LIMIT / SBX_E_INVALID /
 * SBX_E_UNSUPPORTED with err filled. */
int nsjail_translate(const struct nsjail_input *in, struct nsjail_config *out, struct sbx_err *err);

#endif
