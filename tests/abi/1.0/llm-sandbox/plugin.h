/* SPDX-License-Identifier: MIT */
/*
 * llm-sandbox/plugin.h: the stable plugin ABI, installed for plugin authors.
 *
 * A plugin is a shared object plus a YAML manifest beside it. It exports one
 * symbol, sbx_plugin_entry_v1, returning a descriptor (struct sbx_plugin).
 * The core lends every plugin a host table (struct sbx_host): logging,
 * settings, supervised processes, cgroups, the seccomp policy, memfds. A
 * plugin links no core symbol and never frees what the core allocated, nor
 * the reverse.
 *
 * Versioning: SBX_ABI_MAJOR changes break; the core refuses another major.
 * SBX_ABI_MINOR changes only append fields at the end of structs; every
 * struct crossing the boundary starts with (or carries) its size, so each
 * side reads only what the other filled in. Plain C11, no attributes except
 * behind macros, C++-clean.
 */
#ifndef LLM_SANDBOX_PLUGIN_H
#define LLM_SANDBOX_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBX_ABI_MAJOR           1
#define SBX_ABI_MINOR           0
#define SBX_PLUGIN_ENTRY_SYMBOL "sbx_plugin_entry_v1"

#if defined(__GNUC__) || defined(__clang__)
#define SBX_EXPORT       __attribute__((visibility("default")))
#define SBX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SBX_EXPORT
#define SBX_PRINTF(f, a)
#endif

/*
 * Return codes, stable: numbers are never reused or renumbered. They say who
 * must act (STYLE E4). sbx_rc_str() in the core names each one.
 */
enum sbx_rc {
    SBX_OK = 0,
    SBX_E_INVALID = -1,     /* the caller sent something malformed */
    SBX_E_UNSUPPORTED = -2, /* valid, but cannot be enforced here: fail closed */
    SBX_E_UNAVAILABLE = -3, /* a tool, daemon or kernel feature is missing */
    SBX_E_BACKEND = -4,     /* the isolation mechanism failed mid-run */
    SBX_E_LIMIT = -5,       /* an internal cap was hit */
    SBX_E_ABI = -6,         /* plugin and core disagree on the ABI */
    SBX_E_NOMEM = -7,
    SBX_E_CANCELLED = -8,
    SBX_E_IO = -9,
    SBX_E_INTERNAL = -10, /* a bug */
};

/* Error report filled by a plugin; caller-owned, fixed buffers (STYLE E2). */
struct sbx_err {
    uint32_t size; /* sizeof(struct sbx_err) as the caller knows it */
    int32_t rc;    /* enum sbx_rc */
    int32_t sys_errno;
    char field[64]; /* the policy control or argument concerned, or "" */
    char msg[256];  /* one line, no trailing newline */
};

enum sbx_plugin_kind {
    SBX_KIND_BACKEND = 1,
    SBX_KIND_LANGUAGE = 2,
};

enum sbx_network {
    SBX_NET_OFF = 0,        /* empty network namespace */
    SBX_NET_REGISTRIES = 1, /* only the core's filtering proxy, registry hosts */
    SBX_NET_ALLOWLIST = 2,  /* only the core's filtering proxy, operator hosts */
    SBX_NET_ON = 3,         /* own namespace, user-mode NAT, no host loopback */
    SBX_NET_HOST = 4,       /* the host's network; operator override only */
};

/*
 * Policy controls, as bit numbers for capability reports. Append only.
 */
enum sbx_control {
    SBX_CTL_WALL_TIME = 0,
    SBX_CTL_MEMORY = 1,
    SBX_CTL_CPU = 2,
    SBX_CTL_PIDS = 3,
    SBX_CTL_OUTPUT = 4,
    SBX_CTL_FILE_SIZE = 5,
    SBX_CTL_WORKSPACE = 6,
    SBX_CTL_NET_OFF = 7,
    SBX_CTL_NET_REGISTRIES = 8,
    SBX_CTL_NET_ALLOWLIST = 9,
    SBX_CTL_NET_ON = 10,
    SBX_CTL_NET_HOST = 11,
    SBX_CTL_READ_ONLY_SYSTEM = 12,
    SBX_CTL_ENV = 13,          /* environment is exactly what the core passes */
    SBX_CTL_SECCOMP = 14,      /* the core's seccomp policy is applied */
    SBX_CTL_NO_NEW_PRIVS = 15, /* no_new_privs and no capabilities */
    SBX_CTL_UNPRIVILEGED = 16, /* code never runs as host uid 0 */
    SBX_CTL_COUNT = 17,
};
#define SBX_CTL_MAX 32 /* room in struct sbx_caps; SBX_CTL_COUNT <= SBX_CTL_MAX */

enum sbx_enforce {
    SBX_ENF_NONE = 0,     /* cannot enforce here: a request for it is refused */
    SBX_ENF_FALLBACK = 1, /* enforced by a weaker mechanism (e.g. an rlimit) */
    SBX_ENF_FULL = 2,
};

/* What a backend can enforce on this host right now, found by trying. */
struct sbx_caps {
    uint32_t size;
    uint8_t level[SBX_CTL_MAX];  /* enum sbx_enforce, by enum sbx_control */
    char note[SBX_CTL_MAX][120]; /* the mechanism, or why not */
};

/*
 * The resolved policy. Every limit is set (0 means "no limit" only where the
 * core's policy says so, e.g. cpu_millicores on request of the operator).
 */
struct sbx_policy {
    uint32_t size;
    uint32_t network; /* enum sbx_network */
    uint64_t wall_time_ms;
    uint64_t memory_bytes;   /* RAM and swap together */
    uint64_t cpu_millicores; /* 1000 = one core of quota */
    uint64_t pids_max;
    uint64_t output_bytes; /* per stream; the core enforces it */
    uint64_t file_size_bytes;
    uint64_t workspace_bytes; /* size of the writable workspace and /tmp */
    uint64_t open_files_max;
    uint32_t read_only_system; /* 1: nothing outside workspace and /tmp is writable */
    uint32_t reserved0;
};

/* ------------------------------------------------------------------------ */
/* Host services                                                             */
/* ------------------------------------------------------------------------ */

enum sbx_log_level {
    SBX_LOG_ERROR = 0,
    SBX_LOG_WARN = 1,
    SBX_LOG_INFO = 2,
    SBX_LOG_DEBUG = 3,
};

struct sbx_proc;   /* a supervised child process, owned by the core */
struct sbx_cgroup; /* a per-sandbox cgroup, owned by the core */

#define SBX_FD_NULL (-1) /* /dev/null */
#define SBX_FD_PIPE (-2) /* a pipe; the parent end is sbx_host.proc_fd() */

enum sbx_spawn_flags {
    SBX_SPAWN_DROP_PRIVS = 1u << 0, /* when the core runs as root: run as the sandbox uid */
    SBX_SPAWN_PDEATHSIG = 1u << 1,  /* SIGKILL the child if the core dies */
};

/* One fd the child receives: parent's fd, the number it has in the child. */
struct sbx_fd_map {
    int parent_fd;
    int child_fd;
};

struct sbx_spawn {
    uint32_t size;
    uint32_t flags;          /* enum sbx_spawn_flags */
    const char *path;        /* absolute path of the executable */
    const char *const *argv; /* NULL-terminated */
    const char *const *envp; /* NULL-terminated; exactly the child's environment */
    int stdin_fd;            /* an fd, SBX_FD_NULL or SBX_FD_PIPE; likewise below */
    int stdout_fd;
    int stderr_fd;
    const struct sbx_fd_map *fds; /* extra fds; every other fd is closed */
    size_t n_fds;
    struct sbx_cgroup *cgroup; /* join before exec, or NULL */
};

struct sbx_host {
    uint32_t size;
    uint32_t abi_minor;

    void (*log)(const struct sbx_host *h, int level, const char *fmt, ...) SBX_PRINTF(3, 4);
    /* A configuration value for this plugin ("path" -> LLM_SANDBOX_BWRAP_PATH
     * for plugin bwrap) from the environment, else the config file, or NULL.
     * (transfer none; valid while loaded) */
    const char *(*setting)(const struct sbx_host *h, const char *key);

    /* Processes. proc_spawn forks in the one place that forks (exec.c). */
    int (*proc_spawn)(const struct sbx_host *h, const struct sbx_spawn *spec,
            struct sbx_proc **ret_proc, struct sbx_err *err);
    int (*proc_pid)(const struct sbx_proc *p);
    /* The parent end of the pipe made for child fd 0, 1 or 2 (SBX_FD_PIPE).
     * (transfer full: the caller closes it; a second call returns -1) */
    int (*proc_fd)(struct sbx_proc *p, int child_fd);
    int (*proc_signal)(struct sbx_proc *p, int sig);
    /* Wait up to timeout_ms (-1: forever). 1 and *ret_status (a wait status)
     * when it exited, 0 on timeout, or a negative enum sbx_rc. */
    int (*proc_wait)(struct sbx_proc *p, int64_t timeout_ms, int *ret_status);
    void (*proc_free)(struct sbx_proc *p); /* SIGKILL and reap if running */
    /* Run argv to completion with a deadline, capturing up to out_len-1
     * bytes of stdout+stderr into out (NUL-terminated). For probes. */
    int (*run_capture)(const struct sbx_host *h, const char *const *argv, int64_t timeout_ms,
            char *out, size_t out_len, int *ret_status, struct sbx_err *err);

    /* Cgroups: created, limited, joined by proc_spawn, killed, removed. */
    int (*cgroup_new)(const struct sbx_host *h, const char *id, const struct sbx_policy *pol,
            struct sbx_cgroup **ret_cg, struct sbx_err *err);
    int (*cgroup_kill)(struct sbx_cgroup *cg);
    int (*cgroup_oom_killed)(struct sbx_cgroup *cg);   /* 1, 0, or -1 unknown */
    int (*cgroup_pids_limited)(struct sbx_cgroup *cg); /* 1, 0, or -1 unknown */
    void (*cgroup_free)(struct sbx_cgroup *cg);        /* kill, wait empty, remove */
    /* Merge what the cgroup service enforces here into caps (memory, cpu,
     * pids; full, or fallback through rlimits). */
    void (*cgroup_caps)(const struct sbx_host *h, struct sbx_caps *caps);

    /* The one seccomp policy, compiled for this host as a BPF program in a
     * fresh memfd positioned at 0. The caller closes it. */
    int (*seccomp_bpf_fd)(const struct sbx_host *h, int *ret_fd, struct sbx_err *err);
    /* A fresh read-only fd at offset 0 holding data (for bwrap --file). */
    int (*memfd_new)(const struct sbx_host *h, const char *name, const void *data, size_t len,
            int *ret_fd, struct sbx_err *err);
    /* A fresh fd at offset 0 on the in-sandbox agent binary (static). */
    int (*agent_fd)(const struct sbx_host *h, int *ret_fd, struct sbx_err *err);
    /* The host uid and gid sandboxes run as when the core is root. */
    void (*sandbox_ids)(const struct sbx_host *h, uint32_t *ret_uid, uint32_t *ret_gid);
    /* This server instance, "p<pid>t<starttime>": prefix every name and
     * label with it ("<instance>-<something>"), so a restart can tell what
     * a dead instance left behind. (transfer none) */
    const char *(*instance_id)(const struct sbx_host *h);
};

/* ------------------------------------------------------------------------ */
/* Backends                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * A box is one sandbox instance running the core's agent (sbx-agent) as its
 * pid 1 with the policy applied. The core speaks the agent protocol over the
 * box's byte channel; the backend only builds, watches and destroys the box.
 */
struct sbx_box_spec {
    uint32_t size;
    uint32_t reserved0;
    const struct sbx_policy *policy;
    const char *id;              /* unique run id: [a-z0-9.-], for names and labels */
    const char *language;        /* language plugin name */
    const char *image;           /* container image for this language, or NULL */
    const char *const *envp;     /* the agent's environment, NULL-terminated */
    const char *const *ro_paths; /* extra host paths the language needs read-only */
    int cancel_fd;               /* readable once the run is cancelled, or -1 */
    int reserved1;
};

struct sbx_box_stats {
    uint32_t size;
    int32_t oom_killed;   /* 1, 0, or -1 unknown */
    int32_t pids_limited; /* 1, 0, or -1 unknown */
    int32_t reserved0;
};

struct sbx_backend_ops {
    uint32_t size;
    uint32_t reserved0;
    /* Find out, by trying, what this backend can enforce here. Fills caps;
     * returns 0, or an error when the backend cannot run at all. */
    int (*probe)(void *state, struct sbx_caps *caps, struct sbx_err *err);
    /* Start a box whose agent is ready to read frames. (transfer full) */
    int (*box_open)(
            void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err);
    int (*box_poll_fd)(void *box); /* readable when box_read would not block */
    /* Channel I/O; like read(2)/write(2): bytes, 0 at end, -1 with errno. */
    int64_t (*box_read)(void *box, void *buf, size_t len);
    int64_t (*box_write)(void *box, const void *buf, size_t len);
    int (*box_write_fd)(void *box); /* pollable for writing, non-blocking */
    /* Kill everything in the box now; the box stays to be closed. */
    int (*box_kill)(void *box);
    /* Destroy the box and everything in it; report stats. Frees box. */
    int (*box_close)(void *box, struct sbx_box_stats *stats, struct sbx_err *err);
};

/* ------------------------------------------------------------------------ */
/* Languages                                                                 */
/* ------------------------------------------------------------------------ */

struct sbx_plan; /* the build/run plan being made, owned by the core */

struct sbx_lang_job {
    uint32_t size;
    uint32_t reserved0;
    const char *code; /* the program, code_len bytes (not NUL-terminated) */
    size_t code_len;
};

/* Plan builders (in struct sbx_language_ops hooks): they copy their input. */
struct sbx_plan_ops {
    uint32_t size;
    uint32_t reserved0;
    /* Set a template variable used in the manifest's argv: "{name}". */
    int (*set_var)(struct sbx_plan *plan, const char *name, const char *value);
    /* Override the manifest's source file name (e.g. Java's Main.java). */
    int (*set_source_name)(struct sbx_plan *plan, const char *name);
};

struct sbx_language_ops {
    uint32_t size;
    uint32_t reserved0;
    /* Check one library requirement against the ecosystem's grammar.
     * SBX_E_INVALID with msg when it is not a valid name. */
    int (*check_library)(void *state, const char *spec, struct sbx_err *err);
    /* Adjust the plan for this code (class names, test mode). Optional. */
    int (*prepare)(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
            struct sbx_plan *plan, struct sbx_err *err);
};

/* ------------------------------------------------------------------------ */
/* The descriptor                                                            */
/* ------------------------------------------------------------------------ */

struct sbx_plugin {
    uint32_t abi_major;
    uint32_t abi_minor;
    uint32_t size;
    uint32_t kind;                    /* enum sbx_plugin_kind */
    const char *name;                 /* must equal the manifest's name */
    const char *version;              /* must equal the manifest's version */
    const char *const *backend_names; /* backends: names served, NULL-terminated */
    /* Called once after loading, for the manifest name the core loaded
     * (one of backend_names). state is handed back to every hook. */
    int (*init)(
            const struct sbx_host *host, const char *name, void **ret_state, struct sbx_err *err);
    void (*fini)(void *state);
    const struct sbx_backend_ops *backend;   /* kind == SBX_KIND_BACKEND */
    const struct sbx_language_ops *language; /* kind == SBX_KIND_LANGUAGE */
};

typedef const struct sbx_plugin *(*sbx_plugin_entry_fn)(void);

/* Define the entry point: SBX_PLUGIN_ENTRY { return &my_descriptor; }
 * (with C linkage also when the plugin is written in C++) */
#ifdef __cplusplus
#define SBX_ENTRY_LINKAGE extern "C"
#else
#define SBX_ENTRY_LINKAGE
#endif
#define SBX_PLUGIN_ENTRY                                                                           \
    SBX_ENTRY_LINKAGE SBX_EXPORT const struct sbx_plugin *sbx_plugin_entry_v1(void);               \
    SBX_ENTRY_LINKAGE SBX_EXPORT const struct sbx_plugin *sbx_plugin_entry_v1(void)

#ifdef __cplusplus
}
#endif

#endif /* LLM_SANDBOX_PLUGIN_H */
