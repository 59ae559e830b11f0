/* SPDX-License-Identifier: MIT */
/*
 * wsl_stub.c: a stand-in for wsl.exe under wine, for the WSL2 plugin's
 * contract test (test_wsl2_wine.py). There is no Linux distribution
 * behind it: it answers the probe's questions as a WSL2 distribution
 * with bwrap and this build's opener would, and for a box it plays the
 * opener and the agent inside: it reads and checks the opener's stream
 * (plugins/common/wslframe.c's own parser), then speaks the agent protocol
 * (core/agent/proto.h) with output computed from what it was sent, not
 * run: each line `print("TEXT")` of the staged program gives TEXT on
 * stdout, `exit(N)` or `sys.exit(N)` its exit code, `while True:` runs
 * until it is killed. Everything it received (its command line as its C
 * runtime split it, the stream's records, each EXEC's argv) goes to a
 * transcript, wsl_stub.log beside it, for the test to check.
 *
 *   -l -q | -l -v                         the distribution list, UTF-16LE
 *   -d D -u U --cd / --exec BWRAP --version        "bubblewrap 0.8.0"
 *   -d D -u U --cd / --exec OPENER --version|--caps the opener's answers
 *   -d D -u U --cd / --exec OPENER BWRAP ARGS...    a box, as above
 */
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "wslframe.h"

#define MAX_FILES 32

struct file {
    char path[512];
    bool tmp;
    char *data;
    size_t len;
    uint32_t mode;
};

static struct file files[MAX_FILES];
static size_t n_files;
static FILE *log_f;

static void log_open(void)
{
    wchar_t exe[MAX_PATH], *slash;

    GetModuleFileNameW(NULL, exe, MAX_PATH);
    slash = wcsrchr(exe, L'\\');
    if (slash)
        wcscpy(slash + 1, L"wsl_stub.log");
    log_f = _wfopen(exe, L"ab");
}

/* One line of the transcript: a tag, then the text with \, newline and
 * tab escaped, so every argument is one field. */
static void log_field(const char *s)
{
    for (; log_f && *s; s++) {
        if (*s == '\\')
            fputs("\\\\", log_f);
        else if (*s == '\n')
            fputs("\\n", log_f);
        else if (*s == '\t')
            fputs("\\t", log_f);
        else
            fputc(*s, log_f);
    }
}

static void log_line(const char *tag, const char *const *fields, size_t n)
{
    if (!log_f)
        return;
    fputs(tag, log_f);
    for (size_t i = 0; i < n; i++) {
        fputc('\t', log_f);
        log_field(fields[i]);
    }
    fputc('\n', log_f);
    fflush(log_f);
}

static void put_utf16(const char *s)
{
    for (; *s; s++) {
        char u[2] = {*s, 0};

        fwrite(u, 1, 2, stdout);
    }
}

static bool read_full(void *buf, size_t n)
{
    unsigned char *p = buf;

    while (n > 0) {
        int r = _read(0, p, n > 65536 ? 65536u : (unsigned)n);

        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static void send_frame(uint8_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    unsigned char hdr[AGENT_HDR_SIZE];

    agent_hdr_encode(hdr, (uint32_t)(alen + blen), type, 0);
    _write(1, hdr, sizeof(hdr));
    if (alen)
        _write(1, a, (unsigned)alen);
    if (blen)
        _write(1, b, (unsigned)blen);
}

static void send_ok(void)
{
    send_frame(AGENT_OK, NULL, 0, NULL, 0);
}

static void send_error(int e, const char *msg)
{
    unsigned char p[4];

    agent_put_u32(p, (uint32_t)e);
    send_frame(AGENT_ERROR, p, 4, msg, strlen(msg) + 1);
}

static void send_exited(uint32_t kind, int32_t code)
{
    unsigned char p[AGENT_EXITED_SIZE] = {0};

    agent_put_u32(p, kind);
    agent_put_u32(p + 4, (uint32_t)code);
    send_frame(AGENT_EXITED, p, sizeof(p), NULL, 0);
}

/* The opener's stream, checked by the plugin's own parser; each record
 * in the transcript ("F <fd> <len> <what>", "L ...", "E"). */
static int read_stream(void)
{
    unsigned char magic[WSL_FRAME_MAGIC_LEN], hdr[WSL_FRAME_HDR];
    struct wsl_frame f;
    const char *why = NULL;

    wsl_frame_init(&f);
    if (!read_full(magic, sizeof(magic)) || wsl_frame_magic(&f, magic, &why) < 0) {
        fprintf(stderr, "wsl2-open: bad stream: %s\n", why ? why : "short");
        return -1;
    }
    for (;;) {
        struct wsl_frame_rec rec;
        char line[160];
        const char *fld[1] = {line};
        unsigned char *blob;

        if (!read_full(hdr, sizeof(hdr)) || wsl_frame_header(&f, hdr, &rec, &why) < 0) {
            fprintf(stderr, "wsl2-open: bad stream: %s\n", why ? why : "short");
            return -1;
        }
        if (rec.type == WSL_FRAME_END) {
            log_line("stream-end", NULL, 0);
            return 0;
        }
        blob = malloc(rec.len ? rec.len : 1);
        if (!blob || !read_full(blob, rec.len)) {
            fprintf(stderr, "wsl2-open: a short record\n");
            return -1;
        }
        if (rec.type == WSL_FRAME_LIMITS) {
            struct wsl_frame_limits l;

            if (wsl_frame_limits_get(blob, &l, &why) < 0) {
                fprintf(stderr, "wsl2-open: bad limits: %s\n", why);
                return -1;
            }
            snprintf(line, sizeof(line), "%llu %llu %llu", (unsigned long long)l.memory_bytes,
                    (unsigned long long)l.cpu_millicores, (unsigned long long)l.pids_max);
            log_line("limits", fld, 1);
        } else {
            /* what the blob looks like: an ELF file, BPF (8 bytes an
             * instruction), or text (the /etc files' first line) */
            const char *kind = rec.len >= 4 && memcmp(blob,
                                                       "\x7f"
                                                       "ELF",
                                                       4) == 0
                                       ? "elf"
                               : rec.len % 8 == 0 && rec.len >= 8 && blob[0] == 0x20 ? "bpf"
                                                                                     : "text";

            snprintf(line, sizeof(line), "%d %u %s %.*s", rec.fd, rec.len, kind,
                    strcmp(kind, "text") == 0 ? (int)strcspn((char *)blob, "\n") : 0, (char *)blob);
            if (strcmp(kind, "text") == 0 && strcspn((char *)blob, "\n") > rec.len)
                snprintf(line, sizeof(line), "%d %u text", rec.fd, rec.len);
            log_line("blob", fld, 1);
        }
        free(blob);
    }
}

static struct file *file_get(const char *path, bool tmp)
{
    for (size_t i = 0; i < n_files; i++)
        if (files[i].tmp == tmp && strcmp(files[i].path, path) == 0)
            return &files[i];
    return NULL;
}

static void on_put(const unsigned char *p, uint32_t len, uint8_t flags)
{
    uint32_t mode, plen;
    char path[512];
    struct file *f;
    bool tmp = (flags & AGENT_PUT_TMP) != 0;

    if (len < 8 || (plen = agent_get_u32(p + 4)) > len - 8 || plen >= sizeof(path)) {
        send_error(EPROTO, "bad PUT");
        exit(2);
    }
    mode = agent_get_u32(p);
    memcpy(path, p + 8, plen);
    path[plen] = '\0';
    f = file_get(path, tmp);
    if (flags & AGENT_PUT_FIRST) {
        if (!f && n_files < MAX_FILES)
            f = &files[n_files++];
        if (f) {
            snprintf(f->path, sizeof(f->path), "%s", path);
            free(f->data);
            f->data = NULL;
            f->len = 0;
            f->tmp = tmp;
            f->mode = mode & 0777;
        }
    }
    if (f) {
        size_t n = len - 8 - plen;
        char *d = realloc(f->data, f->len + n + 1);

        if (d) {
            memcpy(d + f->len, p + 8 + plen, n);
            f->len += n;
            d[f->len] = '\0';
            f->data = d;
        }
    }
    if (flags & AGENT_PUT_LAST) {
        const char *fld[2] = {path, tmp ? "tmp" : "workspace"};

        log_line("put", fld, 2);
        send_ok();
    }
}

/* The staged program's effect, computed: its print lines, its exit. */
static bool run_program(const struct file *prog, int32_t *ret_code)
{
    const char *s = prog ? prog->data : "";

    *ret_code = 0;
    while (s && *s) {
        const char *e = strchr(s, '\n'), *q;
        size_t n = e ? (size_t)(e - s) : strlen(s);
        char line[1024];

        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), s);
        if (strncmp(line, "print(\"", 7) == 0 && (q = strstr(line + 7, "\")"))) {
            send_frame(AGENT_STDOUT, line + 7, (size_t)(q - line - 7), "\n", 1);
        } else if (strncmp(line, "while True:", 11) == 0) {
            return false; /* runs until killed */
        } else if (strncmp(line, "exit(", 5) == 0 || strncmp(line, "sys.exit(", 9) == 0) {
            *ret_code = (int32_t)strtol(strchr(line, '(') + 1, NULL, 10);
            return true;
        }
        s = e ? e + 1 : NULL;
    }
    return true;
}

static void on_exec(const unsigned char *p, uint32_t len)
{
    uint32_t argc, envc;
    const char *argv[64], *s;
    const struct file *prog = NULL;
    size_t off = 12;
    int32_t code;
    unsigned char pid[4];

    if (len < 12 || (argc = agent_get_u32(p + 4)) > 64 || (envc = agent_get_u32(p + 8)) > 4096) {
        send_error(EPROTO, "bad EXEC");
        exit(2);
    }
    for (uint32_t i = 0; i < argc + envc + 1; i++) {
        s = (const char *)p + off;
        if (off >= len || !memchr(s, '\0', len - off)) {
            send_error(EPROTO, "bad EXEC strings");
            exit(2);
        }
        if (i < argc)
            argv[i] = s;
        off += strlen(s) + 1;
    }
    log_line("exec", argv, argc);
    for (uint32_t i = 0; i < argc && !prog; i++)
        prog = file_get(argv[i], false);
    agent_put_u32(pid, 2);
    send_frame(AGENT_STARTED, pid, 4, NULL, 0);
    if (run_program(prog, &code))
        send_exited(AGENT_EXIT_CODE, code);
    else
        log_line("running", NULL, 0); /* until a SIGNAL, QUIT, EOF or kill */
}

static void on_list(const unsigned char *p, uint32_t len, uint8_t flags)
{
    char dir[512];

    snprintf(dir, sizeof(dir), "%.*s", (int)len, (const char *)p);
    for (size_t i = 0; i < n_files; i++) {
        unsigned char rec[512 + 17];
        int n;

        if (files[i].tmp)
            continue;
        n = snprintf((char *)rec, 512, "%s%s", strcmp(dir, ".") == 0 ? "./" : "", files[i].path);
        if (n < 0 || n >= 512)
            continue;
        rec[n++] = '\0';
        if (flags & AGENT_LIST_STAT) {
            agent_put_u64(rec + n, files[i].len);
            agent_put_u64(rec + n + 8, 1700000000ull * 1000000000ull);
            n += 16;
        }
        send_frame(AGENT_DATA, rec, (size_t)n, NULL, 0);
    }
    send_ok();
}

static void on_get(const unsigned char *p, uint32_t len)
{
    char path[512];
    const struct file *f;
    unsigned char mode[4];

    snprintf(path, sizeof(path), "%.*s", len > 4 ? (int)(len - 4) : 0, (const char *)p + 4);
    f = file_get(path, false);
    if (!f) {
        send_error(ENOENT, "no such file");
        return;
    }
    for (size_t o = 0; o < f->len; o += AGENT_CHUNK)
        send_frame(AGENT_DATA, f->data + o, f->len - o > AGENT_CHUNK ? AGENT_CHUNK : f->len - o,
                NULL, 0);
    agent_put_u32(mode, f->mode);
    send_frame(AGENT_OK, mode, 4, NULL, 0);
}

/* The agent: READY, then frames until QUIT or the end of input. */
static int agent(void)
{
    unsigned char ready[12], hdr[AGENT_HDR_SIZE];
    static unsigned char payload[AGENT_MAX_PAYLOAD];

    agent_put_u32(ready, AGENT_PROTO_VERSION);
    agent_put_u32(ready + 4, 1);
    agent_put_u32(ready + 8, AGENT_READY_PID1 | AGENT_READY_FILTER);
    send_frame(AGENT_READY, ready, sizeof(ready), NULL, 0);
    for (;;) {
        struct agent_hdr h;
        char what[32];
        const char *fld[1] = {what};

        if (!read_full(hdr, sizeof(hdr))) {
            log_line("eof", NULL, 0);
            fprintf(stderr, "sbx-wsl2-stats oom_killed=0 pids_limited=0\n");
            return 0;
        }
        if (agent_hdr_decode(hdr, &h) < 0 || !read_full(payload, h.len)) {
            send_error(EPROTO, "bad frame");
            return 2;
        }
        snprintf(what, sizeof(what), "%u", h.type);
        switch (h.type) {
        case AGENT_PUT: on_put(payload, h.len, h.flags); break;
        case AGENT_EXEC: on_exec(payload, h.len); break;
        case AGENT_LIMITS:
        case AGENT_FILTER:
        case AGENT_RELAY:
            log_line("frame", fld, 1);
            send_ok();
            break;
        case AGENT_STDIN:
        case AGENT_STDIN_EOF: break;
        case AGENT_SIGNAL:
            log_line("signal", fld, 1);
            send_exited(AGENT_EXIT_SIGNAL, (int32_t)agent_get_u32(payload));
            break;
        case AGENT_LIST: on_list(payload, h.len, h.flags); break;
        case AGENT_GET: on_get(payload, h.len); break;
        case AGENT_QUIT: log_line("quit", NULL, 0); return 0;
        default: send_error(EPROTO, "unknown frame"); return 2;
        }
    }
}

int wmain(int argc, wchar_t **wargv);
int wmain(int argc, wchar_t **wargv)
{
    char **argv = calloc((size_t)argc + 1, sizeof(*argv));
    const char *prog;

    _setmode(0, _O_BINARY);
    _setmode(1, _O_BINARY);
    _setmode(2, _O_BINARY);
    log_open();
    for (int i = 0; argv && i < argc; i++) {
        int n = WideCharToMultiByte(CP_UTF8, 0, wargv[i], -1, NULL, 0, NULL, NULL);

        argv[i] = malloc(n > 0 ? (size_t)n : 1);
        if (!argv[i] || n <= 0)
            return 3;
        WideCharToMultiByte(CP_UTF8, 0, wargv[i], -1, argv[i], n, NULL, NULL);
    }
    if (!argv)
        return 3;
    log_line("argv", (const char *const *)argv + 1, (size_t)argc - 1);
    if (argc == 3 && strcmp(argv[1], "-l") == 0 && strcmp(argv[2], "-q") == 0) {
        put_utf16("Debian\r\nsbx-wine\r\n");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "-l") == 0 && strcmp(argv[2], "-v") == 0) {
        put_utf16("  NAME        STATE           VERSION\r\n* Debian      Stopped         1\r\n"
                  "  sbx-wine    Running         2\r\n");
        return 0;
    }
    if (argc < 9 || strcmp(argv[1], "-d") != 0 || strcmp(argv[3], "-u") != 0 ||
            strcmp(argv[5], "--cd") != 0 || strcmp(argv[7], "--exec") != 0) {
        fprintf(stderr, "wsl-stub: refused: not a command line of the WSL2 plugin\n");
        return 2;
    }
    prog = argv[8];
    if (argc == 10 && strcmp(argv[9], "--version") == 0) {
        if (strlen(prog) >= 5 && strcmp(prog + strlen(prog) - 5, "bwrap") == 0)
            printf("bubblewrap 0.8.0\n");
        else
            printf("wsl2-open stream %.7s\n", WSL_FRAME_MAGIC);
        return 0;
    }
    if (argc == 10 && strcmp(argv[9], "--caps") == 0) {
        printf("caps memory full cgroup v2 (the wine stub's word)\n"
               "caps cpu full cgroup v2 (the wine stub's word)\n"
               "caps pids full cgroup v2 (the wine stub's word)\n");
        return 0;
    }
    if (read_stream() < 0)
        return 125;
    return agent();
}
