/* SPDX-License-Identifier: MIT */
/*
 * serve_cmd.c: `llm-sandbox serve` (and `llm-sandbox` with no arguments):
 * the MCP server on stdio, or with --http on Streamable HTTP. Front end
 * only: options, then the transport from core/mcp.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/sbx.h>

#include "cli.h"
#include "mcp.h"
#include "serve.h"

static void serve_help(void)
{
    printf("usage: llm-sandbox serve [--http ADDRESS:PORT] [--workers N]\n"
           "  (no options)         MCP on standard input and output\n"
           "  --http ADDR:PORT     Streamable HTTP on http://ADDR:PORT/mcp (loopback by\n"
           "                       default; other addresses need LLM_SANDBOX_HTTP_TOKEN)\n"
           "  --workers N          tool calls run at once (default: the number of CPUs)\n"
           "  --test-fixtures      add the MCP conformance suite's test tools (tests only)\n");
}

#define MAX_WORKERS 1024u

static int parse_workers(const char *v, unsigned *ret)
{
    char *end = NULL;
    unsigned long n;

    errno = 0;
    n = strtoul(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || n < 1 || n > MAX_WORKERS)
        return -1;
    *ret = (unsigned)n;
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"http", required_argument, NULL, 'H'},
            {"workers", required_argument, NULL, 'w'}, {"test-fixtures", no_argument, NULL, 'T'},
            {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    struct mcp_options mo = {0};
    struct sbx_runtime *rt = NULL;
    struct sbx_error *err = NULL;
    const char *http = NULL;
    int c, rc;

    opterr = 0;
    while (argc > 1 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'H': http = optarg; break;
        case 'w':
            if (parse_workers(optarg, &mo.workers) < 0) {
                fprintf(stderr, "llm-sandbox serve: --workers wants a number from 1 to %u\n",
                        MAX_WORKERS);
                return 2;
            }
            break;
        case 'T': mo.fixtures = true; break;
        case 'h': serve_help(); return 0;
        default:
            fprintf(stderr, "llm-sandbox serve: bad option '%s'\n", argv[optind - 1]);
            return 2;
        }
    }
    if (sbx_runtime_new_opts(&cli_runtime_opts, &rt, &err) < 0 || sbx_runtime_check(rt, &err) < 0) {
        fprintf(stderr, "llm-sandbox: cannot serve: %s\n", err->msg);
        sbx_error_free(err);
        sbx_runtime_free(rt);
        return EXIT_TOOL;
    }
    if (!mo.workers)
        mo.workers = sbx_runtime_max_concurrent(rt);
    if (http) {
        rc = mcp_serve_http(rt, &mo, http);
    } else {
        rc = mcp_serve_stdio(rt, &mo);
    }
    sbx_runtime_free(rt);
    return rc < 0 ? EXIT_TOOL : 0;
}
