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
    const struct sbx_policy *policy;
    const struct jail_top *tops; /* the merged-usr entries present on the host */
    size_t n_tops;
    const char *const *ro_paths;    /* language host paths, NULL-terminated or NULL */
    const struct sbx_mount *mounts; /* the core's directories (dependency sets) */
    size_t n_mounts;
    const char *proxy_socket; /* network registries/allowlist: the core's proxy */
    /* fd numbers as bwrap will see them; -1 when absent */
    int seccomp_fd, agent_fd, passwd_fd, group_fd, hosts_fd;
    int info_fd;                       /* bwrap reports the agent's pid here */
    int block_fd;                      /* network on: bwrap waits here until pasta is attached */
    uint32_t sandbox_uid, sandbox_gid; /* ids inside the sandbox */
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
