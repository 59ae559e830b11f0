/* SPDX-License-Identifier: MIT */
/*
 * info_cmd.c: `llm-sandbox plugins` and `llm-sandbox doctor`, printing the
 * core's reports as text or, with --json, as they are.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include <llm-sandbox/sbx.h>

#include "cli.h"

static const char *get(struct json_object *o, const char *key)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || !v)
        return NULL;
    return json_object_get_string(v);
}

static const char plugins_usage[] =
        "usage: llm-sandbox plugins [--json]\n"
        "Every plugin found (installed, then LLM_SANDBOX_PLUGIN_PATH): name, kind,\n"
        "version, status, manifest, and what each backend can enforce here.\n"
        "  --json    the same report as JSON\n";

static const char doctor_usage[] =
        "usage: llm-sandbox doctor [--json]\n"
        "Checks the configuration, the plugins, the configured backend and default\n"
        "language, with a fix for each failure; exits 0 when all pass, else 1.\n"
        "  --json    the same report as JSON\n";

/* --json and --help are all these commands take: 0 (with *json set), 1
 * after printing usage for --help, 2 for anything else (said on stderr). */
static int info_args(int argc, char **argv, const char *usage, bool *json)
{
    *json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            *json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        } else {
            fprintf(stderr, "llm-sandbox: unknown argument '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    return 0;
}

static void print_json(struct json_object *o)
{
    puts(json_object_to_json_string_ext(
            o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

static void print_plugin(struct json_object *p)
{
    struct json_object *controls;
    const char *err = get(p, "error"), *perr = get(p, "probe_error");

    printf("%-16s %-9s %-8s %-9s %s\n", get(p, "name"), get(p, "kind") ? get(p, "kind") : "?",
            get(p, "version") ? get(p, "version") : "?", get(p, "status"), get(p, "manifest"));
    if (err)
        printf("    error: %s\n", err);
    if (perr)
        printf("    probe: %s\n", perr);
    if (json_object_object_get_ex(p, "controls", &controls) && !perr) {
        json_object_object_foreach(controls, name, c)
        {
            printf("    %-20s %-9s %s\n", name, get(c, "level"), get(c, "note"));
        }
    }
}

static int open_runtime(struct sbx_runtime **rt)
{
    struct sbx_error *err = NULL;

    if (sbx_runtime_new_opts(&cli_runtime_opts, rt, &err) < 0) {
        fprintf(stderr, "llm-sandbox: %s\n", err->msg);
        sbx_error_free(err);
        return -1;
    }
    return 0;
}

int cmd_plugins(int argc, char **argv)
{
    struct sbx_runtime *rt = NULL;
    struct json_object *list;
    bool json;
    int r = info_args(argc, argv, plugins_usage, &json);

    if (r != 0)
        return r == 1 ? 0 : r;
    if (open_runtime(&rt) < 0)
        return EXIT_TOOL;
    list = sbx_runtime_plugins_json(rt);
    if (json) {
        print_json(list);
    } else {
        printf("%-16s %-9s %-8s %-9s %s\n", "NAME", "KIND", "VERSION", "STATUS", "MANIFEST");
        for (size_t i = 0; i < json_object_array_length(list); i++)
            print_plugin(json_object_array_get_idx(list, i));
    }
    json_object_put(list);
    sbx_runtime_free(rt);
    return 0;
}

int cmd_doctor(int argc, char **argv)
{
    struct sbx_runtime *rt = NULL;
    struct json_object *rep, *checks, *ok;
    bool json;
    int bad = info_args(argc, argv, doctor_usage, &json);

    if (bad != 0)
        return bad == 1 ? 0 : bad;
    if (open_runtime(&rt) < 0)
        return EXIT_TOOL;
    rep = sbx_runtime_doctor_json(rt);
    if (json) {
        print_json(rep);
    } else if (json_object_object_get_ex(rep, "checks", &checks)) {
        for (size_t i = 0; i < json_object_array_length(checks); i++) {
            struct json_object *c = json_object_array_get_idx(checks, i);
            const char *fix = get(c, "fix");

            printf("[%-4s] %-22s %s\n", get(c, "status"), get(c, "check"), get(c, "detail"));
            if (fix)
                printf("       fix: %s\n", fix);
        }
    }
    bad = json_object_object_get_ex(rep, "ok", &ok) && json_object_get_boolean(ok) ? 0 : 1;
    json_object_put(rep);
    sbx_runtime_free(rt);
    return bad;
}
