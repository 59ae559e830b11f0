/* SPDX-License-Identifier: MIT */
/*
 * serve_cmd.c: `llm-sandbox serve` (and `llm-sandbox` with no arguments):
 * the MCP server on stdio, with --http on Streamable HTTP, or with
 * --socket on a unix socket (what `llm-sandbox session` talks to), which
 * systemd may pass in (socket activation: dist/systemd/llm-sandbox.socket).
 * The transports are exclusive: with --http or --socket, stdin is not
 * read. Front end only: options, then the transport from core/mcp.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/socket.h>
#include <sys/un.h>
#endif

#include <llm-sandbox/sbx.h>

#include "cli.h"
#include "mcp.h"
#include "serve.h"

static void serve_help(void)
{
    printf("usage: llm-sandbox serve [--http ADDRESS:PORT | --socket [PATH]] [--workers N]\n"
           "  (no options)         MCP on standard input and output\n"
           "  --http ADDR:PORT     Streamable HTTP on http://ADDR:PORT/mcp (loopback by\n"
           "                       default; other addresses need LLM_SANDBOX_HTTP_TOKEN)\n"
           "  --socket [PATH]      a unix socket, for `llm-sandbox session` and other local\n"
           "                       clients of the same user (default: LLM_SANDBOX_SOCKET, else\n"
           "                       $XDG_RUNTIME_DIR/llm-sandbox/mcp.sock, or\n"
           "                       /run/llm-sandbox/mcp.sock as root); one systemd passes\n"
           "                       (LISTEN_FDS, llm-sandbox.socket) is served instead\n"
           "  --workers N          tool calls run at once (default: the number of CPUs)\n"
           "  --test-fixtures      add the MCP conformance suite's test tools (tests only)\n"
           "SIGINT or SIGTERM ends it: every call in flight is cancelled and answered\n"
           "(a cancelled result) first.\n"
           "Exit status: 0 at the end of standard input; 128 + the signal's number after\n"
           "SIGINT (130) or SIGTERM (143); 125 when it cannot start; 2 for bad usage.\n");
}

#define MAX_WORKERS 1024u

/* The socket systemd passed, if any: 1 with its fd and path (for
 * messages), 0 when none, -1 after saying why. */
#ifdef _WIN32
/* No systemd, no unix sockets to be passed (cli/absent_win.c refuses
 * --socket). */
static int activated(int *ret_fd, char *path, size_t len)
{
    (void)ret_fd;
    (void)path;
    (void)len;
    return 0;
}
#else
static int activated(int *ret_fd, char *path, size_t len)
{
    struct sockaddr_un sa = {0};
    socklen_t salen = sizeof(sa);
    struct sbx_error *err = NULL;
    int r = sbx_socket_activation(ret_fd, &err);

    if (r < 0) {
        fprintf(stderr, "llm-sandbox: cannot serve: %s\n", err->msg);
        sbx_error_free(err);
        return -1;
    }
    if (r == 0)
        return 0;
    if (getsockname(*ret_fd, (struct sockaddr *)&sa, &salen) == 0 && sa.sun_path[0])
        snprintf(path, len, "%.*s", (int)sizeof(sa.sun_path), sa.sun_path);
    else
        snprintf(path, len, "(fd %d)", *ret_fd);
    return 1;
}
#endif

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
            {"socket", optional_argument, NULL, 'S'}, {"workers", required_argument, NULL, 'w'},
            {"test-fixtures", no_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
    struct mcp_options mo = {0};
    struct sbx_runtime *rt = NULL;
    struct sbx_error *err = NULL;
    const char *http = NULL, *sock = NULL;
#ifdef _WIN32
    char *sock_buf = NULL, passed_path[108 + 8];
#else
    char *sock_buf = NULL, passed_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
#endif
    bool use_sock = false;
    int c, rc, listen_fd = -1;

    opterr = 0;
    while (argc > 1 && (c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'H': http = optarg; break;
        case 'S':
            use_sock = true;
            /* --socket=PATH, or --socket PATH: the path is optional */
            if (optarg)
                sock = optarg;
            else if (optind < argc && argv[optind][0] != '-')
                sock = argv[optind++];
            break;
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
    if (optind < argc) {
        fprintf(stderr, "llm-sandbox serve: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (http && use_sock) {
        fprintf(stderr, "llm-sandbox serve: give --http or --socket, not both\n");
        return 2;
    }
    if (use_sock) {
        rc = activated(&listen_fd, passed_path, sizeof(passed_path));
        if (rc < 0)
            return EXIT_TOOL;
        if (rc == 1)
            sock = passed_path;
    }
    if (use_sock && !sock) {
        if (sbx_socket_path(cli_runtime_opts.config_path, &sock_buf, &err) < 0) {
            fprintf(stderr, "llm-sandbox: cannot serve: %s\n", err->msg);
            sbx_error_free(err);
            return EXIT_TOOL;
        }
        sock = sock_buf;
    }
    if (http && mcp_http_open() < 0) {
        free(sock_buf);
        return EXIT_TOOL;
    }
    cli_runtime_opts.only_default_backend = true; /* it runs no other */
#ifdef _WIN32
    /* Windows (issue 28): no backend runs code here yet; the server still
     * answers (initialize, tools/list, doctor's facts) and refuses every
     * run with the reason this check gives. */
    if (sbx_runtime_new_opts(&cli_runtime_opts, &rt, &err) == 0 &&
            sbx_runtime_check(rt, &err) < 0) {
        fprintf(stderr, "llm-sandbox: warning: every run will be refused: %s\n", err->msg);
        err = sbx_error_free(err);
    }
    if (!rt) {
#else
    if (sbx_runtime_new_opts(&cli_runtime_opts, &rt, &err) < 0 || sbx_runtime_check(rt, &err) < 0) {
#endif
        fprintf(stderr, "llm-sandbox: cannot serve: %s\n", err->msg);
        sbx_error_free(err);
        sbx_runtime_free(rt);
        free(sock_buf);
        return EXIT_TOOL;
    }
    if (sbx_runtime_warm(rt, &err) < 0) { /* cold runs still work */
        fprintf(stderr, "llm-sandbox: warning: %s\n", err->msg);
        err = sbx_error_free(err);
    }
    if (!mo.workers)
        mo.workers = sbx_runtime_max_concurrent(rt);
    if (http)
        rc = mcp_serve_http(rt, &mo, http);
    else if (sock)
        rc = mcp_serve_unix(rt, &mo, sock, listen_fd);
    else
        rc = mcp_serve_stdio(rt, &mo);
    sbx_runtime_free(rt);
    free(sock_buf);
    return rc < 0 ? EXIT_TOOL : rc; /* 128 + N after signal N (mcp/serve.h) */
}
