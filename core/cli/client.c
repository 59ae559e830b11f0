/* SPDX-License-Identifier: MIT */
/*
 * client.c: the `session` subcommands' MCP client (client.h). One
 * connection, one request at a time, newline-delimited JSON-RPC exactly as
 * the server's stream transports speak it. Messages from the server are
 * capped (READ_CAP) and parsed with a depth limit; notifications and
 * answers to other ids are skipped. Ctrl-C needs no handler: the process
 * ends, the server sees the connection close and cancels the call.
 */
#include "client.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <llm-sandbox/sbx.h>

#define READ_CAP         (256u * 1024u * 1024u) /* one message from the server */
#define JSON_DEPTH       64
#define PROTOCOL_VERSION "2025-06-18"
#define CLIENT_NAME      "llm-sandbox-session"

static int send_msg(struct mcp_client *c, struct json_object *msg)
{
    size_t len;
    const char *text = json_object_to_json_string_length(
            msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    struct {
        const char *p;
        size_t n;
    } parts[2] = {{text, len}, {"\n", 1}};

    for (int i = 0; i < 2; i++) {
        while (parts[i].n > 0) {
            ssize_t n = send(c->fd, parts[i].p, parts[i].n, MSG_NOSIGNAL);

            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                fprintf(stderr, "llm-sandbox: lost the connection to the server at '%s': %s\n",
                        c->path, n < 0 ? strerror(errno) : "closed");
                return -1;
            }
            parts[i].p += n;
            parts[i].n -= (size_t)n;
        }
    }
    return 0;
}

/* The next line from the server, parsed; NULL (said why) at the end of
 * the connection or on a line that is not JSON. (transfer full) */
static struct json_object *read_msg(struct mcp_client *c)
{
    for (;;) {
        char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
        ssize_t n;

        if (nl) {
            size_t line = (size_t)(nl - c->buf);
            struct json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
            struct json_object *o = NULL;
            bool blank = line == 0 || (line == 1 && c->buf[0] == '\r');

            if (tok && !blank) {
                o = json_tokener_parse_ex(tok, c->buf, (int)line);
                if (json_tokener_get_error(tok) != json_tokener_success ||
                        json_tokener_get_parse_end(tok) != line) {
                    json_object_put(o);
                    o = NULL;
                }
                json_tokener_free(tok);
            }
            memmove(c->buf, nl + 1, c->len - line - 1);
            c->len -= line + 1;
            if (blank)
                continue;
            if (!o)
                fprintf(stderr,
                        "llm-sandbox: the server at '%s' sent something that is not "
                        "JSON\n",
                        c->path);
            return o;
        }
        if (c->len == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 65536;
            char *b;

            if (cap > READ_CAP || !(b = realloc(c->buf, cap))) {
                fprintf(stderr,
                        "llm-sandbox: a message from the server at '%s' is larger "
                        "than %u MiB\n",
                        c->path, READ_CAP >> 20);
                return NULL;
            }
            c->buf = b;
            c->cap = cap;
        }
        n = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "llm-sandbox: the server at '%s' closed the connection%s%s\n", c->path,
                    n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
            return NULL;
        }
        c->len += (size_t)n;
    }
}

static struct json_object *request(
        struct mcp_client *c, const char *method, struct json_object *params)
{
    struct json_object *m = json_object_new_object();

    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(m, "id", json_object_new_int64(c->next_id++));
    json_object_object_add(m, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(m, "params", params);
    return m;
}

/* The server's info notices (libraries being installed for a session) on
 * stderr, one line each, as `run` prints them on a pipe; its warnings come
 * with the result. */
static void say_notice(struct json_object *msg)
{
    struct json_object *m, *p, *lv, *data;

    if (json_object_object_get_ex(msg, "method", &m) &&
            strcmp(json_object_get_string(m), "notifications/message") == 0 &&
            json_object_object_get_ex(msg, "params", &p) &&
            json_object_object_get_ex(p, "level", &lv) &&
            strcmp(json_object_get_string(lv), "info") == 0 &&
            json_object_object_get_ex(p, "data", &data) &&
            json_object_is_type(data, json_type_string))
        fprintf(stderr, "llm-sandbox: %s\n", json_object_get_string(data));
}

/* Send a request and wait for its answer: 0 and *ret_result (transfer
 * full), or -1 after saying why. An error with a null id is the server
 * turning the connection away (too many clients, another user): it is the
 * answer too. */
static int roundtrip(struct mcp_client *c, const char *method, const char *what,
        struct json_object *params, struct json_object **ret_result)
{
    struct json_object *req = request(c, method, params), *id, *v;
    int64_t want = c->next_id - 1;
    int r = send_msg(c, req);

    json_object_put(req);
    while (r == 0) {
        struct json_object *msg = read_msg(c), *err = NULL;
        bool has_id, ours;

        if (!msg)
            return -1;
        id = NULL;
        has_id = json_object_object_get_ex(msg, "id", &id);
        ours = has_id && json_object_is_type(id, json_type_int) &&
               json_object_get_int64(id) == want;
        json_object_object_get_ex(msg, "error", &err);
        /* (json-c holds a JSON null as NULL) */
        if (!ours && !(err && has_id && json_object_is_type(id, json_type_null))) {
            say_notice(msg);
            json_object_put(msg); /* a notification (progress, log), or another id */
            continue;
        }
        if (err) {
            const char *text = json_object_object_get_ex(err, "message", &v)
                                       ? json_object_get_string(v)
                                       : json_object_to_json_string(err);

            fprintf(stderr, "llm-sandbox: the server at '%s' refused %s: %s%s\n", c->path, what,
                    text,
                    strstr(text, "unknown tool")
                            ? " (a server without sessions: is it older than this command?)"
                            : "");
            json_object_put(msg);
            return -1;
        }
        if (!json_object_object_get_ex(msg, "result", &v) ||
                !json_object_is_type(v, json_type_object)) {
            fprintf(stderr, "llm-sandbox: the server at '%s' answered %s without a result\n",
                    c->path, what);
            json_object_put(msg);
            return -1;
        }
        *ret_result = json_object_get(v);
        json_object_put(msg);
        return 0;
    }
    return -1;
}

/* The server must run as us or as root: in a directory others could write
 * to (a default under /tmp made by someone else), a socket of another user
 * would get our code and files. */
static bool server_trusted(const struct mcp_client *c)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        fprintf(stderr, "llm-sandbox: cannot tell who runs the server at '%s': %s\n", c->path,
                strerror(errno));
        return false;
    }
    if (cred.uid != geteuid() && cred.uid != 0) {
        fprintf(stderr,
                "llm-sandbox: the server at '%s' runs as uid %u, neither you nor root; not "
                "talking to it\n",
                c->path, (unsigned)cred.uid);
        return false;
    }
    return true;
}

int client_open(struct mcp_client *c, const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct json_object *params = json_object_new_object(), *info = json_object_new_object();
    struct json_object *result = NULL, *note;
    int r;

    *c = (struct mcp_client){.fd = -1, .path = path, .next_id = 1};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "llm-sandbox: socket path '%s' is longer than %zu bytes\n", path,
                sizeof(sa.sun_path) - 1);
        json_object_put(params);
        json_object_put(info);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr,
                "llm-sandbox: cannot connect to the llm-sandbox server at '%s': %s; start one "
                "with 'llm-sandbox serve --socket %s'\n",
                path, strerror(errno), path);
        json_object_put(params);
        json_object_put(info);
        return -1;
    }
    if (!server_trusted(c)) {
        json_object_put(params);
        json_object_put(info);
        return -1;
    }
    json_object_object_add(params, "protocolVersion", json_object_new_string(PROTOCOL_VERSION));
    json_object_object_add(params, "capabilities", json_object_new_object());
    json_object_object_add(info, "name", json_object_new_string(CLIENT_NAME));
    json_object_object_add(info, "version", json_object_new_string(sbx_version()));
    json_object_object_add(params, "clientInfo", info);
    if (roundtrip(c, "initialize", "initialize", params, &result) < 0)
        return -1;
    json_object_put(result);
    note = json_object_new_object();
    json_object_object_add(note, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(note, "method", json_object_new_string("notifications/initialized"));
    r = send_msg(c, note);
    json_object_put(note);
    return r;
}

void client_close(struct mcp_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

int client_call_tool(struct mcp_client *c, const char *tool, struct json_object *args,
        struct json_object **ret_result)
{
    struct json_object *params = json_object_new_object();
    char what[96];

    snprintf(what, sizeof(what), "the call of %.64s", tool);
    json_object_object_add(params, "name", json_object_new_string(tool));
    json_object_object_add(params, "arguments", args ? args : json_object_new_object());
    return roundtrip(c, "tools/call", what, params, ret_result);
}
