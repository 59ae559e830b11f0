/* SPDX-License-Identifier: MIT */
/*
 * jsonrpc.h: JSON-RPC 2.0 envelopes for MCP. Parses one message (a line on
 * stdio, a POST body over HTTP) with caps on size and nesting, validates
 * the envelope, and builds responses, errors and notifications. Knows no
 * MCP methods. Depends on json-c only.
 */
#ifndef SBX_MCP_JSONRPC_H
#define SBX_MCP_JSONRPC_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define JR_MAX_MESSAGE (4u * 1024u * 1024u) /* bytes in one message */
#define JR_MAX_DEPTH   32                   /* JSON nesting */

enum jr_code {
    JR_PARSE_ERROR = -32700,
    JR_INVALID_REQUEST = -32600,
    JR_METHOD_NOT_FOUND = -32601,
    JR_INVALID_PARAMS = -32602,
    JR_INTERNAL_ERROR = -32603,
    JR_SERVER_NOT_INITIALIZED = -32002, /* also MCP's "resource not found" */
};

enum jr_kind {
    JR_REQUEST,      /* method and id */
    JR_NOTIFICATION, /* method, no id */
    JR_RESPONSE,     /* result or error, from the client: ignored */
    JR_INVALID,      /* err_code and err_msg say why; id when one was readable */
};

struct jr_msg {
    enum jr_kind kind;
    struct json_object *root;   /* owned: the whole message */
    struct json_object *id;     /* borrowed from root, or NULL */
    const char *method;         /* borrowed, or NULL */
    struct json_object *params; /* borrowed; NULL when absent (an object otherwise) */
    int err_code;
    const char *err_msg; /* static text */
};

/* Parse len bytes (need not be NUL-terminated). Always fills msg; caller
 * calls jr_msg_done. Invalid UTF-8, depth past JR_MAX_DEPTH, trailing
 * garbage, an integer outside -2^63 .. 2^64-1 (JR_PARSE_ERROR: json-c
 * cannot hold it exactly), batches and wrong envelopes become JR_INVALID. */
void jr_parse(const char *buf, size_t len, struct jr_msg *msg);
void jr_msg_done(struct jr_msg *msg);
/* The id of a message past JR_MAX_MESSAGE, read from its first len bytes
 * without parsing the rest: the top-level "id" when its value (a string or
 * an integer) ends within them, else NULL, so the refusal can name the
 * request it refuses. (transfer full) */
struct json_object *jr_peek_id(const char *buf, size_t len);

/* The first key of object obj whose value holds a NUL byte (in a string,
 * at any depth), or NULL. A key listed in bytes (NULL-terminated; NULL:
 * none) may hold NUL in its own string value and in the string values of
 * its object (stdin, file contents), nowhere else. C strings would cut
 * anything else short at the NUL, so a caller refuses it by name.
 * (transfer none: borrowed from obj) */
const char *jr_nul_key(struct json_object *obj, const char *const *bytes);
/* Whether a string anywhere in o holds a NUL byte. */
bool jr_holds_nul(struct json_object *o);

/* Builders; they take the references they are given (result, data) and
 * copy id. (transfer full) */
struct json_object *jr_result(struct json_object *id, struct json_object *result);
struct json_object *jr_error(
        struct json_object *id, int code, const char *msg, struct json_object *data);
struct json_object *jr_notification(const char *method, struct json_object *params);

/* Serialize compactly on one line, without a newline. (transfer none:
 * valid while obj lives) */
const char *jr_text(struct json_object *obj, size_t *ret_len);

/* Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF), which json-c's own check is not. */
bool jr_utf8_valid(const char *s, size_t len);
/* A copy of s[0..len) with every invalid sequence replaced by U+FFFD, for
 * text made from what a program printed or a message cut short; NULL when
 * out of memory. (transfer full: free()) */
char *jr_utf8_fix(const char *s, size_t len, size_t *ret_len);

#endif
