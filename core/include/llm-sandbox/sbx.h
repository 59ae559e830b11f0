/* SPDX-License-Identifier: MIT */
/*
 * llm-sandbox/sbx.h: the core API used by the CLI, the MCP layer and the
 * tests. Not installed in v1, so it may change. Front ends include only this
 * header (never plugin.h): they build a request, call sbx_run(), and format
 * the execution. Everything returned is (transfer full) unless noted.
 */
#ifndef LLM_SANDBOX_SBX_H
#define LLM_SANDBOX_SBX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;
struct sbx_runtime;

/* Errors of the tool itself (STYLE E1). rc is a negative enum sbx_rc. */
struct sbx_error {
    int rc;
    int sys_errno;
    char *field; /* control or argument concerned, or NULL */
    char *msg;
};
const char *sbx_rc_str(int rc);
struct sbx_error *sbx_error_free(struct sbx_error *e); /* returns NULL */

enum sbx_status {
    SBX_STATUS_OK = 0,
    SBX_STATUS_ERROR = 1,
    SBX_STATUS_TIMEOUT = 2,
    SBX_STATUS_OOM = 3,
    SBX_STATUS_KILLED = 4,
    SBX_STATUS_CANCELLED = 5,
    SBX_STATUS_REFUSED = 6,
};

enum sbx_limit {
    SBX_LIMIT_NONE = 0,
    SBX_LIMIT_WALL_TIME = 1,
    SBX_LIMIT_MEMORY = 2,
    SBX_LIMIT_PIDS = 3,
    SBX_LIMIT_FILE_SIZE = 4,
    SBX_LIMIT_WORKSPACE = 5,
};
const char *sbx_status_str(enum sbx_status s);
const char *sbx_limit_str(enum sbx_limit l); /* NULL for SBX_LIMIT_NONE */

/* Limits a request asks for; a field counts only when its bit is in set. */
enum sbx_req_field {
    SBX_REQ_WALL_TIME = 1u << 0,
    SBX_REQ_MEMORY = 1u << 1,
    SBX_REQ_CPU = 1u << 2,
    SBX_REQ_PIDS = 1u << 3,
    SBX_REQ_OUTPUT = 1u << 4,
    SBX_REQ_FILE_SIZE = 1u << 5,
    SBX_REQ_WORKSPACE = 1u << 6,
    SBX_REQ_NETWORK = 1u << 7,
};

struct sbx_req_limits {
    uint32_t set; /* enum sbx_req_field */
    uint64_t wall_time_ms;
    uint64_t memory_bytes;
    uint64_t cpu_millicores;
    uint64_t pids_max;
    uint64_t output_bytes;
    uint64_t file_size_bytes;
    uint64_t workspace_bytes;
    const char *network; /* "off", "on", ... */
};

/*
 * A request's limit from the text a person or a model wrote, for every
 * front end alike (the CLI's options, MCP's arguments): the one checked
 * parser, in one set of units. SBX_REQ_WALL_TIME: seconds ("30", "1.5");
 * SBX_REQ_CPU: cores ("1", "0.5"); SBX_REQ_MEMORY, _OUTPUT, _FILE_SIZE,
 * _WORKSPACE: bytes, with an optional binary unit ("512", "256M", "1.5G",
 * "2GiB"); at most 3 decimals; SBX_REQ_PIDS: a count; SBX_REQ_NETWORK: a
 * mode, judged later by the policy. Sets the field and its bit in l->set
 * (text is borrowed for the network). SBX_E_INVALID naming the control
 * (field) with a message that quotes text: malformed, 0, or out of range.
 * Whether the value is within the configured ceiling is sbx_run's to say.
 */
int sbx_req_limit_parse(struct sbx_req_limits *l, enum sbx_req_field field, const char *text,
        struct sbx_error **err);

enum sbx_stream { SBX_STREAM_STDOUT = 1, SBX_STREAM_STDERR = 2 };

struct sbx_cancel;
/* An eventfd-backed cancellation flag; sbx_cancel_fire is async-signal-safe. */
int sbx_cancel_new(struct sbx_cancel **ret, struct sbx_error **err);
void sbx_cancel_fire(struct sbx_cancel *c);
struct sbx_cancel *sbx_cancel_free(struct sbx_cancel *c);

/* A file staged in the workspace before the program runs. */
struct sbx_file {
    const char *path; /* relative: no leading '/', no "..", no empty parts */
    const char *data;
    size_t len;
};

#define SBX_MAX_FILES 64

enum sbx_notice { SBX_NOTICE_INFO, SBX_NOTICE_WARNING };

struct sbx_request {
    const char *language; /* NULL: the configured default */
    const char *backend;  /* NULL: the configured backend */
    const char *code;
    size_t code_len;
    const char *stdin_data; /* NULL: empty standard input */
    size_t stdin_len;
    struct sbx_req_limits limits;
    const struct sbx_file *files; /* staged before the code; at most SBX_MAX_FILES */
    size_t n_files;
    const char *const *libraries; /* packages to install first, checked by the language */
    size_t n_libraries;
    /* Live output, capped like the result (called from the running thread). */
    void (*on_output)(void *userdata, enum sbx_stream stream, const char *buf, size_t len);
    /* Each phase as it starts: "preparing", "installing", "compiling", "running". */
    void (*on_phase)(void *userdata, const char *phase);
    void *userdata;
    struct sbx_cancel *cancel; /* borrowed, or NULL */
    /* Run in this open session (sbx_session_create) instead of a fresh
     * sandbox: its workspace, and for languages with a warm interpreter its
     * variables, persist. Only limits.wall_time_ms and output_bytes may be
     * given; libraries the session lacks are added to it (with its own,
     * as one set). NULL: one-shot. */
    const char *session_id;
    /* Who asks (sbx_session_create: who the new session belongs to): a
     * session is found only by the owner that created it, and is "not
     * found" to anyone else. NULL is an owner like any other (""). */
    const char *owner;
    /* Fetch the artifacts' bytes and keep a one-shot run's for reading by
     * uri (sbx_artifact_read); false: only list them (path, size, type). */
    bool keep_artifacts;
    /* Notices while it runs, for a person or a model to follow (called
     * from the running thread): each install step (SBX_NOTICE_INFO), a
     * limit enforced only by a fallback, a ready sandbox that failed and
     * was replaced (SBX_NOTICE_WARNING). Warnings stay in the result's
     * warnings too. NULL: none. */
    void (*on_notice)(void *userdata, enum sbx_notice level, const char *msg);
};

/* A file the run left in its workspace (new or changed, not an input). */
struct sbx_artifact {
    char *path;            /* relative to the workspace */
    uint64_t size;         /* bytes */
    const char *mime_type; /* by its bytes when fetched, else its name (static) */
    char *uri;             /* sandbox://sessions/ID/files/PATH or sandbox://runs/ID/files/PATH,
                              or NULL (a one-shot run that did not keep them) */
    char *data;            /* images (within the byte budget), or NULL: read by uri */
    size_t len;
};

/* Where a one-shot run's sandbox came from ("sandbox" in the result). */
enum sbx_origin {
    SBX_ORIGIN_COLD = 0,   /* made for this run */
    SBX_ORIGIN_READY = 1,  /* made before the run was asked for (the pool) */
    SBX_ORIGIN_ZYGOTE = 2, /* forked for this run from a zygote box */
};
struct sbx_execution {
    enum sbx_status status;
    bool has_exit_code;
    int exit_code;
    enum sbx_limit limit;
    char *stdout_buf; /* NUL-terminated; stdout_len bytes kept */
    size_t stdout_len;
    uint64_t stdout_bytes; /* everything the program wrote */
    bool stdout_truncated;
    char *stderr_buf;
    size_t stderr_len;
    uint64_t stderr_bytes;
    bool stderr_truncated;
    uint64_t duration_ms;
    char *backend;   /* canonical name, or NULL */
    char *language;  /* canonical name, or NULL */
    char *message;   /* why, for refused and for errors of the tool, or NULL */
    char **warnings; /* NULL-terminated, e.g. default limits not enforced here */
    char *policy;    /* the effective policy as compact JSON, or NULL if none resolved */
    /* Libraries (only when the request named some) */
    bool has_install;
    bool install_cached; /* the set was in the cache: nothing was installed */
    uint64_t install_ms; /* finding or building the set */
    char *install_log;   /* the install's output and the proxy's refusals, or NULL */
    bool install_log_truncated;
    /* The compile cache (only for languages that build, when it applies) */
    bool has_build_cache;
    bool build_cached;              /* an identical build's output was reused: nothing compiled */
    char *session_id;               /* the session created, or called; NULL for one-shot runs */
    struct sbx_artifact *artifacts; /* in the order they were written */
    size_t n_artifacts;
    bool artifacts_truncated; /* some were left out (LLM_SANDBOX_ARTIFACTS_MAX, _BYTES) */
    bool warm;                /* it ran in a sandbox made before it was asked for */
    enum sbx_origin origin;   /* where a one-shot run's sandbox came from */
};
struct sbx_execution *sbx_execution_free(struct sbx_execution *ex);
/* The result object of `run --json` and of MCP execute_code. */
struct json_object *sbx_execution_to_json(const struct sbx_execution *ex);
/* An execution for an error of the tool (status error, no exit code). */
struct sbx_execution *sbx_execution_from_error(const struct sbx_error *e);
/* An execution for a request refused before anything ran (bad arguments). */
struct sbx_execution *sbx_execution_refused(const char *message);

/*
 * Load settings (config file, then environment) and plugins. Plugin problems
 * do not fail this; they are reported by sbx_runtime_plugins_json(). Fails
 * on bad settings: SBX_E_INVALID (a bad file, key or value; "FILE:LINE:COL:"
 * when the config file is at fault), SBX_E_IO (the config file cannot be
 * read), SBX_E_UNSUPPORTED, SBX_E_NOMEM.
 */
int sbx_runtime_new(struct sbx_runtime **ret_rt, struct sbx_error **err);

/* Options for sbx_runtime_new_opts(); zero-initialise. */
struct sbx_runtime_opts {
    const char *config_path; /* YAML config file, or NULL: LLM_SANDBOX_CONFIG, if set */
    /* open only the configured backend's library (a server, which runs no
     * other); the others are listed with status "unloaded" */
    bool only_default_backend;
};
/* sbx_runtime_new() with options (opts may be NULL). */
int sbx_runtime_new_opts(
        const struct sbx_runtime_opts *opts, struct sbx_runtime **ret_rt, struct sbx_error **err);
struct sbx_runtime *sbx_runtime_free(struct sbx_runtime *rt);

/*
 * Run one request. A refused request, a failed compile, a timeout or any
 * other outcome of the user's code is an execution (return 0); an error is
 * returned only for failures of the tool itself (SBX_E_BACKEND, _NOMEM, ...).
 * Thread-safe: several runs may share one runtime.
 */
int sbx_run(struct sbx_runtime *rt, const struct sbx_request *req, struct sbx_execution **ret,
        struct sbx_error **err);

/* Every plugin found, with status, errors and backend capabilities. */
struct json_object *sbx_runtime_plugins_json(struct sbx_runtime *rt);
/*
 * Sessions: one sandbox kept open between calls (sbx_run with
 * req->session_id). Create takes the request's language, backend, limits
 * and libraries (no code) and returns an execution: status ok with
 * session_id, or refused with the reason (an unknown language, too many
 * sessions, ...). They end by sbx_session_close, by idle expiry
 * (LLM_SANDBOX_SESSION_IDLE), at their maximum lifetime
 * (LLM_SANDBOX_SESSION_LIFETIME), or with the runtime. A close or expiry
 * during a call cancels that call. Thread-safe; calls and file operations
 * on one session wait for each other. Each session belongs to
 * req->owner: every function below finds it only for that owner, and
 * answers any other exactly as it answers an id that never existed.
 */
/* A session as its owner names it. For sbx_artifact_read, id is the
 * artifact's uri. (A struct: the file functions would otherwise take
 * seven arguments.) */
struct sbx_session_ref {
    const char *owner;
    const char *id;
};

int sbx_session_create(struct sbx_runtime *rt, const struct sbx_request *req,
        struct sbx_execution **ret, struct sbx_error **err);
/* 0, or SBX_E_INVALID when no such session of ref->owner's is open. */
int sbx_session_close(
        struct sbx_runtime *rt, const struct sbx_session_ref *ref, struct sbx_error **err);
/* Close every session of owner's (its client is gone); how many. */
size_t sbx_sessions_close_owner(struct sbx_runtime *rt, const char *owner);
/* owner's open sessions: [{session_id, language, backend, created_at,
 * last_used_at, expires_at, calls, busy, interpreter}]. */
struct json_object *sbx_sessions_json(struct sbx_runtime *rt, const char *owner);
/* Files of a session's workspace; path is relative to it (no "..", no
 * absolute paths), and reading never follows a symlink or opens anything
 * but a regular file. Sizes are capped by LLM_SANDBOX_FILE_MAX. Errors:
 * SBX_E_INVALID (no session, a bad path, not a regular file), SBX_E_LIMIT
 * (too big), SBX_E_BACKEND (the sandbox is gone). */
int sbx_session_upload(struct sbx_runtime *rt, const struct sbx_session_ref *ref, const char *path,
        const void *data, size_t len, struct sbx_error **err);
int sbx_session_download(struct sbx_runtime *rt, const struct sbx_session_ref *ref,
        const char *path, char **ret_data, size_t *ret_len, struct sbx_error **err);
/* Regular files beneath path (NULL or "": the whole workspace), as paths
 * relative to the workspace, NULL-terminated. */
int sbx_session_files(struct sbx_runtime *rt, const struct sbx_session_ref *ref, const char *path,
        char ***ret_files, struct sbx_error **err);
/* An artifact's bytes by its uri (ref->id), a session's or a run's only
 * for ref->owner (the owner of the request that made it): 0; 1 when
 * there is none (a run's expired, a session closed, busy for seconds or
 * another owner's); or < 0 on an error. *ret_mime is static. */
int sbx_artifact_read(struct sbx_runtime *rt, const struct sbx_session_ref *ref, char **ret,
        size_t *ret_len, const char **ret_mime, struct sbx_error **err);
/* The largest file sbx_session_upload and _download move. */
uint64_t sbx_runtime_file_max(const struct sbx_runtime *rt);

/* Usable languages: name, aliases, version and preinstalled libraries
 * ("NAME VERSION", probed in a sandbox of the default backend once per
 * toolchain; null and empty until then), whether plots come back (a plot
 * library among them), package manager, source file, docs (use cases,
 * examples). Probing runs code, so do it off latency-critical threads.
 * (transfer full) */
struct json_object *sbx_runtime_languages_json(struct sbx_runtime *rt, bool probe);
/* The runtime is ending: skip the probes to come, so that a shutdown
 * never waits for a toolchain's probes (minutes on a slow machine), and
 * with cancel_running cancel the one that runs now too (a cancelled probe
 * is not kept). Thread-safe; for good (what was probed stays). */
void sbx_runtime_stop_probes(struct sbx_runtime *rt, bool cancel_running);
/* Usable backends with what each can enforce here. (transfer full) */
struct json_object *sbx_runtime_backends_json(struct sbx_runtime *rt);
/* The effective default policy and the ceilings requests may reach. */
struct json_object *sbx_runtime_policy_json(struct sbx_runtime *rt);
/* The canonical name of a usable language (aliases resolved), or NULL. */
const char *sbx_runtime_language_name(struct sbx_runtime *rt, const char *name);
/* The bearer token HTTP clients must present (LLM_SANDBOX_HTTP_TOKEN), or
 * NULL when none is configured. (transfer none) */
const char *sbx_runtime_http_token(const struct sbx_runtime *rt);
/* The unix socket `serve --socket` listens on and `session` connects to:
 * LLM_SANDBOX_SOCKET (environment, then the config file config_path, or
 * LLM_SANDBOX_CONFIG's when NULL), else /run/llm-sandbox/mcp.sock as root,
 * $XDG_RUNTIME_DIR/llm-sandbox/mcp.sock, or /tmp/llm-sandbox-UID/mcp.sock.
 * Reads the settings only (no plugin loads). Errors: as sbx_runtime_new_opts
 * for bad settings (SBX_E_INVALID names LLM_SANDBOX_SOCKET when it is not an
 * absolute path short enough for a socket), SBX_E_NOMEM. (transfer full:
 * free()) */
int sbx_socket_path(const char *config_path, char **ret_path, struct sbx_error **err);
/* Socket activation (systemd's LISTEN_PID/LISTEN_FDS, sd_listen_fds(3)):
 * 1 and *ret_fd (3, close-on-exec) when one listening unix stream socket
 * was passed to this process, 0 when none was; the variables are unset
 * either way. SBX_E_INVALID when the passed fds are not one such socket. */
int sbx_socket_activation(int *ret_fd, struct sbx_error **err);
/* Keep sandboxes ready for one-shot runs, as a long-lived server wants
 * (LLM_SANDBOX_POOL, _POOL_MAX, _POOL_IDLE): start the background thread
 * that makes them, which first readies one for the default backend and
 * language. Returns at once; 0 also when pools are off (LLM_SANDBOX_POOL=0).
 * Without it, every run opens its own sandbox when it is asked for. */
int sbx_runtime_warm(struct sbx_runtime *rt, struct sbx_error **err);
/* How MCP tool results are written (LLM_SANDBOX_RESULT_TEXT,
 * LLM_SANDBOX_INLINE_IMAGES, LLM_SANDBOX_INLINE_IMAGE_BYTES). */
struct sbx_result_options {
    bool text_json;              /* the text block is structuredContent's JSON */
    uint64_t inline_images_max;  /* images inline per result; the rest are links */
    uint64_t inline_image_bytes; /* their bytes together (before base64) */
};
void sbx_runtime_result_options(const struct sbx_runtime *rt, struct sbx_result_options *ret);
/* Tool calls to run at once (LLM_SANDBOX_MAX_CONCURRENT), 0: one per CPU. */
unsigned sbx_runtime_max_concurrent(const struct sbx_runtime *rt);
/* True when the configured network lets code reach the outside. */
bool sbx_runtime_network_open(const struct sbx_runtime *rt);
/* Append one line to the audit log, when one is configured (no-op else). */
void sbx_runtime_audit(struct sbx_runtime *rt, struct json_object *record);
/* What a server checks before it answers anyone: the configured backend and
 * default language are usable and the backend can enforce the configured
 * policy here. Fails with the reason (naming the control); logs, at warn
 * level, the limits only a fallback enforces. */
int sbx_runtime_check(struct sbx_runtime *rt, struct sbx_error **err);
/* Host checks with fixes, plus every plugin problem. */
struct json_object *sbx_runtime_doctor_json(struct sbx_runtime *rt);
const char *sbx_runtime_default_backend(const struct sbx_runtime *rt);
const char *sbx_version(void);

#endif /* LLM_SANDBOX_SBX_H */
