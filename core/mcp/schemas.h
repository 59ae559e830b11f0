/* SPDX-License-Identifier: MIT */
/*
 * schemas.h: the outputSchema texts the tool tables (tools.c,
 * session_tools.c) share. A nullable field is an anyOf of single types,
 * never a type array, so strict validators (the Inspector's --strict) and
 * single-type dialects (the OpenAPI subset some model providers use) take
 * it as it is.
 */
#ifndef SBX_MCP_SCHEMAS_H
#define SBX_MCP_SCHEMAS_H

#define MCP_NULLABLE_STRING  "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}"
#define MCP_NULLABLE_INTEGER "{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}"

/* A session tool's refusal (isError): {"status": "refused", "message"}. */
#define MCP_REFUSAL_PROPS                                                                          \
    "\"status\":{\"type\":\"string\",\"enum\":[\"refused\"]},\"message\":{\"type\":\"string\"}"

/* What sbx_execution_to_json() makes: execute_code's and create_session's
 * structuredContent. */
#define MCP_EXEC_OUTPUT_SCHEMA                                                                     \
    "{\"type\":\"object\",\"properties\":{"                                                        \
    "\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"error\",\"timeout\",\"oom\","              \
    "\"killed\",\"cancelled\",\"refused\"]},"                                                      \
    "\"exit_code\":" MCP_NULLABLE_INTEGER ","                                                      \
    "\"limit\":{\"anyOf\":[{\"type\":\"string\",\"enum\":[\"wall_time\",\"memory\","               \
    "\"pids\",\"file_size\",\"workspace\"]},{\"type\":\"null\"}]},"                                \
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                           \
    "\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"     \
    "\"stdout_bytes\":{\"type\":\"integer\"},\"stderr_bytes\":{\"type\":\"integer\"},"             \
    "\"duration_ms\":{\"type\":\"integer\"},"                                                      \
    "\"backend\":" MCP_NULLABLE_STRING ",\"language\":" MCP_NULLABLE_STRING ","                    \
    "\"message\":" MCP_NULLABLE_STRING ","                                                         \
    "\"artifacts\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"                          \
    "\"warnings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                           \
    "\"install\":{\"type\":\"object\",\"properties\":{"                                            \
    "\"cached\":{\"type\":\"boolean\"},\"duration_ms\":{\"type\":\"integer\"},"                    \
    "\"log\":{\"type\":\"string\"},\"log_truncated\":{\"type\":\"boolean\"}}},"                    \
    "\"build\":{\"type\":\"object\",\"properties\":{"                                              \
    "\"cached\":{\"type\":\"boolean\"}}},"                                                         \
    "\"session_id\":{\"type\":\"string\"},"                                                        \
    "\"images_held_back\":{\"type\":\"integer\",\"description\":\"Images past the inline "         \
    "cap (LLM_SANDBOX_INLINE_IMAGES), returned as resource links instead.\"},"                     \
    "\"warm\":{\"type\":\"boolean\",\"description\":\"It ran in a fresh sandbox made "             \
    "before the call (never one used before).\"},"                                                 \
    "\"sandbox\":{\"type\":\"string\",\"enum\":[\"cold\",\"ready\",\"zygote\"],"                   \
    "\"description\":\"Where a one-shot run's sandbox came from: made for it (cold), made "        \
    "before it (ready), or forked for it from a zygote box.\"}},"                                  \
    "\"required\":[\"status\",\"exit_code\",\"limit\",\"stdout\",\"stderr\","                      \
    "\"stdout_truncated\",\"stderr_truncated\",\"stdout_bytes\",\"stderr_bytes\","                 \
    "\"duration_ms\",\"backend\",\"language\",\"message\",\"artifacts\"]}"

#endif
