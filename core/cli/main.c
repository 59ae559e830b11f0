/* SPDX-License-Identifier: MIT */
/*
 * main.c: the llm-sandbox command. Dispatches subcommands; with no
 * arguments it is to be the MCP server on stdio (not in this version: it
 * says so and exits). Nothing here decides policy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/sbx.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: llm-sandbox run [options] (--code CODE | --file FILE)\n"
               "       llm-sandbox plugins [--json]\n"
               "       llm-sandbox doctor [--json]\n"
               "       llm-sandbox --version\n"
               "Run 'llm-sandbox run --help' for the run options.\n");
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    if (!cmd || strcmp(cmd, "serve") == 0) {
        fprintf(stderr, "llm-sandbox: the MCP server is not part of this version yet; "
                        "use 'llm-sandbox run' (see --help)\n");
        return 2;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "plugins") == 0)
        return cmd_plugins(argc - 1, argv + 1);
    if (strcmp(cmd, "doctor") == 0)
        return cmd_doctor(argc - 1, argv + 1);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("llm-sandbox %s\n", sbx_version());
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "llm-sandbox: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
