/* SPDX-License-Identifier: MIT */
/*
 * agent.c: sbx-agent, the small static program that runs as pid 1 inside
 * every sandbox. It stages files beneath the workspace, runs one program at
 * a time, streams its output and reports how it ended, speaking proto.h
 * frames on fd 0 (in) and fd 1 (out); fd 2 carries only its own diagnostics.
 * It must never: kill(-1) unless it is pid 1 (as root on a host that would
 * kill the machine); follow a symlink or leave the workspace for a PUT;
 * allocate or index by a size from the wire beyond AGENT_MAX_PAYLOAD; write
 * anything but frames to fd 1. libc only, linked -static. Protocol: proto.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"

#define STDIN_BUF_SIZE AGENT_MAX_PAYLOAD /* pending program stdin before back-pressure */
#define PUT_PATH_MAX   4096u
#define VEC_MAX        (AGENT_MAX_PAYLOAD / sizeof(char *))
#define WALK_ENTRIES   10000u
#define WALK_DEPTH     32
#define DEFAULT_PATH   "/bin:/usr/bin" /* glibc's execvp default when PATH is unset */
#define NORETURN       __attribute__((noreturn))

enum put_state { PUT_IDLE, PUT_OPEN, PUT_DISCARD };
enum exec_stage { STAGE_EXEC, STAGE_CHDIR, STAGE_STDIO, STAGE_FILTER };

struct exec_report { /* child -> agent over a CLOEXEC pipe when it cannot exec */
    int32_t stage;
    int32_t err;
};

struct spawn {
    char **argv, **envp;
    const char *cwd;
    int in_r, out_w, err_w, rep_w;
};

struct exec_state {
    pid_t pid;             /* main child (also its pgid and sid); 0: no exec runs */
    int out_fd[2];         /* read ends of its stdout and stderr pipes */
    int in_fd;             /* write end of its stdin pipe; -1: none or closed */
    bool in_eof;           /* STDIN_EOF received: close once the buffer drained */
    bool failed;           /* it never reached execve: AGENT_EXIT_EXEC_FAILED */
    bool forked;           /* a zygote's child: the init of its own pid namespace */
    int status_fd;         /* a forked run: where its init writes the program's wait status */
    size_t in_off, in_len; /* pending stdin bytes in g_stdin */
};

static struct {
    bool pid1;
    int ws_fd, sig_fd;
    int tmp_fd; /* the sandbox's /tmp, for PUT with AGENT_PUT_TMP, or -1 */
    unsigned char hdr[AGENT_HDR_SIZE];
    size_t hdr_got, pay_got;
    struct agent_hdr h;
    bool frame_ready;
    enum put_state put;
    int put_fd;
    char put_path[PUT_PATH_MAX + 1];
    struct exec_state ex;
    int relay_fd;           /* RELAY: the loopback listener, or -1 */
    pid_t zyg_pid;          /* the box's zygote (EXEC with AGENT_EXEC_ZYGOTE), or 0 */
    int zyg_fd;             /* its control socket, or -1 */
    char ws_path[PATH_MAX]; /* the workspace's path, for FRESH */
    bool ws_fresh;          /* a tmpfs of FRESH's is mounted there */
    bool ws_used;           /* a FORK had the workspace since the last FRESH */
    struct {
        pid_t pid;     /* the next run's child (PREP), 0: none, -1: it ended */
        int sock;      /* its socket, for the run (FORK), or -1 */
        int status_fd; /* where its init will write the program's wait status */
        int go_fd;     /* held: its GO pipe until GO, or -1 */
        bool held;
    } prep;
    char ws_opts[128]; /* the workspace tmpfs as the box made it, for FRESH */
    struct sockaddr_un relay_to;
} g;

#define RELAY_BUF (16u * 1024u)

/* One relayed connection: fd[0] the program's TCP connection, fd[1] the
 * proxy's unix socket; buf[i] holds what was read from fd[i] and is not yet
 * written to the other side; eof[i]: fd[i] reached end of input and the
 * other side's write half was shut down. */
struct relay_conn {
    int fd[2];
    size_t off[2], len[2];
    bool eof[2];
    unsigned char buf[2][RELAY_BUF];
};

static struct relay_conn g_relay[AGENT_RELAY_CONNS];

static unsigned char g_pay[AGENT_MAX_PAYLOAD];
static unsigned char g_out[AGENT_HDR_SIZE + AGENT_CHUNK];
static unsigned char g_stdin[STDIN_BUF_SIZE];
static char *g_vec[VEC_MAX];

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void exec_reset(void)
{
    memset(&g.ex, 0, sizeof g.ex);
    g.ex.out_fd[0] = g.ex.out_fd[1] = g.ex.in_fd = g.ex.status_fd = -1;
}

/* Signals every process of the current exec. kill(-1) appears only here and in reap_all(). */
static void kill_exec(int sig)
{
    if (g.ex.forked) /* its pid namespace ends with it; the zygote lives on */
        kill(g.ex.pid, sig);
    else if (g.pid1)
        kill(-1, sig);
    else if (g.ex.pid > 0)
        kill(-g.ex.pid, sig);
}

/* As pid 1: kill and reap every other process in the namespace until none is left. */
static void reap_all(void)
{
    if (!g.pid1)
        return;
    for (;;) {
        kill(-1, SIGKILL);
        if (waitpid(-1, NULL, __WALL) < 0 && errno != EINTR)
            return;
    }
}

static NORETURN void terminate(int status)
{
    if (g.pid1) {
        reap_all();
    } else if (g.ex.pid > 0) {
        kill(-g.ex.pid, SIGKILL);
        waitpid(g.ex.pid, NULL, __WALL);
    }
    close_fd(&g.ex.out_fd[0]); /* so valgrind --track-fds sees no leak on any exit path */
    close_fd(&g.ex.out_fd[1]);
    close_fd(&g.ex.in_fd);
    close_fd(&g.put_fd);
    close_fd(&g.ws_fd);
    close_fd(&g.tmp_fd);
    close_fd(&g.sig_fd);
    close_fd(&g.relay_fd);
    close_fd(&g.zyg_fd);
    close_fd(&g.prep.sock);
    close_fd(&g.prep.status_fd);
    close_fd(&g.prep.go_fd);
    for (size_t i = 0; i < AGENT_RELAY_CONNS; i++) {
        close_fd(&g_relay[i].fd[0]);
        close_fd(&g_relay[i].fd[1]);
    }
    exit(status);
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0 && errno == EAGAIN) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};

            poll(&pf, 1, -1);
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* n <= AGENT_CHUNK. A payload already in place at g_out + AGENT_HDR_SIZE is not copied. */
static void send_frame(uint8_t type, const void *p, size_t n)
{
    if (n > 0 && p != g_out + AGENT_HDR_SIZE)
        memcpy(g_out + AGENT_HDR_SIZE, p, n);
    agent_hdr_encode(g_out, (uint32_t)n, type, 0);
    if (write_all(STDOUT_FILENO, g_out, AGENT_HDR_SIZE + n) < 0)
        terminate(1); /* the host is gone */
}

static void send_u32(uint8_t type, uint32_t a, uint32_t b, uint32_t c, size_t count)
{
    unsigned char p[12];

    agent_put_u32(p, a);
    agent_put_u32(p + 4, b);
    agent_put_u32(p + 8, c);
    send_frame(type, p, 4 * count);
}

__attribute__((format(printf, 3, 4))) static void send_text(
        uint8_t type, int err, const char *fmt, ...)
{
    unsigned char p[4 + 512];
    size_t off = type == AGENT_ERROR ? 4 : 0;
    va_list ap;
    int n;

    agent_put_u32(p, (uint32_t)err);
    va_start(ap, fmt);
    n = vsnprintf((char *)p + off, sizeof p - off, fmt, ap);
    va_end(ap);
    n = n < 0 ? 0 : n >= (int)(sizeof p - off) ? (int)(sizeof p - off - 1) : n;
    /* ERROR carries the NUL terminator; a STDERR diagnostic is plain bytes. */
    send_frame(type, p, off + (size_t)n + (off ? 1 : 0));
}

static NORETURN void fatal(const char *msg)
{
    dprintf(STDERR_FILENO, "sbx-agent: fatal: %s\n", msg);
    send_text(AGENT_ERROR, EPROTO, "%s", msg);
    terminate(2);
}

/* ---- PUT ---------------------------------------------------------------- */

/* Relative, no empty, "." or ".." component, no NUL (checked by the caller). */
static bool path_ok(const char *p)
{
    if (*p == '\0' || *p == '/')
        return false;
    for (;;) {
        const char *e = strchrnul(p, '/');
        size_t n = (size_t)(e - p);

        if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
                (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (*e == '\0')
            return true;
        p = e + 1;
    }
}

/* Opens one component beneath dirfd, never through a symlink. */
static int open_beneath(int dirfd, const char *name, int flags, mode_t mode)
{
    struct open_how how = {
            .flags = (__u64)(unsigned)flags, /* O_NOFOLLOW would turn ELOOP into ENOTDIR */
            .mode = (flags & O_CREAT) ? mode : 0,
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long r;

    do {
        r = syscall(SYS_openat2, dirfd, name, &how, sizeof how);
    } while (r < 0 && errno == EINTR);
    if (r >= 0 || errno != ENOSYS)
        return (int)r;
    /* Pre-5.6 kernel: a single component with O_NOFOLLOW cannot leave dirfd either. */
    return openat(dirfd, name, flags | O_NOFOLLOW, mode);
}

/*
 * Creates `path` (validated) beneath the workspace, making missing parent
 * directories. The walk goes one component at a time from a directory fd,
 * which mkdirat needs anyway and which keeps every step beneath the workspace.
 */
static int put_create(char *path, mode_t mode, bool replace, int base)
{
    int dir = base, fd, saved;
    char *c = path;

    for (char *slash = strchr(c, '/'); slash; slash = strchr(c, '/')) {
        int next;

        *slash = '\0';
        next = open_beneath(dir, c, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (next < 0 && errno == ENOENT && (mkdirat(dir, c, 0755) == 0 || errno == EEXIST))
            next = open_beneath(dir, c, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        saved = errno;
        *slash = '/';
        if (dir != base)
            close(dir);
        errno = saved;
        if (next < 0)
            return -1;
        dir = next;
        c = slash + 1;
    }
    fd = open_beneath(
            dir, c, O_CREAT | O_WRONLY | O_CLOEXEC | (replace ? O_NONBLOCK : O_EXCL), mode);
    if (fd >= 0 && replace) { /* never a FIFO or device (O_NONBLOCK: a FIFO did not block) */
        struct stat st;

        st.st_mode = 0;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || ftruncate(fd, 0) < 0) {
            saved = S_ISREG(st.st_mode) ? errno : EINVAL;
            close(fd);
            fd = -1;
            errno = saved;
        }
    }
    saved = errno;
    if (dir != base)
        close(dir);
    if (fd >= 0 && fchmod(fd, mode) < 0) { /* exact mode, whatever the umask */
        saved = errno;
        close(fd);
        fd = -1;
    }
    errno = saved;
    return fd;
}

static void put_fail(int err, const char *what)
{
    send_text(AGENT_ERROR, err, "cannot %s '%.256s': %s", what, g.put_path, strerror(err));
    close_fd(&g.put_fd);
    g.put = PUT_DISCARD;
}

static void on_put(uint32_t len)
{
    uint32_t mode = agent_get_u32(g_pay), plen = agent_get_u32(g_pay + 4);
    const unsigned char *path = g_pay + 8, *data;
    size_t dlen;

    if (plen > len - 8u)
        fatal("PUT path runs past the end of the frame");
    data = path + plen;
    dlen = len - 8u - plen;
    if (g.h.flags & AGENT_PUT_FIRST) {
        close_fd(&g.put_fd); /* an unfinished previous file is abandoned */
        g.put = PUT_OPEN;
        g.put_path[0] = '\0';
        if (plen == 0 || plen > PUT_PATH_MAX || memchr(path, 0, plen)) {
            put_fail(EINVAL, "accept path");
        } else {
            memcpy(g.put_path, path, plen);
            g.put_path[plen] = '\0';
            if (path_ok(g.put_path))
                g.put_fd = put_create(g.put_path, (mode_t)(mode & 0777u),
                        (g.h.flags & AGENT_PUT_REPLACE) != 0,
                        (g.h.flags & AGENT_PUT_TMP) ? g.tmp_fd : g.ws_fd);
            if (g.put_fd < 0)
                put_fail(path_ok(g.put_path) ? errno : EINVAL, "create");
        }
    } else if (g.put == PUT_IDLE) {
        send_text(AGENT_ERROR, EBADF, "PUT chunk without AGENT_PUT_FIRST");
        g.put = PUT_DISCARD;
    } else if (g.put == PUT_OPEN &&
               (plen != strlen(g.put_path) || memcmp(path, g.put_path, plen) != 0)) {
        put_fail(EINVAL, "interleave another file with");
    }
    if (g.put == PUT_OPEN && dlen > 0 && write_all(g.put_fd, data, dlen) < 0)
        put_fail(errno, "write");
    if (g.h.flags & AGENT_PUT_LAST) {
        if (g.put == PUT_OPEN) {
            int r = close(g.put_fd);

            g.put_fd = -1;
            if (r < 0)
                put_fail(errno, "close");
            else
                send_frame(AGENT_OK, NULL, 0);
        }
        g.put = PUT_IDLE;
    }
}

/* ---- GET ---------------------------------------------------------------- */

/* Send a file of the workspace back (a build's output for the compile
 * cache): opened beneath the workspace without symlinks, regular files
 * only, at most max bytes even if it grows meanwhile. */
static void on_get(uint32_t len)
{
    uint64_t max = agent_get_u32(g_pay), sent = 0;
    size_t plen = len - 4u;
    char path[PUT_PATH_MAX + 1];
    struct stat st;
    ssize_t n;
    int fd;

    if (plen == 0 || plen > PUT_PATH_MAX || memchr(g_pay + 4, 0, plen)) {
        send_text(AGENT_ERROR, EINVAL, "GET: bad path");
        return;
    }
    memcpy(path, g_pay + 4, plen);
    path[plen] = '\0';
    errno = EINVAL; /* a path that leaves the workspace */
    fd = path_ok(path) ? open_beneath(g.ws_fd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0) : -1;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        int e = fd < 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : EFBIG;

        if (fd >= 0)
            close(fd);
        send_text(AGENT_ERROR, e, "GET %s: %s", path,
                e == EFBIG    ? "too big"
                : e == EINVAL ? "not a regular file"
                              : strerror(e));
        return;
    }
    while ((n = read(fd, g_out + AGENT_HDR_SIZE, AGENT_CHUNK)) > 0 && sent + (uint64_t)n <= max) {
        sent += (uint64_t)n;
        send_frame(AGENT_DATA, g_out + AGENT_HDR_SIZE, (size_t)n);
    }
    close(fd);
    if (n != 0) {
        send_text(AGENT_ERROR, n < 0 ? errno : EFBIG, "GET %s: %s", path,
                n < 0 ? strerror(errno) : "it grew too big");
        return;
    }
    send_u32(AGENT_OK, (uint32_t)(st.st_mode & 0777u), 0, 0, 1);
}

/* Send every regular file beneath the directory fd (whose path is
 * path[0..len)) as a DATA frame; false when there are too many. */
static dev_t g_list_dev; /* LIST_STAT stays on the listed directory's filesystem */

static bool list_walk(int fd, char *path, size_t len, int depth, unsigned *left, bool with_stat)
{
    DIR *d = fdopendir(fd);
    bool ok = true;

    if (!d) {
        close(fd);
        return false;
    }
    for (struct dirent *e; ok && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (len + 1 + n > PUT_PATH_MAX) {
            ok = false;
            break;
        }
        path[len] = '/';
        memcpy(path + len + 1, e->d_name, n + 1);
        if (S_ISREG(st.st_mode)) {
            ok = (*left)-- > 0;
            if (ok && with_stat) { /* path NUL, u64 size, u64 mtime in ns */
                unsigned char *f = (unsigned char *)path + len + 1 + n + 1;

                agent_put_u64(f, (uint64_t)st.st_size);
                agent_put_u64(f + 8,
                        (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec);
                send_frame(AGENT_DATA, path, len + 1 + n + 1 + 16);
            } else if (ok) {
                send_frame(AGENT_DATA, path, len + 1 + n + 1);
            }
        } else if (S_ISDIR(st.st_mode) && !(with_stat && st.st_dev != g_list_dev)) {
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            ok = depth < WALK_DEPTH && sub >= 0 &&
                 list_walk(sub, path, len + 1 + n, depth + 1, left, with_stat);
        }
        path[len] = '\0';
    }
    closedir(d);
    return ok;
}

static void on_list(uint32_t len)
{
    char path[PUT_PATH_MAX + 1 + 16];
    unsigned left = AGENT_LIST_MAX;
    int fd;

    if (len == 0 || len > PUT_PATH_MAX || memchr(g_pay, 0, len)) {
        send_text(AGENT_ERROR, EINVAL, "LIST: bad path");
        return;
    }
    memcpy(path, g_pay, len);
    path[len] = '\0';
    errno = EINVAL; /* a path that leaves the workspace */
    fd = path_ok(path) || strcmp(path, ".") == 0
                 ? open_beneath(g.ws_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
                 : -1;
    if (fd < 0) {
        send_text(AGENT_ERROR, errno, "LIST %s: %s", path, strerror(errno));
        return;
    }
    {
        struct stat st;

        g_list_dev = fstat(fd, &st) == 0 ? st.st_dev : 0;
    }
    if (!list_walk(fd, path, len, 0, &left, (g.h.flags & AGENT_LIST_STAT) != 0)) {
        send_text(AGENT_ERROR, E2BIG, "LIST: too many files or too deep");
        return;
    }
    send_frame(AGENT_OK, NULL, 0);
}

/* ---- EXEC --------------------------------------------------------------- */

/* execvpe-like, but the search path comes from envp, never from our environment. */
static void exec_search(char **argv, char **envp)
{
    const char *file = argv[0], *path = DEFAULT_PATH;
    char buf[PATH_MAX];
    size_t flen = strlen(file);
    bool eacces = false;

    if (strchr(file, '/')) {
        execve(file, argv, envp);
        return;
    }
    for (char **e = envp; *e; e++) {
        if (strncmp(*e, "PATH=", 5) == 0) {
            path = *e + 5;
            break;
        }
    }
    for (const char *p = path; flen > 0; p++) {
        const char *end = strchrnul(p, ':');
        size_t dlen = (size_t)(end - p), o = dlen;

        if (dlen + 1 + flen < sizeof buf) { /* an empty element is the current directory */
            memcpy(buf, p, dlen);
            if (dlen > 0)
                buf[o++] = '/';
            memcpy(buf + o, file, flen + 1);
            execve(buf, argv, envp);
            if (errno == EACCES)
                eacces = true;
            else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV)
                return;
        }
        if (*end == '\0')
            break;
        p = end;
    }
    errno = eacces ? EACCES : ENOENT;
}

/* FILTER: the core's seccomp policy, for a backend that applies none. */
static struct sock_filter g_filter[AGENT_FILTER_MAX];
static unsigned short g_filter_n;

/* In the child: no capability left in any set we can reach. The bounding
 * set needs CAP_SETPCAP to shrink (without it there is nothing to gain
 * back through no_new_privs anyway); the effective, permitted and
 * inheritable sets must empty. */
static int drop_caps(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];

    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &hdr, data) < 0)
        return -1;
    if (!(data[0].permitted | data[1].permitted | data[0].inheritable | data[1].inheritable))
        return 0;
    for (unsigned long c = 0; c <= 63; c++)
        prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    memset(data, 0, sizeof data);
    return (int)syscall(SYS_capset, &hdr, data);
}

/* no_new_privs, no capabilities, then the filter: the last step before
 * execve, so nothing of ours runs under it. */
static int apply_filter(void)
{
    struct sock_fprog prog = {.len = g_filter_n, .filter = g_filter};

    if (g_filter_n == 0)
        return 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || drop_caps() < 0)
        return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

static void on_filter(uint32_t len)
{
    size_t n = (len - 8u) / sizeof(struct sock_filter);

    if ((len - 8u) % sizeof(struct sock_filter) != 0 || n == 0 || n > AGENT_FILTER_MAX ||
            agent_get_u32(g_pay) != 0 || agent_get_u32(g_pay + 4) != 0) {
        send_text(
                AGENT_ERROR, EINVAL, "FILTER must hold 1 to %d BPF instructions", AGENT_FILTER_MAX);
        return;
    }
    if (g_filter_n > 0) {
        send_text(AGENT_ERROR, EEXIST, "a filter is set already");
        return;
    }
    memcpy(g_filter, g_pay + 8, n * sizeof(struct sock_filter));
    g_filter_n = (unsigned short)n;
    send_frame(AGENT_OK, NULL, 0);
}

/* Between fork and execve: async-signal-safe calls only. */
static NORETURN void child_run(const struct spawn *sp)
{
    struct exec_report rep = {STAGE_CHDIR, 0};
    struct sigaction sa;
    sigset_t none;
    int rfd = sp->rep_w, in = sp->in_r;
    ssize_t w;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        sigaction(s, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    if (fchdir(g.ws_fd) < 0 || (sp->cwd[0] != '\0' && chdir(sp->cwd) < 0))
        goto fail;
    rep.stage = STAGE_STDIO;
    if (in < 0)
        in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || dup2(in, 0) < 0 || dup2(sp->out_w, 1) < 0 || dup2(sp->err_w, 2) < 0)
        goto fail;
    if (rfd != 3 && dup3(rfd, 3, O_CLOEXEC) < 0)
        goto fail;
    rfd = 3;
    close_range(4, ~0u, 0); /* belt and braces: every agent fd is O_CLOEXEC already */
    rep.stage = STAGE_FILTER;
    if (apply_filter() < 0)
        goto fail;
    rep.stage = STAGE_EXEC;
    exec_search(sp->argv, sp->envp);
fail:
    rep.err = errno;
    w = write(rfd, &rep, sizeof rep);
    (void)w;
    _exit(rep.stage == STAGE_EXEC && rep.err == ENOENT ? 127 : 126);
}

static void exec_start(struct spawn *sp, bool stdin_pipe)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, rp[2] = {-1, -1};
    struct exec_report rep;
    ssize_t n;
    pid_t pid = -1;
    int e;

    if ((!stdin_pipe || pipe2(in, O_CLOEXEC) == 0) && pipe2(out, O_CLOEXEC) == 0 &&
            pipe2(err, O_CLOEXEC) == 0 && pipe2(rp, O_CLOEXEC) == 0) {
        sp->in_r = in[0];
        sp->out_w = out[1];
        sp->err_w = err[1];
        sp->rep_w = rp[1];
        pid = fork();
        if (pid == 0)
            child_run(sp);
    }
    e = errno;
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&err[1]);
    close_fd(&rp[1]);
    if (pid < 0) {
        send_text(AGENT_ERROR, e, "cannot start '%.256s': %s", sp->argv[0], strerror(e));
        close_fd(&in[1]);
        close_fd(&out[0]);
        close_fd(&err[0]);
        close_fd(&rp[0]);
        return;
    }
    /* EOF: execve succeeded and closed the CLOEXEC end; a report: it failed. */
    do {
        n = read(rp[0], &rep, sizeof rep);
    } while (n < 0 && errno == EINTR);
    close_fd(&rp[0]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    if (in[1] >= 0)
        fcntl(in[1], F_SETFL, O_NONBLOCK);
    g.ex.pid = pid;
    g.ex.out_fd[0] = out[0];
    g.ex.out_fd[1] = err[0];
    g.ex.in_fd = in[1];
    if (n != (ssize_t)sizeof rep) {
        send_u32(AGENT_STARTED, (uint32_t)pid, 0, 0, 1);
        return;
    }
    g.ex.failed = true;
    if (rep.stage == STAGE_FILTER) {
        send_text(AGENT_STDERR, 0,
                "sbx-agent: cannot apply the seccomp filter before running '%.256s': %s\n",
                sp->argv[0], strerror(rep.err));
        return;
    }
    send_text(AGENT_STDERR, 0, "sbx-agent: cannot %s '%.256s': %s\n",
            rep.stage == STAGE_EXEC    ? "execute"
            : rep.stage == STAGE_CHDIR ? "change directory to"
                                       : "set up standard streams for",
            rep.stage == STAGE_CHDIR ? sp->cwd : sp->argv[0], strerror(rep.err));
}

/* EXEC and FORK: u32 flags, u32 argc, u32 envc, argc + envc + 1
 * NUL-terminated strings, into sp; false after an ERROR was sent. */
static bool exec_parse(uint32_t len, struct spawn *sp)
{
    uint32_t argc = agent_get_u32(g_pay + 4);
    uint32_t envc = agent_get_u32(g_pay + 8);
    size_t off = 12, nstr;

    if ((uint64_t)argc + envc + 1 > len - 12u)
        fatal("EXEC counts exceed the frame");
    nstr = (size_t)argc + envc + 1;
    if (nstr + 1 > VEC_MAX) {
        send_text(AGENT_ERROR, E2BIG, "EXEC has too many strings");
        return false;
    }
    for (size_t i = 0; i < nstr; i++) {
        unsigned char *end = memchr(g_pay + off, 0, len - off);

        if (!end)
            fatal("EXEC string is not NUL-terminated");
        /* argv[0..argc) NULL envp[0..envc) NULL; cwd last */
        if (i + 1 < nstr)
            g_vec[i < argc ? i : i + 1] = (char *)g_pay + off;
        else
            sp->cwd = (char *)g_pay + off;
        off = (size_t)(end - g_pay) + 1;
    }
    if (off != len)
        fatal("EXEC has trailing bytes");
    g_vec[argc] = NULL;
    g_vec[nstr] = NULL;
    sp->argv = g_vec;
    sp->envp = g_vec + argc + 1;
    for (char **e = sp->envp; *e; e++) {
        if ((*e)[0] == '=' || !strchr(*e, '=')) {
            send_text(AGENT_ERROR, EINVAL, "EXEC environment entry '%.64s' is not K=V", *e);
            return false;
        }
    }
    if (argc == 0) {
        send_text(AGENT_ERROR, EINVAL, "EXEC needs argv[0]");
        return false;
    }
    return true;
}

#include "zygote.inc"

static void on_exec(uint32_t len)
{
    uint32_t flags = agent_get_u32(g_pay);
    struct spawn sp = {0};

    if (!exec_parse(len, &sp))
        return;
    if (flags == AGENT_EXEC_ZYGOTE)
        zygote_start(&sp);
    else if (g.ex.pid > 0)
        send_text(AGENT_ERROR, EBUSY, "an exec is already running");
    else if ((flags & ~(uint32_t)AGENT_EXEC_STDIN_PIPE) != 0)
        send_text(AGENT_ERROR, EINVAL, "EXEC needs known flags only");
    else
        exec_start(&sp, (flags & AGENT_EXEC_STDIN_PIPE) != 0);
}

/* ---- running program: output, stdin, exit -------------------------------- */

static void read_output(int i)
{
    ssize_t n = read(g.ex.out_fd[i], g_out + AGENT_HDR_SIZE, AGENT_CHUNK);

    if (n > 0)
        send_frame((uint8_t)(i ? AGENT_STDERR : AGENT_STDOUT), g_out + AGENT_HDR_SIZE, (size_t)n);
    else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        close_fd(&g.ex.out_fd[i]);
}

static void stdin_close(void)
{
    close_fd(&g.ex.in_fd);
    g.ex.in_off = g.ex.in_len = 0;
}

static void stdin_pump(void)
{
    while (g.ex.in_fd >= 0 && g.ex.in_len > 0) {
        ssize_t n = write(g.ex.in_fd, g_stdin + g.ex.in_off, g.ex.in_len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) { /* EPIPE: the program closed its stdin; discard the rest */
            stdin_close();
            return;
        }
        g.ex.in_off += (size_t)n;
        g.ex.in_len -= (size_t)n;
    }
    g.ex.in_off = 0;
    if (g.ex.in_eof)
        stdin_close();
}

/* false: the buffer is full, keep the frame and stop reading fd 0 (back-pressure) */
static bool on_stdin(uint32_t len)
{
    if (g.ex.in_fd < 0 || g.ex.in_eof || len == 0)
        return true; /* no stdin pipe, closed by the program, or after STDIN_EOF */
    if (g.ex.in_len + len > STDIN_BUF_SIZE)
        return false;
    if (g.ex.in_off + g.ex.in_len + len > STDIN_BUF_SIZE) {
        memmove(g_stdin, g_stdin + g.ex.in_off, g.ex.in_len);
        g.ex.in_off = 0;
    }
    memcpy(g_stdin + g.ex.in_off + g.ex.in_len, g_pay, len);
    g.ex.in_len += len;
    stdin_pump();
    return true;
}

static bool fs_full(const struct statvfs *v)
{
    return (v->f_blocks > 0 && v->f_bavail == 0) || (v->f_files > 0 && v->f_favail == 0);
}

/* true when a regular file of at least `limit` bytes is under fd (taken); no symlinks. */
static bool walk_big(int fd, int depth, unsigned *budget, uint64_t limit)
{
    DIR *d = fdopendir(fd);
    bool found = false;

    if (!d) {
        close(fd);
        return false;
    }
    while (!found && *budget > 0) {
        struct dirent *e = readdir(d);
        struct stat st;
        int sub;

        if (!e)
            break;
        (*budget)--;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISREG(st.st_mode) && st.st_size >= 0 && (uint64_t)st.st_size >= limit) {
            found = true;
        } else if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH) {
            sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                found = walk_big(sub, depth + 1, budget, limit);
        }
    }
    closedir(d);
    return found;
}

/* The writable places besides the workspace (all sized like it). */
static const char *const scratch_dirs[] = {"/tmp", "/dev/shm"};

static uint32_t exit_flags(int st)
{
    bool sig = WIFSIGNALED(st);
    unsigned budget = WALK_ENTRIES;
    uint32_t f = 0;
    struct statvfs v;
    struct rlimit rl;
    int fd;

    if (g.ex.failed)
        return AGENT_EXIT_EXEC_FAILED;
    if (!sig && WEXITSTATUS(st) == 0)
        return 0;
    if (fstatvfs(g.ws_fd, &v) == 0 && fs_full(&v))
        f |= AGENT_EXIT_WORKSPACE_FULL;
    for (size_t i = 0; i < sizeof(scratch_dirs) / sizeof(scratch_dirs[0]); i++)
        if (statvfs(scratch_dirs[i], &v) == 0 && fs_full(&v))
            f |= AGENT_EXIT_WORKSPACE_FULL;
    if (sig && WTERMSIG(st) == SIGXFSZ)
        return f | AGENT_EXIT_FILE_SIZE;
    if (sig || getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return f;
    fd = openat(g.ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && walk_big(fd, 0, &budget, rl.rlim_cur))
        return f | AGENT_EXIT_FILE_SIZE;
    for (size_t i = 0; i < sizeof(scratch_dirs) / sizeof(scratch_dirs[0]); i++) {
        fd = open(scratch_dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && walk_big(fd, 0, &budget, rl.rlim_cur))
            return f | AGENT_EXIT_FILE_SIZE;
    }
    return f;
}

static uint64_t tv_us(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* A forked run's init (the exec's pid) has exited: the program's own wait
 * status, which the init wrote before it exited, replaces the init's (its
 * resource usage already counts the program, which it reaped). Without
 * one (the init was killed first, or the program was never started), the
 * init's own status stands. */
static void forked_status(int *st)
{
    unsigned char b[4];
    ssize_t n;

    if (g.ex.status_fd < 0)
        return;
    do {
        n = read(g.ex.status_fd, b, sizeof b);
    } while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof b)
        *st = (int)agent_get_u32(b);
}

/*
 * The main child has exited (still a zombie, so its pgid cannot be reused):
 * kill the rest of the exec, reap, drain the pipes to EOF, then report.
 */
static void exec_finish(void)
{
    unsigned char p[AGENT_EXITED_SIZE] = {0};
    struct rusage ru;
    int st = 0;

    memset(&ru, 0, sizeof ru);
    kill_exec(SIGKILL);
    while (wait4(g.ex.pid, &st, __WALL, &ru) < 0 && errno == EINTR) {
    }
    if (!g.ex.forked) /* a forked run's init took its namespace with it */
        reap_all();
    else
        forked_status(&st);
    while (g.ex.out_fd[0] >= 0 || g.ex.out_fd[1] >= 0) {
        struct pollfd pf[2] = {
                {.fd = g.ex.out_fd[0], .events = POLLIN}, {.fd = g.ex.out_fd[1], .events = POLLIN}};
        /* Not pid 1: a process that left the group may hold a pipe; do not hang on it. */
        int r = poll(pf, 2, g.pid1 ? -1 : 2000);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (int i = 0; i < 2; i++) {
            if (pf[i].revents)
                read_output(i);
        }
    }
    agent_put_u32(p, WIFSIGNALED(st) ? AGENT_EXIT_SIGNAL : AGENT_EXIT_CODE);
    agent_put_u32(p + 4, (uint32_t)(WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st)));
    agent_put_u32(p + 8, exit_flags(st));
    agent_put_u64(p + 16, tv_us(ru.ru_utime));
    agent_put_u64(p + 24, tv_us(ru.ru_stime));
    agent_put_u64(p + 32, (uint64_t)ru.ru_maxrss);
    close_fd(&g.ex.out_fd[0]);
    close_fd(&g.ex.out_fd[1]);
    close_fd(&g.ex.status_fd);
    stdin_close();
    exec_reset();
    send_frame(AGENT_EXITED, p, sizeof p);
}

/* SIGCHLD: reap orphans at all times; the main child's exit ends the exec. */
static void on_sigchld(void)
{
    struct signalfd_siginfo fi;

    while (read(g.sig_fd, &fi, sizeof fi) > 0) {
    }
    for (;;) {
        siginfo_t si;

        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 || si.si_pid == 0)
            return;
        if (g.ex.pid > 0 && si.si_pid == g.ex.pid) {
            exec_finish();
        } else {
            waitpid(si.si_pid, NULL, __WALL);
            if (si.si_pid == g.zyg_pid) { /* no more forks in this box */
                g.zyg_pid = 0;
                close_fd(&g.zyg_fd);
            }
            if (si.si_pid == g.prep.pid) /* FORK reads why, if it said */
                g.prep.pid = -1;
        }
    }
}

/* ---- limits ------------------------------------------------------------- */

/* glibc (with _GNU_SOURCE) types getrlimit's resource as an enum, other C
 * libraries as an int. */
#ifdef __GLIBC__
#define RESOURCE_TYPE __rlimit_resource_t
#else
#define RESOURCE_TYPE int
#endif

/* The host resource of one of the protocol's; false if none. */
static bool agent_resource(uint32_t r, RESOURCE_TYPE *ret)
{
    switch (r) {
    case AGENT_RLIMIT_FSIZE: *ret = RLIMIT_FSIZE; return true;
    case AGENT_RLIMIT_NOFILE: *ret = RLIMIT_NOFILE; return true;
    case AGENT_RLIMIT_CORE: *ret = RLIMIT_CORE; return true;
    case AGENT_RLIMIT_AS: *ret = RLIMIT_AS; return true;
    case AGENT_RLIMIT_NPROC: *ret = RLIMIT_NPROC; return true;
    case AGENT_RLIMIT_MSGQUEUE: *ret = RLIMIT_MSGQUEUE; return true;
    case AGENT_RLIMIT_MEMLOCK: *ret = RLIMIT_MEMLOCK; return true;
    case AGENT_RLIMIT_SIGPENDING: *ret = RLIMIT_SIGPENDING; return true;
    default: return false;
    }
}

/* Lower our own limits; children inherit them. Never raises one. */
static void on_limits(uint32_t len)
{
    uint32_t n = agent_get_u32(g_pay);

    if (g.ex.pid > 0) {
        send_text(AGENT_ERROR, EBUSY, "LIMITS while a program runs");
        return;
    }
    if (n > AGENT_LIMITS_MAX || len != 4 + 16 * n) {
        send_text(AGENT_ERROR, EINVAL, "LIMITS: bad length");
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *e = g_pay + 4 + 16 * i;
        uint64_t v = agent_get_u64(e + 8);
        RESOURCE_TYPE res;
        struct rlimit rl;

        if (!agent_resource(agent_get_u32(e), &res) || getrlimit(res, &rl) < 0) {
            send_text(AGENT_ERROR, EINVAL, "LIMITS: unknown resource %u", agent_get_u32(e));
            return;
        }
        if (v != AGENT_RLIMIT_INFINITY && (rl.rlim_max == RLIM_INFINITY || v < rl.rlim_max))
            rl.rlim_max = (rlim_t)v;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(res, &rl) < 0) {
            send_text(AGENT_ERROR, errno, "LIMITS: setrlimit(%u): %s", agent_get_u32(e),
                    strerror(errno));
            return;
        }
    }
    send_frame(AGENT_OK, NULL, 0);
}

/* ---- relay --------------------------------------------------------------- */

static void relay_close(struct relay_conn *c)
{
    close_fd(&c->fd[0]);
    close_fd(&c->fd[1]);
}

static void on_relay(uint32_t len)
{
    uint32_t port = agent_get_u32(g_pay);
    const char *path = (const char *)g_pay + 8;
    size_t plen = len - 8;
    struct sockaddr_in a;
    int fd;

    if (g.relay_fd >= 0) {
        send_text(AGENT_ERROR, EBUSY, "RELAY: already relaying");
        return;
    }
    if (port == 0 || port > 65535 || agent_get_u32(g_pay + 4) != 0 || plen < 2 ||
            path[plen - 1] != '\0' || strlen(path) != plen - 1 ||
            plen > sizeof(g.relay_to.sun_path)) {
        send_text(AGENT_ERROR, EINVAL, "RELAY: bad port or path");
        return;
    }
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int)) < 0 ||
            bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0) {
        int e = errno;

        if (fd >= 0)
            close(fd);
        send_text(AGENT_ERROR, e, "RELAY: cannot listen on 127.0.0.1:%u: %s", port, strerror(e));
        return;
    }
    memset(&g.relay_to, 0, sizeof g.relay_to);
    g.relay_to.sun_family = AF_UNIX;
    memcpy(g.relay_to.sun_path, path, plen);
    g.relay_fd = fd;
    send_frame(AGENT_OK, NULL, 0);
}

/* A new connection: relay it when a slot is free, else drop it (the client
 * sees a reset, as from a full proxy). */
static void relay_accept(void)
{
    int c = accept4(g.relay_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    int u;

    if (c < 0)
        return;
    for (int i = 0; i < (int)AGENT_RELAY_CONNS; i++) {
        struct relay_conn *r = &g_relay[i];

        if (r->fd[0] >= 0)
            continue;
        /* a local socket: connect completes at once or fails */
        u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (u < 0 || connect(u, (struct sockaddr *)&g.relay_to, sizeof g.relay_to) < 0 ||
                fcntl(u, F_SETFL, O_NONBLOCK) < 0) {
            if (u >= 0)
                close(u);
            break;
        }
        memset(r, 0, offsetof(struct relay_conn, buf));
        r->fd[0] = c;
        r->fd[1] = u;
        return;
    }
    close(c);
}

static short relay_events(const struct relay_conn *r, int i)
{
    short ev = 0;

    if (!r->eof[i] && r->len[i] == 0)
        ev |= POLLIN;
    if (r->len[1 - i] > 0)
        ev |= POLLOUT;
    return ev;
}

/* Move bytes one way: read fd[i] when its buffer is empty, write it to the
 * other side; at end of input shut the other side's write half. */
static void relay_step(struct relay_conn *r, int i, short rev_in, short rev_out)
{
    int j = 1 - i;
    ssize_t n;

    if (r->fd[0] < 0)
        return;
    if ((rev_in & (POLLIN | POLLHUP | POLLERR)) && !r->eof[i] && r->len[i] == 0) {
        n = read(r->fd[i], r->buf[i], RELAY_BUF);
        if (n > 0) {
            r->off[i] = 0;
            r->len[i] = (size_t)n;
        } else if (n == 0) {
            r->eof[i] = true;
            shutdown(r->fd[j], SHUT_WR);
        } else if (errno != EAGAIN && errno != EINTR) {
            relay_close(r);
            return;
        }
    }
    if (r->len[i] > 0 && (rev_out & (POLLOUT | POLLERR | POLLHUP))) {
        n = write(r->fd[j], r->buf[i] + r->off[i], r->len[i]);
        if (n > 0) {
            r->off[i] += (size_t)n;
            r->len[i] -= (size_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            relay_close(r);
            return;
        }
    }
    if (r->eof[0] && r->eof[1] && r->len[0] == 0 && r->len[1] == 0)
        relay_close(r);
}

/* ---- control channel ---------------------------------------------------- */

static bool frame_ok(const struct agent_hdr *h)
{
    switch (h->type) {
    case AGENT_PUT:
        return h->len >= 8 && (h->flags & ~(AGENT_PUT_FIRST | AGENT_PUT_LAST | AGENT_PUT_REPLACE |
                                                  AGENT_PUT_TMP)) == 0;
    case AGENT_EXEC: return h->len >= 12 && h->flags == 0;
    case AGENT_STDIN: return h->flags == 0;
    case AGENT_SIGNAL: return h->len == 4 && h->flags == 0;
    case AGENT_STDIN_EOF:
    case AGENT_QUIT: return h->len == 0 && h->flags == 0;
    case AGENT_LIMITS: return h->len >= 4 && h->flags == 0;
    case AGENT_RELAY: return h->len >= 10 && h->flags == 0;
    case AGENT_GET: return h->len >= 5 && h->flags == 0;
    case AGENT_LIST: return h->len >= 1 && (h->flags & ~AGENT_LIST_STAT) == 0;
    case AGENT_FILTER: return h->len >= 8 && h->flags == 0;
    case AGENT_FORK: return h->len >= 12 && h->flags == 0;
    case AGENT_PREP: return h->len == 4 && h->flags == 0;
    case AGENT_FRESH:
    case AGENT_GO: return h->len == 0 && h->flags == 0;
    default: return false;
    }
}

/* false: the frame must wait (STDIN while the buffer is full). */
static bool dispatch(void)
{
    uint32_t sig;

    switch (g.h.type) {
    case AGENT_PUT: on_put(g.h.len); break;
    case AGENT_EXEC: on_exec(g.h.len); break;
    case AGENT_STDIN: return on_stdin(g.h.len);
    case AGENT_LIMITS: on_limits(g.h.len); break;
    case AGENT_RELAY: on_relay(g.h.len); break;
    case AGENT_GET: on_get(g.h.len); break;
    case AGENT_LIST: on_list(g.h.len); break;
    case AGENT_FILTER: on_filter(g.h.len); break;
    case AGENT_FORK: on_fork(g.h.len); break;
    case AGENT_FRESH: on_fresh(); break;
    case AGENT_PREP: on_prep(); break;
    case AGENT_GO: on_go(); break;
    case AGENT_STDIN_EOF:
        g.ex.in_eof = g.ex.pid > 0;
        stdin_pump();
        break;
    case AGENT_SIGNAL:
        sig = agent_get_u32(g_pay);
        if (sig == 0 || sig >= NSIG)
            send_text(AGENT_ERROR, EINVAL, "SIGNAL %u is not a signal", sig);
        else if (g.ex.pid > 0)
            kill_exec((int)sig);
        break;
    default: /* AGENT_QUIT; frame_ok() let nothing else through */ terminate(0);
    }
    return true;
}

/* One read per wakeup, so fd 0 never blocks us; assembles the next frame. */
static void read_input(void)
{
    bool in_hdr = g.hdr_got < AGENT_HDR_SIZE;
    ssize_t n = in_hdr ? read(STDIN_FILENO, g.hdr + g.hdr_got, AGENT_HDR_SIZE - g.hdr_got)
                       : read(STDIN_FILENO, g_pay + g.pay_got, g.h.len - g.pay_got);

    if (n == 0 && in_hdr && g.hdr_got == 0)
        terminate(0); /* EOF between frames: the host is done, same as QUIT */
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n < 0)
        terminate(1);
    if (n == 0)
        fatal("truncated frame");
    if (in_hdr)
        g.hdr_got += (size_t)n;
    else
        g.pay_got += (size_t)n;
    if (in_hdr && g.hdr_got == AGENT_HDR_SIZE &&
            (agent_hdr_decode(g.hdr, &g.h) < 0 || !frame_ok(&g.h)))
        fatal("malformed frame header (length, type or flags)");
    g.frame_ready = g.hdr_got == AGENT_HDR_SIZE && g.pay_got == g.h.len;
}

static int setup(void)
{
    sigset_t mask;
    struct sigaction sa;

    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* same-uid code must not open /proc/1/fd or ptrace us */
    if (fcntl(STDIN_FILENO, F_GETFD) < 0 || fcntl(STDOUT_FILENO, F_GETFD) < 0)
        return -1;
    if (fcntl(STDERR_FILENO, F_GETFD) < 0 && open("/dev/null", O_WRONLY | O_CLOEXEC) < 0)
        return -1; /* keeps a fresh pipe off fd 2, where dup2 would not clear CLOEXEC */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGXFSZ, &sa, NULL); /* a PUT over RLIMIT_FSIZE gets EFBIG, not death */
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    g.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    g.ws_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!getcwd(g.ws_path, sizeof g.ws_path))
        g.ws_path[0] = '\0';                                     /* FRESH then fails */
    g.tmp_fd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* may be missing */
    return g.sig_fd < 0 || g.ws_fd < 0 ? -1 : 0;
}

int main(void)
{
    g.put_fd = g.ws_fd = g.tmp_fd = g.sig_fd = g.relay_fd = g.zyg_fd = -1;
    g.prep.sock = g.prep.status_fd = g.prep.go_fd = -1;
    for (size_t i = 0; i < AGENT_RELAY_CONNS; i++)
        g_relay[i].fd[0] = g_relay[i].fd[1] = -1;
    exec_reset();
    g.pid1 = getpid() == 1;
    if (setup() < 0) {
        dprintf(STDERR_FILENO, "sbx-agent: cannot start: %s\n", strerror(errno));
        return 2;
    }
    send_u32(AGENT_READY, AGENT_PROTO_VERSION, (uint32_t)getpid(),
            (g.pid1 ? AGENT_READY_PID1 : 0) | AGENT_READY_FILTER, 3);
    for (;;) {
        struct pollfd pf[6 + 2 * AGENT_RELAY_CONNS];

        if (g.frame_ready && dispatch()) {
            g.frame_ready = false;
            g.hdr_got = g.pay_got = 0;
        }
        pf[0] = (struct pollfd){.fd = g.frame_ready ? -1 : STDIN_FILENO, .events = POLLIN};
        pf[1] = (struct pollfd){.fd = g.sig_fd, .events = POLLIN};
        pf[2] = (struct pollfd){.fd = g.ex.out_fd[0], .events = POLLIN};
        pf[3] = (struct pollfd){.fd = g.ex.out_fd[1], .events = POLLIN};
        pf[4] = (struct pollfd){.fd = g.ex.in_len > 0 ? g.ex.in_fd : -1, .events = POLLOUT};
        pf[5] = (struct pollfd){.fd = g.relay_fd, .events = POLLIN};
        for (size_t i = 0; i < AGENT_RELAY_CONNS; i++)
            for (int k = 0; k < 2; k++)
                pf[6 + 2 * i + (size_t)k] = (struct pollfd){
                        .fd = g_relay[i].fd[k], .events = relay_events(&g_relay[i], k)};
        if (poll(pf, sizeof pf / sizeof pf[0], -1) < 0) {
            if (errno == EINTR)
                continue;
            fatal("poll failed");
        }
        /* Output and stdin first: on_sigchld() may close and reuse these fds. */
        for (int i = 0; i < 2; i++) {
            if (pf[2 + i].revents)
                read_output(i);
        }
        if (pf[4].revents)
            stdin_pump();
        for (size_t i = 0; i < AGENT_RELAY_CONNS; i++) {
            short r0 = pf[6 + 2 * i].revents, r1 = pf[7 + 2 * i].revents;

            relay_step(&g_relay[i], 0, r0, r1);
            relay_step(&g_relay[i], 1, r1, r0);
        }
        if (pf[5].revents)
            relay_accept();
        if (pf[0].revents)
            read_input();
        if (pf[1].revents)
            on_sigchld();
    }
}
