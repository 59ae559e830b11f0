/* SPDX-License-Identifier: MIT */
/*
 * agentc_zygote.c: the host's side of a zygote box (core/agent/proto.h:
 * EXEC with AGENT_EXEC_ZYGOTE, FORK, FRESH): start the zygote, run one
 * program forked from it, replace the workspace between runs. Decides
 * nothing: pool.c and runtime/run.c say when. Errors: agentc.h.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "channel/agentc.h"
#include "channel/agentc_int.h"
#include "proto.h"

/* OK or ERROR (what, with the agent's message) to the request just sent. */
static int plain_reply(struct agentc *ac, const char *what, int64_t deadline_ms)
{
    int r = agentc_next_reply(ac, deadline_ms);

    if (r != GOT_FRAME)
        return r;
    if (ac->hdr.type == AGENT_ERROR) {
        agentc_take_error(ac, what);
        return SBX_E_BACKEND;
    }
    return ac->hdr.type == AGENT_OK ? 0 : agentc_lost(ac, "unexpected reply to %s", what);
}

int agentc_zygote(struct agentc *ac, char *const *argv, char *const *envp, int64_t deadline_ms,
        int32_t *ret_pid)
{
    int r;

    if (agentc_queue_run(ac, AGENT_EXEC, AGENT_EXEC_ZYGOTE, argv, envp) < 0)
        return agentc_lost(ac, "%s", "the zygote's command is too large for the sandbox agent");
    r = plain_reply(ac, "the zygote did not start", deadline_ms);
    if (r == 0)
        *ret_pid = ac->hdr.len >= 4 ? (int32_t)agent_get_u32(ac->payload) : 0;
    return r;
}

/* A held child (AGENT_FORK_HOLD): its STARTED, then hold() places it and
 * GO lets it run; when hold() fails it is killed before a line of the
 * program ran, and the fork was refused (SBX_E_BACKEND). */
static int fork_release(struct agentc *ac, agentc_hold_fn hold, void *userdata, int64_t deadline_ms,
        struct agentc_sink *sink, struct agentc_exit *ret_exit)
{
    char why[sizeof(ac->error)];
    int r;

    for (;;) {
        r = agentc_next_frame(ac, deadline_ms);
        if (r != GOT_FRAME)
            return r;
        r = agentc_exec_frame(ac, sink, ret_exit);
        if (r == GOT_START)
            break;
        if (r != GOT_FRAME)
            return r;
    }
    if (ac->hdr.len < 4)
        return agentc_lost(ac, "%s", "the sandbox agent sent a short STARTED");
    why[0] = '\0';
    if (hold(userdata, (int32_t)agent_get_u32(ac->payload), why, sizeof(why)) < 0) {
        r = agentc_kill(ac, deadline_ms, sink, ret_exit);
        if (r != AGENTC_EXITED)
            return r;
        snprintf(ac->error, sizeof(ac->error), "%s", why[0] ? why : "the run was not placed");
        return SBX_E_BACKEND;
    }
    if (agentc_queue_frame(ac, AGENT_GO, 0, NULL, 0, NULL, 0) < 0)
        return agentc_lost(ac, "%s", "cannot queue the go");
    return GOT_FRAME;
}

int agentc_fork(struct agentc *ac, char *const *argv, char *const *envp, const char *stdin_data,
        size_t stdin_len, int64_t deadline_ms, struct agentc_sink *sink,
        struct agentc_exit *ret_exit, agentc_hold_fn hold, void *userdata)
{
    uint32_t flags = (stdin_data ? AGENT_EXEC_STDIN_PIPE : 0) | (hold ? AGENT_FORK_HOLD : 0);

    if (agentc_queue_run(ac, AGENT_FORK, flags, argv, envp) < 0)
        return agentc_lost(ac, "%s", "the command is too large for the sandbox agent");
    if (hold) {
        int r = fork_release(ac, hold, userdata, deadline_ms, sink, ret_exit);

        if (r != GOT_FRAME)
            return r;
    }
    return agentc_finish(ac, stdin_data, stdin_len, deadline_ms, sink, ret_exit);
}

int agentc_fresh(struct agentc *ac, int64_t deadline_ms)
{
    if (agentc_queue_frame(ac, AGENT_FRESH, 0, NULL, 0, NULL, 0) < 0)
        return agentc_lost(ac, "%s", "cannot queue a fresh workspace");
    return plain_reply(ac, "no fresh workspace", deadline_ms);
}
