/* SPDX-License-Identifier: MIT */
/*
 * args.h: execute_code's arguments, read from the tools/call "arguments"
 * object and checked for shape (types, known keys, a positive timeout, at
 * most 64 libraries). No I/O and no sandbox: the values themselves (the
 * language, the library names, the ceilings) are judged by sbx_run. Split
 * from tools.c so the fuzz target tests/fuzz/fuzz_tool_args.c can reach it.
 */
#ifndef SBX_MCP_ARGS_H
#define SBX_MCP_ARGS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/sbx.h>

#define EXEC_MAX_LIBRARIES 64

struct exec_args {
    const char *code, *language, *stdin_data; /* borrowed from the arguments */
    const char *session_id;                   /* or NULL: a one-shot run */
    size_t code_len, stdin_len;
    const char **libs; /* owned array of borrowed strings */
    size_t n_libs;
    struct sbx_file *files; /* owned array; paths and data borrowed */
    size_t n_files;
    bool has_timeout;
    double timeout; /* seconds, when has_timeout */
};

/* Fill *a (zeroed first) from args, a JSON object or NULL. Returns NULL
 * when the arguments are acceptable, else why not: static text or why[n].
 * Call exec_args_done(a) in both cases; a borrows from args. */
const char *exec_args_parse(struct json_object *args, struct exec_args *a, char *why, size_t n);
void exec_args_done(struct exec_args *a);

#endif
