/* SPDX-License-Identifier: MIT */
/*
 * test_agent.c: drives the real sbx-agent (static binary from $SBX_AGENT,
 * default /tmp/sbx-agent) as pid 1 of a bubblewrap pid namespace over its
 * stdin/stdout, speaking proto.h. Needs /usr/bin/bwrap; adds --unshare-user
 * when not run as root. $SBX_AGENT_WRAP (e.g. "valgrind --track-fds=yes")
 * is put in front of the agent inside the sandbox.
 * The sandbox: host / bound, a private /tmp, the work dir bound back in.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "host/seccomp_policy.h"
#include "proto.h"

#define TIMEOUT_MS 30000
#define BWRAP      "/usr/bin/bwrap"

static const char *agent_path = "/tmp/sbx-agent";

struct agent {
    pid_t pid; /* bwrap, outside the namespace */
    int to, from;
    char dir[64];
    unsigned char *rbuf;
};

struct agent_opts {
    bool small_tmpfs; /* a 1 MiB tmpfs as the workspace */
    rlim_t fsize;     /* RLIMIT_FSIZE for the agent, 0: unchanged */
    bool not_pid1;    /* bwrap's own init is pid 1; the agent is not */
};

struct frame {
    uint8_t type, flags;
    uint32_t len;
    const unsigned char *p;
};

struct buf {
    unsigned char *p;
    size_t len, cap;
};

struct result {
    bool started, error;
    uint32_t pid, kind, exit_flags;
    int32_t code, err;
    uint64_t utime_us, stime_us, maxrss_kb;
    size_t max_chunk;
    struct buf out, errout;
};

static const char *const path_env[] = {"PATH=/usr/bin:/bin", NULL};

static void buf_add(struct buf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static const char *buf_str(const struct buf *b)
{
    return b->p ? (const char *)b->p : "";
}

static void result_done(struct result *r)
{
    free(r->out.p);
    free(r->errout.p);
    memset(r, 0, sizeof *r);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_all(int fd, const void *p, size_t n)
{
    const unsigned char *c = p;

    while (n > 0) {
        ssize_t w = write(fd, c, n);

        if (w < 0 && errno == EINTR)
            continue;
        assert_true(w > 0);
        c += w;
        n -= (size_t)w;
    }
}

/* 0, -1 on EOF or error, -2 on timeout. */
static int read_full(int fd, unsigned char *p, size_t n, double deadline)
{
    while (n > 0) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int ms = (int)((deadline - now_s()) * 1000);
        ssize_t r;

        if (ms <= 0 || poll(&pf, 1, ms) == 0)
            return -2;
        r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int recv_frame(struct agent *a, struct frame *f)
{
    unsigned char h[AGENT_HDR_SIZE];
    struct agent_hdr hd;
    double deadline = now_s() + TIMEOUT_MS / 1000.0;
    int rc = read_full(a->from, h, sizeof h, deadline);

    if (rc != 0)
        return rc;
    assert_int_equal(agent_hdr_decode(h, &hd), 0);
    rc = read_full(a->from, a->rbuf, hd.len, deadline);
    assert_int_equal(rc, 0);
    f->type = hd.type;
    f->flags = hd.flags;
    f->len = hd.len;
    f->p = a->rbuf;
    return 0;
}

static void send_frame(struct agent *a, uint8_t type, uint8_t flags, const void *p, size_t n)
{
    unsigned char h[AGENT_HDR_SIZE];

    agent_hdr_encode(h, (uint32_t)n, type, flags);
    write_all(a->to, h, sizeof h);
    if (n > 0)
        write_all(a->to, p, n);
}

static void send_u32(struct agent *a, uint8_t type, uint32_t v)
{
    unsigned char p[4];

    agent_put_u32(p, v);
    send_frame(a, type, 0, p, sizeof p);
}

static void send_put(
        struct agent *a, const char *path, uint32_t mode, const char *data, uint8_t flags)
{
    struct buf b = {0};
    unsigned char h[8];

    agent_put_u32(h, mode);
    agent_put_u32(h + 4, (uint32_t)strlen(path));
    buf_add(&b, h, sizeof h);
    buf_add(&b, path, strlen(path));
    buf_add(&b, data, strlen(data));
    send_frame(a, AGENT_PUT, flags, b.p, b.len);
    free(b.p);
}

static uint32_t count(const char *const *v)
{
    uint32_t n = 0;

    while (v && v[n])
        n++;
    return n;
}

static void send_exec(struct agent *a, uint32_t flags, const char *const *argv,
        const char *const *env, const char *cwd)
{
    struct buf b = {0};
    unsigned char h[12];

    agent_put_u32(h, flags);
    agent_put_u32(h + 4, count(argv));
    agent_put_u32(h + 8, count(env));
    buf_add(&b, h, sizeof h);
    for (uint32_t i = 0; i < count(argv); i++)
        buf_add(&b, argv[i], strlen(argv[i]) + 1);
    for (uint32_t i = 0; i < count(env); i++)
        buf_add(&b, env[i], strlen(env[i]) + 1);
    buf_add(&b, cwd, strlen(cwd) + 1);
    send_frame(a, AGENT_EXEC, 0, b.p, b.len);
    free(b.p);
}

/* Reads frames until EXITED or ERROR. */
static void collect(struct agent *a, struct result *r)
{
    for (;;) {
        struct frame f;

        assert_int_equal(recv_frame(a, &f), 0);
        switch (f.type) {
        case AGENT_STARTED:
            assert_int_equal(f.len, 4);
            assert_false(r->started);
            r->started = true;
            r->pid = agent_get_u32(f.p);
            break;
        case AGENT_STDOUT:
        case AGENT_STDERR:
            assert_true(f.len > 0 && f.len <= AGENT_CHUNK);
            buf_add(f.type == AGENT_STDOUT ? &r->out : &r->errout, f.p, f.len);
            if (f.len > r->max_chunk)
                r->max_chunk = f.len;
            break;
        case AGENT_ERROR:
            assert_true(f.len >= 5 && f.p[f.len - 1] == '\0');
            r->error = true;
            r->err = (int32_t)agent_get_u32(f.p);
            return;
        case AGENT_EXITED:
            assert_int_equal(f.len, AGENT_EXITED_SIZE);
            r->kind = agent_get_u32(f.p);
            r->code = (int32_t)agent_get_u32(f.p + 4);
            r->exit_flags = agent_get_u32(f.p + 8);
            r->utime_us = agent_get_u64(f.p + 16);
            r->stime_us = agent_get_u64(f.p + 24);
            r->maxrss_kb = agent_get_u64(f.p + 32);
            return;
        default: fail_msg("unexpected frame type %u", f.type);
        }
    }
}

static void run(struct agent *a, uint32_t flags, const char *const *argv, const char *const *env,
        const char *cwd, struct result *r)
{
    memset(r, 0, sizeof *r);
    send_exec(a, flags, argv, env, cwd);
    collect(a, r);
}

/* Expects exactly one reply frame of `type` (OK or ERROR); returns the ERROR errno. */
static int32_t expect_reply(struct agent *a, uint8_t type)
{
    struct frame f;

    assert_int_equal(recv_frame(a, &f), 0);
    assert_int_equal(f.type, type);
    if (type == AGENT_OK) {
        assert_int_equal(f.len, 0);
        return 0;
    }
    assert_true(f.len >= 5 && f.p[f.len - 1] == '\0');
    return (int32_t)agent_get_u32(f.p);
}

static void agent_start(struct agent *a, const struct agent_opts *o)
{
    int to[2], from[2];
    const char *wrap = secure_getenv("SBX_AGENT_WRAP");
    char wrapbuf[512] = "", *save = NULL;
    const char *argv[64];
    size_t n = 0;
    struct frame f;

    memset(a, 0, sizeof *a);
    snprintf(a->dir, sizeof a->dir, "/var/tmp/sbx-agent-test.XXXXXX");
    assert_non_null(mkdtemp(a->dir));
    a->rbuf = malloc(AGENT_MAX_PAYLOAD);
    assert_non_null(a->rbuf);
    argv[n++] = BWRAP;
    if (geteuid() != 0)
        argv[n++] = "--unshare-user";
    const char *base[] = {"--dev-bind", "/", "/", "--unshare-pid", "--die-with-parent", "--tmpfs",
            "/tmp", "--bind", a->dir, a->dir, "--ro-bind", agent_path, "/tmp/sbx-agent"};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        argv[n++] = base[i];
    if (!o || !o->not_pid1)
        argv[n++] = "--as-pid-1";
    if (o && o->small_tmpfs) {
        argv[n++] = "--size";
        argv[n++] = "1048576";
        argv[n++] = "--tmpfs";
        argv[n++] = a->dir;
    }
    argv[n++] = "--chdir";
    argv[n++] = a->dir;
    if (wrap) {
        snprintf(wrapbuf, sizeof wrapbuf, "%s", wrap);
        for (char *t = strtok_r(wrapbuf, " ", &save); t && n < 60; t = strtok_r(NULL, " ", &save))
            argv[n++] = t;
    }
    argv[n++] = "/tmp/sbx-agent";
    argv[n] = NULL;
    assert_int_equal(pipe2(to, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from, O_CLOEXEC), 0);
    a->pid = fork();
    assert_true(a->pid >= 0);
    if (a->pid == 0) {
        struct rlimit rl = {o ? o->fsize : 0, o ? o->fsize : 0};

        if (rl.rlim_cur != 0)
            setrlimit(RLIMIT_FSIZE, &rl);
        dup2(to[0], 0);
        dup2(from[1], 1);
        execv(BWRAP, (char *const *)argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    a->to = to[1];
    a->from = from[0];
    assert_int_equal(recv_frame(a, &f), 0);
    assert_int_equal(f.type, AGENT_READY);
    assert_int_equal(f.len, 12);
    assert_int_equal(agent_get_u32(f.p), AGENT_PROTO_VERSION);
    if (o && o->not_pid1) {
        assert_int_not_equal(agent_get_u32(f.p + 4), 1);
        assert_int_equal(agent_get_u32(f.p + 8), AGENT_READY_FILTER);
    } else {
        assert_int_equal(agent_get_u32(f.p + 4), 1);
        assert_int_equal(agent_get_u32(f.p + 8), AGENT_READY_PID1 | AGENT_READY_FILTER);
    }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Closes our end (EOF = QUIT unless `quit` already sent), waits; returns the wait status. */
static int agent_stop(struct agent *a)
{
    struct frame f;
    int st = -1;

    if (a->to >= 0)
        close(a->to);
    while (recv_frame(a, &f) == 0) {
    }
    close(a->from);
    assert_int_equal(waitpid(a->pid, &st, 0), a->pid);
    nftw(a->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(a->rbuf);
    return st;
}

static void assert_exit_status(int st, int code)
{
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), code);
}

/* Processes below `root` (host pids) whose comm is `comm`. */
static int count_descendants(pid_t root, const char *comm)
{
    DIR *d = opendir("/proc");
    int found = 0;

    assert_non_null(d);
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
        char name[64] = "";
        bool match = false;

        for (int depth = 0; pid > 1 && depth < 64; depth++) {
            char path[64], line[512], *rp;
            FILE *fp;

            snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
            fp = fopen(path, "re");
            if (!fp)
                break;
            rp = fgets(line, sizeof line, fp) ? strrchr(line, ')') : NULL;
            fclose(fp);
            if (!rp)
                break;
            if (depth == 0) {
                char *lp = strchr(line, '(');

                snprintf(name, sizeof name, "%.*s", (int)(rp - lp - 1), lp + 1);
            }
            pid = (pid_t)strtol(rp + 4, NULL, 10); /* ") S ppid" */
            if (pid == root) {
                match = true;
                break;
            }
        }
        if (match && strcmp(name, comm) == 0)
            found++;
    }
    closedir(d);
    return found;
}

static char *host_path(const struct agent *a, const char *rel, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", a->dir, rel);
    return out;
}

/* ---- cases -------------------------------------------------------------- */

static void test_ready_and_quit(void **state)
{
    struct agent a;

    (void)state;
    agent_start(&a, NULL); /* checks version, pid 1 and AGENT_READY_PID1 */
    send_frame(&a, AGENT_QUIT, 0, NULL, 0);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_put_and_cat(void **state)
{
    const char *const argv[] = {"/bin/cat", "hello.txt", "multi.txt", NULL};
    struct agent a;
    struct result r;
    struct stat st;
    char p[128];

    (void)state;
    agent_start(&a, NULL);
    send_put(&a, "hello.txt", 0640, "hello\n", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    send_put(&a, "multi.txt", 0755, "a", AGENT_PUT_FIRST);
    send_put(&a, "multi.txt", 0, "b", 0);
    send_put(&a, "multi.txt", 0, "", 0);
    send_put(&a, "multi.txt", 0, "c\n", AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    assert_int_equal(stat(host_path(&a, "hello.txt", p, sizeof p), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(stat(host_path(&a, "multi.txt", p, sizeof p), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);

    run(&a, 0, argv, NULL, "", &r);
    assert_true(r.started);
    assert_true(r.pid > 1);
    assert_string_equal(buf_str(&r.out), "hello\nabc\n");
    assert_int_equal(r.errout.len, 0);
    assert_int_equal(r.kind, AGENT_EXIT_CODE);
    assert_int_equal(r.code, 0);
    assert_int_equal(r.exit_flags, 0);
    assert_true(r.maxrss_kb > 0);
    result_done(&r);

    /* An existing file is never overwritten (O_EXCL). */
    send_put(&a, "hello.txt", 0644, "x", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EEXIST);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_put_nested(void **state)
{
    const char *const argv[] = {"cat", "c.txt", NULL};
    struct agent a;
    struct result r;
    struct stat st;
    char p[128];

    (void)state;
    agent_start(&a, NULL);
    send_put(&a, "a/b/c.txt", 0600, "nested\n", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    send_put(&a, "a/b/d.txt", 0600, "second\n", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    assert_int_equal(stat(host_path(&a, "a/b", p, sizeof p), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(stat(host_path(&a, "a/b/c.txt", p, sizeof p), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_size, 7);
    run(&a, 0, argv, path_env, "a/b", &r); /* cwd relative to the workspace */
    assert_string_equal(buf_str(&r.out), "nested\n");
    assert_int_equal(r.code, 0);
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_put_rejects_bad_paths(void **state)
{
    static const char *const bad[] = {
            "../x", "/etc/x", "a/../../x", "", "a//b", "a/", ".", "./x", "a/./b", "..", NULL};
    char longp[5000];
    struct agent a;
    unsigned char h[8 + 3];

    (void)state;
    agent_start(&a, NULL);
    for (size_t i = 0; bad[i]; i++) {
        send_put(&a, bad[i], 0644, "data", AGENT_PUT_FIRST | AGENT_PUT_LAST);
        assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    }
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    send_put(&a, longp, 0644, "", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    /* A NUL inside the path. */
    agent_put_u32(h, 0644);
    agent_put_u32(h + 4, 3);
    memcpy(h + 8, "a\0b", 3);
    send_frame(&a, AGENT_PUT, AGENT_PUT_FIRST | AGENT_PUT_LAST, h, sizeof h);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    /* A failed file's later chunks are discarded without another reply. */
    send_put(&a, "../y", 0644, "1", AGENT_PUT_FIRST);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    send_put(&a, "../y", 0644, "2", 0);
    send_put(&a, "../y", 0644, "3", AGENT_PUT_LAST);
    /* A chunk without FIRST is an error; its file is discarded up to LAST. */
    send_put(&a, "z", 0644, "1", 0);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EBADF);
    send_put(&a, "z", 0644, "2", AGENT_PUT_LAST);
    /* Still alive and in sync. */
    send_put(&a, "ok", 0644, "fine", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    assert_exit_status(agent_stop(&a), 0);
}

/* openat2 says ELOOP; the pre-5.6 fallback (O_NOFOLLOW | O_DIRECTORY) may say ENOTDIR. */
static void assert_symlink_refused(int32_t err)
{
    assert_true(err == ELOOP || err == ENOTDIR);
}

static void test_put_symlinks(void **state)
{
    char outside[] = "/var/tmp/sbx-agent-out.XXXXXX", p[128], q[128];
    struct agent a;
    struct stat st;

    (void)state;
    assert_non_null(mkdtemp(outside));
    agent_start(&a, NULL);
    assert_int_equal(symlink(outside, host_path(&a, "link", p, sizeof p)), 0);
    snprintf(q, sizeof q, "%s/y", outside);
    assert_int_equal(symlink(q, host_path(&a, "leaf", p, sizeof p)), 0);
    assert_int_equal(symlink("..", host_path(&a, "up", p, sizeof p)), 0);
    assert_int_equal(mkdir(host_path(&a, "d", p, sizeof p), 0755), 0);
    assert_int_equal(symlink(outside, host_path(&a, "d/in", p, sizeof p)), 0);

    send_put(&a, "link/x", 0644, "escape", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_symlink_refused(expect_reply(&a, AGENT_ERROR));
    send_put(&a, "link/new/x", 0644, "escape", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_symlink_refused(expect_reply(&a, AGENT_ERROR));
    send_put(&a, "leaf", 0644, "escape", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EEXIST);
    send_put(&a, "up/x", 0644, "escape", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_symlink_refused(expect_reply(&a, AGENT_ERROR));
    send_put(&a, "d/in/x", 0644, "escape", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_symlink_refused(expect_reply(&a, AGENT_ERROR));

    snprintf(q, sizeof q, "%s/x", outside);
    assert_int_equal(lstat(q, &st), -1);
    snprintf(q, sizeof q, "%s/y", outside);
    assert_int_equal(lstat(q, &st), -1);
    snprintf(q, sizeof q, "%s/new", outside);
    assert_int_equal(lstat(q, &st), -1);
    assert_exit_status(agent_stop(&a), 0);
    assert_int_equal(rmdir(outside), 0); /* still empty */
}

/* PUT with AGENT_PUT_REPLACE (a session's upload): an existing regular
 * file is overwritten; a symlink, a FIFO or a directory is not. */
static void test_put_replace(void **state)
{
    const uint8_t rep = AGENT_PUT_FIRST | AGENT_PUT_LAST | AGENT_PUT_REPLACE;
    char p[128], outside[] = "/var/tmp/sbx-agent-rep.XXXXXX", q[160];
    struct agent a;
    struct stat st;
    FILE *fp;
    char got[16] = {0};
    int fd;

    (void)state;
    assert_non_null(mkdtemp(outside));
    snprintf(q, sizeof q, "%s/target", outside);
    fd = open(q, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "host", 4), 4);
    close(fd);
    agent_start(&a, NULL);
    send_put(&a, "f.txt", 0644, "first version", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    send_put(&a, "f.txt", 0600, "second", rep);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    fp = fopen(host_path(&a, "f.txt", p, sizeof p), "r");
    assert_non_null(fp);
    assert_int_equal(fread(got, 1, sizeof got - 1, fp), 6);
    fclose(fp);
    assert_string_equal(got, "second");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    send_put(&a, "new/dir/g.txt", 0644, "made", rep); /* a new file, as without REPLACE */
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    assert_int_equal(symlink(q, host_path(&a, "planted", p, sizeof p)), 0);
    send_put(&a, "planted", 0644, "escape", rep);
    assert_symlink_refused(expect_reply(&a, AGENT_ERROR));
    assert_int_equal(mkfifo(host_path(&a, "fifo", p, sizeof p), 0644), 0);
    send_put(&a, "fifo", 0644, "blocked?", rep); /* no reader: must not hang */
    assert_true(expect_reply(&a, AGENT_ERROR) != 0);
    send_put(&a, "new", 0644, "dir", rep);
    assert_true(expect_reply(&a, AGENT_ERROR) != 0);
    /* AGENT_PUT_TMP: beneath the agent's /tmp (a private tmpfs here: it
     * runs as pid 1 in namespaces of its own), never the workspace */
    {
        const char *const cat[] = {"/bin/cat", "/tmp/sbx/support.py", NULL};
        struct result r;
        char hp[300];

        send_put(&a, "sbx/support.py", 0644, "support", rep | AGENT_PUT_TMP);
        assert_int_equal(expect_reply(&a, AGENT_OK), 0);
        run(&a, 0, cat, NULL, "", &r);
        assert_string_equal(buf_str(&r.out), "support");
        result_done(&r);
        assert_int_equal(stat(host_path(&a, "sbx/support.py", hp, sizeof hp), &st), -1);
        send_put(&a, "../etc/x", 0644, "escape", rep | AGENT_PUT_TMP);
        assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    }
    assert_exit_status(agent_stop(&a), 0);
    fd = open(q, O_RDONLY);
    assert_true(fd >= 0);
    memset(got, 0, sizeof got);
    assert_int_equal(read(fd, got, sizeof got - 1), 4);
    close(fd);
    assert_string_equal(got, "host"); /* the file behind the symlink is untouched */
    assert_int_equal(unlink(q), 0);
    assert_int_equal(rmdir(outside), 0);
}

/* GET: a file back (a build's output), beneath the workspace only. */
static void send_get(struct agent *a, uint32_t max, const char *path)
{
    unsigned char p[4 + 256];
    size_t n = strlen(path);

    agent_put_u32(p, max);
    memcpy(p + 4, path, n);
    send_frame(a, AGENT_GET, 0, p, 4 + n);
}

static void test_get_and_list(void **state)
{
    char p[128], *big = malloc(200000);
    struct agent a;
    struct frame f;
    struct buf got = {0};
    size_t n_files = 0;
    bool saw[2] = {false, false};

    (void)state;
    assert_non_null(big);
    memset(big, 'x', 200000);
    agent_start(&a, NULL);
    send_put(&a, "out/main", 0755, "binary", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    send_put(&a, "out/sub/In.class", 0644, "nested", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    assert_int_equal(symlink("/etc/passwd", host_path(&a, "out/planted", p, sizeof p)), 0);
    /* a big file comes in several DATA frames, then OK with its mode */
    assert_int_equal(mkdir(host_path(&a, "b", p, sizeof p), 0755), 0);
    {
        FILE *fp = fopen(host_path(&a, "b/big", p, sizeof p), "w");

        assert_non_null(fp);
        assert_int_equal(fwrite(big, 1, 200000, fp), 200000);
        fclose(fp);
    }
    send_get(&a, 1u << 20, "b/big");
    for (;;) {
        assert_int_equal(recv_frame(&a, &f), 0);
        if (f.type != AGENT_DATA)
            break;
        assert_true(f.len <= AGENT_CHUNK);
        buf_add(&got, f.p, f.len);
    }
    assert_int_equal(f.type, AGENT_OK);
    assert_int_equal(got.len, 200000);
    assert_memory_equal(got.p, big, 200000);
    send_get(&a, 1u << 20, "out/main");
    assert_int_equal(recv_frame(&a, &f), 0);
    assert_int_equal(f.type, AGENT_DATA);
    assert_memory_equal(f.p, "binary", 6);
    assert_int_equal(recv_frame(&a, &f), 0);
    assert_int_equal(f.type, AGENT_OK);
    assert_int_equal(agent_get_u32(f.p) & 0777, 0755);
    /* refused: too big, a symlink, a directory, outside, missing */
    send_get(&a, 100, "b/big");
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EFBIG);
    send_get(&a, 1u << 20, "out/planted");
    assert_symlink_refused(expect_reply(&a, AGENT_ERROR));
    send_get(&a, 1u << 20, "out");
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    send_get(&a, 1u << 20, "../etc/passwd");
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    send_get(&a, 1u << 20, "nope");
    assert_int_equal(expect_reply(&a, AGENT_ERROR), ENOENT);
    /* LIST: regular files, recursively, never the symlink */
    send_frame(&a, AGENT_LIST, 0, "out", 3);
    for (;;) {
        assert_int_equal(recv_frame(&a, &f), 0);
        if (f.type != AGENT_DATA)
            break;
        n_files++;
        saw[0] |= strcmp((const char *)f.p, "out/main") == 0;
        saw[1] |= strcmp((const char *)f.p, "out/sub/In.class") == 0;
    }
    assert_int_equal(f.type, AGENT_OK);
    assert_int_equal(n_files, 2);
    assert_true(saw[0] && saw[1]);
    /* AGENT_LIST_STAT: each path's NUL is followed by its size and mtime */
    n_files = 0;
    send_frame(&a, AGENT_LIST, AGENT_LIST_STAT, "out", 3);
    for (;;) {
        size_t plen;

        assert_int_equal(recv_frame(&a, &f), 0);
        if (f.type != AGENT_DATA)
            break;
        n_files++;
        plen = strnlen((const char *)f.p, f.len);
        assert_int_equal(f.len, plen + 1 + 16);
        if (strcmp((const char *)f.p, "out/main") == 0)
            assert_int_equal(agent_get_u64(f.p + plen + 1), 6);
        assert_true(agent_get_u64(f.p + plen + 9) > 1000000000ull * 1000000000ull);
    }
    assert_int_equal(f.type, AGENT_OK);
    assert_int_equal(n_files, 2);
    /* "." lists the whole workspace, each path starting with "./" */
    n_files = 0;
    send_frame(&a, AGENT_LIST, 0, ".", 1);
    for (;;) {
        assert_int_equal(recv_frame(&a, &f), 0);
        if (f.type != AGENT_DATA)
            break;
        n_files++;
        assert_memory_equal(f.p, "./", 2);
    }
    assert_int_equal(f.type, AGENT_OK);
    assert_int_equal(n_files, 3); /* out/main, out/sub/In.class, b/big */
    send_frame(&a, AGENT_LIST, 0, "out/main", 8);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), ENOTDIR);
    send_frame(&a, AGENT_LIST, 0, "..", 2);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    assert_exit_status(agent_stop(&a), 0);
    free(got.p);
    free(big);
}

/* A unix socket server that answers each connection's line with "echo: LINE". */
struct echo_server {
    int fd;
    char path[108];
    pthread_t thread;
};

static void *echo_main(void *arg)
{
    struct echo_server *e = arg;

    for (int i = 0; i < 2; i++) { /* the test makes two connections */
        int c = accept(e->fd, NULL, NULL);
        char line[64];
        ssize_t n;

        if (c < 0)
            return NULL;
        n = read(c, line, sizeof line);
        if (n > 0) {
            write_all(c, "echo: ", 6);
            write_all(c, line, (size_t)n);
        }
        close(c);
    }
    return NULL;
}

static void test_relay(void **state)
{
    /* this harness shares the host's network namespace: a port of its own */
    uint32_t port = 20000u + (uint32_t)getpid() % 20000u;
    char code[256];
    const char *const client[] = {"/usr/bin/python3", "-c", code, NULL};
    struct echo_server e;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    unsigned char p[8 + 108];
    struct agent a;
    struct result r;

    (void)state;
    snprintf(code, sizeof code,
            "import socket\ns = socket.create_connection(('127.0.0.1', %u))\n"
            "s.sendall(b'ping')\ns.shutdown(socket.SHUT_WR)\n"
            "print(s.makefile().read(), end='')\n",
            port);
    snprintf(e.path, sizeof e.path, "/var/tmp/sbx-relay-%d.sock", (int)getpid());
    memcpy(sa.sun_path, e.path, strlen(e.path) + 1);
    unlink(e.path);
    e.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(bind(e.fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(chmod(e.path, 0666), 0);
    assert_int_equal(listen(e.fd, 4), 0);
    assert_int_equal(pthread_create(&e.thread, NULL, echo_main, &e), 0);
    agent_start(&a, NULL);
    agent_put_u32(p, port);
    agent_put_u32(p + 4, 0);
    memcpy(p + 8, e.path, strlen(e.path) + 1);
    send_frame(&a, AGENT_RELAY, 0, p, 8 + strlen(e.path) + 1);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    send_frame(&a, AGENT_RELAY, 0, p, 8 + strlen(e.path) + 1); /* once per box */
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EBUSY);
    run(&a, 0, client, path_env, "", &r);
    assert_string_equal(buf_str(&r.out), "echo: ping");
    assert_int_equal(r.code, 0);
    result_done(&r);
    /* the relay outlives an exec (whose end kills every other process) */
    run(&a, 0, client, path_env, "", &r);
    assert_string_equal(buf_str(&r.out), "echo: ping");
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
    pthread_join(e.thread, NULL);
    close(e.fd);
    unlink(e.path);
}

static void test_stderr_exit_code_env(void **state)
{
    const char *const sh1[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    const char *const sh2[] = {"sh", "-c", "printf %s \"$FOO\"", NULL};
    const char *const env2[] = {"FOO=bar baz", "PATH=/usr/bin:/bin", NULL};
    const char *const env_bad[] = {"NOEQUALS", NULL};
    struct agent a;
    struct result r;

    (void)state;
    agent_start(&a, NULL);
    run(&a, 0, sh1, NULL, "", &r);
    assert_string_equal(buf_str(&r.out), "out\n");
    assert_string_equal(buf_str(&r.errout), "err\n");
    assert_int_equal(r.kind, AGENT_EXIT_CODE);
    assert_int_equal(r.code, 3);
    assert_int_equal(r.exit_flags, 0);
    result_done(&r);
    run(&a, 0, sh2, env2, "", &r);
    assert_string_equal(buf_str(&r.out), "bar baz");
    result_done(&r);
    run(&a, 0, sh2, env_bad, "", &r);
    assert_true(r.error);
    assert_int_equal(r.err, EINVAL);
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_killed_by_signal(void **state)
{
    const char *const argv[] = {"/bin/sh", "-c", "kill -9 $$", NULL};
    struct agent a;
    struct result r;

    (void)state;
    agent_start(&a, NULL);
    run(&a, 0, argv, NULL, "", &r);
    assert_true(r.started);
    assert_int_equal(r.kind, AGENT_EXIT_SIGNAL);
    assert_int_equal(r.code, 9);
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_background_child(void **state)
{
    const char *const argv[] = {"/bin/sh", "-c", "sleep 100 & echo done", NULL};
    const char *const argv2[] = {"/bin/sh", "-c", "sleep 100 & sleep 100 & exec sleep 100", NULL};
    struct agent a;
    struct result r;
    double t0;
    struct frame f;

    (void)state;
    agent_start(&a, NULL);
    t0 = now_s();
    run(&a, 0, argv, NULL, "", &r);
    assert_true(now_s() - t0 < 5.0);
    assert_string_equal(buf_str(&r.out), "done\n");
    assert_int_equal(r.code, 0);
    result_done(&r);
    assert_int_equal(count_descendants(a.pid, "sleep"), 0);

    /* SIGNAL reaches the program; EXEC while it runs is refused. */
    send_exec(&a, 0, argv2, NULL, "");
    assert_int_equal(recv_frame(&a, &f), 0);
    assert_int_equal(f.type, AGENT_STARTED);
    send_exec(&a, 0, argv2, NULL, "");
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EBUSY);
    for (int i = 0; i < 500 && count_descendants(a.pid, "sleep") != 3; i++)
        usleep(10000); /* the shell forks after STARTED */
    assert_int_equal(count_descendants(a.pid, "sleep"), 3);
    t0 = now_s();
    send_u32(&a, AGENT_SIGNAL, SIGTERM);
    memset(&r, 0, sizeof r);
    r.started = true;
    collect(&a, &r);
    assert_true(now_s() - t0 < 5.0);
    assert_int_equal(r.kind, AGENT_EXIT_SIGNAL);
    assert_int_equal(r.code, SIGTERM);
    result_done(&r);
    assert_int_equal(count_descendants(a.pid, "sleep"), 0);

    /* SIGNAL with nothing running is ignored; a bad signal number is an ERROR. */
    send_u32(&a, AGENT_SIGNAL, SIGTERM);
    send_u32(&a, AGENT_SIGNAL, 1000);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);

    /* QUIT with a program running kills it and exits 0. */
    send_exec(&a, 0, argv2, NULL, "");
    assert_int_equal(recv_frame(&a, &f), 0);
    assert_int_equal(f.type, AGENT_STARTED);
    send_frame(&a, AGENT_QUIT, 0, NULL, 0);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_exec_failures(void **state)
{
    const char *const missing[] = {"/nonexistent/prog", NULL};
    const char *const missing_path[] = {"no-such-prog-sbx", "arg", NULL};
    const char *const noexec[] = {"./plain.txt", NULL};
    const char *const echo[] = {"echo", "hi", NULL};
    const char *const pwd[] = {"pwd", NULL};
    struct agent a;
    struct result r;

    (void)state;
    agent_start(&a, NULL);
    run(&a, 0, missing, NULL, "", &r);
    assert_false(r.started);
    assert_int_equal(r.kind, AGENT_EXIT_CODE);
    assert_int_equal(r.code, 127);
    assert_int_equal(r.exit_flags, AGENT_EXIT_EXEC_FAILED);
    assert_non_null(strstr(buf_str(&r.errout), "cannot execute '/nonexistent/prog'"));
    result_done(&r);

    run(&a, 0, missing_path, path_env, "", &r);
    assert_int_equal(r.code, 127);
    assert_int_equal(r.exit_flags, AGENT_EXIT_EXEC_FAILED);
    assert_non_null(strstr(buf_str(&r.errout), "no-such-prog-sbx"));
    result_done(&r);

    send_put(&a, "plain.txt", 0644, "not a program", AGENT_PUT_FIRST | AGENT_PUT_LAST);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    run(&a, 0, noexec, NULL, "", &r);
    assert_int_equal(r.code, 126);
    assert_int_equal(r.exit_flags, AGENT_EXIT_EXEC_FAILED);
    result_done(&r);

    run(&a, 0, pwd, path_env, "no/such/dir", &r);
    assert_int_equal(r.code, 126);
    assert_int_equal(r.exit_flags, AGENT_EXIT_EXEC_FAILED);
    assert_non_null(strstr(buf_str(&r.errout), "no/such/dir"));
    result_done(&r);

    /* PATH search, with the exec env's PATH and with the default. */
    run(&a, 0, echo, path_env, "", &r);
    assert_true(r.started);
    assert_string_equal(buf_str(&r.out), "hi\n");
    assert_int_equal(r.code, 0);
    result_done(&r);
    run(&a, 0, echo, NULL, "", &r);
    assert_string_equal(buf_str(&r.out), "hi\n");
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

struct feeder {
    struct agent *a;
    size_t total;
};

static unsigned char pattern(size_t i)
{
    return (unsigned char)((i * 7u + i / 251u) & 0xFFu);
}

static void *feed(void *arg)
{
    struct feeder *fd = arg;
    static const size_t sizes[] = {100000, 300000, 65536, 1u << 20, 7};
    unsigned char *chunk = malloc(AGENT_MAX_PAYLOAD);
    size_t off = 0;

    for (size_t k = 0; off < fd->total; k++) {
        size_t n = sizes[k % 5];

        if (n > fd->total - off)
            n = fd->total - off;
        for (size_t i = 0; i < n; i++)
            chunk[i] = pattern(off + i);
        send_frame(fd->a, AGENT_STDIN, 0, chunk, n);
        off += n;
    }
    send_frame(fd->a, AGENT_STDIN_EOF, 0, NULL, 0);
    free(chunk);
    return NULL;
}

static void test_stdin_forwarding(void **state)
{
    const char *const cat[] = {"/bin/cat", NULL};
    const char *const head[] = {"/usr/bin/head", "-c", "10", NULL};
    struct feeder fd;
    struct agent a;
    struct result r;
    pthread_t th;
    size_t bad = 0;

    (void)state;
    agent_start(&a, NULL);
    fd.a = &a;
    fd.total = 3u << 20;
    send_exec(&a, AGENT_EXEC_STDIN_PIPE, cat, NULL, "");
    assert_int_equal(pthread_create(&th, NULL, feed, &fd), 0);
    memset(&r, 0, sizeof r);
    collect(&a, &r);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(r.code, 0);
    assert_int_equal(r.out.len, fd.total);
    assert_true(r.max_chunk <= AGENT_CHUNK);
    for (size_t i = 0; i < r.out.len; i++)
        bad += r.out.p[i] != pattern(i);
    assert_int_equal(bad, 0);
    result_done(&r);

    /* The program closes its stdin early: the rest is discarded, no deadlock. */
    send_exec(&a, AGENT_EXEC_STDIN_PIPE, head, NULL, "");
    assert_int_equal(pthread_create(&th, NULL, feed, &fd), 0);
    memset(&r, 0, sizeof r);
    collect(&a, &r);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(r.code, 0);
    assert_int_equal(r.out.len, 10);
    result_done(&r);

    /* Without AGENT_EXEC_STDIN_PIPE the program reads /dev/null. */
    run(&a, 0, cat, NULL, "", &r);
    assert_int_equal(r.code, 0);
    assert_int_equal(r.out.len, 0);
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_large_output(void **state)
{
    const char *const argv[] = {
            "/bin/sh", "-c", "head -c 5000000 /dev/zero; head -c 3000 /dev/zero >&2", NULL};
    struct agent a;
    struct result r;

    (void)state;
    agent_start(&a, NULL);
    run(&a, 0, argv, path_env, "", &r);
    assert_int_equal(r.code, 0);
    assert_int_equal(r.out.len, 5000000);
    assert_int_equal(r.errout.len, 3000);
    assert_true(r.max_chunk <= AGENT_CHUNK);
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

static void expect_fatal(const void *p, size_t n, bool close_after)
{
    struct agent a;
    struct frame f;

    agent_start(&a, NULL);
    write_all(a.to, p, n);
    if (close_after) {
        close(a.to);
        a.to = -1;
    }
    assert_int_equal(recv_frame(&a, &f), 0);
    assert_int_equal(f.type, AGENT_ERROR);
    assert_int_equal((int32_t)agent_get_u32(f.p), EPROTO);
    assert_int_equal(recv_frame(&a, &f), -1); /* then EOF */
    assert_exit_status(agent_stop(&a), 2);
}

static void test_malformed_frames(void **state)
{
    unsigned char b[64];

    (void)state;
    agent_hdr_encode(b, AGENT_MAX_PAYLOAD + 1, AGENT_STDIN, 0); /* too long */
    expect_fatal(b, 8, false);
    agent_hdr_encode(b, 0, 99, 0); /* unknown type */
    expect_fatal(b, 8, false);
    agent_hdr_encode(b, 0, AGENT_OK, 0); /* an agent -> host type */
    expect_fatal(b, 8, false);
    agent_hdr_encode(b, 0, AGENT_QUIT, 0); /* reserved bytes set */
    b[6] = 1;
    expect_fatal(b, 8, false);
    agent_hdr_encode(b, 3, AGENT_SIGNAL, 0); /* wrong fixed size */
    expect_fatal(b, 11, false);
    agent_hdr_encode(b, 0, AGENT_QUIT, 0x80); /* unknown flags */
    expect_fatal(b, 8, false);
    agent_hdr_encode(b, 0, AGENT_PREP, 0); /* PREP without its flags */
    expect_fatal(b, 8, false);
    agent_hdr_encode(b, 100, AGENT_PUT, AGENT_PUT_FIRST); /* truncated payload */
    memset(b + 8, 0, 20);
    expect_fatal(b, 28, true);
    memset(b, 0, sizeof b); /* truncated header */
    expect_fatal(b, 5, true);
    agent_hdr_encode(b, 10, AGENT_PUT, AGENT_PUT_FIRST); /* path_len past the frame */
    agent_put_u32(b + 8, 0644);
    agent_put_u32(b + 12, 3);
    memcpy(b + 16, "ab", 2);
    expect_fatal(b, 18, false);
    agent_hdr_encode(b, 15, AGENT_EXEC, 0); /* argv[0] not NUL-terminated */
    agent_put_u32(b + 8, 0);
    agent_put_u32(b + 12, 1);
    agent_put_u32(b + 16, 0);
    memcpy(b + 20, "abc", 3);
    expect_fatal(b, 23, false);
    agent_hdr_encode(b, 20, AGENT_EXEC, 0); /* counts larger than the frame */
    agent_put_u32(b + 8, 0);
    agent_put_u32(b + 12, 0xFFFFFFFFu);
    agent_put_u32(b + 16, 0xFFFFFFFFu);
    memset(b + 20, 0, 8);
    expect_fatal(b, 28, false);
    agent_hdr_encode(b, 16, AGENT_EXEC, 0); /* trailing bytes */
    agent_put_u32(b + 8, 0);
    agent_put_u32(b + 12, 1);
    agent_put_u32(b + 16, 0);
    memcpy(b + 20, "a\0\0x", 4);
    expect_fatal(b, 24, false);
}

static void test_workspace_full(void **state)
{
    const char *const dd[] = {"dd", "if=/dev/zero", "of=big", "bs=65536", "count=32", NULL};
    const char *const ok[] = {"true", NULL};
    const struct agent_opts o = {.small_tmpfs = true};
    struct agent a;
    struct result r;

    (void)state;
    agent_start(&a, &o);
    run(&a, 0, dd, path_env, "", &r);
    assert_int_equal(r.kind, AGENT_EXIT_CODE);
    assert_int_not_equal(r.code, 0);
    assert_true(r.exit_flags & AGENT_EXIT_WORKSPACE_FULL);
    assert_false(r.exit_flags & AGENT_EXIT_FILE_SIZE);
    result_done(&r);
    run(&a, 0, ok, path_env, "", &r); /* success: no checks, no flags */
    assert_int_equal(r.code, 0);
    assert_int_equal(r.exit_flags, 0);
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_file_size(void **state)
{
    const char *const dd[] = {"dd", "if=/dev/zero", "of=big", "bs=65536", "count=32", NULL};
    const char *const rm[] = {"rm", "-f", "big", NULL};
    const char *const py[] = {
            "/usr/bin/python3", "-c", "open('f', 'wb').write(b'x' * 2000000)", NULL};
    const char *const tmp[] = {
            "sh", "-c", "rm -f f; trap '' XFSZ; head -c 2000000 /dev/zero > /tmp/t", NULL};
    const char *const fail[] = {"sh", "-c", "rm -f /tmp/t; exit 1", NULL};
    const struct agent_opts o = {.fsize = 1000000};
    struct agent a;
    struct result r;

    (void)state;
    agent_start(&a, &o);
    run(&a, 0, dd, path_env, "", &r); /* killed by SIGXFSZ */
    assert_int_equal(r.kind, AGENT_EXIT_SIGNAL);
    assert_int_equal(r.code, SIGXFSZ);
    assert_int_equal(r.exit_flags, AGENT_EXIT_FILE_SIZE);
    result_done(&r);
    run(&a, 0, rm, path_env, "", &r);
    result_done(&r);
    if (access(py[0], X_OK) == 0) { /* python ignores SIGXFSZ: EFBIG, exit 1 */
        run(&a, 0, py, path_env, "", &r);
        assert_int_equal(r.kind, AGENT_EXIT_CODE);
        assert_int_equal(r.code, 1);
        assert_int_equal(r.exit_flags, AGENT_EXIT_FILE_SIZE);
        result_done(&r);
    }
    run(&a, 0, tmp, path_env, "", &r); /* found under /tmp */
    assert_int_equal(r.code, 1);
    assert_int_equal(r.exit_flags, AGENT_EXIT_FILE_SIZE);
    result_done(&r);
    run(&a, 0, fail, path_env, "", &r); /* no big file left: no flag */
    assert_int_equal(r.code, 1);
    assert_int_equal(r.exit_flags, 0);
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

/*
 * Not pid 1 (still inside a pid namespace, so a wrong kill(-1) could not hurt
 * the host): the exec's process group is killed instead.
 */
/* LIMITS lowers the agent's own limits; later execs inherit them; it never
 * raises a limit, refuses unknown resources and refuses while a program runs. */
static void send_limits(struct agent *a, const uint32_t *res, const uint64_t *val, uint32_t n)
{
    unsigned char p[4 + 16 * AGENT_LIMITS_MAX];

    memset(p, 0, sizeof p);
    agent_put_u32(p, n);
    for (uint32_t i = 0; i < n; i++) {
        agent_put_u32(p + 4 + 16 * i, res[i]);
        agent_put_u64(p + 4 + 16 * i + 8, val[i]);
    }
    send_frame(a, AGENT_LIMITS, 0, p, 4 + 16 * n);
}

static void test_limits(void **state)
{
    const char *const show[] = {
            "/bin/sh", "-c", "ulimit -H -n; ulimit -n; ulimit -H -f; ulimit -c", NULL};
    const char *const sleeper[] = {"/bin/sleep", "5", NULL};
    const uint32_t res[] = {AGENT_RLIMIT_NOFILE, AGENT_RLIMIT_FSIZE, AGENT_RLIMIT_CORE};
    const uint64_t val[] = {64, 1024 * 512, 0};
    const uint32_t raise_res[] = {AGENT_RLIMIT_NOFILE};
    const uint64_t raise_val[] = {1u << 20};
    const uint32_t bad_res[] = {99};
    const uint64_t bad_val[] = {1};
    struct agent a;
    struct result r;
    struct frame f;

    (void)state;
    agent_start(&a, NULL);
    send_limits(&a, res, val, 3);
    expect_reply(&a, AGENT_OK);
    run(&a, 0, show, NULL, "", &r);
    /* ulimit -f counts 512-byte blocks */
    assert_string_equal(buf_str(&r.out), "64\n64\n1024\n0\n");
    result_done(&r);
    send_limits(&a, raise_res, raise_val, 1); /* asking for more keeps the lower limit */
    expect_reply(&a, AGENT_OK);
    run(&a, 0, show, NULL, "", &r);
    assert_string_equal(buf_str(&r.out), "64\n64\n1024\n0\n");
    result_done(&r);
    send_limits(&a, bad_res, bad_val, 1);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    send_exec(&a, 0, sleeper, path_env, "");
    assert_int_equal(recv_frame(&a, &f), 0);
    assert_int_equal(f.type, AGENT_STARTED);
    send_limits(&a, res, val, 3);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EBUSY);
    send_u32(&a, AGENT_SIGNAL, 9);
    memset(&r, 0, sizeof r);
    collect(&a, &r);
    assert_int_equal(r.kind, AGENT_EXIT_SIGNAL);
    result_done(&r);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_not_pid1(void **state)
{
    const char *const bg[] = {"/bin/sh", "-c", "sleep 100 & echo done; exit 4", NULL};
    const char *const sl[] = {"/bin/sh", "-c", "sleep 100 & exec sleep 100", NULL};
    const struct agent_opts o = {.not_pid1 = true};
    struct agent a;
    struct result r;
    struct frame f;
    double t0 = now_s();

    (void)state;
    agent_start(&a, &o);
    run(&a, 0, bg, NULL, "", &r);
    assert_true(now_s() - t0 < 5.0);
    assert_string_equal(buf_str(&r.out), "done\n");
    assert_int_equal(r.code, 4);
    result_done(&r);
    for (int i = 0; i < 500 && count_descendants(a.pid, "sleep") != 0; i++)
        usleep(10000); /* bwrap's init reaps the orphan */
    assert_int_equal(count_descendants(a.pid, "sleep"), 0);

    send_exec(&a, 0, sl, NULL, "");
    assert_int_equal(recv_frame(&a, &f), 0);
    assert_int_equal(f.type, AGENT_STARTED);
    for (int i = 0; i < 500 && count_descendants(a.pid, "sleep") != 2; i++)
        usleep(10000);
    assert_int_equal(count_descendants(a.pid, "sleep"), 2);
    send_u32(&a, AGENT_SIGNAL, SIGKILL);
    memset(&r, 0, sizeof r);
    collect(&a, &r);
    assert_int_equal(r.kind, AGENT_EXIT_SIGNAL);
    assert_int_equal(r.code, SIGKILL);
    result_done(&r);
    for (int i = 0; i < 500 && count_descendants(a.pid, "sleep") != 0; i++)
        usleep(10000);
    assert_int_equal(count_descendants(a.pid, "sleep"), 0);
    send_frame(&a, AGENT_QUIT, 0, NULL, 0);
    assert_exit_status(agent_stop(&a), 0);
}

/* What a program can do that the policy denies, as it sees it. */
static const char *const probe_argv[] = {"/usr/bin/python3", "-c",
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.unshare(0x10000000)\n"
        "print('unshare', r, ctypes.get_errno())\n"
        "r = libc.ptrace(0, 0, None, None)\n"
        "print('ptrace', r, ctypes.get_errno())\n"
        "st = dict(l.split(':', 1) for l in open('/proc/self/status'))\n"
        "print('nnp', st['NoNewPrivs'].strip(), 'capeff', st['CapEff'].strip())\n",
        NULL};

static void send_filter(struct agent *a, const void *bpf, size_t len)
{
    unsigned char *p = calloc(1, 8 + len);

    assert_non_null(p);
    memcpy(p + 8, bpf, len);
    send_frame(a, AGENT_FILTER, 0, p, 8 + len);
    free(p);
}

/* ABI 1.4: the agent applies the core's policy itself, for a backend that
 * applies none. This box (bwrap here) passes no filter: without FILTER the
 * calls succeed, with it the program sees them denied, and runs with
 * no_new_privs (bwrap sets it anyway) and without capabilities (as root
 * here it has them all without the filter). */
/* A box without a zygote: each zygote request out of its order is a clear
 * ERROR, and the agent serves the next run. (The zygote's own side runs in
 * tests/integration/test_zygote.py.) */
static void test_zygote_requests_out_of_order(void **state)
{
    static const char *const echo[] = {"echo", "still here", NULL};
    unsigned char prep[4], fork[18];
    struct agent a;
    struct result r;

    (void)state;
    agent_start(&a, NULL);
    agent_put_u32(prep, 0);
    send_frame(&a, AGENT_PREP, 0, prep, sizeof prep); /* no zygote */
    assert_int_equal(expect_reply(&a, AGENT_ERROR), ENOTCONN);
    agent_put_u32(prep, AGENT_PREP_HOLD | 0x100u);
    send_frame(&a, AGENT_PREP, 0, prep, sizeof prep);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), ENOTCONN);
    send_frame(&a, AGENT_GO, 0, NULL, 0); /* no child waits for it */
    assert_int_equal(expect_reply(&a, AGENT_ERROR), ENOENT);
    memset(fork, 0, sizeof fork); /* flags 0, argc 1, envc 0, "true", cwd "" */
    agent_put_u32(fork + 4, 1);
    memcpy(fork + 12, "true", 5);
    send_frame(&a, AGENT_FORK, 0, fork, sizeof fork); /* no child prepared */
    assert_int_equal(expect_reply(&a, AGENT_ERROR), ENOENT);
    send_frame(&a, AGENT_FRESH, 0, NULL, 0); /* not a zygote box */
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EBUSY);
    run(&a, 0, echo, path_env, "", &r);
    assert_int_equal(r.code, 0);
    assert_string_equal(buf_str(&r.out), "still here\n");
    result_done(&r);
    send_frame(&a, AGENT_QUIT, 0, NULL, 0);
    assert_exit_status(agent_stop(&a), 0);
}

static void test_filter(void **state)
{
    struct sbx_error *e = NULL;
    const void *bpf;
    size_t len;
    struct agent a;
    struct result r;
    char want[160];

    (void)state;
    assert_int_equal(seccomp_bpf_get(&bpf, &len, &e), 0);
    agent_start(&a, NULL);
    run(&a, 0, probe_argv, path_env, "", &r);
    assert_int_equal(r.code, 0);
    if (!strstr(buf_str(&r.out), "unshare 0 0\nptrace 0 0\n"))
        fail_msg("without the filter: %s%s", buf_str(&r.out), buf_str(&r.errout));
    result_done(&r);
    send_filter(&a, bpf, len);
    assert_int_equal(expect_reply(&a, AGENT_OK), 0);
    send_filter(&a, bpf, len); /* once per box */
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EEXIST);
    run(&a, 0, probe_argv, path_env, "", &r);
    assert_int_equal(r.code, 0);
    snprintf(want, sizeof(want), "unshare -1 %d\nptrace -1 %d\nnnp 1 capeff 0000000000000000\n",
            EPERM, EPERM);
    assert_string_equal(buf_str(&r.out), want);
    result_done(&r);
    send_frame(&a, AGENT_QUIT, 0, NULL, 0);
    assert_exit_status(agent_stop(&a), 0);
    /* not a program: refused, and the agent goes on */
    agent_start(&a, NULL);
    send_filter(&a, bpf, 7);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    send_frame(&a, AGENT_FILTER, 0, "\0\0\0\0\0\0\0\0", 8);
    assert_int_equal(expect_reply(&a, AGENT_ERROR), EINVAL);
    send_frame(&a, AGENT_QUIT, 0, NULL, 0);
    assert_exit_status(agent_stop(&a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_ready_and_quit),
            cmocka_unit_test(test_put_and_cat),
            cmocka_unit_test(test_put_nested),
            cmocka_unit_test(test_put_rejects_bad_paths),
            cmocka_unit_test(test_put_symlinks),
            cmocka_unit_test(test_put_replace),
            cmocka_unit_test(test_get_and_list),
            cmocka_unit_test(test_relay),
            cmocka_unit_test(test_stderr_exit_code_env),
            cmocka_unit_test(test_killed_by_signal),
            cmocka_unit_test(test_background_child),
            cmocka_unit_test(test_exec_failures),
            cmocka_unit_test(test_stdin_forwarding),
            cmocka_unit_test(test_large_output),
            cmocka_unit_test(test_malformed_frames),
            cmocka_unit_test(test_workspace_full),
            cmocka_unit_test(test_file_size),
            cmocka_unit_test(test_not_pid1),
            cmocka_unit_test(test_limits),
            cmocka_unit_test(test_filter),
            cmocka_unit_test(test_zygote_requests_out_of_order),
    };
    const char *env = secure_getenv("SBX_AGENT");
    struct sigaction sa;

    if (env && *env)
        agent_path = env;
    if (access(agent_path, X_OK) != 0 || access(BWRAP, X_OK) != 0) {
        fprintf(stderr, "test_agent: needs %s and %s\n", agent_path, BWRAP);
        return 77; /* skipped */
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
