/* SPDX-License-Identifier: MIT */
/*
 * absent_win.c: the Windows build's answers for the commands that need a
 * unix socket (`session`, `serve --socket`) or libmicrohttpd (`serve
 * --http`), which it leaves out (cmake/SbxWindowsCore.cmake). Each says so
 * and fails.
 */
#include <stdio.h>

#include <llm-sandbox/sbx.h>

#include "cli.h"
#include "mcp.h"
#include "serve.h"

int cmd_session(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "llm-sandbox session: not on Windows (it talks to 'serve --socket', a "
                    "unix socket this build has not)\n");
    return EXIT_TOOL;
}

/* Runs are refused here, so they bring no artifacts to save. */
int cli_save_artifacts(struct sbx_runtime *rt, const struct sbx_execution *ex, const char *dir)
{
    (void)rt;
    if (ex->n_artifacts == 0)
        return 0;
    fprintf(stderr, "llm-sandbox: cannot save artifacts into '%s': not on Windows yet\n", dir);
    return -1;
}

int mcp_http_open(void)
{
    fprintf(stderr,
            "llm-sandbox: cannot serve: --http is not available in this build (not built for "
            "Windows yet)\n");
    return -1;
}

int mcp_serve_http(struct sbx_runtime *rt, const struct mcp_options *opt, const char *addr)
{
    (void)rt;
    (void)addr;
    (void)opt;
    return -1;
}

int mcp_serve_unix(
        struct sbx_runtime *rt, const struct mcp_options *opt, const char *path, int listen_fd)
{
    (void)rt;
    (void)path;
    (void)listen_fd;
    (void)opt;
    fprintf(stderr, "llm-sandbox: cannot serve: --socket (a unix socket) is not on Windows\n");
    return -1;
}
