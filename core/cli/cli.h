/* SPDX-License-Identifier: MIT */
/*
 * cli.h: the llm-sandbox command's subcommands. Front end only: parses
 * arguments, calls llm-sandbox/sbx.h, prints. Exit codes are documented in
 * the README (125: the tool failed or refused; 124: timeout).
 */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#define EXIT_TOOL    125
#define EXIT_TIMEOUT 124
#define EXIT_CANCEL  130

#include <llm-sandbox/sbx.h>

/* Options for every subcommand's runtime: --config FILE, given before the
 * subcommand (main.c) or to `run` (run_cmd.c). */
extern struct sbx_runtime_opts cli_runtime_opts;

int cmd_run(int argc, char **argv);
int cmd_plugins(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
