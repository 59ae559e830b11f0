/* SPDX-License-Identifier: MIT */
/*
 * fakehost.h: a host table (struct sbx_host) for driving a backend's
 * runner without the core or a real jail tool: every call the runner makes
 * is written to a transcript, and the launcher it spawns is played from a
 * script (what the agent says on stdout, what the launcher says on stderr
 * and on an extra fd, how each wait ends). The tests compare transcripts
 * with golden files (tests/golden/runner/, SBX_UPDATE_GOLDEN=1 rewrites
 * them), beside the suites that run the real tools.
 */
#ifndef SBX_TEST_FAKEHOST_H
#define SBX_TEST_FAKEHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <llm-sandbox/plugin.h>

/* A host operation a script makes fail (SBX_E_UNAVAILABLE). */
enum fake_fail { FAKE_FAIL_NONE, FAKE_FAIL_AGENT_FD, FAKE_FAIL_SPAWN };

/* What the spawned launcher does, and how its waits end. */
struct fake_script {
    const char *agent_says;    /* written to the launcher's stdout at once, or NULL */
    const char *launcher_says; /* written to its stderr at once, or NULL */
    int child_fd;              /* the launcher writes child_fd_data to this child fd, or 0 */
    const char *child_fd_data;
    const int *waits; /* proc_wait answers in order: 1 exited, 0 still running */
    size_t n_waits;   /* after them: exited */
    int exit_status;  /* the wait status once exited */
    pid_t agent;      /* a real process standing for the agent, killed when the launcher ends */
    enum fake_fail fail;
    int oom_killed, pids_limited; /* what the cgroup says */
};

/* The host table for one test; the script is borrowed. */
const struct sbx_host *fake_host_new(const struct fake_script *script);
/* What the launcher read on its stdin so far (what the box wrote). */
const char *fake_host_stdin(void);
/* The transcript so far. */
const char *fake_host_transcript(void);
void fake_host_free(void);

/* Compare the transcript with tests/golden/runner/NAME.txt (fails the
 * test with both when they differ). */
void fake_host_check_golden(const char *name);

#endif
