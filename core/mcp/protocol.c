/* SPDX-License-Identifier: MIT */
/*
 * protocol.c: the protocol's constants and shapes, for every revision this
 * server speaks: the versions initialize negotiates, the server's
 * identity and instructions, the logging levels, and what revision
 * 2026-07-28 adds. That revision has no handshake: each request carries
 * its version in params._meta (the envelope, checked by
 * mcp_envelope_error), every result says resultType "complete" and names
 * the server in _meta, cacheable results (lists, resources/read,
 * server/discover) say ttlMs and cacheScope, a missing resource is -32602,
 * logs go only to a request whose envelope asks for a logLevel, and ping,
 * logging/setLevel and resources/(un)subscribe are gone.
 * subscriptions/listen is not served: nothing here ever changes, so there
 * is nothing to listen for.
 *
 * No I/O and no state: it judges envelopes and shapes results; the method
 * table (methods.c) and the server (server.c) use it (server_priv.h).
 */
#include <stdio.h>
#include <string.h>

#include "jsonrpc.h"
#include "mcp.h"
#include "server_priv.h"

static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
/* Spoken on stdio and the unix socket only: its HTTP transport (HTTP+SSE,
 * GET /sse) is not served, and Streamable HTTP came with 2025-03-26. */
static const char legacy_version[] = "2024-11-05";
const char server_instructions[] =
        "Runs code in an isolated sandbox and returns what it printed. Call "
        "get_supported_languages first; execute_code runs one program in a fresh sandbox with "
        "no network by default.";
static const char *const log_levels[] = {
        "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

struct json_object *server_info(void)
{
    struct json_object *info = json_object_new_object();

    json_object_object_add(info, "name", json_object_new_string("llm-sandbox"));
    json_object_object_add(info, "title", json_object_new_string("LLM Sandbox"));
    json_object_object_add(info, "version", json_object_new_string(sbx_version()));
    return info;
}

int server_level_index(const char *level)
{
    for (int i = 0; i < 8; i++)
        if (level && strcmp(level, log_levels[i]) == 0)
            return i;
    return -1;
}

bool mcp_protocol_supported(const char *version)
{
    for (size_t i = 0; version && i < sizeof(protocol_versions) / sizeof(*protocol_versions); i++)
        if (strcmp(version, protocol_versions[i]) == 0)
            return true;
    return false;
}

void server_add_versions(struct json_object *array)
{
    for (size_t i = 0; i < sizeof(protocol_versions) / sizeof(*protocol_versions); i++)
        json_object_array_add(array, json_object_new_string(protocol_versions[i]));
}

const char *protocol_negotiate(const char *asked, bool legacy_ok)
{
    if (legacy_ok && asked && strcmp(asked, legacy_version) == 0)
        return legacy_version;
    return mcp_protocol_supported(asked) ? asked : protocol_versions[0];
}

static void add_absent(struct json_object *o, const char *key, struct json_object *v)
{
    if (json_object_object_get_ex(o, key, NULL))
        json_object_put(v);
    else
        json_object_object_add(o, key, v);
}

/* The cache fields, when the method's result is cacheable, are always
 * stale and private: what tools, languages and backends there are can
 * change with the host. */
struct json_object *modern_result(struct json_object *result, bool cacheable)
{
    struct json_object *meta;

    if (!result)
        result = json_object_new_object();
    add_absent(result, "resultType", json_object_new_string("complete"));
    if (cacheable) {
        add_absent(result, "ttlMs", json_object_new_int(0));
        add_absent(result, "cacheScope", json_object_new_string("private"));
    }
    if (!json_object_object_get_ex(result, "_meta", &meta)) {
        meta = json_object_new_object();
        json_object_object_add(result, "_meta", meta);
    }
    if (json_object_is_type(meta, json_type_object))
        add_absent(meta, "io.modelcontextprotocol/serverInfo", server_info());
    return result;
}

static struct json_object *envelope_meta(struct json_object *params)
{
    struct json_object *meta;

    if (params && json_object_object_get_ex(params, "_meta", &meta) &&
            json_object_is_type(meta, json_type_object))
        return meta;
    return NULL;
}

const char *mcp_envelope_version(struct json_object *params)
{
    struct json_object *meta = envelope_meta(params), *v;

    if (!meta || !json_object_object_get_ex(meta, MCP_META_VERSION, &v))
        return NULL;
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

/* An Implementation: an object with a string name and version. */
static bool implementation_ok(struct json_object *o)
{
    struct json_object *v;

    return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "name", &v) &&
           json_object_is_type(v, json_type_string) &&
           json_object_object_get_ex(o, "version", &v) && json_object_is_type(v, json_type_string);
}

/* The version is judged first: an envelope of a revision this server does
 * not know may have other required keys, and the client needs -32022 (with
 * the versions to retry with) rather than a complaint about them. Its
 * "supported" lists what may be named in _meta; the 2025 revisions are
 * reached through initialize (server/discover lists both). */
struct json_object *mcp_envelope_error(struct json_object *id, struct json_object *params)
{
    struct json_object *meta = envelope_meta(params), *v, *data, *supported;
    const char *version = mcp_envelope_version(params);
    char msg[160];

    if (!version)
        return jr_error(id, JR_INVALID_PARAMS, "_meta needs " MCP_META_VERSION, NULL);
    if (!*version)
        return jr_error(id, JR_INVALID_PARAMS, "_meta " MCP_META_VERSION " must be a string", NULL);
    if (strcmp(version, MCP_MODERN_VERSION) != 0) {
        data = json_object_new_object();
        supported = json_object_new_array();
        json_object_array_add(supported, json_object_new_string(MCP_MODERN_VERSION));
        json_object_object_add(data, "supported", supported);
        json_object_object_add(data, "requested", json_object_new_string(version));
        snprintf(msg, sizeof(msg),
                "unsupported protocol version '%.40s' in _meta; this server "
                "serves " MCP_MODERN_VERSION " there (older revisions through initialize)",
                version);
        return jr_error(id, MCP_UNSUPPORTED_VERSION, msg, data);
    }
    if (!json_object_object_get_ex(meta, "io.modelcontextprotocol/clientCapabilities", &v) ||
            !json_object_is_type(v, json_type_object))
        return jr_error(id, JR_INVALID_PARAMS,
                "_meta needs io.modelcontextprotocol/clientCapabilities, an object", NULL);
    if (json_object_object_get_ex(meta, "io.modelcontextprotocol/clientInfo", &v) &&
            !implementation_ok(v))
        return jr_error(id, JR_INVALID_PARAMS,
                "_meta io.modelcontextprotocol/clientInfo must be an object with a string name "
                "and version",
                NULL);
    if (json_object_object_get_ex(meta, "io.modelcontextprotocol/logLevel", &v) &&
            server_level_index(json_object_get_string(v)) < 0)
        return jr_error(id, JR_INVALID_PARAMS,
                "_meta io.modelcontextprotocol/logLevel must be a logging level (debug ... "
                "emergency)",
                NULL);
    return NULL;
}

int modern_log_level(struct json_object *params)
{
    struct json_object *v;
    int lv = -1;

    if (json_object_object_get_ex(envelope_meta(params), "io.modelcontextprotocol/logLevel", &v))
        lv = server_level_index(json_object_get_string(v));
    return lv < 0 ? LOG_NONE : lv;
}
