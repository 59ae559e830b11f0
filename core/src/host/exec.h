/* SPDX-License-Identifier: MIT */
/*
 * exec.h: the one place that forks (STYLE C2). A child gets exactly the
 * fds the spec names, its own session, the cgroup and (when we are root and
 * asked to) the unprivileged sandbox identity, then execve. Resource limits
 * are not set here: the agent inside the sandbox applies them (LIMITS).
 * The parent keeps a pidfd; waits and signals go through it, so a recycled
 * pid is never signalled.
 */
#ifndef SBX_EXEC_H
#define SBX_EXEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

struct cg_group;

/* What exec needs beyond the plugin-visible spec. */
struct exec_ctx {
    uint32_t uid, gid;       /* used with SBX_SPAWN_DROP_PRIVS when euid is 0 */
    struct cg_group *cgroup; /* joined before exec, or NULL */
};

struct exec_proc;

int exec_spawn(const struct sbx_spawn *spec, const struct exec_ctx *ctx, struct exec_proc **ret,
        struct sbx_error **err);
pid_t exec_proc_pid(const struct exec_proc *p);
int exec_proc_pidfd(const struct exec_proc *p);
/* Take the parent end of the pipe made for child_fd 0, 1 or 2 (SBX_FD_PIPE),
 * or -1. (transfer full: the caller closes it) */
int exec_proc_take_fd(struct exec_proc *p, int child_fd);
int exec_proc_signal(struct exec_proc *p, int sig);
/* 1 and *ret_status when exited, 0 on timeout, negative enum sbx_rc. */
int exec_proc_wait(struct exec_proc *p, int64_t timeout_ms, int *ret_status);
/* SIGKILL and reap if still running; close fds. Returns NULL. */
struct exec_proc *exec_proc_free(struct exec_proc *p);

/* Run argv (absolute path in argv[0]) with an empty environment to the end
 * or the deadline, capturing stdout and stderr together into out. */
int exec_capture(const char *const *argv, int64_t timeout_ms, char *out, size_t out_len,
        int *ret_status, struct sbx_error **err);

#endif
