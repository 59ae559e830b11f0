/* SPDX-License-Identifier: MIT */
/*
 * http.c: the MCP Streamable HTTP transport on libmicrohttpd (no hand-made
 * HTTP parsing). POST /mcp carries one JSON-RPC message; a request is
 * answered with application/json, or with text/event-stream when
 * notifications (progress, logs) come before its response and the client
 * accepts a stream; a notification or response is answered 202. The
 * initialize response carries an Mcp-Session-Id, which every later request
 * must present (400 when missing, 404 when unknown); DELETE ends a
 * session. GET /mcp (a server-initiated stream) is 405: this server never
 * sends requests of its own.
 *
 * Revision 2026-07-28 has no sessions: a POST whose body names its
 * version in params._meta gets a connection of its own, freed with the
 * exchange, after the checks in modern_refusal(). Its client cancels by
 * closing the connection, not with notifications/cancelled, so such an
 * exchange watches its socket while the call runs (ex_wait).
 *
 * Safety: the Host and Origin headers must name a loopback host while the
 * server listens on loopback (DNS rebinding), a bearer token from the
 * environment is required for any other address, bodies are capped at the
 * JSON-RPC message cap, sessions are capped and the oldest idle one is
 * dropped past the cap.
 *
 * libmicrohttpd (and the TLS library under it) is opened only for --http
 * (mcp_http_open, before the runtime's threads exist).
 *
 * Threads: libmicrohttpd runs a thread per connection; handlers may block
 * while a tool call runs. The session table has one mutex; each exchange
 * has its own mutex and condition for its messages.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "dlib.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "serve.h"

#define MAX_SESSIONS   64
#define SESSION_ID_LEN 32

struct session {
    char id[SESSION_ID_LEN + 1];
    struct mcp_conn *conn;
    time_t last_used;
    int busy; /* exchanges in progress */
};

struct http {
    struct mcp_server *s;
    struct sbx_runtime *rt;
    bool loopback;
    const char *token; /* required bearer token, or NULL */
    pthread_mutex_t lock;
    struct session sessions[MAX_SESSIONS];
    struct exchange *modern; /* 2026-07-28 exchanges in progress, for shutdown */
    unsigned active;         /* POSTs not yet completed (answer written) */
    bool stopping;           /* a signal came: new POSTs are refused */
    pthread_cond_t quiet;    /* active dropped */
};

/* One POST: its body, then the messages the server sends for it. */
struct exchange {
    atomic_int refs; /* the handler, the sink, the streaming response */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char *body;
    size_t len;
    bool too_big;
    char **msgs; /* JSON texts not yet written */
    size_t n_msgs, first;
    bool done;
    struct session *session;
    struct http *h;
    /* 2026-07-28 only (else NULL): its own connection, listed in
     * h->modern. For every request: an eventfd poked with cond and the
     * client's socket, watched while the call runs (else -1) */
    struct mcp_conn *conn;
    struct mcp_conn *watched; /* a session's connection the call runs on */
    struct exchange *prev, *next;
    int wake_fd, sock_fd;
};

static void ex_unref(struct exchange *x)
{
    if (atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    for (size_t i = x->first; i < x->n_msgs; i++)
        free(x->msgs[i]);
    free(x->msgs);
    free(x->body);
    if (x->wake_fd >= 0)
        close(x->wake_fd);
    pthread_mutex_destroy(&x->lock);
    pthread_cond_destroy(&x->cond);
    free(x);
}

/* (x->lock held) */
static void ex_wake(struct exchange *x)
{
    uint64_t one = 1;

    pthread_cond_broadcast(&x->cond);
    if (x->wake_fd >= 0 && write(x->wake_fd, &one, sizeof(one)) < 0) {
        /* the counter is full: the waiter is awake anyway */
    }
}

/* The client closed the connection of x's request (a dropped response or
 * event stream): cancel its call, so the sandbox does not run on to its
 * timeout unseen. A session's connection is used only while the session
 * table still holds it (DELETE frees it under the table's lock, after
 * cancelling every call itself). */
static void ex_hung_up(struct exchange *x)
{
    if (x->conn) {
        mcp_conn_cancel(x->conn);
        return;
    }
    pthread_mutex_lock(&x->h->lock);
    if (x->session && x->watched && x->session->conn == x->watched)
        mcp_conn_cancel_sink(x->watched, x);
    pthread_mutex_unlock(&x->h->lock);
}

/* Wait (x->lock held) for a message or the end of the request. An
 * exchange with a socket to watch returns false when the client hangs up,
 * after cancelling its call (the sandbox is killed). */
static bool ex_wait(struct exchange *x)
{
    while (x->first == x->n_msgs && !x->done) {
        struct pollfd p[2] = {
                {.fd = x->wake_fd, .events = POLLIN}, {.fd = x->sock_fd, .events = POLLRDHUP}};
        uint64_t n;
        int r;

        if (x->sock_fd < 0) {
            pthread_cond_wait(&x->cond, &x->lock);
            continue;
        }
        pthread_mutex_unlock(&x->lock);
        r = poll(p, 2, -1);
        if (r > 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            ex_hung_up(x);
            pthread_mutex_lock(&x->lock);
            return false;
        }
        /* bytes we will not read, or no poll: fall back to the condition
         * (sinks signal both), rather than spin */
        if ((r < 0 && errno != EINTR) || (p[1].revents & (POLLIN | POLLNVAL)))
            x->sock_fd = -1;
        if (read(x->wake_fd, &n, sizeof(n)) < 0) {
            /* EAGAIN: woken by the socket, or already drained */
        }
        pthread_mutex_lock(&x->lock);
    }
    return true;
}

static void sink_send(void *ud, const char *text, size_t len)
{
    struct exchange *x = ud;
    char **n;

    pthread_mutex_lock(&x->lock);
    n = realloc(x->msgs, (x->n_msgs + 1) * sizeof(*n));
    if (n) {
        x->msgs = n;
        x->msgs[x->n_msgs] = strndup(text, len);
        if (x->msgs[x->n_msgs])
            x->n_msgs++;
    }
    ex_wake(x);
    pthread_mutex_unlock(&x->lock);
}

static void sink_done(void *ud)
{
    struct exchange *x = ud;

    pthread_mutex_lock(&x->lock);
    x->done = true;
    ex_wake(x);
    pthread_mutex_unlock(&x->lock);
    ex_unref(x);
}

/* ---- checks ------------------------------------------------------------ */

/* "localhost", "127.0.0.1" or "[::1]", with an optional port. */
static bool loopback_host(const char *h)
{
    static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};

    for (size_t i = 0; h && i < 3; i++) {
        size_t n = strlen(names[i]);

        if (strncasecmp(h, names[i], n) == 0 && (h[n] == '\0' || h[n] == ':'))
            return true;
    }
    return false;
}

static bool loopback_origin(const char *o)
{
    if (strncasecmp(o, "http://", 7) == 0)
        return loopback_host(o + 7);
    if (strncasecmp(o, "https://", 8) == 0)
        return loopback_host(o + 8);
    return false;
}

/* Constant-time comparison of the presented bearer token. */
static bool token_ok(const char *want, const char *auth)
{
    size_t n = strlen(want), m;
    unsigned diff = 0;

    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    auth += 7;
    m = strlen(auth);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned)(unsigned char)want[i] ^ (unsigned)(unsigned char)(i < m ? auth[i] : 0);
    return diff == 0 && m == n;
}

static DLSYM_PROTOTYPE(MHD_add_response_header);
static DLSYM_PROTOTYPE(MHD_create_response_from_buffer);
static DLSYM_PROTOTYPE(MHD_create_response_from_callback);
static DLSYM_PROTOTYPE(MHD_destroy_response);
static DLSYM_PROTOTYPE(MHD_get_connection_info);
static DLSYM_PROTOTYPE(MHD_get_daemon_info);
static DLSYM_PROTOTYPE(MHD_lookup_connection_value);
static DLSYM_PROTOTYPE(MHD_queue_response);
static DLSYM_PROTOTYPE(MHD_start_daemon);
static DLSYM_PROTOTYPE(MHD_stop_daemon);

static const struct dlib_sym mhd_syms[] = {
        DLSYM_ARG(MHD_add_response_header),
        DLSYM_ARG(MHD_create_response_from_buffer),
        DLSYM_ARG(MHD_create_response_from_callback),
        DLSYM_ARG(MHD_destroy_response),
        DLSYM_ARG(MHD_get_connection_info),
        DLSYM_ARG(MHD_get_daemon_info),
        DLSYM_ARG(MHD_lookup_connection_value),
        DLSYM_ARG(MHD_queue_response),
        DLSYM_ARG(MHD_start_daemon),
        DLSYM_ARG(MHD_stop_daemon),
};

static struct dlib mhd_lib = DLIB_INIT(SBX_MHD_SONAME, "MCP over HTTP (--http)", mhd_syms);

int mcp_http_open(void)
{
    if (dlib_open(&mhd_lib) < 0) {
        fprintf(stderr, "llm-sandbox: %s\n", mhd_lib.error);
        return -1;
    }
    return 0;
}

/* A browser on this machine may call us (CORS): a loopback Origin gets
 * itself back, with Mcp-Session-Id readable by its script. Any other
 * Origin was refused (refusal) while we listen on loopback; elsewhere it
 * gets no CORS headers, so a browser keeps the answer from its page. */
static void cors(struct MHD_Connection *c, struct MHD_Response *r)
{
    const char *origin = sym_MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");

    if (!origin || !loopback_origin(origin))
        return;
    sym_MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    sym_MHD_add_response_header(r, "Access-Control-Expose-Headers", "Mcp-Session-Id");
    sym_MHD_add_response_header(r, "Vary", "Origin");
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type,
        const char *body, const char *session)
{
    struct MHD_Response *r = sym_MHD_create_response_from_buffer(
            strlen(body), (void *)(uintptr_t)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;

    if (!r)
        return MHD_NO;
    if (type)
        sym_MHD_add_response_header(r, "Content-Type", type);
    if (session)
        sym_MHD_add_response_header(r, "Mcp-Session-Id", session);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        sym_MHD_add_response_header(r, "Allow", "POST, DELETE, OPTIONS");
    if (status == MHD_HTTP_UNAUTHORIZED) /* RFC 6750; no OAuth: a static token */
        sym_MHD_add_response_header(r, "WWW-Authenticate",
                "Bearer realm=\"llm-sandbox\", error=\"invalid_token\", "
                "error_description=\"send Authorization: Bearer <LLM_SANDBOX_HTTP_TOKEN>\"");
    cors(c, r);
    ret = sym_MHD_queue_response(c, status, r);
    sym_MHD_destroy_response(r);
    return ret;
}

/* A JSON-RPC error for request id (borrowed; NULL: null) in an HTTP error. */
static enum MHD_Result http_error_id(
        struct MHD_Connection *c, unsigned status, struct json_object *id, const char *why)
{
    struct json_object *e = jr_error(id, JR_INVALID_REQUEST, why, NULL);
    enum MHD_Result r = respond(c, status, "application/json", jr_text(e, NULL), NULL);

    json_object_put(e);
    return r;
}

static enum MHD_Result http_error(struct MHD_Connection *c, unsigned status, const char *why)
{
    return http_error_id(c, status, NULL, why);
}

/* ---- sessions ---------------------------------------------------------- */

static struct session *session_new(struct http *h)
{
    struct session *free_slot = NULL, *oldest = NULL;
    unsigned char rnd[SESSION_ID_LEN / 2];

    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return NULL;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < MAX_SESSIONS; i++) {
        struct session *s = &h->sessions[i];

        if (!s->conn && !free_slot)
            free_slot = s;
        if (s->conn && !s->busy && (!oldest || s->last_used < oldest->last_used))
            oldest = s;
    }
    if (!free_slot && oldest) { /* full: drop the session idle the longest */
        mcp_conn_free(oldest->conn);
        oldest->conn = NULL;
        free_slot = oldest;
    }
    if (free_slot) {
        free_slot->conn = mcp_conn_new(h->s);
        if (free_slot->conn)
            mcp_conn_set_http(free_slot->conn);
        for (size_t i = 0; i < sizeof(rnd); i++)
            snprintf(free_slot->id + 2 * i, 3, "%02x", rnd[i]);
        free_slot->last_used = time(NULL);
        free_slot->busy = 1;
        if (!free_slot->conn)
            free_slot = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    return free_slot;
}

static struct session *session_get(struct http *h, const char *id)
{
    struct session *found = NULL;

    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; id && i < MAX_SESSIONS && !found; i++) {
        if (h->sessions[i].conn && strcmp(h->sessions[i].id, id) == 0) {
            found = &h->sessions[i];
            found->busy++;
            found->last_used = time(NULL);
        }
    }
    pthread_mutex_unlock(&h->lock);
    return found;
}

static void session_put(struct http *h, struct session *s)
{
    pthread_mutex_lock(&h->lock);
    s->busy--;
    pthread_mutex_unlock(&h->lock);
}

/* ---- streaming ----------------------------------------------------------- */

/* Server-sent events: one "message" event per JSON-RPC message, until the
 * request is done. Blocks (this connection's own thread) between events. */
struct stream {
    struct exchange *x;
    char *out;
    size_t len, off;
};

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *st = cls;
    struct exchange *x = st->x;
    size_t n;

    (void)pos;
    if (st->off == st->len) {
        char *msg;

        pthread_mutex_lock(&x->lock);
        if (!ex_wait(x)) {
            pthread_mutex_unlock(&x->lock);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (x->first == x->n_msgs) {
            pthread_mutex_unlock(&x->lock);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        msg = x->msgs[x->first++];
        pthread_mutex_unlock(&x->lock);
        free(st->out);
        st->out = NULL;
        st->len = st->off = 0;
        if (asprintf(&st->out, "event: message\ndata: %s\n\n", msg) < 0) {
            free(msg);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        free(msg);
        st->len = strlen(st->out);
    }
    n = st->len - st->off < max ? st->len - st->off : max;
    memcpy(buf, st->out + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

static void sse_free(void *cls)
{
    struct stream *st = cls;

    free(st->out);
    ex_unref(st->x);
    free(st);
}

/* Our own messages (jsonrpc.c builds them, keys in a fixed order): a
 * notification starts with "jsonrpc" then "method", a response with "id". */
static bool is_response(const char *text)
{
    static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":";

    return strncmp(text, note, sizeof(note) - 1) != 0;
}

/* Answer a request: JSON when its response comes first (or the client takes
 * no stream), else an event stream carrying the notifications first. */
static enum MHD_Result answer(
        struct MHD_Connection *c, struct exchange *x, bool sse_ok, const char *session)
{
    struct MHD_Response *r;
    struct stream *st;
    enum MHD_Result ret;

    pthread_mutex_lock(&x->lock);
    for (;;) {
        if (!ex_wait(x)) { /* the client is gone, and its call cancelled */
            pthread_mutex_unlock(&x->lock);
            return MHD_NO;
        }
        if (x->first == x->n_msgs || sse_ok || is_response(x->msgs[x->first]))
            break;
        free(x->msgs[x->first++]); /* a notification the client cannot take */
    }
    if (x->first == x->n_msgs) { /* cancelled: no answer was made */
        pthread_mutex_unlock(&x->lock);
        return respond(c, MHD_HTTP_ACCEPTED, NULL, "", session);
    }
    if (is_response(x->msgs[x->first])) {
        char *msg = x->msgs[x->first++];

        pthread_mutex_unlock(&x->lock);
        ret = respond(c, MHD_HTTP_OK, "application/json", msg, session);
        free(msg);
        return ret;
    }
    pthread_mutex_unlock(&x->lock);
    st = calloc(1, sizeof(*st));
    if (!st)
        return MHD_NO;
    st->x = x;
    atomic_fetch_add(&x->refs, 1);
    r = sym_MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, sse_read, st, sse_free);
    if (!r) {
        sse_free(st);
        return MHD_NO;
    }
    sym_MHD_add_response_header(r, "Content-Type", "text/event-stream");
    sym_MHD_add_response_header(r, "Cache-Control", "no-cache");
    cors(c, r);
    if (session)
        sym_MHD_add_response_header(r, "Mcp-Session-Id", session);
    ret = sym_MHD_queue_response(c, MHD_HTTP_OK, r);
    sym_MHD_destroy_response(r);
    return ret;
}

/* ---- requests ------------------------------------------------------------ */

static const char *header(struct MHD_Connection *c, const char *name)
{
    return sym_MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* Host/Origin (DNS rebinding) and, unless preflight (a CORS preflight
 * carries no credentials), the bearer token. NULL when fine. */
static const char *refusal(
        struct http *h, struct MHD_Connection *c, bool preflight, unsigned *status)
{
    const char *host = header(c, "Host"), *origin = header(c, "Origin");

    *status = MHD_HTTP_FORBIDDEN;
    if (h->loopback && host && !loopback_host(host))
        return "the Host header must name this machine's loopback";
    if (origin && h->loopback && !loopback_origin(origin))
        return "cross-origin requests are refused";
    if (preflight && (!origin || !loopback_origin(origin)))
        return "CORS preflight is answered for loopback origins only";
    if (preflight)
        return NULL;
    *status = MHD_HTTP_UNAUTHORIZED;
    if (h->token && !token_ok(h->token, header(c, "Authorization")))
        return "a valid bearer token is required";
    return NULL;
}

/* A browser's CORS preflight from a loopback origin: what it may send. */
static enum MHD_Result on_preflight(struct MHD_Connection *c)
{
    struct MHD_Response *r =
            sym_MHD_create_response_from_buffer(0, (void *)(uintptr_t) "", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret;

    if (!r)
        return MHD_NO;
    sym_MHD_add_response_header(r, "Access-Control-Allow-Methods", "POST, DELETE, OPTIONS");
    sym_MHD_add_response_header(r, "Access-Control-Allow-Headers",
            "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, "
            "Mcp-Method, Mcp-Name, Last-Event-ID");
    sym_MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    cors(c, r);
    ret = sym_MHD_queue_response(c, MHD_HTTP_NO_CONTENT, r);
    sym_MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_delete(struct http *h, struct MHD_Connection *c)
{
    const char *id = header(c, "Mcp-Session-Id");
    struct session *s;
    struct mcp_conn *conn;

    if (!id)
        return http_error(c, MHD_HTTP_BAD_REQUEST, "missing Mcp-Session-Id");
    s = session_get(h, id);
    if (!s)
        return http_error(c, MHD_HTTP_NOT_FOUND, "unknown session");
    pthread_mutex_lock(&h->lock);
    conn = s->conn;
    s->conn = NULL;
    s->busy = 0;
    pthread_mutex_unlock(&h->lock);
    mcp_conn_free(conn); /* cancels its calls and waits for them */
    return respond(c, MHD_HTTP_OK, NULL, "", NULL);
}

/* ---- revision 2026-07-28 ------------------------------------------------ */

/* A header value less HTTP's optional white space around it: *ret_len
 * bytes from the pointer returned. */
static const char *ows_trim(const char *field, size_t *ret_len)
{
    size_t len;

    while (*field == ' ' || *field == '\t')
        field++;
    len = strlen(field);
    while (len > 0 && (field[len - 1] == ' ' || field[len - 1] == '\t'))
        len--;
    *ret_len = len;
    return field;
}

static bool field_is(const char *field, const char *want)
{
    size_t len;

    field = ows_trim(field, &len);
    return len == strlen(want) && memcmp(field, want, len) == 0;
}

static int b64_digit(char ch)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = ch ? strchr(digits, ch) : NULL;

    return p ? (int)(p - digits) : -1;
}

/* Whether the base64 text in[0..n) decodes to want[0..want_len). */
static bool b64_is(const char *in, size_t n, const char *want, size_t want_len)
{
    unsigned acc = 0, bits = 0;
    size_t o = 0;

    for (int pad = 0; pad < 2 && n > 0 && in[n - 1] == '='; pad++)
        n--;
    for (size_t i = 0; i < n; i++) {
        int d = b64_digit(in[i]);

        if (d < 0)
            return false;
        acc = (acc << 6 | (unsigned)d) & 0xFFFFu;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= want_len || (unsigned char)want[o] != ((acc >> bits) & 0xFFu))
                return false;
            o++;
        }
    }
    return o == want_len;
}

/* The Mcp-Name header says want: as it is, or as "=?base64?...?=" when
 * the value is not plain printable ASCII. */
static bool name_is(const char *field, const char *want)
{
    size_t len;

    field = ows_trim(field, &len);
    if (len >= 11 && strncmp(field, "=?base64?", 9) == 0 && strncmp(field + len - 2, "?=", 2) == 0)
        return b64_is(field + 9, len - 11, want, strlen(want));
    return len == strlen(want) && memcmp(field, want, len) == 0;
}

/* Why a 2026-07-28 request is refused with HTTP 400, or NULL: its envelope
 * must be one served here (mcp_envelope_error), and the
 * MCP-Protocol-Version, Mcp-Method and (for tools/call, prompts/get and
 * resources/read) Mcp-Name headers must repeat what the body says, since
 * proxies route by them. (transfer full) */
static struct json_object *modern_refusal(struct MHD_Connection *c, const struct jr_msg *m)
{
    const char *version = header(c, "MCP-Protocol-Version"), *method = header(c, "Mcp-Method"),
               *name = header(c, "Mcp-Name"), *claim = mcp_envelope_version(m->params);
    const char *field = NULL, *why = NULL;
    struct json_object *v;

    if (m->kind != JR_REQUEST)
        return NULL;
    if (!claim)
        return jr_error(m->id, JR_INVALID_PARAMS,
                "MCP-Protocol-Version names " MCP_MODERN_VERSION
                ", which needs params._meta " MCP_META_VERSION,
                NULL);
    if (version && *claim && !field_is(version, claim))
        why = "the MCP-Protocol-Version header and params._meta name different versions";
    else if ((v = mcp_envelope_error(m->id, m->params)))
        return v;
    else if (!version)
        why = "a " MCP_MODERN_VERSION " request needs the MCP-Protocol-Version header";
    else if (!method || !field_is(method, m->method))
        why = "the Mcp-Method header must repeat the request's method";
    if (strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "prompts/get") == 0)
        field = "name";
    else if (strcmp(m->method, "resources/read") == 0)
        field = "uri";
    if (!why && field && json_object_object_get_ex(m->params, field, &v) &&
            json_object_is_type(v, json_type_string) &&
            (!name || !name_is(name, json_object_get_string(v))))
        why = "the Mcp-Name header must repeat params.name (params.uri for resources/read)";
    return why ? jr_error(m->id, MCP_HEADER_MISMATCH, why, NULL) : NULL;
}

/* Give x a connection of its own, listed for shutdown; watch the client's
 * socket when x is a request. */
static bool modern_start(struct http *h, struct MHD_Connection *c, struct exchange *x, bool request)
{
    const union MHD_ConnectionInfo *ci;

    x->conn = mcp_conn_new(h->s);
    if (!x->conn)
        return false;
    mcp_conn_set_owner(x->conn, NULL); /* no MCP session: no sandbox sessions */
    if (request) {
        ci = sym_MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        x->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        x->sock_fd = ci && x->wake_fd >= 0 ? ci->connect_fd : -1;
    }
    pthread_mutex_lock(&h->lock);
    x->next = h->modern;
    if (h->modern)
        h->modern->prev = x;
    h->modern = x;
    pthread_mutex_unlock(&h->lock);
    return true;
}

static void modern_end(struct http *h, struct exchange *x)
{
    pthread_mutex_lock(&h->lock);
    if (x->prev)
        x->prev->next = x->next;
    else
        h->modern = x->next;
    if (x->next)
        x->next->prev = x->prev;
    pthread_mutex_unlock(&h->lock);
    x->conn = mcp_conn_free(x->conn); /* cancels what still runs, and waits */
}

/* ---- POST ------------------------------------------------------------------ */

static enum MHD_Result on_post(struct http *h, struct MHD_Connection *c, struct exchange *x)
{
    const char *version = header(c, "MCP-Protocol-Version"), *accept = header(c, "Accept");
    struct mcp_sink sink = {sink_send, sink_done, x};
    struct json_object *refused = NULL;
    struct mcp_conn *conn;
    struct jr_msg m;
    bool init, request, modern;

    if (x->too_big) { /* the body's start is kept: name the request refused */
        struct json_object *id = jr_peek_id(x->body ? x->body : "", x->len);
        enum MHD_Result r = http_error_id(c, MHD_HTTP_CONTENT_TOO_LARGE, id, "message too large");

        json_object_put(id);
        return r;
    }
    jr_parse(x->body ? x->body : "", x->len, &m);
    init = m.kind == JR_REQUEST && strcmp(m.method, "initialize") == 0;
    request = m.kind == JR_REQUEST;
    modern = !init &&
             (mcp_envelope_version(m.params) || (version && field_is(version, MCP_MODERN_VERSION)));
    if (modern)
        refused = modern_refusal(c, &m);
    jr_msg_done(&m);
    if (refused) {
        enum MHD_Result r =
                respond(c, MHD_HTTP_BAD_REQUEST, "application/json", jr_text(refused, NULL), NULL);

        json_object_put(refused);
        return r;
    }
    if (!modern && version && !mcp_protocol_supported(version))
        return http_error(c, MHD_HTTP_BAD_REQUEST, "unsupported MCP-Protocol-Version");
    if (modern) {
        if (!modern_start(h, c, x, request))
            return http_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
    } else if (init) {
        x->session = session_new(h);
        if (!x->session)
            return http_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "too many sessions");
    } else {
        const char *id = header(c, "Mcp-Session-Id");

        if (!id)
            return http_error(c, MHD_HTTP_BAD_REQUEST, "missing Mcp-Session-Id");
        x->session = session_get(h, id);
        if (!x->session)
            return http_error(c, MHD_HTTP_NOT_FOUND, "unknown session");
    }
    conn = modern ? x->conn : x->session->conn;
    if (!modern && request) { /* a dropped stream cancels the call: ex_wait */
        const union MHD_ConnectionInfo *ci =
                sym_MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

        x->watched = conn;
        x->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        x->sock_fd = ci && x->wake_fd >= 0 ? ci->connect_fd : -1;
    }
    atomic_fetch_add(&x->refs, 1); /* the sink's, dropped by sink_done */
    mcp_handle(conn, x->body ? x->body : "", x->len, &sink);
    if (!request) {
        /* an invalid message gets its JSON-RPC error with a 400 */
        pthread_mutex_lock(&x->lock);
        while (!x->done)
            pthread_cond_wait(&x->cond, &x->lock);
        pthread_mutex_unlock(&x->lock);
        if (x->n_msgs > x->first)
            return respond(c, MHD_HTTP_BAD_REQUEST, "application/json", x->msgs[x->first], NULL);
        return respond(c, MHD_HTTP_ACCEPTED, NULL, "", NULL);
    }
    return answer(
            c, x, accept && strstr(accept, "text/event-stream"), init ? x->session->id : NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
        const char *method, const char *version, const char *data, size_t *data_size,
        void **con_cls)
{
    struct http *h = cls;
    struct exchange *x = *con_cls;
    unsigned status;
    const char *why;

    (void)version;
    if (!x) {
        if (strcmp(url, "/mcp") != 0)
            return http_error(c, MHD_HTTP_NOT_FOUND, "not found: the endpoint is /mcp");
        bool preflight = strcmp(method, "OPTIONS") == 0;

        if ((why = refusal(h, c, preflight, &status)))
            return http_error(c, status, why);
        if (preflight)
            return on_preflight(c);
        if (strcmp(method, "DELETE") == 0)
            return on_delete(h, c);
        if (strcmp(method, "POST") != 0)
            return http_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "this server opens no streams");
        x = calloc(1, sizeof(*x));
        if (!x)
            return MHD_NO;
        pthread_mutex_lock(&h->lock);
        if (h->stopping) {
            pthread_mutex_unlock(&h->lock);
            free(x);
            return http_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is shutting down");
        }
        h->active++;
        pthread_mutex_unlock(&h->lock);
        atomic_init(&x->refs, 1);
        x->wake_fd = x->sock_fd = -1;
        pthread_mutex_init(&x->lock, NULL);
        pthread_cond_init(&x->cond, NULL);
        x->h = h;
        *con_cls = x;
        return MHD_YES;
    }
    if (*data_size) {
        if (!x->too_big && x->len + *data_size <= JR_MAX_MESSAGE) {
            char *n = realloc(x->body, x->len + *data_size + 1);

            if (!n)
                return MHD_NO;
            x->body = n;
            memcpy(x->body + x->len, data, *data_size);
            x->len += *data_size;
            x->body[x->len] = '\0';
        } else {
            x->too_big = true;
        }
        *data_size = 0;
        return MHD_YES;
    }
    return on_post(h, c, x);
}

static void completed(
        void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode code)
{
    struct exchange *x = *con_cls;
    struct http *h = cls;

    (void)c;
    (void)code;
    if (!x)
        return;
    if (x->session)
        session_put(h, x->session);
    if (x->conn)
        modern_end(h, x);
    *con_cls = NULL;
    ex_unref(x);
    pthread_mutex_lock(&h->lock);
    h->active--;
    pthread_cond_broadcast(&h->quiet);
    pthread_mutex_unlock(&h->lock);
}

/* ---- the server ---------------------------------------------------------- */

/* "127.0.0.1:8080", "[::1]:8080", "localhost:0" (0: any free port). */
static int parse_addr(const char *spec, struct sockaddr_storage *ss, bool *ret_loopback)
{
    char host[128];
    const char *colon = strrchr(spec, ':');
    unsigned long port;
    char *end = NULL;

    if (!colon || (size_t)(colon - spec) >= sizeof(host))
        return -1;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    port = strtoul(colon + 1, &end, 10);
    if (!end || *end || port > 65535 || colon[1] == '\0')
        return -1;
    memset(ss, 0, sizeof(*ss));
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    if (host[0] == '[') {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        size_t n = strlen(host);

        if (n < 3 || host[n - 1] != ']')
            return -1;
        host[n - 1] = '\0';
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
            return -1;
        *ret_loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
        return 0;
    }
    ((struct sockaddr_in *)ss)->sin_family = AF_INET;
    ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) != 1)
        return -1;
    *ret_loopback = (ntohl(((struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    return 0;
}

/* A listening socket at ss, or -1 after saying why on stderr: a port in
 * use is named as such (libmicrohttpd's own bind message says "port 0"). */
static int listen_on(const struct sockaddr_storage *ss, const char *addr)
{
    socklen_t len =
            ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0) {
        fprintf(stderr, "llm-sandbox: cannot listen on %s: socket: %s\n", addr, strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, 64) < 0) {
        int e = errno;

        close(fd);
        if (e == EADDRINUSE)
            fprintf(stderr,
                    "llm-sandbox: cannot listen on %s: the port is in use (another program, or "
                    "another llm-sandbox serve, listens there); choose another port with --http "
                    "ADDRESS:PORT (PORT 0 takes any free one)\n",
                    addr);
        else if (e == EACCES)
            fprintf(stderr,
                    "llm-sandbox: cannot listen on %s: a port below 1024 needs root "
                    "(CAP_NET_BIND_SERVICE); choose a port of 1024 or above\n",
                    addr);
        else if (e == EADDRNOTAVAIL)
            fprintf(stderr,
                    "llm-sandbox: cannot listen on %s: no interface here has that address\n", addr);
        else
            fprintf(stderr, "llm-sandbox: cannot listen on %s: %s\n", addr, strerror(e));
        return -1;
    }
    return fd;
}

/* The signal's number. */
static int wait_for_signal(void)
{
    sigset_t mask;
    int fd, sig = SIGTERM;

    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    fd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (fd >= 0) {
        struct signalfd_siginfo si;

        ssize_t n;

        while ((n = read(fd, &si, sizeof(si))) < 0 && errno == EINTR)
            ;
        if (n == (ssize_t)sizeof(si))
            sig = (int)si.ssi_signo;
        close(fd);
    }
    return sig;
}

/* A signal came: every call in flight is cancelled and still answered (a
 * cancelled result); wait, up to MCP_SHUTDOWN_GRACE_MS, until those
 * answers are written and no POST is left, refusing new ones. */
static void drain(struct http *h)
{
    long long deadline = mcp_monotonic_ms() + MCP_SHUTDOWN_GRACE_MS;

    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    for (size_t i = 0; i < MAX_SESSIONS; i++)
        if (h->sessions[i].conn)
            mcp_conn_shutdown(h->sessions[i].conn);
    for (struct exchange *x = h->modern; x; x = x->next)
        mcp_conn_shutdown(x->conn);
    while (h->active > 0) {
        struct timespec until;
        long long left = deadline - mcp_monotonic_ms();

        if (left <= 0)
            break;
        clock_gettime(CLOCK_REALTIME, &until);
        left = left < 100 ? left : 100;
        until.tv_nsec += (long)left * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&h->quiet, &h->lock, &until);
    }
    pthread_mutex_unlock(&h->lock);
}

int mcp_serve_http(struct sbx_runtime *rt, const struct mcp_options *opt, const char *addr)
{
    struct sockaddr_storage ss;
    struct http h = {.rt = rt};
    struct MHD_Daemon *d;
    const union MHD_DaemonInfo *info;
    sigset_t mask;
    bool v6;
    int sig, lfd;

    if (parse_addr(addr, &ss, &h.loopback) < 0) {
        fprintf(stderr, "llm-sandbox: --http '%s' must be ADDRESS:PORT, e.g. 127.0.0.1:8080\n",
                addr);
        return -1;
    }
    if (mcp_http_open() < 0)
        return -1;
    h.token = sbx_runtime_http_token(rt);
    if (!h.loopback && !h.token) {
        fprintf(stderr,
                "llm-sandbox: serving on '%s', which is not loopback, needs "
                "LLM_SANDBOX_HTTP_TOKEN (clients send it as a bearer token)\n",
                addr);
        return -1;
    }
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, NULL); /* before any thread exists */
    {
        struct sigaction ign = {.sa_handler = SIG_IGN};

        sigaction(SIGPIPE, &ign, NULL);
    }
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.quiet, NULL);
    if (mcp_server_new(rt, opt, &h.s, NULL) < 0)
        return -1;
    v6 = ss.ss_family == AF_INET6;
    lfd = listen_on(&ss, addr);
    if (lfd < 0) {
        mcp_server_free(h.s);
        return -1;
    }
    /* (the daemon owns lfd from here: it closes it when stopped) */
    d = sym_MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                     MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0),
            0, NULL, NULL, handler, &h, MHD_OPTION_LISTEN_SOCKET, lfd, MHD_OPTION_NOTIFY_COMPLETED,
            completed, &h, MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "llm-sandbox: cannot serve HTTP on %s: %s\n", addr, strerror(errno));
        close(lfd);
        mcp_server_free(h.s);
        return -1;
    }
    info = sym_MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "llm-sandbox: MCP over HTTP at http://%.*s:%u/mcp\n",
            (int)(strrchr(addr, ':') - addr), addr, info ? info->port : 0);
    sig = wait_for_signal();
    /* a shutdown never waits for the toolchains' probes (the calls in
     * flight, which may be running one, are cancelled too) */
    sbx_runtime_stop_probes(rt, true);
    drain(&h);
    /* Cancel first: a connection's thread may be waiting for a running
     * call, and stopping the daemon waits for every connection thread. */
    pthread_mutex_lock(&h.lock);
    for (size_t i = 0; i < MAX_SESSIONS; i++)
        if (h.sessions[i].conn)
            mcp_conn_cancel(h.sessions[i].conn);
    for (struct exchange *x = h.modern; x; x = x->next)
        mcp_conn_cancel(x->conn);
    pthread_mutex_unlock(&h.lock);
    sym_MHD_stop_daemon(d);
    for (size_t i = 0; i < MAX_SESSIONS; i++)
        mcp_conn_free(h.sessions[i].conn);
    mcp_server_free(h.s);
    pthread_mutex_destroy(&h.lock);
    pthread_cond_destroy(&h.quiet);
    return 128 + sig;
}
