/* SPDX-License-Identifier: MIT */
/*
 * args.h: execute_code's arguments, read from the tools/call "arguments"
 * object and checked for shape (types, known keys, a positive timeout, at
 * most 64 libraries, the controls' types). No I/O and no sandbox: the
 * values themselves (the language, the library names, the limits and their
 * ceilings) are judged by the core. Split
 * from tools.c so the fuzz target tests/fuzz/fuzz_tool_args.c can reach it.
 */
#ifndef SBX_MCP_ARGS_H
#define SBX_MCP_ARGS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/sbx.h>

#define EXEC_MAX_LIBRARIES 64

/* The narrowing controls a call may give, as the CLI takes them (the text
 * is read by limits.c through the core's one parser), and the JSON types
 * each may have. */
struct exec_control {
    const char *key;
    enum sbx_req_field field;
    unsigned types;   /* 1u << enum json_type */
    const char *what; /* the types, in a refusal's words */
};
extern const struct exec_control exec_controls[];
extern const size_t exec_n_controls;
/* NULL when each control args gives has one of its JSON types, else why
 * not (static text or why[n]). */
const char *exec_controls_check(struct json_object *args, char *why, size_t n);
/* NULL when no argument holds a NUL byte, except where a key listed in
 * bytes (NULL-terminated) carries bytes (its string, or its object's
 * strings: stdin, file contents); else why not, naming the argument. */
const char *exec_nul_check(struct json_object *args, const char *const *bytes, char *why, size_t n);

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
