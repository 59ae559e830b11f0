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

/* Fill err (if not NULL) and return rc. */
int jail_fail(struct sbx_err *err, int rc, int sys_errno, const char *fmt, ...) SBX_PRINTF(4, 5);

#endif
