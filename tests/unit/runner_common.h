/* SPDX-License-Identifier: MIT */
/*
 * runner_common.h: what the local jails' runner tests share (static, one
 * copy per test program): a stand-in for the agent (a real process, so a
 * pidfd can be opened on it and a kill reach it), a policy and a box spec,
 * and the host layout the translators see.
 */
#ifndef SBX_TEST_RUNNER_COMMON_H
#define SBX_TEST_RUNNER_COMMON_H

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llm-sandbox/plugin.h>

#include "localjail.h"

static const char *const runner_env[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", NULL};

/* A child that waits to be killed. */
static inline pid_t agent_stand_in(void)
{
    pid_t p = fork();

    if (p == 0)
        for (;;)
            pause();
    return p;
}

/* Was p killed by SIGKILL (reaped here)? */
static inline int killed(pid_t p)
{
    int status = 0;

    return waitpid(p, &status, 0) == p && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static inline struct sbx_policy runner_policy(void)
{
    struct sbx_policy p;

    memset(&p, 0, sizeof(p));
    p.size = sizeof(p);
    p.network = SBX_NET_OFF;
    p.wall_time_ms = 30000;
    p.memory_bytes = 256u << 20;
    p.cpu_millicores = 1000;
    p.pids_max = 64;
    p.output_bytes = 1u << 20;
    p.file_size_bytes = 64u << 20;
    p.workspace_bytes = 128u << 20;
    p.tmpfs_bytes = 128u << 20;
    p.open_files_max = 256;
    p.read_only_system = 1;
    return p;
}

static inline struct sbx_box_spec runner_spec(const struct sbx_policy *p)
{
    struct sbx_box_spec s;

    memset(&s, 0, sizeof(s));
    s.size = sizeof(s);
    s.policy = p;
    s.id = "p1t2h0000000000000003-7";
    s.language = "python";
    s.envp = runner_env;
    s.cancel_fd = -1;
    return s;
}

/* A merged-/usr host. */
static inline void runner_tops(struct jail_tops *t)
{
    static const struct jail_top merged[] = {{"/bin", "usr/bin"}, {"/sbin", "usr/sbin"},
            {"/lib", "usr/lib"}, {"/lib64", "usr/lib64"}};

    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < 4; i++)
        t->top[i] = merged[i];
    t->n = 4;
}

#endif
