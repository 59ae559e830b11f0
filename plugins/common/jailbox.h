/* SPDX-License-Identifier: MIT */
/*
 * jailbox.h: a local jail's box, as bwrap and nsjail share it: a launcher
 * (the jail tool) whose stdin and stdout are the agent's channel and whose
 * stderr carries diagnostics, the run's cgroup, and pasta for network
 * "on". Each backend's box begins with struct jail_box and says, in a
 * struct jail_kind, how its launcher is killed and what it says when it
 * fails; opening a box that fails and closing a box are then one path for
 * both (jailbox.c). Compiled into each plugin; every process and cgroup
 * still goes through the core's host table.
 */
#ifndef SBX_JAILBOX_H
#define SBX_JAILBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/plugin_kit.h>

/* Read what is left on a jail's stderr (non-blocking fd) into out as one
 * line: newlines become "; ", lines containing `drop` are left out. */
void jail_read_diag(int fd, const char *drop, char *out, size_t len);
/* jail_read_diag() to the end of the stream (at most 1 MiB), handing each
 * line to stats_line first: a line it takes (returns nonzero) is left out. */
void jail_read_diag_stats(int fd, const char *drop,
        int (*stats_line)(const char *line, struct sbx_box_stats *stats),
        struct sbx_box_stats *stats, char *out, size_t len);

/* The channel of a jail whose launcher hands its stdin and stdout to the
 * agent unchanged, and whose stderr carries diagnostics. It is the first
 * member of struct jail_box, itself the first of each such plugin's box,
 * so the accessors below serve as the box_poll_fd, box_write_fd, box_read
 * and box_write operations of any. */
struct jail_chan {
    int rfd, wfd, efd; /* the launcher's stdout, stdin and stderr pipes, or -1 */
};

/* Take the three pipes of a launcher spawned with SBX_FD_PIPE for each,
 * non-blocking. */
void jail_chan_take(const struct sbx_host *h, struct sbx_proc *p, struct jail_chan *c);
/* Close what is still open (stdin first ends the agent: it exits). */
void jail_chan_close(struct jail_chan *c);
int jail_box_poll_fd(void *box);
int jail_box_write_fd(void *box);
int64_t jail_box_read(void *box, void *buf, size_t len);
int64_t jail_box_write(void *box, const void *buf, size_t len);

/* The run's cgroup, or *ret_cg NULL where this host has none (rlimits stand
 * in, as the capability report says). */
int jail_cgroup_new(const struct sbx_host *h, const struct sbx_box_spec *spec,
        struct sbx_cgroup **ret_cg, struct sbx_err *err);

/* The part of a box every local jail has; first in each plugin's box. */
struct jail_box {
    struct jail_chan chan; /* first: the channel accessors use it */
    const struct sbx_host *h;
    struct sbx_proc *proc;  /* the launcher, or NULL before it was spawned */
    struct sbx_cgroup *cg;  /* or NULL: no cgroups here */
    struct sbx_proc *pasta; /* network on, or NULL */
};

/* A box with nothing open yet, for host h. */
void jail_box_init(struct jail_box *b, const struct sbx_host *h);

/* How one launcher ends and speaks. */
struct jail_kind {
    const char *launcher; /* "bwrap", in logs */
    const char *noise;    /* leave diagnostic lines holding this out, or NULL */
    /* After kill(): how long the launcher may take to end before it and the
     * cgroup get SIGKILL (nsjail ends its sandbox on SIGTERM); 0: at once. */
    int64_t term_grace_ms;
    int (*kill)(void *box); /* the backend's box_kill */
    int (*close)(void *box, struct sbx_box_stats *stats, struct sbx_err *err); /* box_close */
    /* Once the launcher exited: wait for what it leaves behind, or NULL. */
    void (*reap)(struct jail_box *b);
    /* The launcher exited with a non-zero status: its own error out of its
     * diagnostics (one line, edited in place) into err, or 0 when they hold
     * none. */
    int (*diag_error)(char *diag, struct sbx_err *err);
    /* A line of the launcher's diagnostics that reports the box's stats
     * (the WSL2 opener's cgroup, not ours): 1 when it was one (read into
     * stats, left out of the diagnostics), else 0; or NULL. */
    int (*stats_line)(const char *line, struct sbx_box_stats *stats);
};

/* bwrap's kinds (plugins/bwrap/run.c, and plugins/wsl2/run_win.c on
 * Windows): bwrap's own message ("bwrap: ...") or the WSL2 opener's is
 * the launcher's error; the opener's last line, "sbx-wsl2-stats
 * oom_killed=N pids_limited=N", reports the box's cgroup in the
 * distribution. */
int jail_bwrap_diag_error(char *diag, struct sbx_err *err);
int jail_wsl_stats_line(const char *line, struct sbx_box_stats *stats);

/* End the box: end of input (the agent kills everything and exits), wait
 * up to 2 s for the launcher, then kill as the kind says; log the
 * launcher's diagnostics at debug level; read the cgroup's stats into
 * stats and free it, pasta, the launcher and the channel. 0, or the
 * launcher's own error. b itself is the caller's to free. */
int jail_box_close(struct jail_box *b, const struct jail_kind *k, struct sbx_box_stats *stats,
        struct sbx_err *err);

/* An open that failed with r (err filled): kill and close the box through
 * the kind's operations (freeing it); the launcher's own message, when it
 * gave one, replaces ours. Returns r. */
int jail_box_open_failed(void *box, const struct jail_kind *k, int r, struct sbx_err *err);

#endif
