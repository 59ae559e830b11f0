/* SPDX-License-Identifier: MIT */
/*
 * run_cmd.c: `llm-sandbox run`. Builds one request from the options,
 * streams the program's output live (or prints one JSON object with
 * --json, for every outcome, bad arguments included) and exits with the
 * program's exit code (124 timeout, 125 refused or tool error, 130
 * cancelled; 2 when the command line does not parse). Ctrl-C cancels
 * the run, which kills it in the sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llm-sandbox/sbx.h>

#include "cli.h"

#define SBX_CLI_MAX_LIBRARIES 64

struct opts {
    struct sbx_request req;
    bool json;
    bool help;                 /* --help was printed: exit 0 */
    const char *artifacts_dir; /* --artifacts DIR, or NULL */
    char *code_buf, *stdin_buf;
    char *libs_buf; /* the --libraries value, split in place */
    const char *libs[SBX_CLI_MAX_LIBRARIES];
};

static struct sbx_cancel *g_cancel;

#ifndef _WIN32
static void on_signal(int sig)
{
    (void)sig;
    sbx_cancel_fire(g_cancel);
}
#endif

static void run_help(void)
{
    printf("usage: llm-sandbox run [options] (--code CODE | --code - | --file FILE)\n"
           "  -l, --language NAME     language (default: python, or LLM_SANDBOX_DEFAULT_LANGUAGE)\n"
           "  -b, --backend NAME      backend (default: bwrap, or BACKEND)\n"
           "  -c, --code CODE         the program; '-' reads it from standard input\n"
           "  -f, --file FILE         read the program from FILE\n"
           "      --stdin FILE        feed FILE to the program's standard input\n"
           "      --libraries A,B,C   libraries the program needs (the language checks names)\n"
           "      --artifacts DIR     save the files the program wrote (and its plots) in DIR\n"
           "  -t, --timeout SECONDS   wall-clock limit (default 30)\n"
           "      --memory SIZE       memory limit, e.g. 256M\n"
           "      --cpus N            CPU quota in cores, e.g. 0.5\n"
           "      --pids N            process limit\n"
           "      --output-bytes SIZE cap per output stream\n"
           "      --file-size SIZE    largest file the program may write\n"
           "      --workspace SIZE    size of /workspace and /tmp\n"
           "      --network MODE      the sandbox's network, at most the configured one\n"
           "                          (LLM_SANDBOX_NETWORK or SANDBOX_NETWORK_MODE; default off):\n"
           "                            off         no network at all (always allowed)\n"
           "                            on          its own namespace with user-mode NAT, no\n"
           "                                        host loopback; when the configuration is\n"
           "                                        on or host\n"
           "                            host        the host's network; only when it is host,\n"
           "                                        which needs LLM_SANDBOX_ALLOW_HOST_NETWORK=1\n"
           "                            registries  the filtering proxy to registry hosts: only\n"
           "                                        for library installs, refused for programs\n"
           "                            allowlist   the proxy to operator hosts: likewise\n"
           "                          A wider mode than configured is refused (exit 125).\n"
           "      --json              print one JSON object with the result\n"
           "      --config FILE       read the YAML config file FILE (or LLM_SANDBOX_CONFIG)\n"
           "Exit status: the program's exit code; 124 on timeout; 125 when the run was\n"
           "refused or the tool failed; 130 when cancelled; 2 when the command line does\n"
           "not parse.\n");
}

static int fail_with(const struct opts *o, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Print the outcome of a failure before anything ran: with --json the
 * same complete result object as every other outcome. Returns code:
 * EXIT_USAGE for a command line that does not parse, else EXIT_TOOL. */
static int fail_with(const struct opts *o, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (o->json) {
        struct sbx_execution *ex = sbx_execution_refused(msg);
        struct json_object *j = ex ? sbx_execution_to_json(ex) : NULL;

        puts(j ? json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN) : "{}");
        json_object_put(j);
        sbx_execution_free(ex);
    } else {
        fprintf(stderr, "llm-sandbox: %s\n", msg);
    }
    return code;
}

#define fail(o, ...)  fail_with(o, EXIT_TOOL, __VA_ARGS__)
#define usage(o, ...) fail_with(o, EXIT_USAGE, __VA_ARGS__)

/* The request field each limit option sets; its text goes to the core's
 * one parser (sbx_req_limit_parse), which says what is wrong with it. */
static int set_limit(struct opts *o, int opt, const char *v, struct sbx_error **err)
{
    enum sbx_req_field f = opt == 't'    ? SBX_REQ_WALL_TIME
                           : opt == 1002 ? SBX_REQ_MEMORY
                           : opt == 1003 ? SBX_REQ_CPU
                           : opt == 1004 ? SBX_REQ_PIDS
                           : opt == 1005 ? SBX_REQ_NETWORK
                           : opt == 1006 ? SBX_REQ_OUTPUT
                           : opt == 1007 ? SBX_REQ_FILE_SIZE
                                         : SBX_REQ_WORKSPACE;

    return sbx_req_limit_parse(&o->req.limits, f, v, err);
}

/* "a,b,c" -> req.libraries; each name is checked by the language later. */
static int split_libraries(struct opts *o, const char *v)
{
    char *save = NULL, *tok;

    free(o->libs_buf);
    o->req.n_libraries = 0;
    o->libs_buf = strdup(v);
    if (!o->libs_buf || !*v || v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
        return -1;
    for (tok = strtok_r(o->libs_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->req.n_libraries == SBX_CLI_MAX_LIBRARIES)
            return -1;
        o->libs[o->req.n_libraries++] = tok;
    }
    o->req.libraries = o->libs;
    return 0;
}

static const struct option long_opts[] = {
        {"language", required_argument, NULL, 'l'},
        {"backend", required_argument, NULL, 'b'},
        {"code", required_argument, NULL, 'c'},
        {"file", required_argument, NULL, 'f'},
        {"timeout", required_argument, NULL, 't'},
        {"stdin", required_argument, NULL, 1001},
        {"memory", required_argument, NULL, 1002},
        {"cpus", required_argument, NULL, 1003},
        {"pids", required_argument, NULL, 1004},
        {"network", required_argument, NULL, 1005},
        {"output-bytes", required_argument, NULL, 1006},
        {"file-size", required_argument, NULL, 1007},
        {"workspace", required_argument, NULL, 1008},
        {"config", required_argument, NULL, 1009},
        {"libraries", required_argument, NULL, 1010},
        {"artifacts", required_argument, NULL, 1011},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

static const char *opt_name(int c)
{
    for (const struct option *lo = long_opts; lo->name; lo++)
        if (lo->val == c)
            return lo->name;
    return "?";
}

static int parse(struct opts *o, int argc, char **argv)
{
    const char *code = NULL, *file = NULL, *in = NULL;
    int c;

    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--json") == 0)
            o->json = true;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":l:b:c:f:t:h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'l': o->req.language = optarg; break;
        case 'b': o->req.backend = optarg; break;
        case 'c': code = optarg; break;
        case 'f': file = optarg; break;
        case 1001: in = optarg; break;
        case 1009: cli_runtime_opts.config_path = optarg; break;
        case 1010:
            if (split_libraries(o, optarg) < 0)
                return usage(o, "--libraries takes at most %d comma-separated names, none empty",
                        SBX_CLI_MAX_LIBRARIES);
            break;
        case 1011:
            o->artifacts_dir = optarg;
            o->req.keep_artifacts = true;
            break;
        case 'j': break;
        case 'h':
            run_help();
            o->help = true;
            return 1;
        case ':': return usage(o, "option '%s' needs a value", argv[optind - 1]);
        case '?': return usage(o, "unknown option '%s'", argv[optind - 1]);
        default: {
            struct sbx_error *e = NULL;

            if (set_limit(o, c, optarg, &e) < 0) {
                int r = fail(o, "bad value '%s' for --%s: %s", optarg, opt_name(c),
                        e && e->msg ? e->msg : "see llm-sandbox run --help");

                sbx_error_free(e);
                return r;
            }
        }
        }
    }
    if (optind < argc)
        return usage(o, "unexpected argument '%s'", argv[optind]);
    if (!!code + !!file != 1)
        return usage(o, "%s", "give exactly one of --code and --file");
    if (code && strcmp(code, "-") != 0) {
        o->req.code = code;
        o->req.code_len = strlen(code);
    } else {
        o->code_buf = cli_read_path(file ? file : "-", &o->req.code_len);
        if (!o->code_buf)
            return fail(o, "cannot read the program: %s", strerror(errno));
        o->req.code = o->code_buf;
    }
    if (in) {
        o->stdin_buf = cli_read_path(in, &o->req.stdin_len);
        if (!o->stdin_buf)
            return fail(o, "cannot read --stdin: %s", strerror(errno));
        o->req.stdin_data = o->stdin_buf;
    }
    return 0;
}

static void on_output(void *ud, enum sbx_stream stream, const char *buf, size_t len)
{
    (void)ud;
    cli_progress_clear();
    cli_write_all(stream == SBX_STREAM_STDOUT ? STDOUT_FILENO : STDERR_FILENO, buf, len);
}

static int exit_code_of(const struct sbx_execution *ex)
{
    switch (ex->status) {
    case SBX_STATUS_TIMEOUT: return EXIT_TIMEOUT;
    case SBX_STATUS_CANCELLED: return EXIT_CANCEL;
    case SBX_STATUS_REFUSED: return EXIT_TOOL;
    case SBX_STATUS_OK:
    case SBX_STATUS_ERROR:
    case SBX_STATUS_OOM:
    case SBX_STATUS_KILLED: break;
    }
    return ex->has_exit_code ? ex->exit_code : EXIT_TOOL;
}

static void report_text(const struct sbx_execution *ex)
{
    const char *limit = sbx_limit_str(ex->limit);

    if (ex->stdout_truncated)
        fprintf(stderr, "llm-sandbox: stdout truncated (%llu bytes produced)\n",
                (unsigned long long)ex->stdout_bytes);
    if (ex->stderr_truncated)
        fprintf(stderr, "llm-sandbox: stderr truncated (%llu bytes produced)\n",
                (unsigned long long)ex->stderr_bytes);
    for (char **w = ex->warnings; w && *w; w++)
        fprintf(stderr, "llm-sandbox: warning: %s\n", *w);
    if (ex->status != SBX_STATUS_OK && ex->status != SBX_STATUS_ERROR)
        fprintf(stderr, "llm-sandbox: %s%s%s%s\n", sbx_status_str(ex->status),
                limit ? " (limit: " : "", limit ? limit : "", limit ? ")" : "");
    else if (limit)
        fprintf(stderr, "llm-sandbox: limit reached: %s\n", limit);
    if (ex->message)
        fprintf(stderr, "llm-sandbox: %s\n", ex->message);
}

int cmd_run(int argc, char **argv)
{
    struct opts o = {0};
    struct sbx_runtime *rt = NULL;
    struct sbx_execution *ex = NULL;
    struct sbx_error *err = NULL;
#ifndef _WIN32
    struct sigaction sa = {.sa_handler = on_signal};
#endif
    int rc = parse(&o, argc, argv);

    if (o.help)
        return 0;
    if (rc != 0)
        goto out;
    if (!o.json)
        o.req.on_output = on_output;
    if (sbx_runtime_new_opts(&cli_runtime_opts, &rt, &err) < 0 ||
            sbx_cancel_new(&g_cancel, &err) < 0) {
        ex = sbx_execution_from_error(err);
    } else {
        o.req.cancel = g_cancel;
        o.req.on_phase = cli_progress_phase;
        o.req.on_notice = cli_progress_notice;
#ifndef _WIN32 /* Windows: Ctrl+C ends the process; its runs are refused at once */
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
#endif
        cli_progress_start();
        if (sbx_run(rt, &o.req, &ex, &err) < 0)
            ex = sbx_execution_from_error(err);
        cli_progress_stop();
    }
    rc = ex ? exit_code_of(ex) : EXIT_TOOL;
    if (ex && o.artifacts_dir && cli_save_artifacts(rt, ex, o.artifacts_dir) < 0 && rc == 0)
        rc = EXIT_TOOL;
    if (o.json && ex) {
        struct json_object *j = sbx_execution_to_json(ex);

        puts(json_object_to_json_string_ext(
                j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
    } else if (ex) {
        report_text(ex);
    }
out:
    sbx_execution_free(ex);
    sbx_error_free(err);
    g_cancel = sbx_cancel_free(g_cancel);
    sbx_runtime_free(rt);
    free(o.code_buf);
    free(o.libs_buf);
    free(o.stdin_buf);
    return rc;
}
