/* SPDX-License-Identifier: MIT */
/*
 * agentc.h: the host side of the agent protocol (core/agent/proto.h),
 * spoken over any backend's box channel. It stages files, runs one exec at
 * a time, feeds stdin, captures output with per-stream caps while the
 * program keeps running, and watches a deadline and a cancellation fd.
 * Backend-neutral: it knows the channel only through sbx_backend_ops.
 */
#ifndef SBX_AGENTC_H
#define SBX_AGENTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

#include "base/dynbuf.h"

/* Output of one stream: the first `cap` bytes kept, everything counted. */
struct capture {
    struct dynbuf buf;
    uint64_t total;
    bool truncated;
};

struct agentc_sink {
    struct capture out, err;
    void (*on_output)(void *userdata, enum sbx_stream stream, const char *buf, size_t len);
    void *userdata;
};

enum agentc_end {
    AGENTC_EXITED = 0,    /* the exec ended; see struct agentc_exit */
    AGENTC_TIMEOUT = 1,   /* the deadline passed first */
    AGENTC_CANCELLED = 2, /* the cancel fd fired first */
    AGENTC_LOST = 3,      /* the channel ended or broke (box died, OOM of pid 1, ...) */
    AGENTC_MARKED = 4,    /* agentc_converse: the program said the input was handled */
};

struct agentc_exit {
    bool signaled;
    int code;       /* exit code, or signal number */
    uint32_t flags; /* enum agent_exit_flags */
};

struct agentc;

/* Wrap a box's channel; no I/O yet. cancel_fd may be -1. (transfer full) */
struct agentc *agentc_new(const struct sbx_backend_ops *ops, void *box, int cancel_fd);
struct agentc *agentc_free(struct agentc *ac);
/* A one-line description of what went wrong last (protocol errors, agent
 * ERROR frames). (transfer none) */
const char *agentc_last_error(const struct agentc *ac);

/* Wait for READY. 0, or an enum agentc_end > 0 when it did not come. */
int agentc_hello(struct agentc *ac, int64_t deadline_ms);
/* Stage one file beneath the workspace. 0, > 0 (enum agentc_end), or
 * SBX_E_IO when the agent refused it (agentc_last_error says why). */
int agentc_put(struct agentc *ac, const char *path, uint32_t mode, const void *data, size_t len,
        int64_t deadline_ms);
/* agentc_put with flags: AGENTC_PUT_REPLACE overwrites an existing regular
 * file (a session's files), AGENTC_PUT_TMP puts it beneath the sandbox's
 * /tmp instead of the workspace (a language's support files). */
enum { AGENTC_PUT_REPLACE = 1u << 0, AGENTC_PUT_TMP = 1u << 1 };
int agentc_put_file(struct agentc *ac, const char *path, uint32_t mode, const void *data,
        size_t len, unsigned flags, int64_t deadline_ms);
/* One resource limit for the agent to apply (enum agent_rlimit). */
struct agentc_limit {
    uint32_t resource;
    uint64_t value;
};
/* Have the agent lower its limits, inherited by every later exec. 0, > 0
 * (enum agentc_end), or SBX_E_IO when the agent refused. */
int agentc_limits(
        struct agentc *ac, const struct agentc_limit *lims, size_t n, int64_t deadline_ms);
/* Have the agent apply the core's seccomp policy (a BPF program of len
 * bytes) to every later exec, with no_new_privs and no capabilities: for a
 * backend that applies none itself. 0, > 0 (enum agentc_end), or SBX_E_IO
 * when the agent refused. */
int agentc_filter(struct agentc *ac, const void *bpf, size_t len, int64_t deadline_ms);
/* Have the agent relay 127.0.0.1:port in the box to the unix socket at
 * path (the filtering proxy). 0, > 0 (enum agentc_end), or SBX_E_IO. */
int agentc_relay(struct agentc *ac, uint16_t port, const char *path, int64_t deadline_ms);
/* Fetch a regular file of the workspace, at most max bytes. 0 and the
 * data (transfer full, NUL-terminated), > 0 (enum agentc_end), or SBX_E_IO
 * when the agent refused (agentc_last_error says why). */
int agentc_get(struct agentc *ac, const char *path, size_t max, char **ret_data, size_t *ret_len,
        uint32_t *ret_mode, int64_t deadline_ms);
/* The regular files beneath a directory of the workspace, recursively,
 * as paths relative to it (NULL-terminated; transfer full). 0, > 0 (enum
 * agentc_end), or SBX_E_IO when the agent refused. */
int agentc_list(struct agentc *ac, const char *path, char ***ret_files, int64_t deadline_ms);
/* agentc_list with each file's size and modification time. */
struct agentc_entry {
    char *path;
    uint64_t size;
    uint64_t mtime_ns;
};
int agentc_list_stat(struct agentc *ac, const char *path, struct agentc_entry **ret, size_t *ret_n,
        int64_t deadline_ms);
void agentc_entries_free(struct agentc_entry *e, size_t n);
/* Run argv with env in the workspace, feed stdin (NULL: empty), collect
 * output into sink until it exits or the deadline/cancel. Returns an enum
 * agentc_end, or a negative enum sbx_rc on a refused EXEC. */
int agentc_exec(struct agentc *ac, char *const *argv, char *const *envp, const char *stdin_data,
        size_t stdin_len, int64_t deadline_ms, struct agentc_sink *sink,
        struct agentc_exit *ret_exit);
/* A zygote box (core/agent/proto.h), in agentc_zygote.c. Each returns 0,
 * or a negative enum sbx_rc / enum agentc_end with agentc_last_error
 * saying why.
 * agentc_zygote: start its zygote.
 * agentc_prep: the zygote forks and isolates the next run's child (a
 * refused PREP, no child, is SBX_E_BACKEND); hold: it waits for
 * agentc_go before its cgroup namespace, capabilities and filter, so that
 * *ret_pid (its pid as the box sees it) can be moved into a cgroup first.
 * agentc_go: a held child takes its last steps (their failure is
 * SBX_E_BACKEND: no child).
 * agentc_fork: run a program in the prepared child, as agentc_exec (a
 * refused FORK, SBX_E_BACKEND, ran nothing of it).
 * agentc_fresh: a fresh workspace for the next run (before its PREP). */
int agentc_zygote(struct agentc *ac, char *const *argv, char *const *envp, int64_t deadline_ms);
int agentc_prep(struct agentc *ac, bool hold, int64_t deadline_ms, int32_t *ret_pid);
int agentc_go(struct agentc *ac, int64_t deadline_ms);
int agentc_fork(struct agentc *ac, char *const *argv, char *const *envp, const char *stdin_data,
        size_t stdin_len, int64_t deadline_ms, struct agentc_sink *sink,
        struct agentc_exit *ret_exit);
int agentc_fresh(struct agentc *ac, int64_t deadline_ms);
/* Ask the agent to end everything and exit (best effort, no wait). */
void agentc_quit(struct agentc *ac);

/*
 * A long-lived exec (a session's interpreter, speaking the protocol of
 * langs/<name>/session.*): started once with a stdin pipe, then fed one
 * request at a time; it ends each by writing head, three decimal digits
 * (a status) and BEL to stdout and to stderr. Output between requests is
 * dropped by the other calls, and its exit noted (agentc_take_idle_exit).
 */
#define AGENTC_MARK_HEAD_MAX 64
/* The cancel fds for the calls that follow (-1: none); either cancels. */
void agentc_set_cancel(struct agentc *ac, int cancel_fd, int cancel_fd2);
/* Start it: 0 once it runs; AGENTC_EXITED when it could not start
 * (ret_exit, and the agent's message in sink); another enum agentc_end; or
 * a negative enum sbx_rc on a refused EXEC. */
int agentc_start(struct agentc *ac, char *const *argv, char *const *envp, int64_t deadline_ms,
        struct agentc_sink *sink, struct agentc_exit *ret_exit);
/* Send data to its stdin and collect output (without the markers) into
 * sink: AGENTC_MARKED with the status once both streams carried the
 * marker; AGENTC_EXITED (ret_exit) if it ended first; another enum
 * agentc_end; or a negative enum sbx_rc. head: at most
 * AGENTC_MARK_HEAD_MAX bytes, its first byte nowhere else in it. */
int agentc_converse(struct agentc *ac, const char *head, const void *data, size_t len,
        int64_t deadline_ms, struct agentc_sink *sink, int *ret_status,
        struct agentc_exit *ret_exit);
/* Feed stdin_data and its end to an exec that agentc_start started, and
 * collect its output until it exits (AGENTC_EXITED, ret_exit), the
 * deadline or the cancellation: the rest of agentc_exec. */
int agentc_finish(struct agentc *ac, const char *stdin_data, size_t stdin_len, int64_t deadline_ms,
        struct agentc_sink *sink, struct agentc_exit *ret_exit);
/* SIGKILL every process of the current exec and wait for its end
 * (AGENTC_EXITED), collecting its last output into sink. */
int agentc_kill(struct agentc *ac, int64_t deadline_ms, struct agentc_sink *sink,
        struct agentc_exit *ret_exit);
/* Did a long-lived exec end while no call waited for it? (clears it) */
bool agentc_take_idle_exit(struct agentc *ac);

/* Add output to a sink as if the program had written it (replaying a
 * cached build's diagnostics). */
void agentc_sink_write(struct agentc_sink *s, enum sbx_stream stream, const void *data, size_t len);

void capture_init(struct capture *c, size_t cap);
void capture_done(struct capture *c);

#endif
