/* SPDX-License-Identifier: MIT */
/*
 * fixtures.c: test-only tools, resources and prompts that the MCP
 * conformance suite's server scenarios call by name (test_simple_text,
 * test://static-text, test_simple_prompt, ...), with the exact values the
 * suite expects. Registered only by `llm-sandbox serve --test-fixtures`,
 * never in normal use; they run no code and touch nothing.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mcp.h"

/* A 1x1 red PNG and a silent WAV: the smallest valid media. */
static const char png_b64[] =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIA"
        "X8jx0gAAAABJRU5ErkJggg==";
static const char wav_b64[] = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

static struct json_object *text_item(const char *text)
{
    struct json_object *t = json_object_new_object();

    json_object_object_add(t, "type", json_object_new_string("text"));
    json_object_object_add(t, "text", json_object_new_string(text));
    return t;
}

static struct json_object *media_item(const char *type, const char *data, const char *mime)
{
    struct json_object *t = json_object_new_object();

    json_object_object_add(t, "type", json_object_new_string(type));
    json_object_object_add(t, "data", json_object_new_string(data));
    json_object_object_add(t, "mimeType", json_object_new_string(mime));
    return t;
}

static struct json_object *resource_item(const char *uri, const char *mime, const char *text)
{
    struct json_object *t = json_object_new_object(), *r = json_object_new_object();

    json_object_object_add(r, "uri", json_object_new_string(uri));
    json_object_object_add(r, "mimeType", json_object_new_string(mime));
    json_object_object_add(r, "text", json_object_new_string(text));
    json_object_object_add(t, "type", json_object_new_string("resource"));
    json_object_object_add(t, "resource", r);
    return t;
}

static struct json_object *result_of(struct json_object *content, bool is_error)
{
    struct json_object *r = json_object_new_object();

    json_object_object_add(r, "content", content);
    if (is_error)
        json_object_object_add(r, "isError", json_object_new_boolean(true));
    return r;
}

static struct json_object *one(struct json_object *item)
{
    struct json_object *a = json_object_new_array();

    json_object_array_add(a, item);
    return a;
}

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};

    nanosleep(&ts, NULL); /* the suite asks for these delays between messages */
}

static int f_text(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    (void)call, (void)args;
    *ret = result_of(one(text_item("This is a simple text response for testing.")), false);
    return 0;
}

static int f_image(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    (void)call, (void)args;
    *ret = result_of(one(media_item("image", png_b64, "image/png")), false);
    return 0;
}

static int f_audio(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    (void)call, (void)args;
    *ret = result_of(one(media_item("audio", wav_b64, "audio/wav")), false);
    return 0;
}

static int f_embedded(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    (void)call, (void)args;
    *ret = result_of(one(resource_item("test://embedded-resource", "text/plain",
                             "This is an embedded resource content.")),
            false);
    return 0;
}

static int f_mixed(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    struct json_object *a = json_object_new_array();

    (void)call, (void)args;
    json_object_array_add(a, text_item("Multiple content types test:"));
    json_object_array_add(a, media_item("image", png_b64, "image/png"));
    json_object_array_add(a, resource_item("test://mixed-content-resource", "application/json",
                                     "{\"test\":\"data\",\"value\":123}"));
    *ret = result_of(a, false);
    return 0;
}

static int f_error(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    (void)call, (void)args;
    *ret = result_of(one(text_item("This tool intentionally returns an error for testing")), true);
    return 0;
}

static int f_progress(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    (void)args;
    for (int i = 0; i <= 2; i++) {
        if (i)
            pause_ms(50);
        mcp_call_progress(call, 50.0 * i, 100, NULL);
    }
    *ret = result_of(one(text_item("Progress test completed")), false);
    return 0;
}

static int f_logging(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    static const char *const lines[] = {
            "Tool execution started", "Tool processing data", "Tool execution completed"};

    (void)args;
    for (int i = 0; i < 3; i++) {
        if (i)
            pause_ms(50);
        mcp_call_log(call, "info", json_object_new_string(lines[i]));
    }
    *ret = result_of(one(text_item("Logging test completed")), false);
    return 0;
}

static int f_schema(struct mcp_call *call, struct json_object *args, struct json_object **ret)
{
    (void)call, (void)args;
    *ret = result_of(one(text_item("JSON Schema 2020-12 tool called")), false);
    return 0;
}

static const char empty_schema[] = "{\"type\":\"object\",\"properties\":{}}";
static const char schema_2020[] =
        "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
        "\"$defs\":{\"address\":{\"type\":\"object\",\"properties\":{\"street\":{\"type\":"
        "\"string\"},\"city\":{\"type\":\"string\"}}}},\"properties\":{\"name\":{\"type\":"
        "\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"}},\"additionalProperties\":false}";

static const struct mcp_tool tools[] = {
        {"test_simple_text", "Simple text", "Returns a fixed text.", empty_schema, NULL, 0, f_text},
        {"test_image_content", "Image", "Returns a 1x1 PNG.", empty_schema, NULL, 0, f_image},
        {"test_audio_content", "Audio", "Returns a tiny WAV.", empty_schema, NULL, 0, f_audio},
        {"test_embedded_resource", "Embedded resource", "Returns an embedded resource.",
                empty_schema, NULL, 0, f_embedded},
        {"test_multiple_content_types", "Mixed content", "Returns text, image and resource.",
                empty_schema, NULL, 0, f_mixed},
        {"test_error_handling", "Error", "Always fails.", empty_schema, NULL, 0, f_error},
        {"test_tool_with_progress", "Progress", "Reports progress 0, 50, 100 of 100.", empty_schema,
                NULL, MCP_TOOL_WORKER, f_progress},
        {"test_tool_with_logging", "Logging", "Sends three log messages.", empty_schema, NULL,
                MCP_TOOL_WORKER, f_logging},
        {"json_schema_2020_12_tool", "JSON Schema 2020-12",
                "Tool with JSON Schema 2020-12 features", schema_2020, NULL, 0, f_schema},
};

/* ---- resources ---------------------------------------------------------- */

static struct json_object *contents(
        const char *uri, const char *mime, const char *key, const char *value)
{
    struct json_object *c = json_object_new_object();

    json_object_object_add(c, "uri", json_object_new_string(uri));
    json_object_object_add(c, "mimeType", json_object_new_string(mime));
    json_object_object_add(c, key, json_object_new_string(value));
    return one(c);
}

static int r_text(
        struct mcp_server *s, const char *owner, const char *uri, struct json_object **ret)
{
    (void)s;
    (void)owner;
    *ret = contents(uri, "text/plain", "text", "This is the content of the static text resource.");
    return 0;
}

static int r_binary(
        struct mcp_server *s, const char *owner, const char *uri, struct json_object **ret)
{
    (void)s;
    (void)owner;
    *ret = contents(uri, "image/png", "blob", png_b64);
    return 0;
}

static int r_watched(
        struct mcp_server *s, const char *owner, const char *uri, struct json_object **ret)
{
    (void)s;
    (void)owner;
    *ret = contents(uri, "text/plain", "text", "Watched resource content.");
    return 0;
}

/* test://template/{id}/data, with id made of [A-Za-z0-9_-]. */
static int r_template(
        struct mcp_server *s, const char *owner, const char *uri, struct json_object **ret)
{
    static const char pre[] = "test://template/", post[] = "/data";
    const char *id = uri + sizeof(pre) - 1;
    size_t n;
    char text[256];

    (void)s;
    (void)owner;
    if (strncmp(uri, pre, sizeof(pre) - 1) != 0)
        return 1;
    n = strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-");
    if (n == 0 || n > 64 || strcmp(id + n, post) != 0)
        return 1;
    snprintf(text, sizeof(text),
            "{\"id\":\"%.*s\",\"templateTest\":true,\"data\":\"Data for ID: %.*s\"}", (int)n, id,
            (int)n, id);
    *ret = contents(uri, "application/json", "text", text);
    return 0;
}

static const struct mcp_resource resources[] = {
        {"test://static-text", "static-text", "A static text resource.", "text/plain", false,
                r_text},
        {"test://static-binary", "static-binary", "A static binary resource.", "image/png", false,
                r_binary},
        {"test://watched-resource", "watched-resource", "A resource to subscribe to.", "text/plain",
                false, r_watched},
        {"test://template/{id}/data", "template", "A resource template.", "application/json", true,
                r_template},
};

/* ---- prompts ------------------------------------------------------------ */

static struct json_object *message(struct json_object *content)
{
    struct json_object *m = json_object_new_object();

    json_object_object_add(m, "role", json_object_new_string("user"));
    json_object_object_add(m, "content", content);
    return m;
}

static struct json_object *prompt_result(struct json_object *a, struct json_object *b)
{
    struct json_object *r = json_object_new_object(), *msgs = json_object_new_array();

    json_object_array_add(msgs, message(a));
    if (b)
        json_object_array_add(msgs, message(b));
    json_object_object_add(r, "messages", msgs);
    return r;
}

static const char *arg(struct json_object *args, const char *name)
{
    struct json_object *v;

    if (!args || !json_object_object_get_ex(args, name, &v) ||
            !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static int p_simple(struct json_object *args, struct json_object **ret)
{
    (void)args;
    *ret = prompt_result(text_item("This is a simple prompt for testing."), NULL);
    return 0;
}

static int p_args(struct json_object *args, struct json_object **ret)
{
    const char *a1 = arg(args, "arg1"), *a2 = arg(args, "arg2");
    char text[512];

    if (!a1 || !a2)
        return -1;
    snprintf(text, sizeof(text), "Prompt with arguments: arg1='%.200s', arg2='%.200s'", a1, a2);
    *ret = prompt_result(text_item(text), NULL);
    return 0;
}

static int p_resource(struct json_object *args, struct json_object **ret)
{
    const char *uri = arg(args, "resourceUri");

    if (!uri)
        return -1;
    *ret = prompt_result(resource_item(uri, "text/plain", "Embedded resource content for testing."),
            text_item("Please process the embedded resource above."));
    return 0;
}

static int p_image(struct json_object *args, struct json_object **ret)
{
    (void)args;
    *ret = prompt_result(media_item("image", png_b64, "image/png"),
            text_item("Please analyze the image above."));
    return 0;
}

static const struct mcp_prompt prompts[] = {
        {"test_simple_prompt", "A simple prompt without arguments.", NULL, p_simple},
        {"test_prompt_with_arguments", "A prompt with two arguments.",
                "[{\"name\":\"arg1\",\"description\":\"First test argument\",\"required\":true},"
                "{\"name\":\"arg2\",\"description\":\"Second test argument\",\"required\":true}]",
                p_args},
        {"test_prompt_with_embedded_resource", "A prompt embedding a resource.",
                "[{\"name\":\"resourceUri\",\"description\":\"URI of the resource to embed\","
                "\"required\":true}]",
                p_resource},
        {"test_prompt_with_image", "A prompt with an image.", NULL, p_image},
};

/* Completion: suggestions that start with what was typed. */
static int complete(struct json_object *params, struct json_object **ret)
{
    static const char *const words[] = {"paris", "park", "party"};
    struct json_object *a, *v, *c = json_object_new_object(), *vals = json_object_new_array();
    const char *typed = "";

    if (params && json_object_object_get_ex(params, "argument", &a) &&
            json_object_object_get_ex(a, "value", &v))
        typed = json_object_get_string(v);
    for (size_t i = 0; i < 3; i++)
        if (strncmp(words[i], typed, strlen(typed)) == 0)
            json_object_array_add(vals, json_object_new_string(words[i]));
    json_object_object_add(c, "values", vals);
    json_object_object_add(c, "total", json_object_new_int((int)json_object_array_length(vals)));
    json_object_object_add(c, "hasMore", json_object_new_boolean(false));
    *ret = json_object_new_object();
    json_object_object_add(*ret, "completion", c);
    return 0;
}

void fixtures_register(struct mcp_server *s)
{
    mcp_add_tools(s, tools, sizeof(tools) / sizeof(tools[0]));
    mcp_add_resources(s, resources, sizeof(resources) / sizeof(resources[0]));
    mcp_add_prompts(s, prompts, sizeof(prompts) / sizeof(prompts[0]));
    mcp_set_completer(s, complete);
    mcp_set_subscriptions(s, true);
}
