/* SPDX-License-Identifier: MIT */
/*
 * localjail.h: host-side helpers shared by the local namespace backends
 * (bwrap, nsjail): finding their tools, the host's merged-/usr layout and
 * the translators' common input, user-mode networking with pasta, the
 * probe's trial box and common capabilities (a box's life: jailbox.h).
 * Compiled into
 * each plugin that uses it (a plugin links no core symbol); everything that
 * supervises processes still goes through the core's host table.
 */
#ifndef SBX_LOCALJAIL_H
#define SBX_LOCALJAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/plugin_kit.h>

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

/* What a local jail's translator needs of the box spec and the host, the
 * same for bwrap and nsjail (each translator's input adds its fds). */
struct jail_input {
    const struct sbx_policy *policy;
    const struct jail_top *tops; /* the merged-usr entries present on the host */
    size_t n_tops;
    const char *const *ro_paths;    /* language host paths, NULL-terminated or NULL */
    const struct sbx_mount *mounts; /* the core's directories (dependency sets) */
    size_t n_mounts;
    const char *proxy_socket;          /* network registries/allowlist: the core's proxy */
    const char *const *envp;           /* the agent's environment, NULL-terminated */
    uint32_t sandbox_uid, sandbox_gid; /* ids inside the sandbox: 1000 */
    bool zygote;                       /* ABI 1.6: SBX_BOX_ZYGOTE (plugin.h) */
};

struct jail_tops {
    struct jail_top top[JAIL_MAX_TOPS];
    char store[JAIL_MAX_TOPS][2][32];
    size_t n;
};

/* The translator's input from a box spec (its ABI 1.2 fields only when
 * the core filled them in) and the host's tops. */
void jail_input_init(
        struct jail_input *in, const struct sbx_box_spec *spec, const struct jail_tops *tops);

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

/* The box's own host ids (spec host_uid, ABI 1.5) into a spawn of its
 * launcher or helpers; left 0 (sandbox_ids') when the core gave none. */
void jail_spawn_ids(const struct sbx_box_spec *spec, struct sbx_spawn *sp);

/* Attach pasta (user-mode NAT, no port forwarding either way, no access to
 * the host's loopback) to the network namespace of process pid, run as the
 * box's host uid (jail_spawn_ids) in cgroup cg, and wait (at most 5 s) until it has configured
 * the namespace. *ret_pasta is the running pasta (kill and free it with the
 * box). */
int jail_attach_pasta(const struct sbx_host *h, const char *pasta, int pid,
        const struct sbx_box_spec *spec, struct sbx_cgroup *cg, struct sbx_proc **ret_pasta,
        struct sbx_err *err);

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

#endif
