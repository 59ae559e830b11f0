/* SPDX-License-Identifier: MIT */
/*
 * main.c: the llm-sandbox command. Dispatches subcommands; with no
 * arguments it is the MCP server on stdio. Nothing here decides policy.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/sbx.h>

#include "cli.h"

struct sbx_runtime_opts cli_runtime_opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: llm-sandbox                  the MCP server on stdio\n"
               "       llm-sandbox serve [--http ADDR:PORT | --socket [PATH]]\n"
               "       llm-sandbox run [options] (--code CODE | --file FILE)\n"
               "       llm-sandbox session (create|exec|close|list|upload|download|files) ...\n"
               "       llm-sandbox plugins [--json]\n"
               "       llm-sandbox doctor [--json]\n"
               "       llm-sandbox --version [--json] | --help\n"
               "Before the command, --config FILE reads a YAML config file (llm-sandbox.conf(5)).\n"
               "Run 'llm-sandbox run --help' for the run options, 'llm-sandbox session --help'\n"
               "for sessions (through a server started with 'llm-sandbox serve --socket').\n"
               "Exit status: 2 when the command line does not parse; 125 when a run is\n"
               "refused or the tool fails; for 'run' and 'session exec' otherwise the\n"
               "program's exit code, 124 on timeout, 130 when cancelled.\n");
}

/* Global options before the subcommand (--config FILE, --config=FILE);
 * the number of arguments they took, or -1. */
static int global_options(int argc, char **argv)
{
    int i = 1;

    while (i < argc && strncmp(argv[i], "--config", 8) == 0) {
        if (argv[i][8] == '=') {
            cli_runtime_opts.config_path = argv[i] + 9;
            i++;
        } else if (argv[i][8] == '\0' && i + 1 < argc) {
            cli_runtime_opts.config_path = argv[i + 1];
            i += 2;
        } else {
            fprintf(stderr, "llm-sandbox: option '%s' needs a file name\n", argv[i]);
            return -1;
        }
    }
    return i - 1;
}

/* --version, or --version --json: {"name": ..., "version": ...}. */
static int version(int argc, char **argv)
{
    struct json_object *o;

    if (argc > 2 || (argc == 2 && strcmp(argv[1], "--json") != 0)) {
        fprintf(stderr, "usage: llm-sandbox --version [--json]\n");
        return EXIT_USAGE;
    }
    if (argc == 1) {
        printf("llm-sandbox %s\n", sbx_version());
        return 0;
    }
    o = json_object_new_object();
    if (!o)
        return EXIT_TOOL;
    json_object_object_add(o, "name", json_object_new_string("llm-sandbox"));
    json_object_object_add(o, "version", json_object_new_string(sbx_version()));
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return 0;
}

int main(int argc, char **argv)
{
    int shift = global_options(argc, argv);
    const char *cmd;

    if (shift < 0)
        return EXIT_USAGE;
    argv[shift] = argv[0];
    argv += shift;
    argc -= shift;
    cmd = argc > 1 ? argv[1] : NULL;

    if (!cmd)
        return cmd_serve(1, argv);
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "session") == 0)
        return cmd_session(argc - 1, argv + 1);
    if (strcmp(cmd, "plugins") == 0)
        return cmd_plugins(argc - 1, argv + 1);
    if (strcmp(cmd, "doctor") == 0)
        return cmd_doctor(argc - 1, argv + 1);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0)
        return version(argc - 1, argv + 1);
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "llm-sandbox: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
