/* SPDX-License-Identifier: MIT */
/*
 * probe.c: find MXC's Linux executor (lxc-exec: never downloaded here;
 * scripts/mxc-executor.sh fetches it for the tests) and the bwrap it runs,
 * copy the agent where boxes can bind it (sweeping the copies of dead
 * instances), and prove the backend works by opening and closing a real box. Fills the capability
 * report from what MXC does and what the core adds around it (README.md's table).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mxc.h"

#if defined(__x86_64__)
#define MXC_ARCH "x64"
#elif defined(__aarch64__)
#define MXC_ARCH "arm64"
#else
#define MXC_ARCH "unsupported"
#endif

/* The setting `executor` (a path), else `bin_dir` (MXC's MXC_BIN_DIR
 * layout: <dir>/<arch>/lxc-exec), else lxc-exec in the default PATH. */
static int find_executor(struct mxc_state *st, struct sbx_err *err)
{
    const struct sbx_host *h = st->h;
    const char *dir = h->setting(h, "bin_dir");

    if (!h->setting(h, "executor") && dir) {
        snprintf(st->exe, sizeof(st->exe), "%s/" MXC_ARCH "/lxc-exec", dir);
        if (dir[0] == '/' && access(st->exe, X_OK) == 0)
            return 0;
    } else if (jail_find_tool(h, "executor", "lxc-exec", st->exe, sizeof(st->exe))) {
        return 0;
    }
    return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT,
            "MXC's executor not found%s%s: set LLM_SANDBOX_MXC_EXECUTOR to lxc-exec, or "
            "MXC_BIN_DIR to the directory holding " MXC_ARCH "/lxc-exec "
            "(scripts/mxc-executor.sh fetches @microsoft/mxc-sdk)",
            st->exe[0] ? " at " : "", st->exe);
}

static int find_tools(struct mxc_state *st, struct sbx_err *err)
{
    const struct sbx_host *h = st->h;
    const char *wd = h->setting(h, "work_dir");
    char *slash;
    struct stat s;

    if (find_executor(st, err) < 0)
        return err->rc;
    if (!jail_find_tool(h, "bwrap", "bwrap", st->bwrap, sizeof(st->bwrap)))
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT,
                "bwrap not found%s%s: MXC's Linux executor runs bubblewrap (Debian's bubblewrap "
                "package)",
                st->bwrap[0] ? " at " : "", st->bwrap);
    slash = strrchr(st->bwrap, '/');
    snprintf(st->path_env, sizeof(st->path_env), "PATH=%.*s%s", (int)(slash - st->bwrap), st->bwrap,
            strcmp(st->bwrap, "/usr/bin/bwrap") == 0 ? ":/bin" : ":/usr/bin:/bin");
    snprintf(st->work_dir, sizeof(st->work_dir), "%s", wd ? wd : "/var/tmp");
    if (st->work_dir[0] != '/' || stat(st->work_dir, &s) < 0 || !S_ISDIR(s.st_mode) ||
            access(st->work_dir, W_OK | X_OK) < 0)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, errno,
                "'%s' is not a writable directory for the agent's copy (setting "
                "LLM_SANDBOX_MXC_WORK_DIR)",
                st->work_dir);
    return 0;
}

static void report(const struct mxc_state *st, struct sbx_caps *caps)
{
    const struct sbx_host *h = st->h;
    char note[120];

    sbx_caps_set(caps, SBX_CTL_WALL_TIME, SBX_ENF_FULL,
            "core deadline, then SIGKILL of lxc-exec's process group (and the cgroup)");
    sbx_caps_set(caps, SBX_CTL_OUTPUT, SBX_ENF_FULL, "capped by the core while streaming");
    sbx_caps_set(caps, SBX_CTL_FILE_SIZE, SBX_ENF_FULL, "RLIMIT_FSIZE, set by the agent");
    sbx_caps_set(caps, SBX_CTL_WORKSPACE, SBX_ENF_NONE,
            "MXC's tmpfs (/workspace, /tmp) have no size of their own");
    sbx_caps_set(caps, SBX_CTL_NET_OFF, SBX_ENF_FULL,
            "MXC egress and ingress deny: bwrap's empty network namespace");
    sbx_caps_set(caps, SBX_CTL_NET_ON, SBX_ENF_NONE,
            "not offered: MXC's egress needs slirp4netns and filters by CIDR only");
    sbx_caps_set(caps, SBX_CTL_NET_HOST, SBX_ENF_NONE, "MXC has no host network mode");
    sbx_caps_set(caps, SBX_CTL_NET_REGISTRIES, SBX_ENF_NONE,
            "MXC binds host paths at their own path, not the proxy at " SBX_PROXY_SOCKET);
    sbx_caps_set(caps, SBX_CTL_NET_ALLOWLIST, SBX_ENF_NONE,
            "MXC binds host paths at their own path, not the proxy at " SBX_PROXY_SOCKET);
    sbx_caps_set(caps, SBX_CTL_HOST_MOUNTS, SBX_ENF_NONE,
            "MXC binds host paths at their own path, not at /deps");
    /* Host paths are read-only, but the box's own /, /etc and /dev are
     * MXC's writable, unsized tmpfs: not a read-only system. An operator
     * who accepts that sets SANDBOX_READ_ONLY=false. */
    sbx_caps_set(caps, SBX_CTL_READ_ONLY_SYSTEM, SBX_ENF_NONE,
            "host paths are read-only, but MXC's own /, /etc are writable, unsized tmpfs");
    sbx_caps_set(caps, SBX_CTL_ENV, SBX_ENF_FULL,
            "lxc-exec gets only the sandbox environment; MXC's env replaces the box's");
    sbx_caps_set(caps, SBX_CTL_SECCOMP, SBX_ENF_NONE, "MXC applies no seccomp filter");
    sbx_caps_set(caps, SBX_CTL_NO_NEW_PRIVS, SBX_ENF_FULL,
            "MXC's bwrap: no_new_privs, a user namespace without capabilities");
    if (geteuid() == 0)
        snprintf(note, sizeof(note), "root drops to host uid %u before lxc-exec", st->uid);
    else
        snprintf(note, sizeof(note), "runs as host uid %u", (unsigned)geteuid());
    sbx_caps_set(caps, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL, note);
    h->cgroup_caps(h, caps);
}

int mxc_probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    struct mxc_state *st = state;

    if (find_tools(st, err) < 0)
        return err->rc;
    if (geteuid() == 0) {
        st->h->sandbox_ids(st->h, &st->uid, &st->gid);
    } else {
        st->uid = (uint32_t)geteuid();
        st->gid = (uint32_t)getegid();
    }
    mxc_agent_sweep(st);
    if (!st->agent[0] && mxc_agent_make(st, err) < 0)
        return err->rc;
    if (jail_trial_box(&mxc_ops, st, st->h, err) < 0)
        return err->rc;
    report(st, caps);
    return 0;
}
