/* SPDX-License-Identifier: MIT */
/*
 * run.c: open, watch and destroy one MXC box. Thin: the configuration comes
 * from translate.c, supervision from the core's host table. lxc-exec runs
 * through host->proc_spawn (so as the sandbox uid when the core is root, in
 * the run's cgroup, in a session of its own, killed if the core dies) with
 * the configuration in a memfd, never on its command line. MXC hands the
 * workload its own stdin and stdout, and the workload is the agent: those
 * two pipes are the box's channel; lxc-exec's stderr carries MXC's and the
 * agent's diagnostics. Nothing of a box is on the host's disk: its
 * workspace and /tmp are MXC's tmpfs, gone with its namespaces.
 *
 * Killing: SIGKILL to lxc-exec's process group (lxc-exec, its bwrap and
 * that one's child, pid 1 of the box's pid namespace: when it dies the
 * kernel kills everything in the namespace), only while lxc-exec is not
 * yet reaped, so the group's number cannot belong to anyone else; then
 * box_close awaits those processes (tree.c). And the run's cgroup, when
 * there is one.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mxc.h"

#define MAX_RO   64
#define MAX_ENV  1024
#define CONF_FD  3
#define CONF_ARG "/proc/self/fd/3"

struct mxc_box {
    struct jail_chan chan; /* first: the shared channel accessors use it */
    struct mxc_state *st;
    struct sbx_proc *proc;
    struct sbx_cgroup *cg;
    int pgid;             /* lxc-exec's pid: its session and process group */
    bool reaped;          /* lxc-exec has been waited for: pgid may be reused */
    struct mxc_tree tree; /* what a kill must await */
};

static const char *const linux_ro[] = {MXC_LINUX_RO_PATHS};

/* The paths of src that exist on this host (MXC binds readonlyPaths with
 * bwrap --ro-bind, which fails on a missing source). */
static size_t present(const char *const *src, size_t n, const char **out, size_t o)
{
    struct stat s;

    for (size_t i = 0; i < n && src && src[i] && o + 1 < MAX_RO; i++)
        if (stat(src[i], &s) == 0)
            out[o++] = src[i];
    out[o] = NULL;
    return o;
}

static size_t count(const char *const *v)
{
    size_t n = 0;

    while (v && v[n])
        n++;
    return n;
}

/* The configuration, in a memfd. */
static int config_fd(
        struct mxc_box *b, const struct sbx_box_spec *spec, int *ret_fd, struct sbx_err *err)
{
    const struct sbx_host *h = b->st->h;
    const char *ro[MAX_RO];
    struct json_object *conf;
    const char *text;
    size_t n;
    int r;

    n = present(linux_ro, sizeof(linux_ro) / sizeof(linux_ro[0]), ro, 0);
    present(spec->ro_paths, count(spec->ro_paths), ro, n);
    struct mxc_input in = {.policy = spec->policy,
            .target = MXC_TARGET_LINUX,
            .agent = b->st->agent,
            .uid = b->st->uid,
            .gid = b->st->gid,
            .config_fd = CONF_FD,
            .envp = spec->envp,
            .ro = ro};
    conf = mxc_translate(&in, err);
    if (!conf)
        return err->rc;
    text = json_object_to_json_string_ext(
            conf, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    r = text ? h->memfd_new(h, "mxc-config", text, strlen(text), ret_fd, err)
             : sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    json_object_put(conf);
    return r;
}

/* The agent's environment with PATH replaced: the executor finds bwrap on
 * PATH, so it gets ours, never one from the request's environment. */
static const char **executor_env(const struct mxc_state *st, const char *const *envp)
{
    size_t n = count(envp), o = 0;
    const char **env = n < MAX_ENV ? calloc(n + 2, sizeof(*env)) : NULL;

    if (!env)
        return NULL;
    env[o++] = st->path_env;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], "PATH=", 5) != 0)
            env[o++] = envp[i];
    env[o] = NULL;
    return env;
}

static int spawn_executor(struct mxc_box *b, const struct sbx_box_spec *spec, struct sbx_err *err)
{
    const struct sbx_host *h = b->st->h;
    const char *argv[] = {b->st->exe, "--config", CONF_ARG, NULL};
    const char **env = executor_env(b->st, spec->envp);
    int conf = -1, r;

    if (!env)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    r = config_fd(b, spec, &conf, err);
    if (r == 0) {
        struct sbx_fd_map map = {conf, CONF_FD};
        /* no_new_privs from the start: nothing of the box may gain a
         * privilege (a setuid bwrap would fail, and the probe say so) */
        struct sbx_spawn sp = {.size = sizeof(sp),
                .flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG | SBX_SPAWN_NO_NEW_PRIVS,
                .path = b->st->exe,
                .argv = argv,
                .envp = env,
                .stdin_fd = SBX_FD_PIPE,
                .stdout_fd = SBX_FD_PIPE,
                .stderr_fd = SBX_FD_PIPE,
                .fds = &map,
                .n_fds = 1,
                .cgroup = b->cg};

        r = h->proc_spawn(h, &sp, &b->proc, err);
        close(conf);
    }
    free(env);
    return r;
}

int mxc_box_open(void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    struct mxc_state *st = state;
    const struct sbx_host *h = st->h;
    struct mxc_box *b = calloc(1, sizeof(*b));
    int r;

    if (!b)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    b->st = st;
    b->chan.rfd = b->chan.wfd = b->chan.efd = -1;
    r = jail_cgroup_new(h, spec, &b->cg, err);
    if (r == 0)
        r = spawn_executor(b, spec, err);
    if (r < 0) {
        if (b->cg)
            h->cgroup_free(b->cg);
        free(b);
        return r;
    }
    b->pgid = h->proc_pid(b->proc);
    jail_chan_take(h, b->proc, &b->chan);
    *ret_box = b;
    return 0;
}

int mxc_box_kill(void *box)
{
    struct mxc_box *b = box;
    const struct sbx_host *h = b->st->h;

    if (!b->reaped && b->pgid > 0) {
        mxc_tree_watch(&b->tree, b->pgid);
        kill(-b->pgid, SIGKILL);
    }
    if (b->cg)
        h->cgroup_kill(b->cg);
    return 0;
}

/* Wait for lxc-exec (-1: forever); true once it has exited. */
static bool await_executor(struct mxc_box *b, int64_t timeout_ms, int *status)
{
    if (!b->reaped && b->st->h->proc_wait(b->proc, timeout_ms, status) == 1)
        b->reaped = true;
    return b->reaped;
}

int mxc_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct mxc_box *b = box;
    const struct sbx_host *h = b->st->h;
    char diag[200];
    int status = 0, r = 0;

    if (b->chan.wfd >= 0)
        close(b->chan.wfd); /* end of input: the agent kills its programs and exits */
    b->chan.wfd = -1;
    if (!await_executor(b, 2000, &status)) {
        mxc_box_kill(b);
        await_executor(b, -1, &status);
    }
    /* killed: the box's pid 1 exits only after every process of the box */
    mxc_tree_await(h, &b->tree, 5000);
    jail_read_diag(b->chan.efd, NULL, diag, sizeof(diag));
    if (diag[0])
        h->log(h, SBX_LOG_DEBUG, "lxc-exec exited with status %d: %s", status, diag);
    /* MXC's own failures (a bad configuration, bwrap's errors, its timeout)
     * end lxc-exec with a code of its own and say why on stderr */
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && diag[0])
        r = sbx_err_fill(err, SBX_E_BACKEND, 0, "lxc-exec: %s", diag);
    if (b->cg) {
        stats->oom_killed = h->cgroup_oom_killed(b->cg);
        stats->pids_limited = h->cgroup_pids_limited(b->cg);
        h->cgroup_free(b->cg); /* kills, and waits until the group is empty */
    }
    h->proc_free(b->proc);
    jail_chan_close(&b->chan);
    free(b);
    return r;
}
