/* SPDX-License-Identifier: MIT */
/*
 * session_cmd.c: `llm-sandbox session ...`, stateful sessions from the
 * command line through a running `llm-sandbox serve --socket`. Each
 * subcommand reads its local inputs, connects (client.c), calls one MCP
 * tool, prints and exits; the server keeps the session between commands.
 * The tool names and arguments are the server's contract (core/mcp).
 * Exit codes as `run`'s (cli.h): exec exits with the program's code (124
 * timeout, 130 cancelled); a refusal, a failed tool or no server is 125;
 * bad usage is 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llm-sandbox/sbx.h>

#include "b64.h"
#include "cli.h"
#include "client.h"
#include "jsonrpc.h"

#define EXIT_USAGE 2

struct sopts {
    const char *socket; /* --socket, or NULL: sbx_socket_path() */
    bool json;
    const char *language;
    struct json_object *libraries; /* array, or NULL */
    bool has_timeout;
    double timeout;
    bool has_memory;
    int64_t memory_mb;
    const char *code, *stdin_path, *out_path;
    struct json_object *files; /* name -> text, or NULL */
    char **pos;                /* the positional arguments */
    int n_pos;
};

struct subcmd {
    const char *name;
    const char *accepts; /* option codes, beyond --socket, --json and --help */
    int min_pos, max_pos;
    const char *usage;
    int (*run)(struct sopts *o);
};

/* ---- printing ----------------------------------------------------------- */

static void print_json(struct json_object *o)
{
    puts(o ? json_object_to_json_string_ext(
                     o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
           : "{}");
}

static const char *str_of(struct json_object *o, const char *key)
{
    struct json_object *v;

    if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

static struct json_object *structured(struct json_object *result)
{
    struct json_object *v;

    return json_object_object_get_ex(result, "structuredContent", &v) ? v : NULL;
}

static bool is_error(struct json_object *result)
{
    struct json_object *v;

    return json_object_object_get_ex(result, "isError", &v) && json_object_get_boolean(v);
}

/* Why a tool failed: structuredContent.message, else the first text. */
static const char *failure_text(struct json_object *result)
{
    struct json_object *content;
    const char *m = str_of(structured(result), "message");

    if (m)
        return m;
    if (json_object_object_get_ex(result, "content", &content) &&
            json_object_is_type(content, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(content); i++) {
            m = str_of(json_object_array_get_idx(content, i), "text");
            if (m)
                return m;
        }
    }
    return "the tool failed and said nothing more";
}

/* A result with isError: say why (with --json, print the structured
 * content when there is one) and return EXIT_TOOL; else 0. */
static int tool_failed(const struct sopts *o, struct json_object *result)
{
    if (!is_error(result))
        return 0;
    if (o->json && structured(result))
        print_json(structured(result));
    else
        fprintf(stderr, "llm-sandbox: %s\n", failure_text(result));
    return EXIT_TOOL;
}

/* Connect, call tool with args (transfer full), close. 0 and *ret
 * (transfer full), or EXIT_TOOL after saying why. */
static int call(
        const struct sopts *o, const char *tool, struct json_object *args, struct json_object **ret)
{
    struct sbx_error *err = NULL;
    struct mcp_client c;
    char *path = NULL;
    int r;

    if (!o->socket && sbx_socket_path(cli_runtime_opts.config_path, &path, &err) < 0) {
        fprintf(stderr, "llm-sandbox: %s\n", err->msg);
        sbx_error_free(err);
        json_object_put(args);
        return EXIT_TOOL;
    }
    r = client_open(&c, o->socket ? o->socket : path);
    if (r == 0)
        r = client_call_tool(&c, tool, args, ret);
    else
        json_object_put(args);
    client_close(&c);
    free(path);
    return r < 0 ? EXIT_TOOL : 0;
}

/* ---- create, close, list ----------------------------------------------- */

static int s_create(struct sopts *o)
{
    struct json_object *args = json_object_new_object(), *result = NULL;
    const char *id;
    int rc;

    json_object_object_add(args, "language", json_object_new_string(o->language));
    if (o->libraries)
        json_object_object_add(args, "libraries", json_object_get(o->libraries));
    if (o->has_timeout)
        json_object_object_add(args, "timeout", json_object_new_double(o->timeout));
    if (o->has_memory)
        json_object_object_add(args, "memory_mb", json_object_new_int64(o->memory_mb));
    rc = call(o, "create_session", args, &result);
    if (rc == 0 && !(rc = tool_failed(o, result))) {
        id = str_of(structured(result), "session_id");
        if (o->json) {
            print_json(structured(result));
        } else if (id) {
            puts(id);
        } else {
            fprintf(stderr, "llm-sandbox: the server's answer holds no session_id\n");
            rc = EXIT_TOOL;
        }
    }
    json_object_put(result);
    return rc;
}

static int s_close(struct sopts *o)
{
    struct json_object *args = json_object_new_object(), *result = NULL;
    int rc;

    json_object_object_add(args, "session_id", json_object_new_string(o->pos[0]));
    rc = call(o, "close_session", args, &result);
    if (rc == 0 && !(rc = tool_failed(o, result)) && o->json)
        print_json(structured(result));
    json_object_put(result);
    return rc;
}

/* A time as the server gives it: text as it is, a number as seconds since
 * the epoch (milliseconds when implausibly large for seconds). */
static const char *time_text(struct json_object *v, char *buf, size_t n)
{
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
        double t = json_object_get_double(v);
        time_t secs = (time_t)(t > 1e11 ? t / 1000.0 : t);
        struct tm tm;

        if (gmtime_r(&secs, &tm) && strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
            return buf;
    }
    return v && !json_object_is_type(v, json_type_null) ? json_object_get_string(v) : "-";
}

static const char *field_text(struct json_object *e, const char *key)
{
    struct json_object *v = NULL;

    if (!json_object_object_get_ex(e, key, &v) || !v)
        return "-";
    return json_object_get_string(v);
}

static int s_list(struct sopts *o)
{
    struct json_object *result = NULL, *list;
    int rc = call(o, "list_sessions", NULL, &result), width = 10;
    size_t n;

    if (rc != 0 || (rc = tool_failed(o, result)) != 0 || o->json) {
        if (rc == 0)
            print_json(structured(result));
        json_object_put(result);
        return rc;
    }
    if (!json_object_object_get_ex(structured(result), "sessions", &list) ||
            !json_object_is_type(list, json_type_array)) {
        fprintf(stderr, "llm-sandbox: the server's answer holds no sessions list\n");
        json_object_put(result);
        return EXIT_TOOL;
    }
    n = json_object_array_length(list);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(field_text(json_object_array_get_idx(list, i), "session_id"));

        if (len > (size_t)width && len < 200)
            width = (int)len;
    }
    printf("%-*s  %-10s  %-8s  %-20s  %-20s  %5s  %s\n", width, "SESSION", "LANGUAGE", "BACKEND",
            "CREATED", "LAST USED", "CALLS", "BUSY");
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = json_object_array_get_idx(list, i), *v = NULL;
        char created[32], used[32];
        const char *c, *u;

        json_object_object_get_ex(e, "created_at", &v);
        c = time_text(v, created, sizeof(created));
        v = NULL;
        json_object_object_get_ex(e, "last_used_at", &v);
        u = time_text(v, used, sizeof(used));
        printf("%-*s  %-10s  %-8s  %-20s  %-20s  %5s  %s\n", width, field_text(e, "session_id"),
                field_text(e, "language"), field_text(e, "backend"), c, u, field_text(e, "calls"),
                strcmp(field_text(e, "busy"), "true") == 0 ? "yes" : "no");
    }
    json_object_put(result);
    return 0;
}

/* ---- exec ----------------------------------------------------------------- */

/* `run`'s exit code for an execution's JSON (run_cmd.c exit_code_of). */
static int exec_exit_code(struct json_object *ex)
{
    const char *status = str_of(ex, "status");
    struct json_object *v;

    if (status && strcmp(status, "timeout") == 0)
        return EXIT_TIMEOUT;
    if (status && strcmp(status, "cancelled") == 0)
        return EXIT_CANCEL;
    if (!status || strcmp(status, "refused") == 0)
        return EXIT_TOOL;
    if (json_object_object_get_ex(ex, "exit_code", &v) && json_object_is_type(v, json_type_int))
        return json_object_get_int(v);
    return EXIT_TOOL;
}

static bool bool_of(struct json_object *o, const char *key)
{
    struct json_object *v;

    return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* What the program printed, then what `run` says on stderr about it. */
static void report_exec(struct json_object *ex)
{
    const char *status = str_of(ex, "status"), *limit = str_of(ex, "limit"),
               *msg = str_of(ex, "message");
    struct json_object *v;

    for (int s = 0; s < 2; s++) {
        const char *key = s ? "stderr" : "stdout";

        if (json_object_object_get_ex(ex, key, &v) && json_object_is_type(v, json_type_string))
            cli_write_all(s ? STDERR_FILENO : STDOUT_FILENO, json_object_get_string(v),
                    (size_t)json_object_get_string_len(v));
    }
    fflush(stdout);
    for (int s = 0; s < 2; s++) {
        const char *key = s ? "stderr" : "stdout";
        char truncated[32], bytes[32];

        snprintf(truncated, sizeof(truncated), "%s_truncated", key);
        snprintf(bytes, sizeof(bytes), "%s_bytes", key);
        if (bool_of(ex, truncated))
            fprintf(stderr, "llm-sandbox: %s truncated (%s bytes produced)\n", key,
                    field_text(ex, bytes));
    }
    if (json_object_object_get_ex(ex, "warnings", &v) && json_object_is_type(v, json_type_array))
        for (size_t i = 0; i < json_object_array_length(v); i++)
            fprintf(stderr, "llm-sandbox: warning: %s\n",
                    json_object_get_string(json_object_array_get_idx(v, i)));
    /* files it wrote: `session download ID PATH` fetches one */
    if (json_object_object_get_ex(ex, "artifacts", &v) && json_object_is_type(v, json_type_array))
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            struct json_object *a = json_object_array_get_idx(v, i);
            const char *path = str_of(a, "path"), *mime = str_of(a, "mime_type");

            fprintf(stderr, "llm-sandbox: wrote %s (%s bytes, %s)\n", path ? path : "?",
                    field_text(a, "size"), mime ? mime : "?");
        }
    if (status && strcmp(status, "ok") != 0 && strcmp(status, "error") != 0)
        fprintf(stderr, "llm-sandbox: %s%s%s%s\n", status, limit ? " (limit: " : "",
                limit ? limit : "", limit ? ")" : "");
    else if (limit)
        fprintf(stderr, "llm-sandbox: limit reached: %s\n", limit);
    if (msg)
        fprintf(stderr, "llm-sandbox: %s\n", msg);
}

/* The program: -c CODE, a FILE, or standard input ("-" or nothing). */
static char *exec_code(const struct sopts *o, size_t *ret_len)
{
    const char *src = o->n_pos > 1 ? o->pos[1] : "-";
    char *code;

    if (o->code) {
        *ret_len = strlen(o->code);
        return strdup(o->code);
    }
    code = cli_read_path(src, ret_len);
    if (!code)
        fprintf(stderr, "llm-sandbox: cannot read the program from '%s': %s\n", src,
                strerror(errno));
    return code;
}

/* A local file as a JSON string: it must be UTF-8 text. NULL (said why)
 * when it cannot be read or is not text. (transfer full) */
static struct json_object *text_file(const char *path, const char *what)
{
    size_t len;
    char *data = cli_read_path(path, &len);
    struct json_object *s;

    if (!data) {
        fprintf(stderr, "llm-sandbox: cannot read %s '%s': %s\n", what, path, strerror(errno));
        return NULL;
    }
    if (memchr(data, '\0', len) || !jr_utf8_valid(data, len)) {
        fprintf(stderr,
                "llm-sandbox: %s '%s' is not UTF-8 text; send binary data with 'llm-sandbox "
                "session upload'\n",
                what, path);
        free(data);
        return NULL;
    }
    s = json_object_new_string_len(data, (int)len);
    free(data);
    return s;
}

static int s_exec(struct sopts *o)
{
    struct json_object *args, *result = NULL, *ex, *in = NULL;
    size_t len;
    char *code;
    int rc;

    if (o->code && o->n_pos > 1) {
        fprintf(stderr, "llm-sandbox: give the program with -c or as a FILE, not both\n");
        return EXIT_USAGE;
    }
    if (o->stdin_path && !(in = text_file(o->stdin_path, "--stdin")))
        return EXIT_TOOL;
    code = exec_code(o, &len);
    if (!code) {
        json_object_put(in);
        return EXIT_TOOL;
    }
    if (!jr_utf8_valid(code, len) || memchr(code, '\0', len)) {
        fprintf(stderr, "llm-sandbox: the program is not UTF-8 text\n");
        free(code);
        json_object_put(in);
        return EXIT_TOOL;
    }
    args = json_object_new_object();
    json_object_object_add(args, "session_id", json_object_new_string(o->pos[0]));
    json_object_object_add(args, "code", json_object_new_string_len(code, (int)len));
    free(code);
    if (o->has_timeout)
        json_object_object_add(args, "timeout", json_object_new_double(o->timeout));
    if (in)
        json_object_object_add(args, "stdin", in);
    if (o->files)
        json_object_object_add(args, "files", json_object_get(o->files));
    if (o->libraries) /* installed into the live session first, as MCP's libraries */
        json_object_object_add(args, "libraries", json_object_get(o->libraries));
    rc = call(o, "execute_code", args, &result);
    if (rc != 0)
        return rc;
    ex = structured(result);
    if (!str_of(ex, "status")) { /* not an execution: the session was refused */
        rc = tool_failed(o, result);
        if (rc == 0 && o->json)
            print_json(ex);
    } else {
        rc = exec_exit_code(ex);
        if (o->json)
            print_json(ex);
        else
            report_exec(ex);
    }
    json_object_put(result);
    return rc;
}

/* ---- files ---------------------------------------------------------------- */

static int s_upload(struct sopts *o)
{
    const char *src = o->n_pos > 2 ? o->pos[2] : "-";
    struct json_object *args, *result = NULL;
    size_t len;
    char *data = cli_read_path(src, &len);
    bool text;
    int rc;

    if (!data) {
        fprintf(stderr, "llm-sandbox: cannot read '%s': %s\n", src, strerror(errno));
        return EXIT_TOOL;
    }
    /* text goes as it is; anything else (a NUL byte included) as base64 */
    text = !memchr(data, '\0', len) && jr_utf8_valid(data, len);
    args = json_object_new_object();
    json_object_object_add(args, "session_id", json_object_new_string(o->pos[0]));
    json_object_object_add(args, "path", json_object_new_string(o->pos[1]));
    if (text) {
        json_object_object_add(args, "content", json_object_new_string_len(data, (int)len));
    } else {
        char *b64 = b64_encode(data, len);

        if (!b64) {
            fprintf(stderr, "llm-sandbox: out of memory\n");
            free(data);
            json_object_put(args);
            return EXIT_TOOL;
        }
        json_object_object_add(args, "content", json_object_new_string(b64));
        free(b64);
    }
    free(data);
    json_object_object_add(args, "encoding", json_object_new_string(text ? "utf-8" : "base64"));
    rc = call(o, "upload_file", args, &result);
    if (rc == 0 && !(rc = tool_failed(o, result)) && o->json)
        print_json(structured(result));
    json_object_put(result);
    return rc;
}

static int write_file(const char *path, const char *data, size_t len)
{
    int fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : STDOUT_FILENO;

    if (fd < 0) {
        fprintf(stderr, "llm-sandbox: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_TOOL;
    }
    cli_write_all(fd, data, len);
    if (path && close(fd) < 0) {
        fprintf(stderr, "llm-sandbox: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_TOOL;
    }
    return 0;
}

static int s_download(struct sopts *o)
{
    struct json_object *args = json_object_new_object(), *result = NULL, *content, *sc;
    const char *encoding;
    char *raw = NULL;
    size_t len;
    int rc;

    json_object_object_add(args, "session_id", json_object_new_string(o->pos[0]));
    json_object_object_add(args, "path", json_object_new_string(o->pos[1]));
    rc = call(o, "download_file", args, &result);
    if (rc != 0 || (rc = tool_failed(o, result)) != 0) {
        json_object_put(result);
        return rc;
    }
    sc = structured(result);
    encoding = str_of(sc, "encoding");
    if (!json_object_object_get_ex(sc, "content", &content) ||
            !json_object_is_type(content, json_type_string) || !encoding) {
        fprintf(stderr, "llm-sandbox: the server's answer holds no content and encoding\n");
        json_object_put(result);
        return EXIT_TOOL;
    }
    if (strcmp(encoding, "base64") == 0) {
        if (b64_decode(json_object_get_string(content), (size_t)json_object_get_string_len(content),
                    &raw, &len) < 0) {
            fprintf(stderr, "llm-sandbox: the server sent content that is not base64\n");
            json_object_put(result);
            return EXIT_TOOL;
        }
        rc = write_file(o->out_path, raw, len);
        free(raw);
    } else {
        rc = write_file(o->out_path, json_object_get_string(content),
                (size_t)json_object_get_string_len(content));
    }
    json_object_put(result);
    return rc;
}

static int s_files(struct sopts *o)
{
    struct json_object *args = json_object_new_object(), *result = NULL, *list;
    int rc;

    json_object_object_add(args, "session_id", json_object_new_string(o->pos[0]));
    if (o->n_pos > 1)
        json_object_object_add(args, "path", json_object_new_string(o->pos[1]));
    rc = call(o, "list_files", args, &result);
    if (rc != 0 || (rc = tool_failed(o, result)) != 0 || o->json) {
        if (rc == 0)
            print_json(structured(result));
        json_object_put(result);
        return rc;
    }
    if (!json_object_object_get_ex(structured(result), "files", &list) ||
            !json_object_is_type(list, json_type_array)) {
        fprintf(stderr, "llm-sandbox: the server's answer holds no files list\n");
        json_object_put(result);
        return EXIT_TOOL;
    }
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        struct json_object *e = json_object_array_get_idx(list, i);

        puts(json_object_is_type(e, json_type_string) ? json_object_get_string(e)
                                                      : field_text(e, "path"));
    }
    json_object_put(result);
    return 0;
}

/* ---- arguments ------------------------------------------------------------ */

static const struct subcmd subcmds[] = {
        {"create", "lLtm", 0, 0,
                "usage: llm-sandbox session create -l LANGUAGE [--library NAME ...]\n"
                "                                  [--timeout SECONDS] [--memory MB] [--json]\n"
                "Start a session; prints its id. Variables and files survive between\n"
                "'session exec' calls until 'session close'.\n"
                "  -l, --language NAME    the session's language (python, javascript, ...)\n"
                "      --library NAME     a package to install first (repeat, or A,B,C)\n"
                "  -t, --timeout SECONDS  wall-clock limit of each call\n"
                "      --memory MB        memory limit of the session, in MiB\n",
                s_create},
        {"exec", "ctiFL", 1, 2,
                "usage: llm-sandbox session exec ID [-c CODE | FILE | -] [--timeout SECONDS]\n"
                "                                [--stdin FILE] [--file NAME=LOCALPATH ...]\n"
                "                                [--library NAME ...] [--json]\n"
                "Run code in the session (standard input when neither -c nor FILE is given).\n"
                "Prints what it printed and exits with its exit code, as 'llm-sandbox run'\n"
                "does (124: timeout, 125: refused or failed, 130: cancelled).\n"
                "  -c, --code CODE        the code\n"
                "  -t, --timeout SECONDS  wall-clock limit of this call\n"
                "      --stdin FILE       feed FILE (text) to the program's standard input\n"
                "      --file NAME=PATH   stage the local text file PATH as NAME (repeat)\n"
                "      --library NAME     install a package into the live session first\n"
                "                         (repeat, or A,B,C); it stays for later calls\n",
                s_exec},
        {"close", "", 1, 1,
                "usage: llm-sandbox session close ID\n"
                "End the session and remove its sandbox and files.\n",
                s_close},
        {"list", "", 0, 0,
                "usage: llm-sandbox session list [--json]\n"
                "The server's open sessions.\n",
                s_list},
        {"upload", "", 2, 3,
                "usage: llm-sandbox session upload ID PATH [LOCALFILE | -]\n"
                "Write LOCALFILE (default: standard input) to PATH in the session's workspace;\n"
                "binary data is sent as base64.\n",
                s_upload},
        {"download", "o", 2, 2,
                "usage: llm-sandbox session download ID PATH [-o LOCALFILE]\n"
                "Write the file PATH of the session's workspace to standard output or\n"
                "LOCALFILE, byte for byte.\n"
                "  -o, --output LOCALFILE  where to write it\n",
                s_download},
        {"files", "", 1, 2,
                "usage: llm-sandbox session files ID [PATH]\n"
                "List the files in the session's workspace (under PATH), one per line.\n",
                s_files},
};

#define N_SUBCMDS (sizeof(subcmds) / sizeof(subcmds[0]))

static const struct option long_opts[] = {
        {"socket", required_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"language", required_argument, NULL, 'l'},
        {"library", required_argument, NULL, 'L'},
        {"libraries", required_argument, NULL, 'L'},
        {"timeout", required_argument, NULL, 't'},
        {"memory", required_argument, NULL, 'm'},
        {"code", required_argument, NULL, 'c'},
        {"stdin", required_argument, NULL, 'i'},
        {"file", required_argument, NULL, 'F'},
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
};

static void session_help(FILE *f)
{
    fprintf(f, "usage: llm-sandbox session COMMAND [options]\n"
               "Stateful sessions, through a running 'llm-sandbox serve --socket'.\n"
               "  create -l LANGUAGE [--library NAME ...] [--timeout S] [--memory MB]\n"
               "  exec ID [-c CODE | FILE | -] [--timeout S] [--stdin FILE] [--file NAME=PATH]\n"
               "       [--library NAME ...]\n"
               "  close ID\n"
               "  list\n"
               "  upload ID PATH [LOCALFILE | -]\n"
               "  download ID PATH [-o LOCALFILE]\n"
               "  files ID [PATH]\n"
               "Every command takes:\n"
               "  --socket PATH   the server's socket (default: LLM_SANDBOX_SOCKET, else\n"
               "                  $XDG_RUNTIME_DIR/llm-sandbox/mcp.sock, or\n"
               "                  /run/llm-sandbox/mcp.sock as root)\n"
               "  --json          print the tool's structured result as one JSON line\n"
               "Run 'llm-sandbox session COMMAND --help' for one command's options.\n");
}

static int add_libraries(struct sopts *o, const char *v)
{
    const char *p = v;

    if (!o->libraries)
        o->libraries = json_object_new_array();
    for (;;) {
        size_t n = strcspn(p, ",");

        if (n == 0)
            return -1;
        json_object_array_add(o->libraries, json_object_new_string_len(p, (int)n));
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

static int add_file(struct sopts *o, const char *v)
{
    const char *eq = strchr(v, '=');
    struct json_object *text;
    char *name;

    if (!eq || eq == v || !eq[1])
        return -1;
    if (!(text = text_file(eq + 1, "--file")))
        return -2;
    name = strndup(v, (size_t)(eq - v));
    if (!o->files)
        o->files = json_object_new_object();
    if (!name) {
        json_object_put(text);
        return -2;
    }
    json_object_object_add(o->files, name, text);
    free(name);
    return 0;
}

/* --timeout and --memory, read by the core's one parser
 * (sbx_req_limit_parse): seconds, and a size whose bare number is MiB, this
 * option's unit from the start ("512" is 512M); sent on as create_session's
 * timeout (seconds) and memory_mb. */
static int set_number(struct sopts *o, int c, const char *v, struct sbx_error **err)
{
    struct sbx_req_limits l = {0};
    size_t n = strlen(v);
    char mib[64];

    if (c == 't') {
        if (sbx_req_limit_parse(&l, SBX_REQ_WALL_TIME, v, err) < 0)
            return -1;
        o->timeout = (double)l.wall_time_ms / 1000.0;
        o->has_timeout = true;
        return 0;
    }
    if (n > 0 && n < sizeof(mib) - 1 && v[n - 1] >= '0' && v[n - 1] <= '9') {
        snprintf(mib, sizeof(mib), "%sM", v);
        v = mib;
    }
    if (sbx_req_limit_parse(&l, SBX_REQ_MEMORY, v, err) < 0)
        return -1;
    if (l.memory_bytes % (UINT64_C(1) << 20) != 0 || (l.memory_bytes >> 20) > INT64_MAX)
        return -1; /* a session's memory is given in whole MiB */
    o->memory_mb = (int64_t)(l.memory_bytes >> 20);
    o->has_memory = true;
    return 0;
}

/* Options and positionals; 0, or an exit code (help printed: -1). */
static int parse(const struct subcmd *sc, struct sopts *o, int argc, char **argv)
{
    struct sbx_error *e = NULL;
    int c, r, li = -1; /* li: the long option's index, or -1 (a short one) */
    char name[32];

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":l:t:c:o:h", long_opts, &li)) != -1) {
        if (c == 'h') {
            fputs(sc->usage, stdout);
            printf("  --socket PATH, --json: see 'llm-sandbox session --help'\n");
            return -1;
        }
        if (c == ':' || c == '?') {
            fprintf(stderr, "llm-sandbox session %s: %s '%s'\n", sc->name,
                    c == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
            return EXIT_USAGE;
        }
        if (c != 'S' && c != 'j' && !strchr(sc->accepts, c)) {
            fprintf(stderr, "llm-sandbox session %s: option '%s' is not for this command\n",
                    sc->name, argv[optind - 1]);
            return EXIT_USAGE;
        }
        r = 0;
        switch (c) {
        case 'S': o->socket = optarg; break;
        case 'j': o->json = true; break;
        case 'l': o->language = optarg; break;
        case 'c': o->code = optarg; break;
        case 'i': o->stdin_path = optarg; break;
        case 'o': o->out_path = optarg; break;
        case 'L': r = add_libraries(o, optarg); break;
        case 'F': r = add_file(o, optarg); break;
        default: r = set_number(o, c, optarg, &e); break;
        }
        if (r == -2)
            return EXIT_TOOL;
        if (r < 0) {
            /* not argv[optind - 1]: that is the value when it came as a word of its own */
            if (li >= 0)
                snprintf(name, sizeof(name), "--%s", long_opts[li].name);
            else
                snprintf(name, sizeof(name), "-%c", c);
            fprintf(stderr, "llm-sandbox session %s: bad value '%s' for '%s'%s%s\n", sc->name,
                    optarg, name,
                    e          ? ": "
                    : c == 'L' ? " (an empty name)"
                               : " (whole MiB)",
                    e ? e->msg : "");
            sbx_error_free(e);
            return EXIT_USAGE;
        }
        li = -1;
    }
    o->pos = argv + optind;
    o->n_pos = argc - optind;
    if (o->n_pos < sc->min_pos || o->n_pos > sc->max_pos) {
        fprintf(stderr, "llm-sandbox session %s: %s arguments\n%s", sc->name,
                o->n_pos < sc->min_pos ? "missing" : "too many", sc->usage);
        return EXIT_USAGE;
    }
    if (strcmp(sc->name, "create") == 0 && !o->language) {
        fprintf(stderr, "llm-sandbox session create: give the language with -l LANGUAGE\n");
        return EXIT_USAGE;
    }
    return 0;
}

int cmd_session(int argc, char **argv)
{
    const struct subcmd *sc = NULL;
    struct sopts o = {0};
    int rc;

    if (argc < 2) {
        session_help(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
            strcmp(argv[1], "help") == 0) {
        session_help(stdout);
        return 0;
    }
    for (size_t i = 0; i < N_SUBCMDS && !sc; i++)
        if (strcmp(argv[1], subcmds[i].name) == 0)
            sc = &subcmds[i];
    if (!sc) {
        fprintf(stderr, "llm-sandbox session: unknown command '%s'\n", argv[1]);
        session_help(stderr);
        return EXIT_USAGE;
    }
    rc = parse(sc, &o, argc - 1, argv + 1);
    if (rc == 0)
        rc = sc->run(&o);
    json_object_put(o.libraries);
    json_object_put(o.files);
    return rc < 0 ? 0 : rc;
}
