/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jsonrpc.c: libFuzzer target for the MCP JSON-RPC reader and writer
 * (core/mcp/jsonrpc.c). Every input is one message as a transport hands it
 * over (a stdio line, an HTTP body). jr_parse must classify it
 * consistently (a request has a string method and a string or integer id,
 * a notification has no id, params is an object when present, an invalid
 * message has a JSON-RPC error code and a reason), and what the server
 * builds from it must be one line of JSON that reads back as what was
 * meant: the error the server answers with (mcp_handle), a result carrying
 * the request's params and id, and a notification with its method; all of
 * it strict UTF-8 (and jr_utf8_fix, the server's last repair before
 * sending, makes anything valid and leaves valid text alone). A crash,
 * a leak or an abort() is a bug. Build with clang -fsanitize=fuzzer, or
 * link with replay.c to replay a corpus without libFuzzer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static int id_ok(struct json_object *id)
{
    return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

/* One line: serialized, it holds no raw newline and no NUL byte. */
static const char *line_of(struct json_object *o, size_t *len)
{
    const char *t;

    check(o != NULL);
    t = jr_text(o, len);
    check(t != NULL && *len > 0 && strlen(t) == *len);
    check(memchr(t, '\n', *len) == NULL && memchr(t, '\r', *len) == NULL);
    check(jr_utf8_valid(t, *len)); /* what was read was, so what is written is */
    return t;
}

/* Serialize o (taken), read it back: a response with the same id (or,
 * without one, refused as a message with a null id), whose "result"
 * equals want when given. */
static void check_response(struct json_object *o, struct json_object *id, struct json_object *want)
{
    struct jr_msg back;
    size_t len;
    const char *t = line_of(o, &len);
    struct json_object *got;

    jr_parse(t, len, &back);
    if (id) {
        check(back.kind == JR_RESPONSE);
        check(back.id && json_object_equal(back.id, id));
        if (want) {
            check(json_object_object_get_ex(back.root, "result", &got));
            check(json_object_equal(got, want));
        }
    } else {
        /* "id": null is not an id we accept from a client */
        check(back.kind == JR_INVALID && back.err_code == JR_INVALID_REQUEST);
    }
    jr_msg_done(&back);
    json_object_put(o);
}

static void check_parsed(const struct jr_msg *m)
{
    switch (m->kind) {
    case JR_REQUEST: check(m->root && m->method && m->id && id_ok(m->id)); break;
    case JR_NOTIFICATION: check(m->root && m->method && !m->id); break;
    case JR_RESPONSE: check(m->root && m->id && id_ok(m->id) && !m->method); break;
    case JR_INVALID:
        check(m->err_msg && *m->err_msg && !strchr(m->err_msg, '\n'));
        check(m->err_code == JR_PARSE_ERROR || m->err_code == JR_INVALID_REQUEST ||
                m->err_code == JR_INVALID_PARAMS || m->err_code == JR_INTERNAL_ERROR);
        /* no id is taken from text that is not one JSON value */
        if (m->err_code == JR_PARSE_ERROR)
            check(!m->id);
        if (m->id)
            check(m->root && id_ok(m->id));
        break;
    default: check(0);
    }
    if (m->kind != JR_INVALID)
        check(json_object_is_type(m->root, json_type_object));
    check(!m->params || json_object_is_type(m->params, json_type_object));
    if (m->params)
        check(m->kind == JR_REQUEST || m->kind == JR_NOTIFICATION);
}

/* The repair the server applies before sending: valid output, the same
 * text when it was valid already, and stable. */
static void check_utf8_fix(const char *s, size_t len)
{
    size_t n, n2;
    char *fixed = jr_utf8_fix(s, len, &n), *again;

    check(fixed != NULL && jr_utf8_valid(fixed, n) && fixed[n] == '\0');
    if (jr_utf8_valid(s, len))
        check(n == len && memcmp(fixed, s, len) == 0);
    else
        check(n > 0);
    again = jr_utf8_fix(fixed, n, &n2);
    check(again && n2 == n && memcmp(again, fixed, n) == 0);
    free(again);
    free(fixed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jr_msg m, again;

    check_utf8_fix((const char *)data, size);
    jr_parse((const char *)data, size, &m);
    check_parsed(&m);
    /* nothing but strict UTF-8 gets past the reader */
    if (m.kind != JR_INVALID || m.err_code != JR_PARSE_ERROR)
        check(jr_utf8_valid((const char *)data, size));

    /* deterministic: the same bytes read the same way */
    jr_parse((const char *)data, size, &again);
    check(again.kind == m.kind && again.err_code == m.err_code);
    check((!m.id && !again.id) || (m.id && again.id && json_object_equal(m.id, again.id)));
    check((!m.method && !again.method) ||
            (m.method && again.method && strcmp(m.method, again.method) == 0));
    jr_msg_done(&again);

    if (m.kind == JR_INVALID) {
        /* what mcp_handle answers */
        check_response(jr_error(m.id, m.err_code, m.err_msg, NULL), m.id, NULL);
    } else if (m.kind == JR_REQUEST) {
        struct json_object *params = m.params;
        struct json_object *result = NULL, *data_obj = json_object_new_object();

        /* a result that carries the params back, an error with data, a
         * notification with the same method */
        if (params)
            check(json_object_deep_copy(params, &result, NULL) == 0);
        else
            result = json_object_new_object();
        {
            struct json_object *want = NULL;

            check(json_object_deep_copy(result, &want, NULL) == 0);
            check_response(jr_result(m.id, result), m.id, want);
            json_object_put(want);
        }
        json_object_object_add(data_obj, "method", json_object_new_string(m.method));
        check_response(
                jr_error(m.id, JR_METHOD_NOT_FOUND, "method not found", data_obj), m.id, NULL);
        {
            struct json_object *copy = NULL, *o;
            struct jr_msg back;
            size_t len;
            const char *t;

            if (params)
                check(json_object_deep_copy(params, &copy, NULL) == 0);
            o = jr_notification(m.method, copy);
            t = line_of(o, &len);
            jr_parse(t, len, &back);
            check(back.kind == JR_NOTIFICATION && strcmp(back.method, m.method) == 0);
            check(!params || json_object_equal(back.params, params));
            jr_msg_done(&back);
            json_object_put(o);
        }
    }
    jr_msg_done(&m);
    return 0;
}
