/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tool_args.c: libFuzzer target for execute_code's argument checks
 * (core/mcp/args.c, exec_args_parse). The input is read as the JSON value
 * of tools/call's "arguments" (capped in depth as the JSON-RPC reader caps
 * it); anything that does not parse is skipped. Then: arguments that are
 * accepted hold only known keys, a string code of the right length,
 * strings where strings belong (session_id too), at most 64 libraries,
 * every file, and a positive finite timeout; refused arguments come with
 * a message that fits its buffer; the same arguments always get the same answer. Nothing
 * runs in a sandbox. A crash, a leak or an abort() is a bug. Build with
 * clang -fsanitize=fuzzer, or link with replay.c to replay a corpus.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static const char *const keys[] = {"code", "language", "libraries", "timeout", "stdin", "files",
        "session_id", "memory", "cpus", "pids", "network"};

static int is_known(const char *k)
{
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strcmp(k, keys[i]) == 0)
            return 1;
    return 0;
}

static struct json_object *member(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;

    return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static void check_accepted(struct json_object *args, const struct exec_args *a)
{
    struct json_object *v;

    check(json_object_is_type(args, json_type_object));
    json_object_object_foreach(args, key, val)
    {
        (void)val;
        check(is_known(key));
    }
    v = member(args, "code");
    check(json_object_is_type(v, json_type_string));
    check(a->code == json_object_get_string(v));
    check(a->code_len == (size_t)json_object_get_string_len(v));
    v = member(args, "session_id"); /* a string from create_session, or absent */
    check(v ? json_object_is_type(v, json_type_string) &&
                            a->session_id == json_object_get_string(v) &&
                            strlen(a->session_id) == (size_t)json_object_get_string_len(v)
            : a->session_id == NULL);
    v = member(args, "language");
    check(v ? a->language == json_object_get_string(v) : a->language == NULL);
    v = member(args, "stdin");
    check(v ? (a->stdin_data == json_object_get_string(v) &&
                      a->stdin_len == (size_t)json_object_get_string_len(v))
            : a->stdin_data == NULL);
    v = member(args, "timeout");
    check(a->has_timeout == (v != NULL));
    if (v)
        check(a->timeout > 0 && isfinite(a->timeout) && a->timeout <= 1e9);
    for (size_t i = 0; i < exec_n_controls; i++) {
        v = member(args, exec_controls[i].key);
        check(!v || (exec_controls[i].types & (1u << json_object_get_type(v))));
    }
    v = member(args, "libraries");
    check(v ? json_object_is_type(v, json_type_array) && a->n_libs == json_object_array_length(v)
            : a->n_libs == 0);
    check(a->n_libs <= EXEC_MAX_LIBRARIES);
    for (size_t i = 0; i < a->n_libs; i++)
        check(a->libs[i] == json_object_get_string(json_object_array_get_idx(v, i)));
    v = member(args, "files");
    check(v ? json_object_is_type(v, json_type_object) &&
                            a->n_files == (size_t)json_object_object_length(v)
            : a->n_files == 0);
    for (size_t i = 0; i < a->n_files; i++) {
        struct json_object *c = member(v, a->files[i].path);

        check(json_object_is_type(c, json_type_string));
        check(a->files[i].data == json_object_get_string(c));
        check(a->files[i].len == (size_t)json_object_get_string_len(c));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_tokener *tok = json_tokener_new_ex(JR_MAX_DEPTH);
    struct json_object *args;
    struct exec_args a, b;
    char why_a[160], why_b[160];
    const char *ra, *rb;

    if (!tok || size > JR_MAX_MESSAGE) {
        json_tokener_free(tok);
        return 0;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    args = json_tokener_parse_ex(tok, (const char *)data, (int)size);
    if (json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(args);
        args = NULL;
    }
    json_tokener_free(tok);
    if (!args && size > 0)
        return 0; /* not JSON: the JSON-RPC reader refuses it before us */

    memset(why_a, 'X', sizeof(why_a)); /* a message must terminate itself */
    ra = exec_args_parse(args, &a, why_a, sizeof(why_a));
    rb = exec_args_parse(args, &b, why_b, sizeof(why_b));
    check((ra == NULL) == (rb == NULL));
    if (ra) {
        check(*ra != '\0' && strlen(ra) < sizeof(why_a));
        check(strcmp(ra, rb) == 0);
    } else {
        check_accepted(args, &a);
        check(a.n_libs == b.n_libs && a.n_files == b.n_files && a.code == b.code);
    }
    exec_args_done(&a);
    exec_args_done(&b);
    check(a.libs == NULL && a.files == NULL);
    json_object_put(args);
    return 0;
}
