/* SPDX-License-Identifier: MIT */
/*
 * fakehost.c: the fake host table of fakehost.h. One at a time (the tests
 * run one after another). File descriptors it hands out are real (memfds
 * and pipes), so a runner's reads, writes and polls work as on a host;
 * the transcript names them by what they hold, not by number.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include "fakehost.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <llm-sandbox/plugin_kit.h>

#include "golden.h"

#define LABELS 32

struct sbx_proc {
    const char *name;
    int in_r, in_w, out_r, out_w, err_r, err_w; /* the launcher's ends, and ours */
    size_t waited;
    bool exited;
};

struct sbx_cgroup {
    char id[96];
};

static struct {
    struct sbx_host host;
    const struct fake_script *script;
    char *log;
    size_t len;
    struct {
        int fd;
        char what[32];
    } label[LABELS];
    size_t n_labels;
    char stdin_seen[4096];
    size_t stdin_len;
} fake;

SBX_PRINTF(1, 2)
static void say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    fake.log = realloc(fake.log, fake.len + (size_t)n + 2);
    assert_non_null(fake.log);
    memcpy(fake.log + fake.len, line, (size_t)n);
    fake.len += (size_t)n;
    fake.log[fake.len++] = '\n';
    fake.log[fake.len] = '\0';
}

static int labelled(int fd, const char *what)
{
    assert_true(fd >= 0 && fake.n_labels < LABELS);
    fake.label[fake.n_labels].fd = fd;
    snprintf(fake.label[fake.n_labels++].what, sizeof(fake.label[0].what), "%s", what);
    return fd;
}

/* What the runner handed on as fd: a memfd we made, or a pipe of its own. */
static const char *label_of(int fd)
{
    for (size_t i = fake.n_labels; i-- > 0;)
        if (fake.label[i].fd == fd)
            return fake.label[i].what;
    return "a pipe of the runner's";
}

static const char *sig_name(int sig)
{
    return sig == SIGKILL ? "SIGKILL" : sig == SIGTERM ? "SIGTERM" : "another signal";
}

static int memfd(const char *what, const void *data, size_t len)
{
    int fd = memfd_create(what, MFD_CLOEXEC);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    return labelled(fd, what);
}

static void f_log(const struct sbx_host *h, int level, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    (void)h;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (level <= SBX_LOG_WARN) /* debug lines carry pids and times */
        say("log %s: %s", level == SBX_LOG_WARN ? "warn" : "error", msg);
}

static int f_cgroup_new(const struct sbx_host *h, const char *id, const struct sbx_policy *pol,
        struct sbx_cgroup **ret_cg, struct sbx_err *err)
{
    struct sbx_cgroup *cg = calloc(1, sizeof(*cg));

    (void)h;
    (void)err;
    assert_non_null(cg);
    snprintf(cg->id, sizeof(cg->id), "%s", id);
    say("cgroup_new %s: memory %llu bytes, %llu pids", id, (unsigned long long)pol->memory_bytes,
            (unsigned long long)pol->pids_max);
    *ret_cg = cg;
    return 0;
}

static int f_cgroup_kill(struct sbx_cgroup *cg)
{
    say("cgroup_kill %s", cg->id);
    return 0;
}

static int f_cgroup_oom_killed(struct sbx_cgroup *cg)
{
    say("cgroup_oom_killed %s = %d", cg->id, fake.script->oom_killed);
    return fake.script->oom_killed;
}

static int f_cgroup_pids_limited(struct sbx_cgroup *cg)
{
    say("cgroup_pids_limited %s = %d", cg->id, fake.script->pids_limited);
    return fake.script->pids_limited;
}

static void f_cgroup_free(struct sbx_cgroup *cg)
{
    say("cgroup_free %s", cg->id);
    free(cg);
}

static int f_seccomp_bpf_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *err)
{
    (void)h;
    (void)err;
    say("seccomp_bpf_fd");
    *ret_fd = memfd("seccomp bpf", "bpf", 3);
    return 0;
}

static int f_seccomp_kafel_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *err)
{
    (void)h;
    (void)err;
    say("seccomp_kafel_fd");
    *ret_fd = memfd("seccomp kafel", "POLICY p {}", 11);
    return 0;
}

static int f_seccomp_zygote_bpf_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *err)
{
    (void)h;
    (void)err;
    say("seccomp_zygote_bpf_fd");
    *ret_fd = memfd("seccomp zygote bpf", "zbpf", 4);
    return 0;
}

static int f_seccomp_zygote_kafel_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *err)
{
    (void)h;
    (void)err;
    say("seccomp_zygote_kafel_fd");
    *ret_fd = memfd("seccomp zygote kafel", "POLICY z {}", 11);
    return 0;
}

static int f_agent_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *err)
{
    (void)h;
    say("agent_fd%s", fake.script->fail == FAKE_FAIL_AGENT_FD ? ": fails" : "");
    if (fake.script->fail == FAKE_FAIL_AGENT_FD)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT, "sbx-agent: not found");
    *ret_fd = memfd("agent", "\177ELF", 4);
    return 0;
}

static int f_memfd_new(const struct sbx_host *h, const char *name, const void *data, size_t len,
        int *ret_fd, struct sbx_err *err)
{
    (void)h;
    (void)err;
    say("memfd_new %s: %zu bytes", name, len);
    *ret_fd = memfd(name, data, len);
    return 0;
}

static void pipe_pair(int *r, int *w)
{
    int p[2];

    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    *r = p[0];
    *w = p[1];
}

static void put(int fd, const char *data)
{
    if (data)
        assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
}

static void spec_line(const struct sbx_spawn *sp)
{
    static const char *const std[] = {"stdin", "stdout", "stderr"};
    const int fds[] = {sp->stdin_fd, sp->stdout_fd, sp->stderr_fd};
    char buf[160] = "";
    size_t o = 0;

    for (int i = 0; i < 3; i++)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %s=%s", std[i],
                fds[i] == SBX_FD_PIPE   ? "pipe"
                : fds[i] == SBX_FD_NULL ? "null"
                                        : "fd");
    say("proc_spawn %s:%s%s%s%s, cgroup %s", sp->path, buf,
            sp->flags & SBX_SPAWN_DROP_PRIVS ? " drop_privs" : "",
            sp->flags & SBX_SPAWN_PDEATHSIG ? " pdeathsig" : "",
            sp->flags & SBX_SPAWN_NO_NEW_PRIVS ? " no_new_privs" : "",
            sp->cgroup ? sp->cgroup->id : "none");
}

static int f_proc_spawn(const struct sbx_host *h, const struct sbx_spawn *sp,
        struct sbx_proc **ret_proc, struct sbx_err *err)
{
    const struct fake_script *s = fake.script;
    struct sbx_proc *p;
    size_t argc = 0;

    (void)h;
    spec_line(sp);
    for (size_t i = 0; i < sp->n_fds; i++)
        say("  child fd %d: %s", sp->fds[i].child_fd, label_of(sp->fds[i].parent_fd));
    while (sp->argv[argc])
        argc++;
    say("  argv: %zu words, %s ... %s", argc, sp->argv[0], sp->argv[argc - 1]);
    if (s->fail == FAKE_FAIL_SPAWN)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT, "%s: not found", sp->path);
    p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->name = strrchr(sp->path, '/') ? strrchr(sp->path, '/') + 1 : sp->path;
    pipe_pair(&p->in_r, &p->in_w);
    pipe_pair(&p->out_r, &p->out_w);
    pipe_pair(&p->err_r, &p->err_w);
    put(p->out_w, s->agent_says);
    put(p->err_w, s->launcher_says);
    for (size_t i = 0; s->child_fd && i < sp->n_fds; i++)
        if (sp->fds[i].child_fd == s->child_fd)
            put(sp->fds[i].parent_fd, s->child_fd_data);
    *ret_proc = p;
    return 0;
}

static int f_proc_pid(const struct sbx_proc *p)
{
    (void)p;
    return 4242;
}

static int take(int *fd)
{
    int r = *fd;

    *fd = -1;
    return r;
}

static int f_proc_fd(struct sbx_proc *p, int child_fd)
{
    say("proc_fd %d", child_fd);
    return child_fd == 0 ? take(&p->in_w) : child_fd == 1 ? take(&p->out_r) : take(&p->err_r);
}

static int f_proc_signal(struct sbx_proc *p, int sig)
{
    say("proc_signal %s %s", p->name, sig_name(sig));
    return 0;
}

/* The launcher ends: the agent with it (its pid 1). */
static void launcher_exits(struct sbx_proc *p)
{
    ssize_t n;

    p->exited = true;
    if (fake.script->agent > 0)
        kill(fake.script->agent, SIGKILL);
    while ((n = read(p->in_r, fake.stdin_seen + fake.stdin_len,
                    sizeof(fake.stdin_seen) - 1 - fake.stdin_len)) > 0)
        fake.stdin_len += (size_t)n;
    fake.stdin_seen[fake.stdin_len] = '\0';
}

static int f_proc_wait(struct sbx_proc *p, int64_t timeout_ms, int *ret_status)
{
    const struct fake_script *s = fake.script;
    int r = p->exited || p->waited >= s->n_waits ? 1 : s->waits[p->waited];

    p->waited++;
    if (r == 1 && !p->exited)
        launcher_exits(p);
    if (r == 1 && ret_status)
        *ret_status = s->exit_status;
    say("proc_wait %s %lld ms = %s", p->name, (long long)timeout_ms,
            r == 1 ? "exited" : "still running");
    return r;
}

static void f_proc_free(struct sbx_proc *p)
{
    int *fds[6];

    if (!p)
        return;
    say("proc_free %s", p->name);
    fds[0] = &p->in_r, fds[1] = &p->in_w, fds[2] = &p->out_r;
    fds[3] = &p->out_w, fds[4] = &p->err_r, fds[5] = &p->err_w;
    for (int i = 0; i < 6; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    free(p);
}

const struct sbx_host *fake_host_new(const struct fake_script *script)
{
    memset(&fake, 0, sizeof(fake));
    fake.script = script;
    fake.host = (struct sbx_host){.size = sizeof(struct sbx_host),
            .abi_minor = SBX_ABI_MINOR,
            .log = f_log,
            .proc_spawn = f_proc_spawn,
            .proc_pid = f_proc_pid,
            .proc_fd = f_proc_fd,
            .proc_signal = f_proc_signal,
            .proc_wait = f_proc_wait,
            .proc_free = f_proc_free,
            .cgroup_new = f_cgroup_new,
            .cgroup_kill = f_cgroup_kill,
            .cgroup_oom_killed = f_cgroup_oom_killed,
            .cgroup_pids_limited = f_cgroup_pids_limited,
            .cgroup_free = f_cgroup_free,
            .seccomp_bpf_fd = f_seccomp_bpf_fd,
            .memfd_new = f_memfd_new,
            .agent_fd = f_agent_fd,
            .seccomp_kafel_fd = f_seccomp_kafel_fd,
            .seccomp_zygote_bpf_fd = f_seccomp_zygote_bpf_fd,
            .seccomp_zygote_kafel_fd = f_seccomp_zygote_kafel_fd};
    return &fake.host;
}

const char *fake_host_stdin(void)
{
    return fake.stdin_seen;
}

const char *fake_host_transcript(void)
{
    return fake.log ? fake.log : "";
}

void fake_host_free(void)
{
    free(fake.log);
    memset(&fake, 0, sizeof(fake));
}

void fake_host_check_golden(const char *name)
{
    golden_check("runner", name, "txt", fake_host_transcript());
}
