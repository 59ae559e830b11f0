/* SPDX-License-Identifier: MIT */
/*
 * localjail.h: host-side helpers shared by the local namespace backends
 * (bwrap, nsjail): finding their tools, the host's merged-/usr layout,
 * user-mode networking with pasta, and a jail's diagnostics. Compiled into
 * each plugin that uses it (a plugin links no core symbol); everything that
 * supervises processes still goes through the core's host table.
 */
#ifndef SBX_LOCALJAIL_H
#define SBX_LOCALJAIL_H

#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/plugin.h>

/* A top-level host entry (/bin, /lib, ...): a symlink to recreate, or a
 * directory to bind read-only. */
struct jail_top {
    const char *name;   /* "/bin" */
    const char *target; /* "usr/bin" when a symlink, NULL when a directory */
};

/* The generated /etc files of every local jail: uid and gid 1000 inside. */
#define JAIL_PASSWD                                                                                \
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"                                                    \
    "sandbox:x:1000:1000:sandbox:/tmp:/bin/sh\n"                                                   \
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
#define JAIL_GROUP "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"
#define JAIL_HOSTS "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n"

/* The /etc files runtimes need, bound read-only one by one when present
 * (never /etc as a whole). */
#define JAIL_ETC_FILES                                                                             \
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",                  \
            "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/protocols",             \
            "/etc/services", "/etc/mime.types", "/etc/os-release", "/etc/nsswitch.conf"

#define JAIL_MAX_TOPS 8

struct jail_tops {
    struct jail_top top[JAIL_MAX_TOPS];
    char store[JAIL_MAX_TOPS][2][32];
    size_t n;
};

/* The tool named by the plugin setting `setting` (an absolute path), else
 * NAME in the default PATH's directories (/usr/local/sbin, /usr/local/bin,
 * /usr/sbin, /usr/bin, /sbin, /bin). True when out names an executable;
 * out is "" or the configured value otherwise. */
bool jail_find_tool(
        const struct sbx_host *h, const char *setting, const char *name, char *out, size_t len);

/* The merged-/usr symlinks (or the directories, on hosts without it). */
void jail_inspect_tops(struct jail_tops *t);

/* Can the sandbox uid open /dev/net/tun (pasta needs it)? */
bool jail_tun_usable(const struct sbx_host *h);

/* Attach pasta (user-mode NAT, no port forwarding either way, no access to
 * the host's loopback) to the network namespace of process pid, run as the
 * sandbox uid in cgroup cg, and wait (at most 5 s) until it has configured
 * the namespace. *ret_pasta is the running pasta (kill and free it with the
 * box). */
int jail_attach_pasta(const struct sbx_host *h, const char *pasta, int pid, const char *const *envp,
        struct sbx_cgroup *cg, struct sbx_proc **ret_pasta, struct sbx_err *err);

/* Read what is left on a jail's stderr (non-blocking fd) into out as one
 * line: newlines become "; ", lines containing `drop` are left out. */
void jail_read_diag(int fd, const char *drop, char *out, size_t len);

/* The channel of a jail whose launcher hands its stdin and stdout to the
 * agent unchanged, and whose stderr carries diagnostics. It is the first
 * member of each such plugin's box, so the accessors below serve as the
 * box_poll_fd, box_write_fd, box_read and box_write operations of any. */
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

/* A probe's proof: open a real box with a small policy through ops, wait
 * for the agent's first byte, close it. The jail's own words on failure. */
int jail_trial_box(const struct sbx_backend_ops *ops, void *state, const struct sbx_host *h,
        struct sbx_err *err);

/* The controls every local jail enforces alike: output, file size, the
 * tmpfs workspace, and the network modes (on only with pasta and a usable
 * /dev/net/tun; the filtering proxy modes not yet). */
void jail_common_caps(struct sbx_caps *caps, const char *pasta, bool tun_ok);

/* The parent of process pid, from /proc/PID/stat, or -1. */
int jail_parent_of(int pid);

/* Set one control's level and note. */
void jail_cap(struct sbx_caps *c, enum sbx_control ctl, enum sbx_enforce lvl, const char *note);

/* Fill err (if not NULL) and return rc. */
int jail_fail(struct sbx_err *err, int rc, int sys_errno, const char *fmt, ...) SBX_PRINTF(4, 5);

#endif
