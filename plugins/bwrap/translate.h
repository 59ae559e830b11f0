/* SPDX-License-Identifier: MIT */
/*
 * translate.h: policy -> bwrap argv, a pure function (no I/O, no
 * allocation) so golden tests can pin it. The runner inspects the host and
 * opens the fds; the translator only arranges arguments.
 */
#ifndef BWRAP_TRANSLATE_H
#define BWRAP_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/plugin.h>

#include "localjail.h"

#define BWRAP_MAX_ARGS  320
#define BWRAP_ARG_STORE 8192
#define BWRAP_AGENT     "/.sbx/agent"

struct bwrap_input {
    struct jail_input box; /* policy, host layout, mounts, proxy, ids (localjail.h) */
    /* fd numbers as bwrap will see them; -1 when absent */
    int seccomp_fd, agent_fd, passwd_fd, group_fd, hosts_fd;
    int info_fd;  /* bwrap reports the agent's pid here */
    int block_fd; /* network on: bwrap waits here until pasta is attached */
};

struct bwrap_argv {
    const char *argv[BWRAP_MAX_ARGS];
    size_t argc;
    char store[BWRAP_ARG_STORE]; /* numbers and joined strings live here */
    size_t used;
};

/* Fill out (argv[0] is "bwrap"; NULL-terminated). 0, or SBX_E_LIMIT /
 * SBX_E_INVALID with err filled. */
int bwrap_translate(const struct bwrap_input *in, struct bwrap_argv *out, struct sbx_err *err);

#endif
