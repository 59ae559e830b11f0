/* SPDX-License-Identifier: MIT */
/*
 * jsonrpc.c: parse and build JSON-RPC 2.0 messages (jsonrpc.h). Strict:
 * one JSON object per message, "jsonrpc": "2.0", an id that is a string or
 * an integer, a string method, params an object when present; no batches
 * (MCP 2025-06-18 removed them). UTF-8 is checked strictly first (json-c's
 * own check lets overlong forms and surrogates through); the tokener is
 * capped at JR_MAX_DEPTH; no integer may lie outside what json-c holds
 * exactly (integers_exact). No I/O.
 */
#include "jsonrpc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void invalid(struct jr_msg *msg, int code, const char *why)
{
    msg->kind = JR_INVALID;
    msg->err_code = code;
    msg->err_msg = why;
}

static bool id_ok(struct json_object *id)
{
    return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* Whether the n digits at d, as a number, are at most those of max. */
static bool digits_at_most(const char *d, size_t n, const char *max)
{
    size_t max_n = strlen(max);

    while (n > 1 && *d == '0') {
        d++;
        n--;
    }
    return n < max_n || (n == max_n && memcmp(d, max, n) <= 0);
}

/*
 * json-c 0.16 (Debian 12) clamps an integer it cannot hold to INT64_MIN or
 * UINT64_MAX and says nothing, so a request with id 2^64 would be answered
 * with id 18446744073709551615: a response to a request the client never
 * sent (a progressToken or a cancelled requestId would go astray the same
 * way). JSON lets a receiver limit the range of its numbers (RFC 8259,
 * section 6), and later json-c releases refuse such an integer as a parse
 * error in strict mode; this does the same whichever json-c is linked. The message
 * is answered -32700 with a null id, as JSON-RPC 2.0 (section 5) asks when
 * the id could not be read. So every integer id that is accepted, from
 * -2^63 to 2^64-1, is held exactly and echoed byte for byte; the one
 * exception is -0, which is the integer 0 and comes back as 0. Runs on text
 * json-c has accepted: strings are closed, numbers are well formed, and a
 * digit or '-' outside a string starts a number.
 */
static bool integers_exact(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        size_t j, digits;
        bool neg;

        if (s[i] == '"') {
            for (i++; i < len && s[i] != '"'; i++)
                if (s[i] == '\\')
                    i++;
            continue;
        }
        if (s[i] != '-' && !is_digit(s[i]))
            continue;
        neg = s[i] == '-';
        j = i + neg;
        while (j < len && is_digit(s[j]))
            j++;
        digits = j - i - neg;
        if ((j == len || (s[j] != '.' && s[j] != 'e' && s[j] != 'E')) &&
                !digits_at_most(
                        s + i + neg, digits, neg ? "9223372036854775808" : "18446744073709551615"))
            return false;
        while (j < len && s[j] && (is_digit(s[j]) || strchr(".eE+-", s[j])))
            j++;
        i = j - 1;
    }
    return true;
}

/* \u0000 escapes in the JSON text, keys and values alike. */
static size_t nul_escapes(const char *s, size_t len)
{
    size_t n = 0;
    bool in = false;

    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"') {
            in = !in;
        } else if (in && s[i] == '\\' && i + 1 < len) {
            if (s[i + 1] == 'u' && i + 5 < len && memcmp(s + i + 2, "0000", 4) == 0)
                n++;
            i++; /* the escaped character */
        }
    }
    return n;
}

static bool holds_nul(struct json_object *v)
{
    return json_object_is_type(v, json_type_string) &&
           strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v);
}

/* NUL bytes in the string values under o (depth is capped by the tokener). */
static size_t nul_values(struct json_object *o)
{
    size_t n = 0;

    switch (json_object_get_type(o)) {
    case json_type_string: {
        const char *p = json_object_get_string(o);
        size_t len = (size_t)json_object_get_string_len(o);

        for (const char *q; (q = memchr(p, '\0', len)); len -= (size_t)(q + 1 - p), p = q + 1)
            n++;
        return n;
    }
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(o); i++)
            n += nul_values(json_object_array_get_idx(o, i));
        return n;
    case json_type_object: {
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            n += nul_values(v);
        }
        return n;
    }
    case json_type_null:
    case json_type_boolean:
    case json_type_double:
    case json_type_int: return 0;
    }
    return 0;
}

bool jr_holds_nul(struct json_object *o)
{
    return nul_values(o) > 0;
}

static bool listed(const char *const *keys, const char *k)
{
    for (; keys && *keys; keys++)
        if (strcmp(*keys, k) == 0)
            return true;
    return false;
}

const char *jr_nul_key(struct json_object *obj, const char *const *bytes)
{
    if (!json_object_is_type(obj, json_type_object))
        return NULL;
    json_object_object_foreach(obj, k, v)
    {
        if (!listed(bytes, k)) {
            if (jr_holds_nul(v))
                return k;
        } else if (json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, k2, v2)
            {
                (void)k2;
                if (!json_object_is_type(v2, json_type_string) && jr_holds_nul(v2))
                    return k;
            }
        } else if (!json_object_is_type(v, json_type_string) && jr_holds_nul(v)) {
            return k;
        }
    }
    return NULL;
}

static void classify(struct jr_msg *msg)
{
    struct json_object *root = msg->root, *v, *id = NULL, *method = NULL, *params = NULL;
    bool has_id = json_object_object_get_ex(root, "id", &id);
    bool has_method = json_object_object_get_ex(root, "method", &method);
    bool has_result = json_object_object_get_ex(root, "result", NULL);
    bool has_error = json_object_object_get_ex(root, "error", NULL);

    if (has_id && id_ok(id))
        msg->id = id;
    if (!json_object_object_get_ex(root, "jsonrpc", &v) ||
            !json_object_is_type(v, json_type_string) ||
            strcmp(json_object_get_string(v), "2.0") != 0) {
        invalid(msg, JR_INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\"");
        return;
    }
    if (has_id && !id_ok(id)) {
        invalid(msg, JR_INVALID_REQUEST, "\"id\" must be a string or an integer");
        return;
    }
    /* A request's id is answered with it, so the client can tell which
     * was refused. A response's is not checked: we send no requests, so
     * every response is ignored, and one that echoes an id holding a NUL
     * (our own refusal, read back) is still a response. */
    if (has_method && has_id && holds_nul(id)) {
        invalid(msg, JR_INVALID_REQUEST, "\"id\" must not hold a NUL byte (\\u0000)");
        return;
    }
    if (!has_method) {
        if (has_id && (has_result ^ has_error)) {
            msg->kind = JR_RESPONSE;
            return;
        }
        {
            invalid(msg, JR_INVALID_REQUEST, "a request needs a \"method\"");
            return;
        }
    }
    if (!json_object_is_type(method, json_type_string) || holds_nul(method)) {
        invalid(msg, JR_INVALID_REQUEST, "\"method\" must be a string without a NUL byte");
        return;
    }
    if (has_result || has_error) {
        invalid(msg, JR_INVALID_REQUEST, "a request cannot carry a result or an error");
        return;
    }
    if (json_object_object_get_ex(root, "params", &params) &&
            !json_object_is_type(params, json_type_object)) {
        invalid(msg, JR_INVALID_PARAMS, "\"params\" must be an object");
        return;
    }
    msg->method = json_object_get_string(method);
    msg->params = params;
    msg->kind = has_id ? JR_REQUEST : JR_NOTIFICATION;
}

void jr_parse(const char *buf, size_t len, struct jr_msg *msg)
{
    struct json_tokener *tok;
    enum json_tokener_error jerr;
    size_t used;

    memset(msg, 0, sizeof(*msg));
    if (len > JR_MAX_MESSAGE) {
        invalid(msg, JR_INVALID_REQUEST, "message too large");
        return;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    if (!jr_utf8_valid(buf, len)) {
        invalid(msg, JR_PARSE_ERROR, "malformed JSON: invalid UTF-8");
        return;
    }
    tok = json_tokener_new_ex(JR_MAX_DEPTH);
    if (!tok) {
        invalid(msg, JR_INTERNAL_ERROR, "out of memory");
        return;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    msg->root = json_tokener_parse_ex(tok, buf, (int)len);
    jerr = json_tokener_get_error(tok);
    used = json_tokener_get_parse_end(tok);
    if (!msg->root && jerr == json_tokener_continue && len > 0) {
        /* a top-level number ("42") is complete only at the end of the
         * input: say so with a NUL, which ends the text for json-c */
        msg->root = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        used = len;
    }
    json_tokener_free(tok);
    if (jerr != json_tokener_success) { /* (a root of NULL is JSON's null) */
        json_object_put(msg->root);
        msg->root = NULL;
        {
            invalid(msg, JR_PARSE_ERROR,
                    jerr == json_tokener_error_depth ? "JSON nested too deeply" : "malformed JSON");
            return;
        }
    }
    while (used < len && (buf[used] == ' ' || buf[used] == '\t'))
        used++;
    if (used != len) {
        invalid(msg, JR_PARSE_ERROR, "malformed JSON: data after the message");
        return;
    }
    if (!integers_exact(buf, len)) {
        invalid(msg, JR_PARSE_ERROR,
                "JSON holds an integer outside -2^63 .. 2^64-1, which this server cannot hold "
                "exactly; send such an id as a string");
        return;
    }
    if (json_object_is_type(msg->root, json_type_array)) {
        invalid(msg, JR_INVALID_REQUEST, "batches are not supported");
        return;
    }
    if (!json_object_is_type(msg->root, json_type_object)) {
        invalid(msg, JR_INVALID_REQUEST, "a message must be a JSON object");
        return;
    }
    classify(msg);
    /* json-c keeps keys as C strings: "a\u0000b" would become "a" (and
     * "i\u0000d" an id). A NUL the text escapes that no value holds is in
     * a key. */
    if (msg->kind != JR_INVALID && nul_escapes(buf, len) > nul_values(msg->root)) {
        invalid(msg, JR_INVALID_REQUEST,
                "an object key holds a NUL byte (\\u0000); keys must not hold one");
        msg->method = NULL; /* a refused message is answered by its id alone */
        msg->params = NULL;
    }
}

void jr_msg_done(struct jr_msg *msg)
{
    json_object_put(msg->root);
    memset(msg, 0, sizeof(*msg));
}

static struct json_object *envelope(struct json_object *id)
{
    struct json_object *o = json_object_new_object();

    if (!o)
        return NULL;
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    /* the id is copied (json_object_get): it belongs to the request */
    json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
    return o;
}

struct json_object *jr_result(struct json_object *id, struct json_object *result)
{
    struct json_object *o = envelope(id);

    if (!o) {
        json_object_put(result);
        return NULL;
    }
    json_object_object_add(o, "result", result ? result : json_object_new_object());
    return o;
}

struct json_object *jr_error(
        struct json_object *id, int code, const char *msg, struct json_object *data)
{
    struct json_object *o = envelope(id), *e = json_object_new_object();

    if (!o || !e) {
        json_object_put(o);
        json_object_put(e);
        json_object_put(data);
        return NULL;
    }
    json_object_object_add(e, "code", json_object_new_int(code));
    json_object_object_add(e, "message", json_object_new_string(msg));
    if (data)
        json_object_object_add(e, "data", data);
    json_object_object_add(o, "error", e);
    return o;
}

struct json_object *jr_notification(const char *method, struct json_object *params)
{
    struct json_object *o = json_object_new_object();

    if (!o) {
        json_object_put(params);
        return NULL;
    }
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(o, "params", params);
    return o;
}

/* Length of the valid sequence at s[0..n), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    {
        unsigned cp = c & (0x7F >> len);

        for (size_t i = 1; i < len; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
    }
    return len;
}

bool jr_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;

    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(p + i, len - i);

        if (!n)
            return false;
        i += n;
    }
    return true;
}

char *jr_utf8_fix(const char *s, size_t len, size_t *ret_len)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out = len < (SIZE_MAX - 1) / 3 ? malloc(len * 3 + 1) : NULL;
    size_t o = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(p + i, len - i);

        if (n) {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3); /* U+FFFD for one bad byte */
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    *ret_len = o;
    return out;
}

const char *jr_text(struct json_object *obj, size_t *ret_len)
{
    size_t len = 0;
    const char *s = json_object_to_json_string_length(
            obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

    if (ret_len)
        *ret_len = len;
    return s;
}

/* ---- the id of a message past the cap ------------------------------------ */

#define PEEK_ID_MAX 4096 /* a longer id is not echoed */

static size_t skip_ws(const char *b, size_t i, size_t n)
{
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n'))
        i++;
    return i;
}

/* Just past the string that opens at b[i], or n when it does not end. */
static size_t skip_string(const char *b, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (b[i] == '\\')
            i++;
        else if (b[i] == '"')
            return i + 1;
    }
    return n;
}

/* Just past the value that starts at b[i] (a scalar ends at the ',' or
 * '}' after it), or n when it does not end within the bytes. Not a
 * validator: the message is refused anyway, this only finds its id. */
static size_t skip_value(const char *b, size_t i, size_t n)
{
    size_t depth = 0;

    while (i < n) {
        char ch = b[i];

        if (ch == '"') {
            i = skip_string(b, i, n);
            if (depth == 0)
                return i;
            continue;
        }
        if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            if (depth == 0)
                return i;
            if (--depth == 0)
                return i + 1;
        } else if (ch == ',' && depth == 0) {
            return i;
        }
        i++;
    }
    return n;
}

/* A string, an integer json-c holds exactly, or null. (transfer full) */
static struct json_object *id_from(const char *text, size_t n)
{
    struct json_object *id;
    char *copy;

    if (n == 0 || n > PEEK_ID_MAX || !jr_utf8_valid(text, n) || !integers_exact(text, n))
        return NULL;
    copy = strndup(text, n);
    id = copy ? json_tokener_parse(copy) : NULL;
    free(copy);
    if (id && !id_ok(id)) {
        json_object_put(id);
        return NULL;
    }
    return id;
}

struct json_object *jr_peek_id(const char *buf, size_t len)
{
    size_t i = skip_ws(buf, 0, len);

    if (i >= len || buf[i] != '{')
        return NULL;
    for (i++;; i++) {
        size_t key = skip_ws(buf, i, len), key_end, val;

        if (key >= len || buf[key] != '"')
            return NULL;
        key_end = skip_string(buf, key, len);
        i = skip_ws(buf, key_end, len);
        if (i >= len || buf[i] != ':')
            return NULL;
        val = skip_ws(buf, i + 1, len);
        i = skip_value(buf, val, len);
        if (i >= len)
            return NULL;
        if (key_end - key == 4 && memcmp(buf + key, "\"id\"", 4) == 0)
            return id_from(buf + val, i - val);
        i = skip_ws(buf, i, len);
        if (i >= len || buf[i] != ',')
            return NULL;
    }
}
