/* SPDX-License-Identifier: MIT */
/*
 * cli.h: the llm-sandbox command's subcommands, and the few helpers they
 * share (io.c). Front end only: parses arguments, calls
 * llm-sandbox/sbx.h (or a server, for `session`), prints. Exit codes are
 * documented in the README and each --help: 2 the command line does not
 * parse, 125 the tool failed or refused, 124 timeout, 130 cancelled; `run`
 * and `session exec` otherwise exit with the program's code.
 */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#define EXIT_USAGE   2
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
int cmd_session(int argc, char **argv);

/* A whole file, or standard input for "-", NUL-terminated, at most 256
 * MiB; NULL with errno set. (transfer full: free()) */
char *cli_read_path(const char *path, size_t *ret_len);
/* `run --artifacts DIR`: write the run's artifacts beneath dir (created if
 * missing); 0, or -1 when one could not be saved (said on stderr). */
int cli_save_artifacts(struct sbx_runtime *rt, const struct sbx_execution *ex, const char *dir);
/* Write everything, retrying short writes; gives up silently on an error
 * (the reader went away). */
void cli_write_all(int fd, const char *buf, size_t len);

/* Progress on stderr while a run installs, compiles or warms up
 * (progress.c): a status line on a terminal, plain lines on a pipe.
 * _phase and _notice are sbx_request's on_phase and on_notice; _clear
 * erases the status line before the program's own output. */
void cli_progress_start(void);
void cli_progress_stop(void);
void cli_progress_clear(void);
void cli_progress_phase(void *userdata, const char *phase);
void cli_progress_notice(void *userdata, enum sbx_notice level, const char *msg);

#endif
