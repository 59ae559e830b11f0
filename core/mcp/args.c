/* SPDX-License-Identifier: MIT */
/*
 * args.c: read and check execute_code's arguments (args.h). Unknown keys,
 * wrong types and a timeout that is not a positive finite number are
 * refused here, with a message a model can act on; everything else is
 * passed on for the core to judge.
 */
#include "args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

static const char *const exec_keys[] = {
        "code", "language", "libraries", "stdin", "files", "session_id", NULL};

#define NUMBER (1u << json_type_int | 1u << json_type_double)
const struct exec_control exec_controls[] = {
        {"timeout", SBX_REQ_WALL_TIME, NUMBER, "a number of seconds"},
        {"memory", SBX_REQ_MEMORY, 1u << json_type_string | 1u << json_type_int,
                "a size (\"256M\", \"1.5G\") or a whole number of bytes"},
        {"cpus", SBX_REQ_CPU, 1u << json_type_string | NUMBER, "a number of cores"},
        {"pids", SBX_REQ_PIDS, 1u << json_type_string | 1u << json_type_int, "a whole number"},
        {"network", SBX_REQ_NETWORK, 1u << json_type_string, "a string (off, on)"},
};
const size_t exec_n_controls = sizeof(exec_controls) / sizeof(exec_controls[0]);

static bool is_control(const char *k)
{
    for (size_t i = 0; i < exec_n_controls; i++)
        if (strcmp(exec_controls[i].key, k) == 0)
            return true;
    return false;
}

const char *exec_controls_check(struct json_object *args, char *why, size_t n)
{
    for (size_t i = 0; args && i < exec_n_controls; i++) {
        struct json_object *v;

        if (!json_object_object_get_ex(args, exec_controls[i].key, &v) || !v)
            continue;
        if (!(exec_controls[i].types & (1u << json_object_get_type(v))))
            return snprintf(why, n, "'%s' must be %s", exec_controls[i].key, exec_controls[i].what),
                   why;
        if (json_object_is_type(v, json_type_string) &&
                strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
            return snprintf(why, n, "'%s' must not hold a NUL byte", exec_controls[i].key), why;
    }
    return NULL;
}

/* Arguments that carry bytes, NUL included, by length. */
static const char *const exec_bytes[] = {"stdin", "files", NULL};

const char *exec_nul_check(struct json_object *args, const char *const *bytes, char *why, size_t n)
{
    const char *key = jr_nul_key(args, bytes);

    if (!key)
        return NULL;
    snprintf(why, n,
            "'%.40s' must not hold a NUL byte (\\u0000): it would be cut short there; NUL is "
            "carried only in stdin and file contents",
            key);
    return why;
}

static bool known(const char *const *keys, const char *k)
{
    for (; *keys; keys++)
        if (strcmp(*keys, k) == 0)
            return true;
    return false;
}

/* The scalar arguments. */
static const char *parse_scalars(struct json_object *args, struct exec_args *a, char *why, size_t n)
{
    struct json_object *v;

    json_object_object_foreach(args, key, val)
    {
        (void)val;
        if (!known(exec_keys, key) && !is_control(key))
            return snprintf(why, n, "unknown argument '%.60s'", key), why;
    }
    if (!json_object_object_get_ex(args, "code", &v) || !json_object_is_type(v, json_type_string))
        return "'code' (a string) is required";
    a->code = json_object_get_string(v);
    a->code_len = (size_t)json_object_get_string_len(v);
    if (json_object_object_get_ex(args, "language", &v) && v) {
        if (!json_object_is_type(v, json_type_string))
            return "'language' must be a string";
        a->language = json_object_get_string(v);
    }
    if (json_object_object_get_ex(args, "session_id", &v) && v) {
        if (!json_object_is_type(v, json_type_string) ||
                strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
            return "'session_id' must be a string from create_session";
        a->session_id = json_object_get_string(v);
    }
    if (json_object_object_get_ex(args, "timeout", &v) && v) {
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
            return "'timeout' must be a number of seconds";
        a->timeout = json_object_get_double(v);
        a->has_timeout = true;
        if (!(a->timeout > 0) || !isfinite(a->timeout) || a->timeout > 1e9)
            return "'timeout' must be a positive number of seconds";
    }
    if (json_object_object_get_ex(args, "stdin", &v) && v) {
        if (!json_object_is_type(v, json_type_string))
            return "'stdin' must be a string";
        a->stdin_data = json_object_get_string(v);
        a->stdin_len = (size_t)json_object_get_string_len(v);
    }
    return NULL;
}

/* libraries: an array of strings; files: an object of name -> text. */
static const char *parse_lists(struct json_object *args, struct exec_args *a)
{
    struct json_object *v;

    if (json_object_object_get_ex(args, "libraries", &v) && v) {
        size_t n;

        if (!json_object_is_type(v, json_type_array))
            return "'libraries' must be an array of strings";
        n = json_object_array_length(v);
        if (n > EXEC_MAX_LIBRARIES)
            return "at most 64 libraries";
        a->libs = calloc(n + 1, sizeof(char *));
        if (!a->libs)
            return "out of memory";
        for (size_t i = 0; i < n; i++) {
            struct json_object *e = json_object_array_get_idx(v, i);

            if (!json_object_is_type(e, json_type_string))
                return "'libraries' must be an array of strings";
            a->libs[a->n_libs++] = json_object_get_string(e);
        }
    }
    if (json_object_object_get_ex(args, "files", &v) && v) {
        if (!json_object_is_type(v, json_type_object))
            return "'files' must be an object mapping file names to their contents";
        a->files = calloc((size_t)json_object_object_length(v) + 1, sizeof(*a->files));
        if (!a->files)
            return "out of memory";
        json_object_object_foreach(v, name, content)
        {
            if (!json_object_is_type(content, json_type_string))
                return "each value in 'files' must be a string";
            a->files[a->n_files++] = (struct sbx_file){name, json_object_get_string(content),
                    (size_t)json_object_get_string_len(content)};
        }
    }
    return NULL;
}

const char *exec_args_parse(struct json_object *args, struct exec_args *a, char *why, size_t n)
{
    const char *r;

    memset(a, 0, sizeof(*a));
    if (!args || !json_object_is_type(args, json_type_object))
        return "'code' (a string) is required";
    r = exec_nul_check(args, exec_bytes, why, n);
    if (!r)
        r = parse_scalars(args, a, why, n);
    if (!r)
        r = exec_controls_check(args, why, n);
    return r ? r : parse_lists(args, a);
}

void exec_args_done(struct exec_args *a)
{
    free(a->libs);
    free(a->files);
    a->libs = NULL;
    a->files = NULL;
}
