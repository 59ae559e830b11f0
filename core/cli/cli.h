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

int cmd_run(int argc, char **argv);
int cmd_plugins(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

#endif
