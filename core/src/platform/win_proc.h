/* SPDX-License-Identifier: MIT */
/*
 * win_proc.h: process spawning on Windows (issue 28's platform layer),
 * what host/exec.c is on Linux. A child is created suspended with an
 * explicit, quoted command line (cmdline.h), exactly the environment and
 * standard handles the spec names and no other inherited handle, put in
 * its own Job Object, then resumed: so everything it starts is in the job,
 * a kill ends the whole tree at once, the job's limits (memory, active
 * processes) hold for the tree, and the tree dies with the job's last
 * handle if the core dies. Windows-only; compiled only by the Windows
 * build, checked under wine by tests/windows/proc_check.c.
 */
#ifndef SBX_PLATFORM_WIN_PROC_H
#define SBX_PLATFORM_WIN_PROC_H

#include <stdint.h>

#include <llm-sandbox/plugin.h>

#include "base/error.h"

/* The job's limits for the whole tree; 0: none. */
struct win_limits {
    uint64_t memory_bytes; /* committed memory of all its processes together */
    uint32_t pids_max;     /* processes alive at once */
};

struct win_proc;

/* Start spec->path with spec->argv and exactly spec->envp. Standard
 * streams: an fd, SBX_FD_NULL (NUL) or SBX_FD_PIPE. Returns 0, or
 * SBX_E_UNSUPPORTED for what Windows cannot do here (extra fds, a cgroup,
 * SBX_SPAWN_DROP_PRIVS, SBX_SPAWN_NO_NEW_PRIVS), SBX_E_INVALID (a
 * command line cmdline.h refuses, text that is not UTF-8),
 * SBX_E_UNAVAILABLE (no such program), SBX_E_BACKEND (a Job Object call
 * failed: the child is killed before it ran), SBX_E_NOMEM. lim may be
 * NULL. (transfer full: *ret, free with win_proc_free) */
int win_proc_spawn(const struct sbx_spawn *spec, const struct win_limits *lim,
        struct win_proc **ret, struct sbx_error **err);
uint32_t win_proc_pid(const struct win_proc *p);
/* The parent end of the pipe made for child fd 0, 1 or 2, as a C runtime
 * fd, or -1. (transfer full: the caller closes it) */
int win_proc_take_fd(struct win_proc *p, int child_fd);
/* Wait for the program itself: 1 and *ret_exit_code when it exited, 0 on
 * timeout (timeout_ms < 0: no timeout), SBX_E_BACKEND. */
int win_proc_wait(struct win_proc *p, int64_t timeout_ms, uint32_t *ret_exit_code);
/* End the whole tree at once (TerminateJobObject), every process with
 * exit_code. 0 or SBX_E_BACKEND. */
int win_proc_kill(struct win_proc *p, uint32_t exit_code);
/* Processes of the tree still alive, or a negative enum sbx_rc. */
int win_proc_alive(const struct win_proc *p);
/* Kill what still runs, close every handle. Returns NULL. */
struct win_proc *win_proc_free(struct win_proc *p);

#endif
