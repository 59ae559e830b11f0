/* SPDX-License-Identifier: MIT */
/*
 * host.c: the host table (struct sbx_host) the core lends each plugin, and
 * the lazy, once-per-process backend probe. Every service here delegates to
 * the module that owns the mechanism (exec.c, cgroup.c, seccomp.c); this
 * file only adapts types and converts errors to the ABI's struct sbx_err.
 * Nothing allocated here is freed by a plugin, or the reverse (STYLE E2).
 */
#include "plugins/host_table.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/log.h"
#include "host/cgroup.h"
#include "host/exec.h"
#include "host/owner.h"
#include "host/seccomp_policy.h"
#include "net/http.h"
#include "net/http_ws.h"
#include "plugins/manifest.h"
#include "plugins/plugin_settings.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"

struct sbx_proc {
    struct exec_proc *ep;
};

struct sbx_cgroup {
    struct cg_group *g;
};

static int host_proc_spawn(const struct sbx_host *h, const struct sbx_spawn *spec,
        struct sbx_proc **ret, struct sbx_err *perr)
{
    const struct settings *s = host_ctx_of(h)->rt->settings;
    struct sbx_error *e = NULL;
    struct exec_ctx ctx = {.uid = s->sandbox_uid, .gid = s->sandbox_gid};
    struct sbx_proc *p;

    if (spec->cgroup)
        ctx.cgroup = spec->cgroup->g;
    if (SBX_HAS_FIELD(struct sbx_spawn, spec, gid) && (spec->uid || spec->gid)) {
        /* a box's own ids (ABI 1.5): never root's */
        if (!spec->uid || !spec->gid)
            return sbx_err_fill(perr, SBX_E_INVALID, 0, "spawn: uid %u and gid %u must both be set",
                    spec->uid, spec->gid);
        ctx.uid = spec->uid;
        ctx.gid = spec->gid;
    }
    p = calloc(1, sizeof(*p));
    if (!p)
        return sbx_err_fill(perr, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (exec_spawn(spec, &ctx, &p->ep, &e) < 0) {
        free(p);
        return host_ctx_error(perr, e);
    }
    *ret = p;
    return 0;
}

static int host_proc_pid(const struct sbx_proc *p)
{
    return (int)exec_proc_pid(p->ep);
}

static int host_proc_fd(struct sbx_proc *p, int child_fd)
{
    return exec_proc_take_fd(p->ep, child_fd);
}

static int host_proc_signal(struct sbx_proc *p, int sig)
{
    return exec_proc_signal(p->ep, sig);
}

static int host_proc_wait(struct sbx_proc *p, int64_t timeout_ms, int *ret_status)
{
    return exec_proc_wait(p->ep, timeout_ms, ret_status);
}

static void host_proc_free(struct sbx_proc *p)
{
    if (p) {
        exec_proc_free(p->ep);
        free(p);
    }
}

static int host_run_capture(const struct sbx_host *h, const char *const *argv, int64_t timeout_ms,
        char *out, size_t out_len, int *ret_status, struct sbx_err *perr)
{
    struct sbx_error *e = NULL;

    (void)h;
    if (exec_capture(argv, timeout_ms, out, out_len, ret_status, &e) < 0)
        return host_ctx_error(perr, e);
    return 0;
}

static int host_cgroup_new(const struct sbx_host *h, const char *id, const struct sbx_policy *pol,
        struct sbx_cgroup **ret, struct sbx_err *perr)
{
    struct cg_service *svc = host_ctx_of(h)->rt->cg;
    struct sbx_error *e = NULL;
    struct sbx_cgroup *cg;

    if (!svc || cg_service_mode(svc) == CG_NONE)
        return sbx_err_fill(perr, SBX_E_UNAVAILABLE, 0, "%s",
                svc ? cg_service_describe(svc) : "cgroups are disabled");
    cg = calloc(1, sizeof(*cg));
    if (!cg)
        return sbx_err_fill(perr, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (cg_group_new(svc, id, pol, &cg->g, &e) < 0) {
        free(cg);
        return host_ctx_error(perr, e);
    }
    *ret = cg;
    return 0;
}

static int host_cgroup_kill(struct sbx_cgroup *cg)
{
    return cg_group_kill(cg->g);
}

static int host_cgroup_oom_killed(struct sbx_cgroup *cg)
{
    return cg_group_oom_killed(cg->g);
}

static int host_cgroup_pids_limited(struct sbx_cgroup *cg)
{
    return cg_group_pids_limited(cg->g);
}

static void host_cgroup_free(struct sbx_cgroup *cg)
{
    if (cg) {
        cg_group_free(cg->g);
        free(cg);
    }
}

static void host_cgroup_caps(const struct sbx_host *h, struct sbx_caps *caps)
{
    cg_service_caps(host_ctx_of(h)->rt->cg, caps);
}

static int memfd_with(
        const char *name, const void *data, size_t len, int *ret_fd, struct sbx_err *perr)
{
    cleanup_close int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    const char *p = data;
    size_t left = len;

    if (fd < 0)
        return sbx_err_fill(perr, SBX_E_IO, errno, "memfd_create: %s", strerror(errno));
    while (left > 0) {
        ssize_t n = write(fd, p, left);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return sbx_err_fill(perr, SBX_E_IO, errno, "memfd write: %s", strerror(errno));
        p += n;
        left -= (size_t)n;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
            lseek(fd, 0, SEEK_SET) < 0)
        return sbx_err_fill(perr, SBX_E_IO, errno, "memfd seal: %s", strerror(errno));
    *ret_fd = steal_fd(&fd);
    return 0;
}

static int host_memfd_new(const struct sbx_host *h, const char *name, const void *data, size_t len,
        int *ret_fd, struct sbx_err *perr)
{
    (void)h;
    return memfd_with(name, data, len, ret_fd, perr);
}

static int host_seccomp_bpf_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *perr)
{
    struct sbx_error *e = NULL;
    const void *bpf;
    size_t len;

    (void)h;
    if (seccomp_bpf_get(&bpf, &len, &e) < 0)
        return host_ctx_error(perr, e);
    return memfd_with("sbx-seccomp", bpf, len, ret_fd, perr);
}

static int host_seccomp_zygote_bpf_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *perr)
{
    struct sbx_error *e = NULL;
    const void *bpf;
    size_t len;

    (void)h;
    if (seccomp_zygote_bpf_get(&bpf, &len, &e) < 0)
        return host_ctx_error(perr, e);
    return memfd_with("sbx-seccomp-zygote", bpf, len, ret_fd, perr);
}

static int host_seccomp_kafel_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *perr)
{
    struct sbx_error *e = NULL;
    const char *text;

    (void)h;
    if (seccomp_kafel_get(&text, &e) < 0)
        return host_ctx_error(perr, e);
    return memfd_with("sbx-seccomp-kafel", text, strlen(text), ret_fd, perr);
}

static int host_seccomp_zygote_kafel_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *perr)
{
    struct sbx_error *e = NULL;
    const char *text;

    (void)h;
    if (seccomp_zygote_kafel_get(&text, &e) < 0)
        return host_ctx_error(perr, e);
    return memfd_with("sbx-seccomp-zygote-kafel", text, strlen(text), ret_fd, perr);
}

static int host_agent_fd(const struct sbx_host *h, int *ret_fd, struct sbx_err *perr)
{
    const char *path = host_ctx_of(h)->rt->agent_path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return sbx_err_fill(perr, SBX_E_UNAVAILABLE, errno,
                "the sandbox agent %s cannot be opened: %s (is llm-sandbox installed whole?)", path,
                strerror(errno));
    *ret_fd = fd;
    return 0;
}

static int host_http_request(const struct sbx_host *h, const struct sbx_http *req,
        struct sbx_http_resp *resp, struct sbx_err *perr)
{
    (void)h;
    return http_request(req, resp, perr);
}

static int host_http_upgrade(const struct sbx_host *h, const struct sbx_http *req,
        struct sbx_conn **ret_conn, struct sbx_err *perr)
{
    (void)h;
    return http_upgrade(req, ret_conn, perr);
}

static int host_ws_open(const struct sbx_host *h, const struct sbx_http *req,
        const char *const *protocols, struct sbx_ws **ret_ws, struct sbx_err *perr)
{
    (void)h;
    return http_ws_open(req, protocols, ret_ws, perr);
}

/* The agent's SHA-256, read once: it does not change while we run. */
static pthread_mutex_t agent_sum_lock = PTHREAD_MUTEX_INITIALIZER;
static char agent_sum[65];

static int host_agent_sha256(const struct sbx_host *h, char ret_hex[65], struct sbx_err *perr)
{
    struct sha256_ctx md;
    uint8_t dig[SHA256_DIGEST_SIZE], buf[65536];
    cleanup_close int fd = -1;
    ssize_t n;
    int r = 0;

    pthread_mutex_lock(&agent_sum_lock);
    if (!agent_sum[0] && (r = host_agent_fd(h, &fd, perr)) == 0) {
        sha256_init(&md);
        while ((n = read(fd, buf, sizeof(buf))) > 0)
            sha256_update(&md, (size_t)n, buf);
        if (n < 0)
            r = sbx_err_fill(
                    perr, SBX_E_IO, errno, "reading the sandbox agent: %s", strerror(errno));
        sha256_digest(&md, sizeof(dig), dig);
        for (int i = 0; r == 0 && i < SHA256_DIGEST_SIZE; i++)
            snprintf(agent_sum + 2 * i, 3, "%02x", dig[i]);
    }
    if (r == 0)
        memcpy(ret_hex, agent_sum, sizeof(agent_sum));
    pthread_mutex_unlock(&agent_sum_lock);
    return r;
}

static int host_instance_dead(const struct sbx_host *h, const char *name)
{
    char mine[OWNER_SCOPE_LEN + 1];
    struct owner o;

    (void)h;
    if (!name || owner_parse(name, &o) == 0)
        return 0;
    owner_scope(mine);
    return owner_dead(&o, mine) ? 1 : 0;
}

/* The expanded policy in the ABI's terms, made once per process. */
static pthread_once_t rules_once = PTHREAD_ONCE_INIT;
static struct sbx_seccomp_rules rules_abi;
static int rules_rc;
static char rules_msg[256];

static void rules_build(void)
{
    const char *text = seccomp_policy_text();
    struct seccomp_policy *p = NULL;
    struct seccomp_flat *f = NULL;
    struct sbx_seccomp_rule *out = NULL;
    struct sbx_error *e = NULL;

    rules_rc = seccomp_policy_parse(text, strlen(text), &p, &e);
    if (rules_rc == 0)
        rules_rc = seccomp_policy_expand(p, &f, &e);
    if (rules_rc == 0 && !(out = calloc(f->n_rules ? f->n_rules : 1, sizeof(*out))))
        rules_rc = sbx_error_set(&e, SBX_E_NOMEM, ENOMEM, "out of memory");
    for (size_t i = 0; rules_rc == 0 && i < f->n_rules; i++) {
        const struct seccomp_flat_rule *r = &f->rules[i];

        memcpy(out[i].name, r->name, sizeof(out[i].name));
        out[i].errno_value = r->action == SECCOMP_RULE_ERRNO ? r->errno_value : 0;
        out[i].n_conds = (uint32_t)r->n_atoms;
        for (size_t j = 0; j < r->n_atoms; j++)
            out[i].conds[j] = (struct sbx_seccomp_cond){
                    .arg = r->atoms[j].arg, .mask = r->atoms[j].mask, .value = r->atoms[j].value};
    }
    if (rules_rc == 0)
        rules_abi = (struct sbx_seccomp_rules){.size = sizeof(rules_abi),
                .default_errno = ENOSYS,
                .rules = out,
                .n_rules = f->n_rules};
    else
        snprintf(rules_msg, sizeof(rules_msg), "%s", e ? e->msg : "failed without a message");
    seccomp_flat_free(f);
    seccomp_policy_free(p);
    sbx_error_free(e);
}

static int host_seccomp_rules(
        const struct sbx_host *h, const struct sbx_seccomp_rules **ret, struct sbx_err *perr)
{
    (void)h;
    pthread_once(&rules_once, rules_build);
    if (rules_rc < 0)
        return sbx_err_fill(perr, rules_rc, 0, "built-in seccomp policy: %s", rules_msg);
    *ret = &rules_abi;
    return 0;
}

void host_init(struct host_ctx *hc, struct sbx_runtime *rt, struct plugin *pl)
{
    hc->rt = rt;
    hc->plugin = pl;
    hc->host = (struct sbx_host){
            .size = sizeof(struct sbx_host),
            .abi_minor = SBX_ABI_MINOR,
            .log = host_ctx_log,
            .setting = host_ctx_setting,
            .proc_spawn = host_proc_spawn,
            .proc_pid = host_proc_pid,
            .proc_fd = host_proc_fd,
            .proc_signal = host_proc_signal,
            .proc_wait = host_proc_wait,
            .proc_free = host_proc_free,
            .run_capture = host_run_capture,
            .cgroup_new = host_cgroup_new,
            .cgroup_kill = host_cgroup_kill,
            .cgroup_oom_killed = host_cgroup_oom_killed,
            .cgroup_pids_limited = host_cgroup_pids_limited,
            .cgroup_free = host_cgroup_free,
            .cgroup_caps = host_cgroup_caps,
            .seccomp_bpf_fd = host_seccomp_bpf_fd,
            .memfd_new = host_memfd_new,
            .agent_fd = host_agent_fd,
            .sandbox_ids = host_ctx_sandbox_ids,
            .instance_id = host_ctx_instance_id,
            .seccomp_kafel_fd = host_seccomp_kafel_fd,
            .http_request = host_http_request,
            .http_upgrade = host_http_upgrade,
            .conn_fd = http_conn_fd,
            .conn_read = http_conn_read,
            .conn_write = http_conn_write,
            .conn_shutdown_write = http_conn_shutdown_write,
            .conn_free = http_conn_free,
            .seccomp_rules = host_seccomp_rules,
            .ws_open = host_ws_open,
            .ws_protocol = http_ws_protocol,
            .ws_fd = http_ws_fd,
            .ws_recv = http_ws_recv,
            .ws_send = http_ws_send,
            .ws_close = http_ws_close,
            .ws_close_status = http_ws_close_status,
            .ws_free = http_ws_free,
            .agent_sha256 = host_agent_sha256,
            .instance_dead = host_instance_dead,
            .seccomp_zygote_bpf_fd = host_seccomp_zygote_bpf_fd,
            .seccomp_zygote_kafel_fd = host_seccomp_zygote_kafel_fd,
    };
}

/* A backend that applies no seccomp policy of its own, or a weaker one
 * (a platform's default profile), still gets ours: the agent installs it
 * in each program's child just before execve (proto.h's FILTER). Our
 * policy compiles here (the BPF is cached), or the control stays as the
 * backend said, and a run that needs it is refused. */
void host_probe_caps(struct plugin *pl)
{
    struct sbx_error *e = NULL;
    const void *bpf;
    size_t len;

    if (pl->caps.level[SBX_CTL_SECCOMP] == SBX_ENF_FULL)
        return;
    if (seccomp_bpf_get(&bpf, &len, &e) < 0) {
        snprintf(pl->caps.note[SBX_CTL_SECCOMP], sizeof(pl->caps.note[0]),
                "the core's policy does not compile here: %.70s", e->msg);
        sbx_error_free(e);
        return;
    }
    pl->agent_filter = true;
    pl->caps.level[SBX_CTL_SECCOMP] = SBX_ENF_FULL;
    snprintf(pl->caps.note[SBX_CTL_SECCOMP], sizeof(pl->caps.note[0]),
            "the core's policy, applied by the sandbox agent before exec (with no_new_privs)");
}
