/* SPDX-License-Identifier: MIT */
/*
 * plugin_only.c: a plugin made from nothing but <llm-sandbox/plugin.h>, to
 * prove the ABI header stands alone and stays plain C11 and C++-clean
 * (STYLE L2, H1). tests/CMakeLists.txt compiles it with -std=c11
 * -Wpedantic -Werror and with g++ -std=c++17. It touches every struct,
 * enum, typedef and macro of the header; no other include, no designated
 * initialisers (C++17 lacks them), explicit casts from void *. Never built
 * into a library or run.
 */
#include <llm-sandbox/plugin.h>

struct demo_state {
    const struct sbx_host *host;
    struct sbx_caps caps;
};

struct demo_box {
    struct sbx_proc *proc;
    struct sbx_cgroup *cgroup;
    int fd;
};

static struct demo_state demo_state_storage;
static struct demo_box demo_box_storage;

/* The header brings no libc: copy a string by hand. */
static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t i = 0;

    for (; i + 1 < cap && src[i]; i++)
        dst[i] = src[i];
    dst[i] = '\0';
}

static int demo_fail(struct sbx_err *err, enum sbx_rc rc, const char *field, const char *msg)
{
    if (err->size < sizeof(struct sbx_err))
        return (int)rc;
    err->rc = (int32_t)rc;
    err->sys_errno = 0;
    copy_str(err->field, sizeof(err->field), field);
    copy_str(err->msg, sizeof(err->msg), msg);
    return (int)rc;
}

static int demo_init(
        const struct sbx_host *host, const char *name, void **ret_state, struct sbx_err *err)
{
    const char *path;

    if (host->size < sizeof(struct sbx_host) || host->abi_minor > 1000)
        return demo_fail(err, SBX_E_ABI, "", "host table too old");
    path = host->setting(host, "path");
    host->log(host, SBX_LOG_DEBUG, "init %s (path %s)", name, path ? path : "unset");
    demo_state_storage.host = host;
    *ret_state = &demo_state_storage;
    return SBX_OK;
}

static void demo_fini(void *state)
{
    struct demo_state *s = (struct demo_state *)state;

    s->host->log(s->host, SBX_LOG_INFO, "fini");
}

static int demo_probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    struct demo_state *s = (struct demo_state *)state;
    const char *const argv[] = {"true", NULL};
    char out[64];
    int status = 0, fd = -1;
    uint32_t uid = 0, gid = 0;

    if (caps->size < sizeof(struct sbx_caps))
        return demo_fail(err, SBX_E_ABI, "", "caps table too old");
    if (s->host->run_capture(s->host, argv, 1000, out, sizeof(out), &status, err) < 0)
        return demo_fail(err, SBX_E_UNAVAILABLE, "", "'true' did not run");
    if (s->host->seccomp_bpf_fd(s->host, &fd, err) < 0 ||
            s->host->memfd_new(s->host, "data", "x", 1, &fd, err) < 0 ||
            s->host->agent_fd(s->host, &fd, err) < 0)
        return err->rc;
    s->host->sandbox_ids(s->host, &uid, &gid);
    s->host->cgroup_caps(s->host, caps);
    for (int c = 0; c < SBX_CTL_COUNT && c < SBX_CTL_MAX; c++) {
        enum sbx_control ctl = (enum sbx_control)c;

        caps->level[ctl] = (uint8_t)(ctl == SBX_CTL_NET_HOST ? SBX_ENF_NONE : SBX_ENF_FULL);
        copy_str(caps->note[ctl], sizeof(caps->note[ctl]), "demo");
    }
    caps->level[SBX_CTL_MEMORY] = (uint8_t)SBX_ENF_FALLBACK;
    s->caps = *caps;
    return SBX_OK;
}

static int demo_box_open(
        void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    struct demo_state *s = (struct demo_state *)state;
    const struct sbx_host *h = s->host;
    const char *const argv[] = {"/bin/sh", "-c", "exec sbx-agent", NULL};
    struct sbx_fd_map extra[1];
    struct sbx_spawn sp;
    struct demo_box *box = &demo_box_storage;

    if (spec->size < sizeof(struct sbx_box_spec) || spec->policy->network != SBX_NET_OFF)
        return demo_fail(err, SBX_E_UNSUPPORTED, "network", "only network 'off'");
    if (spec->policy->wall_time_ms == 0 || spec->policy->memory_bytes == 0 ||
            spec->policy->cpu_millicores == 0 || spec->policy->pids_max == 0 ||
            spec->policy->output_bytes == 0 || spec->policy->file_size_bytes == 0 ||
            spec->policy->workspace_bytes == 0 || spec->policy->open_files_max == 0 ||
            spec->policy->read_only_system != 1 || spec->policy->reserved0 != 0 ||
            spec->policy->size < sizeof(struct sbx_policy))
        return demo_fail(err, SBX_E_INVALID, "policy", "unresolved policy");
    if (h->cgroup_new(h, spec->id, spec->policy, &box->cgroup, err) < 0)
        return err->rc;
    extra[0].parent_fd = spec->cancel_fd;
    extra[0].child_fd = 3;
    sp.size = (uint32_t)sizeof(sp);
    sp.flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG;
    sp.path = argv[0];
    sp.argv = argv;
    sp.envp = spec->envp;
    sp.stdin_fd = SBX_FD_PIPE;
    sp.stdout_fd = SBX_FD_PIPE;
    sp.stderr_fd = SBX_FD_NULL;
    sp.fds = extra;
    sp.n_fds = spec->cancel_fd >= 0 ? 1 : 0;
    sp.cgroup = box->cgroup;
    if (h->proc_spawn(h, &sp, &box->proc, err) < 0) {
        h->cgroup_free(box->cgroup);
        return err->rc;
    }
    h->log(h, SBX_LOG_INFO, "box %s for %s (image %s, %d ro paths, pid %d)", spec->id,
            spec->language, spec->image ? spec->image : "none",
            spec->ro_paths && spec->ro_paths[0] ? 1 : 0, h->proc_pid(box->proc));
    box->fd = h->proc_fd(box->proc, 1);
    (void)spec->reserved0;
    (void)spec->reserved1;
    (void)spec->flags; /* ABI 1.3 */
    (void)spec->reserved2;
    *ret_box = box;
    return SBX_OK;
}

static int demo_box_poll_fd(void *box)
{
    return ((struct demo_box *)box)->fd;
}

static int64_t demo_box_read(void *box, void *buf, size_t len)
{
    (void)box;
    (void)buf;
    (void)len;
    return 0;
}

static int64_t demo_box_write(void *box, const void *buf, size_t len)
{
    (void)box;
    (void)buf;
    return (int64_t)len;
}

static int demo_box_kill(void *box)
{
    struct demo_box *b = (struct demo_box *)box;

    if (b->cgroup)
        return demo_state_storage.host->cgroup_kill(b->cgroup);
    return demo_state_storage.host->proc_signal(b->proc, 9);
}

static int demo_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct demo_box *b = (struct demo_box *)box;
    const struct sbx_host *h = demo_state_storage.host;
    int status = 0;

    if (h->proc_wait(b->proc, -1, &status) < 0)
        return demo_fail(err, SBX_E_BACKEND, "", "wait failed");
    if (stats->size >= sizeof(struct sbx_box_stats)) {
        stats->oom_killed = h->cgroup_oom_killed(b->cgroup);
        stats->pids_limited = h->cgroup_pids_limited(b->cgroup);
        stats->reserved0 = 0;
    }
    h->proc_free(b->proc);
    h->cgroup_free(b->cgroup);
    return SBX_OK;
}

static int demo_check_library(void *state, const char *spec, struct sbx_err *err)
{
    (void)state;
    if (!spec[0])
        return demo_fail(err, SBX_E_INVALID, "libraries", "empty requirement");
    return SBX_OK;
}

static int demo_prepare(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
        struct sbx_plan *plan, struct sbx_err *err)
{
    (void)state;
    if (job->size < sizeof(struct sbx_lang_job) || ops->size < sizeof(struct sbx_plan_ops))
        return demo_fail(err, SBX_E_ABI, "", "tables too old");
    if (job->code_len > 0 && job->code[0] == 'p' && job->reserved0 == 0 && ops->reserved0 == 0)
        return ops->set_source_name(plan, "Main.demo");
    return ops->set_var(plan, "mode", "plain");
}

static const struct sbx_backend_ops demo_backend_ops = {(uint32_t)sizeof(struct sbx_backend_ops), 0,
        demo_probe, demo_box_open, demo_box_poll_fd, demo_box_read, demo_box_write,
        demo_box_poll_fd, demo_box_kill, demo_box_close, NULL};

static const struct sbx_language_ops demo_language_ops = {
        (uint32_t)sizeof(struct sbx_language_ops), 0, demo_check_library, demo_prepare, NULL};

static const char *const demo_backend_names[] = {"demo", "demo_alias", NULL};

static const struct sbx_plugin demo_descriptors[] = {
        {SBX_ABI_MAJOR, SBX_ABI_MINOR, (uint32_t)sizeof(struct sbx_plugin),
                (uint32_t)SBX_KIND_BACKEND, "demo", "0.1.0", demo_backend_names, demo_init,
                demo_fini, &demo_backend_ops, NULL},
        {SBX_ABI_MAJOR, SBX_ABI_MINOR, (uint32_t)sizeof(struct sbx_plugin),
                (uint32_t)SBX_KIND_LANGUAGE, "demo_lang", "0.1.0", NULL, NULL, NULL, NULL,
                &demo_language_ops},
};

/* The enums and macros a plugin may also need, all in one place. */
static const int demo_constants[] = {SBX_E_INVALID, SBX_E_UNSUPPORTED, SBX_E_UNAVAILABLE,
        SBX_E_BACKEND, SBX_E_LIMIT, SBX_E_ABI, SBX_E_NOMEM, SBX_E_CANCELLED, SBX_E_IO,
        SBX_E_INTERNAL, SBX_NET_REGISTRIES, SBX_NET_ALLOWLIST, SBX_NET_ON, SBX_NET_HOST,
        SBX_CTL_WALL_TIME, SBX_CTL_CPU, SBX_CTL_PIDS, SBX_CTL_OUTPUT, SBX_CTL_FILE_SIZE,
        SBX_CTL_WORKSPACE, SBX_CTL_NET_OFF, SBX_CTL_NET_REGISTRIES, SBX_CTL_NET_ALLOWLIST,
        SBX_CTL_NET_ON, SBX_CTL_READ_ONLY_SYSTEM, SBX_CTL_ENV, SBX_CTL_SECCOMP,
        SBX_CTL_NO_NEW_PRIVS, SBX_CTL_UNPRIVILEGED, SBX_LOG_ERROR, SBX_LOG_WARN,
        (int)sizeof(SBX_PLUGIN_ENTRY_SYMBOL)};

typedef char demo_ctl_fits[SBX_CTL_COUNT <= SBX_CTL_MAX ? 1 : -1];

SBX_PLUGIN_ENTRY
{
    static const sbx_plugin_entry_fn self = sbx_plugin_entry_v1;
    demo_ctl_fits fits;

    (void)self;
    (void)fits;
    return &demo_descriptors[demo_constants[0] == SBX_E_INVALID ? 0 : 1];
}

#ifdef __cplusplus
/* The entry point must have C linkage or the loader cannot find it: this
 * conflicts with the macro's declaration if that one has C++ linkage. */
extern "C" const struct sbx_plugin *sbx_plugin_entry_v1(void);
#endif
