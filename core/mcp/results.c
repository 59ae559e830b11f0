/* SPDX-License-Identifier: MIT */
/*
 * results.c: how tools answer: CallToolResults as text, as an error, or
 * as structured content mirrored as text, and a run's result with its
 * artifacts as blocks (images inline up to a cap, other files as resource
 * links for clients that know them). Shared by every tool table; no state.
 *
 * A run's text block is its readable form, not the JSON of
 * structuredContent: a model reads stdout and tracebacks as printed, not
 * with every newline escaped, and pays for fewer tokens. That departs, on
 * purpose, from the spec's SHOULD (serialized JSON in a text block for
 * clients without structured content); LLM_SANDBOX_RESULT_TEXT=json
 * restores it for such clients.
 */
#include <inttypes.h>
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

static const char *str_of(struct json_object *o, const char *key)
{
    struct json_object *v;

    return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
                   ? json_object_get_string(v)
                   : NULL;
}

static bool bool_of(struct json_object *o, const char *key)
{
    struct json_object *v;

    return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

static void stream_text(FILE *f, struct json_object *exec, const char *name)
{
    struct json_object *v;
    const char *text;
    size_t len;

    if (!json_object_object_get_ex(exec, name, &v) || !json_object_is_type(v, json_type_string))
        return;
    text = json_object_get_string(v);
    len = (size_t)json_object_get_string_len(v);
    if (len == 0)
        return;
    fprintf(f, "--- %s ---\n", name);
    fwrite(text, 1, len, f);
    if (text[len - 1] != '\n')
        fputc('\n', f);
}

/* ", stdout truncated (1048576 of 5000000 bytes kept)" */
static void truncation(FILE *f, struct json_object *exec, const char *name)
{
    struct json_object *b = NULL, *s = NULL;
    char key[32];

    snprintf(key, sizeof(key), "%s_truncated", name);
    if (!bool_of(exec, key))
        return;
    snprintf(key, sizeof(key), "%s_bytes", name);
    json_object_object_get_ex(exec, key, &b);
    json_object_object_get_ex(exec, name, &s);
    fprintf(f, ", %s truncated (%d of %" PRIu64 " bytes kept)", name,
            s ? json_object_get_string_len(s) : 0, b ? json_object_get_uint64(b) : 0);
}

static void files_text(FILE *f, struct json_object *exec, size_t held_back)
{
    struct json_object *arts;
    size_t n = json_object_object_get_ex(exec, "artifacts", &arts) ? json_object_array_length(arts)
                                                                   : 0;

    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? ", " : "--- files ---\n",
                str_of(json_object_array_get_idx(arts, i), "path"));
    if (n)
        fputc('\n', f);
    if (bool_of(exec, "artifacts_truncated"))
        fputs("some files were left out (LLM_SANDBOX_ARTIFACTS_MAX, _BYTES)\n", f);
    if (held_back)
        fprintf(f,
                "%zu image%s held back (past the inline cap, LLM_SANDBOX_INLINE_IMAGES and "
                "_BYTES): read %s by uri\n",
                held_back, held_back == 1 ? "" : "s", held_back == 1 ? "it" : "them");
}

/* The readable form of a run (the header says why): a status line, the
 * session, message and warnings, stdout, stderr, the files.
 * (transfer full: free()) */
static char *readable(struct json_object *exec, size_t held_back)
{
    struct json_object *v;
    const char *st = str_of(exec, "status"), *t;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    if (!f)
        return NULL;
    fprintf(f, "status: %s", st ? st : "unknown");
    if (json_object_object_get_ex(exec, "exit_code", &v) && v)
        fprintf(f, ", exit code %d", json_object_get_int(v));
    if ((t = str_of(exec, "limit")))
        fprintf(f, ", limit hit: %s", t);
    truncation(f, exec, "stdout");
    truncation(f, exec, "stderr");
    fputc('\n', f);
    if ((t = str_of(exec, "session_id")))
        fprintf(f, "session_id: %s\n", t);
    if ((t = str_of(exec, "message")))
        fprintf(f, "message: %s\n", t);
    if (json_object_object_get_ex(exec, "warnings", &v))
        for (size_t i = 0; i < json_object_array_length(v); i++)
            fprintf(f, "warning: %s\n", json_object_get_string(json_object_array_get_idx(v, i)));
    stream_text(f, exec, "stdout");
    stream_text(f, exec, "stderr");
    files_text(f, exec, held_back);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static struct json_object *image_block(const struct sbx_artifact *a, const char *data)
{
    struct json_object *b = json_object_new_object();

    json_object_object_add(b, "type", json_object_new_string("image"));
    json_object_object_add(b, "data", json_object_new_string(data));
    json_object_object_add(b, "mimeType", json_object_new_string(a->mime_type));
    return b;
}

static struct json_object *link_block(const struct sbx_artifact *a)
{
    struct json_object *b = json_object_new_object();

    json_object_object_add(b, "type", json_object_new_string("resource_link"));
    json_object_object_add(b, "uri", json_object_new_string(a->uri));
    json_object_object_add(b, "name", json_object_new_string(a->path));
    json_object_object_add(b, "mimeType", json_object_new_string(a->mime_type));
    json_object_object_add(b, "size", json_object_new_uint64(a->size));
    return b;
}

/* The run's images inline (PNG, JPEG, GIF, WebP, as their bytes say:
 * artifacts.c types a fetched file by its magic) up to the caps; the rest
 * and every other file (SVG too) as resource links for clients that know
 * them; older clients find the URIs in structuredContent. Returns the
 * number of images the caps held back. */
static size_t artifact_blocks(struct mcp_call *call, struct json_object *content,
        const struct sbx_execution *ex, const struct sbx_result_options *o)
{
    bool links = mcp_call_protocol_at_least(call, "2025-06-18");
    uint64_t n_inline = 0, bytes = 0;
    size_t held = 0;

    for (size_t i = 0; i < ex->n_artifacts; i++) {
        const struct sbx_artifact *a = &ex->artifacts[i];
        struct json_object *b = NULL;
        char *data = NULL;

        if (a->data && inline_image(a->mime_type)) {
            if (n_inline < o->inline_images_max && a->len <= o->inline_image_bytes - bytes &&
                    (data = b64_encode(a->data, a->len))) {
                b = image_block(a, data);
                n_inline++;
                bytes += a->len;
                free(data);
            } else {
                held++;
            }
        }
        if (!b && links && a->uri)
            b = link_block(a);
        if (b)
            json_object_array_add(content, b);
    }
    return held;
}

struct json_object *mcp_execution_result(struct mcp_call *call, const struct sbx_execution *ex)
{
    struct sbx_result_options o;
    struct json_object *exec = sbx_execution_to_json(ex), *r, *c, *t;
    size_t held;
    char *text = NULL;

    if (!exec)
        return NULL;
    sbx_runtime_result_options(mcp_call_runtime(call), &o);
    r = json_object_new_object();
    c = json_object_new_array();
    t = json_object_new_object();
    json_object_array_add(c, t);
    held = artifact_blocks(call, c, ex, &o);
    if (held)
        json_object_object_add(exec, "images_held_back", json_object_new_uint64(held));
    json_object_object_add(t, "type", json_object_new_string("text"));
    if (o.text_json)
        json_object_object_add(t, "text",
                json_object_new_string(json_object_to_json_string_ext(
                        exec, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
    else
        json_object_object_add(t, "text",
                json_object_new_string((text = readable(exec, held)) ? text : "status: unknown\n"));
    free(text);
    json_object_object_add(r, "content", c);
    json_object_object_add(r, "structuredContent", exec);
    json_object_object_add(r, "isError", json_object_new_boolean(ex->status != SBX_STATUS_OK));
    return r;
}
