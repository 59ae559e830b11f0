/* SPDX-License-Identifier: MIT */
/*
 * limits.h: the narrowing controls execute_code and create_session accept
 * (args.h lists them), read as the CLI reads them (limits.c).
 */
#ifndef SBX_MCP_LIMITS_H
#define SBX_MCP_LIMITS_H

#include <json-c/json.h>
#include <stddef.h>

#include <llm-sandbox/sbx.h>

/* The controls args gives (each of an accepted type: exec_controls_check)
 * into l, fields and bits. NULL when every one reads, else why not (in
 * why[n]), naming the argument. */
const char *mcp_limits_parse(
        struct json_object *args, struct sbx_req_limits *l, char *why, size_t n);

/* The input schema's properties for the controls, for a tool table. */
#define MCP_LIMITS_SCHEMA                                                                          \
    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"Wall-clock "        \
    "limit in seconds (at most 3 decimals).\"},"                                                   \
    "\"memory\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"description\":"        \
    "\"Memory limit in bytes, "                                                                    \
    "or with a binary unit: \\\"256M\\\", \\\"1.5G\\\".\"},"                                       \
    "\"cpus\":{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"string\"}],\"description\":\"CPU "     \
    "quota in cores, e.g. "                                                                        \
    "0.5.\"},"                                                                                     \
    "\"pids\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}],\"description\":\"Most "   \
    "processes and "                                                                               \
    "threads at once.\"},"                                                                         \
    "\"network\":{\"type\":\"string\",\"description\":\"off, or on where the server's "            \
    "configuration allows it.\"}"

#endif
