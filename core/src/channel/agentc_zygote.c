/* SPDX-License-Identifier: MIT */
/*
 * agentc_zygote.c: the host's side of a zygote box (core/agent/proto.h:
 * EXEC with AGENT_EXEC_ZYGOTE, PREP, GO, FORK, FRESH): start the zygote,
 * have it prepare the next run's child, run one program in that child,
 * replace the workspace between runs. Decides
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

int agentc_zygote(struct agentc *ac, char *const *argv, char *const *envp, int64_t deadline_ms)
{
    if (agentc_queue_run(ac, AGENT_EXEC, AGENT_EXEC_ZYGOTE, argv, envp) < 0)
        return agentc_lost(ac, "%s", "the zygote's command is too large for the sandbox agent");
    return plain_reply(ac, "the zygote did not start", deadline_ms);
}

int agentc_prep(struct agentc *ac, bool hold, int64_t deadline_ms, int32_t *ret_pid)
{
    unsigned char flags[4];
    int r;

    agent_put_u32(flags, hold ? AGENT_PREP_HOLD : 0);
    if (agentc_queue_frame(ac, AGENT_PREP, 0, flags, sizeof(flags), NULL, 0) < 0)
        return agentc_lost(ac, "%s", "cannot queue a prepared child");
    r = plain_reply(ac, "no child for the next run", deadline_ms);
    if (r != 0)
        return r;
    if (ac->hdr.len < 8 || agent_get_u32(ac->payload + 4) != (hold ? 1u : 0u))
        return agentc_lost(ac, "%s", "the sandbox agent's child is not held as asked");
    *ret_pid = (int32_t)agent_get_u32(ac->payload);
    return 0;
}

int agentc_go(struct agentc *ac, int64_t deadline_ms)
{
    if (agentc_queue_frame(ac, AGENT_GO, 0, NULL, 0, NULL, 0) < 0)
        return agentc_lost(ac, "%s", "cannot queue the go");
    return plain_reply(ac, "the held child", deadline_ms);
}

int agentc_fork(struct agentc *ac, char *const *argv, char *const *envp, const char *stdin_data,
        size_t stdin_len, int64_t deadline_ms, struct agentc_sink *sink,
        struct agentc_exit *ret_exit)
{
    if (agentc_queue_run(ac, AGENT_FORK, stdin_data ? AGENT_EXEC_STDIN_PIPE : 0, argv, envp) < 0)
        return agentc_lost(ac, "%s", "the command is too large for the sandbox agent");
    return agentc_finish(ac, stdin_data, stdin_len, deadline_ms, sink, ret_exit);
}

int agentc_fresh(struct agentc *ac, int64_t deadline_ms)
{
    if (agentc_queue_frame(ac, AGENT_FRESH, 0, NULL, 0, NULL, 0) < 0)
        return agentc_lost(ac, "%s", "cannot queue a fresh workspace");
    return plain_reply(ac, "no fresh workspace", deadline_ms);
}
