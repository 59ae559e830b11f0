/* SPDX-License-Identifier: MIT */
/*
 * results.c: how tools answer: CallToolResults as text, as an error, or
 * as structured content mirrored as text, and a run's artifacts appended
 * as blocks (images inline, other files as resource links for clients
 * that know them). Shared by every tool table; no state.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "mcp.h"

struct json_object *mcp_text_result(const char *text, bool is_error)
{
    struct json_object *r = json_object_new_object(), *c = json_object_new_array(),
                       *t = json_object_new_object();

    json_object_object_add(t, "type", json_object_new_string("text"));
    json_object_object_add(t, "text", json_object_new_string(text));
    json_object_array_add(c, t);
    json_object_object_add(r, "content", c);
    json_object_object_add(r, "isError", json_object_new_boolean(is_error));
    return r;
}

struct json_object *mcp_error_result(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return mcp_text_result(msg, true);
}

struct json_object *mcp_structured_result(struct json_object *exec_json, bool ok)
{
    struct json_object *r = json_object_new_object(), *c = json_object_new_array(),
                       *t = json_object_new_object();

    json_object_object_add(t, "type", json_object_new_string("text"));
    json_object_object_add(t, "text",
            json_object_new_string(json_object_to_json_string_ext(
                    exec_json, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
    json_object_array_add(c, t);
    json_object_object_add(r, "content", c);
    json_object_object_add(r, "structuredContent", exec_json);
    json_object_object_add(r, "isError", json_object_new_boolean(!ok));
    return r;
}

static bool inline_image(const char *mime)
{
    return strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0 ||
           strcmp(mime, "image/gif") == 0 || strcmp(mime, "image/webp") == 0;
}

void artifact_blocks(
        struct mcp_call *call, struct json_object *result, const struct sbx_execution *ex)
{
    struct json_object *content = json_object_object_get(result, "content");
    bool links = mcp_call_protocol_at_least(call, "2025-06-18");

    for (size_t i = 0; content && i < ex->n_artifacts; i++) {
        const struct sbx_artifact *a = &ex->artifacts[i];
        struct json_object *b = json_object_new_object();
        char *data = NULL;

        if (a->data && inline_image(a->mime_type) && (data = b64_encode(a->data, a->len))) {
            json_object_object_add(b, "type", json_object_new_string("image"));
            json_object_object_add(b, "data", json_object_new_string(data));
            json_object_object_add(b, "mimeType", json_object_new_string(a->mime_type));
            free(data);
        } else if (links && a->uri) {
            json_object_object_add(b, "type", json_object_new_string("resource_link"));
            json_object_object_add(b, "uri", json_object_new_string(a->uri));
            json_object_object_add(b, "name", json_object_new_string(a->path));
            json_object_object_add(b, "mimeType", json_object_new_string(a->mime_type));
            json_object_object_add(b, "size", json_object_new_uint64(a->size));
        } else { /* older clients: the URIs are in structuredContent */
            json_object_put(b);
            continue;
        }
        json_object_array_add(content, b);
    }
}
