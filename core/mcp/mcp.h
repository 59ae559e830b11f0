/* SPDX-License-Identifier: MIT */
/*
 * mcp.h: the MCP server, independent of its transport. A transport (stdio,
 * Streamable HTTP) owns connections (mcp_conn: one per client session) and
 * hands each incoming message to mcp_handle() with a sink: where that
 * message's response and related notifications (progress, logs) go. Long
 * tool calls run on a worker pool, so a sink may be called from another
 * thread after mcp_handle() returned; sink->done is called exactly once
 * per message, after its last send.
 *
 * Tools, resources and prompts live in tables (tools.c, session_tools.c;
 * fixtures.c adds the conformance suite's fixtures when asked), put
 * together by mcp_server_new (catalog.c). The MCP layer parses, validates,
 * calls llm-sandbox/sbx.h and formats; it decides no policy.
 */
#ifndef SBX_MCP_H
#define SBX_MCP_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/sbx.h>

struct mcp_server;
struct mcp_conn;
struct mcp_call;

struct mcp_sink {
    /* One message, compact JSON without a newline. Thread-safe. */
    void (*send)(void *ud, const char *text, size_t len);
    /* No more messages for this request. */
    void (*done)(void *ud);
    void *ud;
};

struct mcp_options {
    unsigned workers; /* concurrent tool calls; 0: the number of CPUs, at least 2 */
    bool fixtures;    /* test-only tools/resources/prompts for the conformance suite */
};

/* ---- server and connections (transports) ------------------------------ */

/* (transfer full) rt is borrowed and must outlive the server. */
int mcp_server_new(struct sbx_runtime *rt, const struct mcp_options *opt, struct mcp_server **ret,
        struct sbx_error **err);
/* Cancel every call, wait for the workers, free. Returns NULL. */
struct mcp_server *mcp_server_free(struct mcp_server *s);

/* A connection owns the sandbox sessions its calls create (a random
 * owner of its own) and closes them when it is freed. */
struct mcp_conn *mcp_conn_new(struct mcp_server *s);
/* Share owner instead (the unix socket: the peer's uid), whose sessions
 * outlive the connection; NULL: this connection may create none (an HTTP
 * exchange of revision 2026-07-28, which has no MCP session). */
void mcp_conn_set_owner(struct mcp_conn *c, const char *owner);
/* The connection is a Streamable HTTP session: initialize does not
 * negotiate 2024-11-05, whose clients speak the older HTTP+SSE transport. */
void mcp_conn_set_http(struct mcp_conn *c);
/* Cancel the calls whose sink has this ud (their client went away, as an
 * HTTP stream dropped), without waiting and without answering them. */
void mcp_conn_cancel_sink(struct mcp_conn *c, const void *ud);
/* Cancel the connection's calls (their sandboxes are killed), without
 * waiting. */
void mcp_conn_cancel(struct mcp_conn *c);
/* The server is ending (a signal): cancel the connection's calls (their
 * sandboxes are killed) so that each is still answered, with a cancelled
 * result, rather than dropped as a client's cancel is. Does not wait. */
void mcp_conn_shutdown(struct mcp_conn *c);
/* Wait until c has no call in flight, or until deadline_ms on
 * CLOCK_MONOTONIC passes: true when idle. */
bool mcp_conn_wait_idle(struct mcp_conn *c, long long deadline_ms);
/* How long a transport ending on a signal waits for those answers. */
#define MCP_SHUTDOWN_GRACE_MS 10000
/* CLOCK_MONOTONIC in milliseconds. */
long long mcp_monotonic_ms(void);
/* Cancel the connection's calls, wait until each sink is done, free. */
struct mcp_conn *mcp_conn_free(struct mcp_conn *c);
/* The negotiated protocol version, or NULL before initialize. */
const char *mcp_conn_protocol(const struct mcp_conn *c);
/* One of the versions initialize negotiates (2025-11-25 and older). */
bool mcp_protocol_supported(const char *version);

/* ---- revision 2026-07-28 (protocol.c) -----------------------------------
 * A request of this revision needs no initialize: it names its version,
 * and the client's capabilities, in its own params._meta (the envelope):
 * "io.modelcontextprotocol/protocolVersion" and
 * "io.modelcontextprotocol/clientCapabilities", optionally ".../clientInfo"
 * and ".../logLevel". mcp_handle() serves such a request on any
 * connection, initialized or not; a request without the version key is
 * served as before. Over HTTP it needs no session either. */

#define MCP_MODERN_VERSION "2026-07-28"
#define MCP_META_VERSION   "io.modelcontextprotocol/protocolVersion"

enum mcp_code {
    MCP_HEADER_MISMATCH = -32020,     /* HTTP headers and body disagree */
    MCP_UNSUPPORTED_VERSION = -32022, /* the envelope names a version not served */
};

/* The version the envelope names, or NULL when params carry no envelope
 * (then the request is one of the initialize revisions). When the key is
 * there but not a string, "" (mcp_envelope_error says why). (transfer
 * none: borrowed from params) */
const char *mcp_envelope_version(struct json_object *params);
/* NULL when params carry an envelope this server serves; otherwise the
 * error response for request id: MCP_UNSUPPORTED_VERSION (with data
 * {supported, requested}) or JR_INVALID_PARAMS naming the bad key.
 * (transfer full) */
struct json_object *mcp_envelope_error(struct json_object *id, struct json_object *params);

void mcp_handle(struct mcp_conn *c, const char *buf, size_t len, const struct mcp_sink *sink);

/* ---- tables (tools.c, fixtures.c) ------------------------------------- */

/* Fill *ret_result with a CallToolResult; return 0, or a negative value
 * for an internal failure (answered as a JSON-RPC error). */
typedef int (*mcp_tool_fn)(
        struct mcp_call *call, struct json_object *args, struct json_object **ret_result);

enum mcp_tool_flags {
    MCP_TOOL_WORKER = 1u << 0,      /* runs code or probes: on the worker pool */
    MCP_TOOL_READ_ONLY = 1u << 1,   /* annotations.readOnlyHint */
    MCP_TOOL_OPEN_WORLD = 1u << 2,  /* openWorldHint: reaches package registries (libraries)
                                       and, when the configured network is open, anything */
    MCP_TOOL_DESTRUCTIVE = 1u << 3, /* destructiveHint: removes or overwrites what exists */
};

struct mcp_tool {
    const char *name;
    const char *title;
    const char *description;
    const char *input_schema;  /* JSON text */
    const char *output_schema; /* JSON text, or NULL */
    unsigned flags;
    mcp_tool_fn fn;
};

/* A resource read: fill *ret_contents with a "contents" array, or return
 * 1 when uri is not this entry's (templates) or not the reader's (owner:
 * the connection's, as mcp_call_owner), negative on failure. */
typedef int (*mcp_read_fn)(struct mcp_server *s, const char *owner, const char *uri,
        struct json_object **ret_contents);

struct mcp_resource {
    const char *uri; /* or a URI template when template is true */
    const char *name;
    const char *description;
    const char *mime_type;
    bool is_template;
    mcp_read_fn read;
};

struct mcp_prompt {
    const char *name;
    const char *description;
    const char *arguments; /* JSON text of the arguments array, or NULL */
    /* Fill *ret_result with a GetPromptResult. */
    int (*get)(struct json_object *args, struct json_object **ret_result);
};

int mcp_add_tools(struct mcp_server *s, const struct mcp_tool *t, size_t n);
int mcp_add_resources(struct mcp_server *s, const struct mcp_resource *r, size_t n);
int mcp_add_prompts(struct mcp_server *s, const struct mcp_prompt *p, size_t n);
/* completion/complete: fill *ret with a "completion" object. */
void mcp_set_completer(struct mcp_server *s,
        int (*complete)(struct json_object *params, struct json_object **ret));

/* Accept resources/subscribe and unsubscribe (nothing here changes, so no
 * update is ever sent; the fixtures need the methods). */
void mcp_set_subscriptions(struct mcp_server *s, bool on);

/* Each table's registration, called once by mcp_server_new (catalog.c). */
void tools_register(struct mcp_server *s);         /* tools.c */
void session_tools_register(struct mcp_server *s); /* session_tools.c */
void fixtures_register(struct mcp_server *s);      /* fixtures.c (test-only) */

/* ---- what a tool may do with its call --------------------------------- */

struct sbx_runtime *mcp_call_runtime(const struct mcp_call *call);
struct sbx_runtime *mcp_server_runtime(const struct mcp_server *s);
/* Whose sandbox sessions this call may create and reach (req.owner), or
 * NULL when its connection may have none. (transfer none) */
const char *mcp_call_owner(const struct mcp_call *call);
/* Did the client negotiate version (YYYY-MM-DD) or a later one? */
bool mcp_call_protocol_at_least(const struct mcp_call *call, const char *version);
/* Fired when the client cancels this call; pass it to sbx_run. (transfer none) */
struct sbx_cancel *mcp_call_cancel(const struct mcp_call *call);
bool mcp_call_cancelled(const struct mcp_call *call);
/* notifications/progress, only when the request carried a progressToken. */
void mcp_call_progress(struct mcp_call *call, double progress, double total, const char *message);
bool mcp_call_wants_progress(const struct mcp_call *call);
/* notifications/message at level ("debug" ... "emergency"), when the
 * connection's logging level lets it through. (data: transfer full) */
void mcp_call_log(struct mcp_call *call, const char *level, struct json_object *data);
/* sbx_request.on_notice: each notice as notifications/message ("info",
 * "warning"), when the logging level lets it through. userdata's first
 * member is the struct mcp_call pointer. */
void mcp_call_notice(void *userdata, enum sbx_notice level, const char *msg);

/* ---- CallToolResult helpers (results.c) -------------------------------- */

/* (transfer full) */
struct json_object *mcp_text_result(const char *text, bool is_error);
struct json_object *mcp_error_result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* structured as structuredContent, mirrored as compact text; isError
 * unless ok. (structured: transfer full) */
struct json_object *mcp_structured_result(struct json_object *structured, bool ok);
/* A run's CallToolResult: its readable text (status line, message and
 * warnings, stdout, stderr, files), or the JSON under
 * LLM_SANDBOX_RESULT_TEXT=json; its JSON as structuredContent; its images
 * inline up to LLM_SANDBOX_INLINE_IMAGES and _BYTES and the rest (with
 * every other file) as resource links; isError unless it ended ok.
 * NULL when out of memory. (transfer full) */
struct json_object *mcp_execution_result(struct mcp_call *call, const struct sbx_execution *ex);

#endif
