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

#define BWRAP_MAX_ARGS  448
#define BWRAP_ARG_STORE 16384
#define BWRAP_AGENT     "/.sbx/agent"

/* WSL2 (plugins/wsl2): the same sandbox, started inside a WSL2 distribution
 * through its launcher: LAUNCHER... -d DISTRO -u USER --cd / --exec OPENER
 * BWRAP then the options below, never through a shell. wsl.exe carries only
 * stdin, stdout and stderr: the opener (plugins/wsl2/open.c) receives the
 * blobs on stdin and puts them at the fd numbers below before it execs
 * bwrap; there is no --info-fd (a pid of the distribution means nothing to
 * the host). wsl.exe hands the
 * distribution no environment of ours, so the sandbox's is given as
 * --clearenv --setenv (without WSL's own variables and Windows directories
 * on PATH), and no host path under the distribution's drive mounts (/mnt)
 * is bound. */
struct bwrap_wsl {
    const char *const *launcher; /* argv prefix (wsl.exe ...), NULL-terminated, not empty */
    const char *distro;          /* [A-Za-z0-9._-]{1,64} */
    const char *user;            /* [a-z_][a-z0-9_-]{0,31} */
    const char *opener;          /* wsl2-open's absolute path inside it */
    const char *bwrap;           /* bwrap's absolute path inside the distribution */
};

struct bwrap_input {
    struct jail_input box; /* policy, host layout, mounts, proxy, ids (localjail.h) */
    /* fd numbers as bwrap will see them; -1 when absent */
    int seccomp_fd, agent_fd, passwd_fd, group_fd, hosts_fd;
    int info_fd;                 /* bwrap reports the agent's pid here (-1 under WSL2) */
    int block_fd;                /* network on: bwrap waits here until pasta is attached */
    const struct bwrap_wsl *wsl; /* WSL2: run inside a distribution; NULL: bwrap here */
};

struct bwrap_argv {
    const char *argv[BWRAP_MAX_ARGS];
    size_t argc;
    char store[BWRAP_ARG_STORE]; /* numbers and joined strings live here */
    size_t used;
};

/* Fill out (argv[0] is "bwrap", or the WSL launcher's first word;
 * NULL-terminated). 0, or SBX_E_LIMIT / SBX_E_INVALID / SBX_E_UNSUPPORTED
 * with err filled. */
int bwrap_translate(const struct bwrap_input *in, struct bwrap_argv *out, struct sbx_err *err);

#endif
