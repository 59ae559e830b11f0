/* SPDX-License-Identifier: MIT */
/*
 * llm-sandbox/plugin.h: the stable plugin ABI, installed for plugin authors.
 * docs/plugins.md is its manual: manifests, and the contract in full
 * (threads, return codes, the lifetime of every pointer, each minor).
 *
 * A plugin is a shared object plus a YAML manifest beside it. It exports one
 * symbol, sbx_plugin_entry_v1, returning a descriptor (struct sbx_plugin).
 * The core lends every plugin a host table (struct sbx_host). A plugin links
 * no core symbol and never frees what the core allocated, nor the reverse.
 *
 * In brief: init and fini run on the core's main thread; everything else
 * on any thread, concurrently, but calls on one box never overlap (save
 * box_kill, which may race box_read/box_write). Operations return 0 or a
 * negative enum sbx_rc with the caller's struct sbx_err filled, and write
 * out-parameters only on success. What the core passes in is borrowed for
 * the call; what a plugin hands out lives until fini (a box: box_close).
 *
 * Versioning: SBX_ABI_MAJOR changes break; the core refuses another major.
 * SBX_ABI_MINOR changes only append fields at the end of structs, each of
 * which starts with (or carries) its size, so each side reads only what
 * the other filled in (SBX_HAS_FIELD). Plain C11, no attributes but behind
 * macros, C++-clean. Helpers to compile in: llm-sandbox/plugin_kit.h.
 */
#ifndef LLM_SANDBOX_PLUGIN_H
#define LLM_SANDBOX_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBX_ABI_MAJOR           1
#define SBX_ABI_MINOR           6
#define SBX_PLUGIN_ENTRY_SYMBOL "sbx_plugin_entry_v1"

#if defined(__MINGW32__)
/* mingw-w64 (the Windows build, with __USE_MINGW_ANSI_STDIO): C99 formats;
 * a plugin DLL exports its entry point and nothing else */
#define SBX_EXPORT       __declspec(dllexport)
#define SBX_PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__) || defined(__clang__)
#define SBX_EXPORT       __attribute__((visibility("default")))
#define SBX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SBX_EXPORT
#define SBX_PRINTF(f, a)
#endif

/* Return codes, stable: never reused or renumbered; they say who acts. */
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

/* Policy controls, as bit numbers for capability reports. Append only. */
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
    SBX_CTL_HOST_MOUNTS = 17,  /* ABI 1.2: box_spec mounts are honoured (dependency sets) */
    SBX_CTL_COUNT = 18,
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
    /* ABI 1.4: each tmpfs a backend mounts (workspace, /tmp, /dev/shm):
     * workspace_bytes, at most 3/4 of memory_bytes (ENOSPC before OOM). */
    uint64_t tmpfs_bytes;
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
    SBX_SPAWN_DROP_PRIVS = 1u << 0,   /* when the core runs as root: run as the sandbox uid */
    SBX_SPAWN_PDEATHSIG = 1u << 1,    /* SIGKILL the child if the core dies */
    SBX_SPAWN_NO_NEW_PRIVS = 1u << 2, /* ABI 1.1: set no_new_privs before exec */
    /* ABI 1.6: run the child under a keeper, a subreaper that SIGKILLs
     * whatever the child leaves behind when the child or the core dies
     * (with SBX_SPAWN_PDEATHSIG only). sbx_host.proc_pid() is then the
     * keeper's pid, and any signal sent to the proc ends the child and all
     * it left: SIGKILL semantics only. */
    SBX_SPAWN_KEEPER = 1u << 3,
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
    /* ABI 1.5: with SBX_SPAWN_DROP_PRIVS as root, run as these host ids (a
     * box's host_uid and host_gid) instead of sandbox_ids'; 0: those. */
    uint32_t uid, gid;
};

/* ABI 1.2: one HTTP/1.1 request through the core's libcurl. */
struct sbx_http {
    uint32_t size;
    uint32_t reserved0;
    /* unix:///path, tcp://host:port (https when tls_dir is set), http(s)://host:port */
    const char *endpoint;
    const char *tls_dir; /* ca.pem, cert.pem, key.pem (Docker's layout), or NULL */
    const char *method;
    const char *path;         /* "/v1.41/...", query included and escaped */
    const char *content_type; /* of body, or NULL */
    const void *body;
    size_t body_len;
    /* Each piece of the body as it arrives (a pull's progress), or NULL:
     * collected in resp. Nonzero aborts the transfer. */
    int (*on_body)(void *userdata, const char *data, size_t len);
    void *userdata;
    int64_t timeout_ms; /* 0: no deadline */
    int cancel_fd;      /* readable once cancelled, or -1 */
    int reserved1;
    /* ABI 1.4 (read only when size covers them; NULL: unset) */
    /* Extra "Name: value" header lines, NULL-terminated; never logged. A
     * CR, LF or NUL in one, or no ": ", is SBX_E_INVALID. */
    const char *const *headers;
    /* http_upgrade's "Upgrade:" protocol (NULL: "tcp", Docker's attach). */
    const char *upgrade;
    /* TLS material as PEM text or a file path (text wins, both over
     * tls_dir); the server is always verified. */
    const char *ca_pem, *ca_file;
    const char *cert_pem, *cert_file;
    const char *key_pem, *key_file;
};

struct sbx_http_resp {
    uint32_t size;
    uint32_t reserved0;
    long status;   /* HTTP status */
    char *body;    /* caller's buffer: the body, NUL-terminated, at most cap-1 bytes */
    size_t cap;    /* 0: the body is dropped */
    size_t len;    /* bytes stored */
    int truncated; /* 1 when the body was longer than cap-1 */
    int reserved1;
};

struct sbx_conn; /* an upgraded (hijacked) HTTP connection, owned by the core */
struct sbx_ws;   /* ABI 1.4: a WebSocket client connection, owned by the core */

/* ABI 1.4: WebSocket messages cross in pieces of at most this; flags: */
#define SBX_WS_PIECE_MAX (64u * 1024u)
enum sbx_ws_flags {
    SBX_WS_TEXT = 1u << 0, /* a text message (else binary) */
    SBX_WS_MORE = 1u << 1, /* more pieces of this message follow */
};

/* ABI 1.2: the one seccomp policy as expanded rules: a call matching a rule
 * is allowed (errno_value 0) or fails with errno_value; every other call
 * fails with default_errno. A rule holds when all its conditions hold;
 * rules of one syscall OR together and never overlap. */
struct sbx_seccomp_cond {
    uint32_t arg; /* 0..5 */
    uint32_t reserved0;
    uint64_t mask; /* (arg & mask) == value, on all 64 bits */
    uint64_t value;
};

struct sbx_seccomp_rule {
    char name[40];
    int32_t errno_value;
    uint32_t n_conds; /* 0: the whole syscall */
    struct sbx_seccomp_cond conds[6];
};

struct sbx_seccomp_rules {
    uint32_t size;
    int32_t default_errno;
    const struct sbx_seccomp_rule *rules;
    size_t n_rules;
};

/* The host table: valid until fini, callable from any thread. Handles and
 * fds it returns are the caller's until freed or closed; calls on one
 * handle do not overlap, save proc_signal and cgroup_kill. */
struct sbx_host {
    uint32_t size;
    uint32_t abi_minor;

    void (*log)(const struct sbx_host *h, int level, const char *fmt, ...) SBX_PRINTF(3, 4);
    /* This plugin's setting ("path": LLM_SANDBOX_BWRAP_PATH for bwrap, or a
     * name its manifest declares), or NULL. (transfer none: until fini) */
    const char *(*setting)(const struct sbx_host *h, const char *key);

    /* Processes, supervised by the core. */
    int (*proc_spawn)(const struct sbx_host *h, const struct sbx_spawn *spec,
            struct sbx_proc **ret_proc, struct sbx_err *err);
    int (*proc_pid)(const struct sbx_proc *p);
    /* The parent end of the pipe made for child fd 0, 1 or 2 (SBX_FD_PIPE).
     * (transfer full: the caller closes it; a second call returns -1) */
    int (*proc_fd)(struct sbx_proc *p, int child_fd);
    int (*proc_signal)(struct sbx_proc *p, int sig);
    /* Wait up to timeout_ms (-1: ever): 1 and a wait status when it exited,
     * 0 on timeout, or a negative enum sbx_rc. */
    int (*proc_wait)(struct sbx_proc *p, int64_t timeout_ms, int *ret_status);
    void (*proc_free)(struct sbx_proc *p); /* SIGKILL and reap if running */
    /* Run argv to the end or the deadline, stdout+stderr into out (NUL-
     * terminated, at most out_len-1 bytes). For probes. */
    int (*run_capture)(const struct sbx_host *h, const char *const *argv, int64_t timeout_ms,
            char *out, size_t out_len, int *ret_status, struct sbx_err *err);

    /* Cgroups: created, limited, joined by proc_spawn, killed, removed. */
    int (*cgroup_new)(const struct sbx_host *h, const char *id, const struct sbx_policy *pol,
            struct sbx_cgroup **ret_cg, struct sbx_err *err);
    int (*cgroup_kill)(struct sbx_cgroup *cg);
    int (*cgroup_oom_killed)(struct sbx_cgroup *cg);   /* 1, 0, or -1 unknown */
    int (*cgroup_pids_limited)(struct sbx_cgroup *cg); /* 1, 0, or -1 unknown */
    void (*cgroup_free)(struct sbx_cgroup *cg);        /* kill, wait empty, remove */
    /* What the cgroup service enforces here into caps (memory, cpu, pids). */
    void (*cgroup_caps)(const struct sbx_host *h, struct sbx_caps *caps);

    /* The one seccomp policy as a BPF program, a fresh memfd at offset 0. */
    int (*seccomp_bpf_fd)(const struct sbx_host *h, int *ret_fd, struct sbx_err *err);
    /* A fresh read-only fd at offset 0 holding data (for bwrap --file). */
    int (*memfd_new)(const struct sbx_host *h, const char *name, const void *data, size_t len,
            int *ret_fd, struct sbx_err *err);
    /* A fresh fd at offset 0 on the in-sandbox agent binary (static). */
    int (*agent_fd)(const struct sbx_host *h, int *ret_fd, struct sbx_err *err);
    /* The host uid and gid sandboxes run as when the core is root and a box
     * has no host_uid of its own (probes, plugins before ABI 1.5). */
    void (*sandbox_ids)(const struct sbx_host *h, uint32_t *ret_uid, uint32_t *ret_gid);
    /* This server instance, "p<pid>t<starttime>h<scope>" (at most 63
     * bytes): prefix every name and label with it ("<instance>-<x>") so a
     * restart can tell what a dead instance left (instance_dead). (transfer
     * none: valid until fini) */
    const char *(*instance_id)(const struct sbx_host *h);

    /* ABI 1.1: the same policy as a Kafel program (nsjail's), as above. */
    int (*seccomp_kafel_fd)(const struct sbx_host *h, int *ret_fd, struct sbx_err *err);

    /* ABI 1.2 */
    /* 0 with resp filled (any HTTP status), or SBX_E_UNAVAILABLE (no
     * connection), SBX_E_CANCELLED, SBX_E_BACKEND (timeout, transfer
     * failed), SBX_E_INVALID (bad endpoint). on_body runs on the calling
     * thread, within the call. */
    int (*http_request)(const struct sbx_host *h, const struct sbx_http *req,
            struct sbx_http_resp *resp, struct sbx_err *err);
    /* The request upgraded (req->upgrade, else Docker's "tcp"): on status
     * 101 or 200 the raw connection after the head (transfer full:
     * conn_free); another status is SBX_E_BACKEND with the body's message. */
    int (*http_upgrade)(const struct sbx_host *h, const struct sbx_http *req,
            struct sbx_conn **ret_conn, struct sbx_err *err);
    int (*conn_fd)(struct sbx_conn *c); /* poll this */
    /* Non-blocking, like read(2)/write(2): bytes, 0 at end, -1 with errno. */
    int64_t (*conn_read)(struct sbx_conn *c, void *buf, size_t len);
    int64_t (*conn_write)(struct sbx_conn *c, const void *buf, size_t len);
    int (*conn_shutdown_write)(struct sbx_conn *c); /* end of input for the peer */
    void (*conn_free)(struct sbx_conn *c);
    /* (transfer none: valid until exit) */
    int (*seccomp_rules)(
            const struct sbx_host *h, const struct sbx_seccomp_rules **ret, struct sbx_err *err);

    /* ABI 1.4 */
    /* Open a WebSocket (RFC 6455): req is a GET to http(s):// or unix://
     * with the plugin's headers (the core adds the handshake's); protocols
     * offered, most wanted first, NULL-terminated. 0 when the server
     * answered 101 with one of them; SBX_E_BACKEND with its status line
     * otherwise, SBX_E_UNAVAILABLE, SBX_E_CANCELLED, SBX_E_INVALID. A core
     * thread pumps it (pings, closing), so ws_fd is honest to poll.
     * (transfer full: ws_free) */
    int (*ws_open)(const struct sbx_host *h, const struct sbx_http *req,
            const char *const *protocols, struct sbx_ws **ret_ws, struct sbx_err *err);
    const char *(*ws_protocol)(const struct sbx_ws *ws); /* (transfer none: until ws_free) */
    int (*ws_fd)(struct sbx_ws *ws); /* POLLIN: ws_recv has a piece; POLLOUT: room to send */
    /* Non-blocking: the next piece of the current message (up to len
     * bytes), SBX_WS_MORE in *ret_flags while more follows. Bytes, or -1
     * with errno EAGAIN (nothing yet) or EPIPE (closed: ws_close_status). */
    int64_t (*ws_recv)(struct sbx_ws *ws, void *buf, size_t len, uint32_t *ret_flags);
    /* Non-blocking: len <= SBX_WS_PIECE_MAX bytes as a message, or a piece
     * of one with SBX_WS_MORE. 0, or -1 with errno EAGAIN (nothing sent),
     * EMSGSIZE or EPIPE. */
    int (*ws_send)(struct sbx_ws *ws, const void *buf, size_t len, uint32_t flags);
    /* Start closing with code (1000: normal); receive until the server's
     * Close. 0, or -1 with errno as ws_send's. */
    int (*ws_close)(struct sbx_ws *ws, uint32_t code);
    /* After EPIPE: the close code (the server's, 1005 none, 1006 dropped,
     * 1002/1007/1009 a protocol error) and its reason, NUL-terminated. */
    uint32_t (*ws_close_status)(struct sbx_ws *ws, char *reason, size_t len);
    void (*ws_free)(struct sbx_ws *ws); /* closes the connection; NULL is fine */
    /* The SHA-256 of agent_fd's binary, 64 lowercase hex digits and NUL. */
    int (*agent_sha256)(const struct sbx_host *h, char ret_hex[65], struct sbx_err *err);
    /* A name or label made with instance_id: 1 when the instance that made
     * it is dead; 0 when it lives, is of another scope, or is no instance
     * id (not ours to judge). */
    int (*instance_dead)(const struct sbx_host *h, const char *name);

    /* ABI 1.6: the seccomp policy of a zygote box (SBX_BOX_ZYGOTE), as
     * seccomp_bpf_fd: the one policy plus unshare, mount and umount2, which
     * the zygote needs to give each child namespaces of its own; every child
     * applies the one policy on top (docs/zygote-security.md). */
    int (*seccomp_zygote_bpf_fd)(const struct sbx_host *h, int *ret_fd, struct sbx_err *err);
    /* ABI 1.6: the same zygote policy as a Kafel program (nsjail's). */
    int (*seccomp_zygote_kafel_fd)(const struct sbx_host *h, int *ret_fd, struct sbx_err *err);
};

/* ------------------------------------------------------------------------ */
/* Backends                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * A box is one sandbox instance running the core's agent (sbx-agent) as its
 * pid 1 with the policy applied. The core speaks its agent protocol over the
 * box's byte channel; the backend only builds, watches and destroys the box.
 */
enum sbx_mount_flags {
    SBX_MOUNT_RW = 1u << 0, /* writable (the default is read-only) */
};

/* ABI 1.2: a host directory the core made (a dependency set, install
 * staging), mounted after the workspace at target (beneath /deps or
 * /workspace). */
struct sbx_mount {
    const char *source; /* absolute host path */
    const char *target; /* absolute path in the box */
    uint32_t flags;     /* enum sbx_mount_flags */
    uint32_t reserved0;
};

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
    /* ABI 1.2 (read only when spec->size covers them) */
    const struct sbx_mount *mounts; /* host directories to mount, in order */
    size_t n_mounts;
    /* Network registries or allowlist: the core's filtering proxy's host
     * socket, to appear at SBX_PROXY_SOCKET in a box whose network is only
     * loopback. NULL otherwise. */
    const char *proxy_socket;
    /* ABI 1.3 */
    uint32_t flags; /* enum sbx_box_flags */
    uint32_t reserved2;
    /* ABI 1.5: when the core is root, the host uid and gid this box alone
     * runs as (no other box shares them while it lives, and no host account
     * has them), so the kernel's per-user quotas are the box's own: spawn
     * its launcher with them (sbx_spawn uid, gid), run its container as
     * them. 0: the core is not root, or predates them (sandbox_ids'). */
    uint32_t host_uid, host_gid;
};

enum sbx_box_flags {
    /* Only a version probe: fetch nothing the host lacks (an image), fail
     * with SBX_E_UNAVAILABLE instead. */
    SBX_BOX_PROBE = 1u << 0,
    /* ABI 1.6: a zygote box (core/agent/proto.h, FORK): as any box, but
     * the agent's processes keep CAP_SYS_ADMIN, CAP_NET_ADMIN,
     * CAP_SYS_RESOURCE and CAP_SETPCAP in the box's user namespace, nested user namespaces
     * are not disabled by the backend (the zygote sets its own limit of 0),
     * and the filter is seccomp_zygote_bpf_fd's (as Kafel:
     * seccomp_zygote_kafel_fd). A backend that cannot make
     * one fails with SBX_E_UNSUPPORTED. */
    SBX_BOX_ZYGOTE = 1u << 1,
};

/* Does a struct that starts with its size carry this field (ABI minors)? */
#define SBX_HAS_FIELD(type, s, field)                                                              \
    ((s)->size >= offsetof(type, field) + sizeof(((const type *)0)->field))

/* Where a box sees the core's filtering proxy socket. */
#define SBX_PROXY_SOCKET "/.sbx/proxy.sock"

struct sbx_box_stats {
    uint32_t size;
    int32_t oom_killed;   /* 1, 0, or -1 unknown */
    int32_t pids_limited; /* 1, 0, or -1 unknown */
    int32_t reserved0;
};

/* Any thread, concurrently on different boxes (guard state); spec and all
 * it points to are borrowed for the call. */
struct sbx_backend_ops {
    uint32_t size;
    uint32_t reserved0;
    /* Find out, by trying, what this backend can enforce here: fill caps.
     * Once, before the first box. 0, or SBX_E_UNAVAILABLE (or another code)
     * when the backend cannot run here at all: it is then reported, unused. */
    int (*probe)(void *state, struct sbx_caps *caps, struct sbx_err *err);
    /* Start a box whose agent is ready to read frames: 0 and *ret_box
     * (transfer full: until box_close). SBX_E_UNAVAILABLE (tool, daemon,
     * image missing), SBX_E_UNSUPPORTED (spec asks what it cannot enforce:
     * fail closed), SBX_E_BACKEND, SBX_E_CANCELLED (cancel_fd), SBX_E_INVALID,
     * SBX_E_LIMIT, SBX_E_NOMEM; on failure nothing of the box is left. */
    int (*box_open)(
            void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err);
    /* An fd readable when box_read would not block, valid until box_close
     * (the core polls it, never closes it). */
    int (*box_poll_fd)(void *box);
    /* Channel I/O, non-blocking, like read(2)/write(2): bytes, 0 at end, -1
     * with errno (EAGAIN: poll again). */
    int64_t (*box_read)(void *box, void *buf, size_t len);
    int64_t (*box_write)(void *box, const void *buf, size_t len);
    int (*box_write_fd)(void *box); /* pollable for writing; as box_poll_fd */
    /* Kill everything in the box now; the box stays to be closed. May come
     * from another thread while box_read or box_write runs. 0, or < 0
     * (ignored: box_close follows). */
    int (*box_kill)(void *box);
    /* Destroy the box and everything in it and fill stats (oom_killed,
     * pids_limited: 1, 0, -1 unknown); frees box whatever it returns. 0, or
     * SBX_E_BACKEND (say, the tool's own error) with err: the core reports
     * it unless the run already ended normally. */
    int (*box_close)(void *box, struct sbx_box_stats *stats, struct sbx_err *err);
    /* ABI 1.3, optional (NULL, or beyond size, without images): the ID of
     * the image a box of spec would run (fetched as box_open would),
     * NUL-terminated into ret_id; returns as box_open. The core keys
     * dependency sets by it. */
    int (*image_id)(void *state, const struct sbx_box_spec *spec, char *ret_id, size_t len,
            struct sbx_err *err);
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
    /* ABI 1.1: build and run as the manifest's language.modes.NAME says
     * (e.g. Go's "test"), with its source file unless set_source_name
     * names another. SBX_E_INVALID for a mode the manifest lacks. */
    int (*select_mode)(struct sbx_plan *plan, const char *name);
};

struct sbx_install; /* a dependency install being prepared, owned by the core */

/* Install builders (ABI 1.2, in prepare_install): they copy their input. */
struct sbx_install_ops {
    uint32_t size;
    uint32_t reserved0;
    /* Stage a file for the install steps in their working directory (a
     * plain name, at most 1 MiB, at most 8 files). SBX_E_INVALID or
     * SBX_E_LIMIT otherwise. */
    int (*add_file)(struct sbx_install *inst, const char *name, const char *data, size_t len);
};

/* Any thread, concurrently: state is read-only after init, or guarded. */
struct sbx_language_ops {
    uint32_t size;
    uint32_t reserved0;
    /* Check one library requirement against the ecosystem's grammar: 0,
     * or SBX_E_INVALID with msg (field "libraries"): the run is refused. */
    int (*check_library)(void *state, const char *spec, struct sbx_err *err);
    /* Adjust the plan for this code (class names, test mode); job, ops and
     * plan are the call's. Optional. 0, or < 0: an error of the run. */
    int (*prepare)(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
            struct sbx_plan *plan, struct sbx_err *err);
    /* ABI 1.2: make the files the install steps need from the libraries
     * (each accepted by check_library), e.g. Java's pom.xml; all borrowed
     * for the call. Optional. 0, or < 0: the install fails. */
    int (*prepare_install)(void *state, const char *const *libraries, size_t n_libraries,
            const struct sbx_install_ops *ops, struct sbx_install *inst, struct sbx_err *err);
};

/* ------------------------------------------------------------------------ */
/* The descriptor                                                            */
/* ------------------------------------------------------------------------ */

/* The descriptor: static, valid while the library is loaded. */
struct sbx_plugin {
    uint32_t abi_major;
    uint32_t abi_minor;
    uint32_t size;
    uint32_t kind;                    /* enum sbx_plugin_kind */
    const char *name;                 /* must equal the manifest's name */
    const char *version;              /* must equal the manifest's version */
    const char *const *backend_names; /* backends: names served, NULL-terminated */
    /* Once after loading, on the main thread, for the manifest name loaded
     * (one of backend_names; valid until fini). host: valid until fini.
     * *ret_state is handed back to every hook. 0, or < 0 with err: the
     * plugin is reported broken and not used. Optional, as is fini. */
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
