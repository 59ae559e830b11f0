/* SPDX-License-Identifier: MIT */
/*
 * probe.c: find nsjail and pasta, check that this nsjail has what the
 * translation needs, and prove the backend works by opening and closing a
 * real box (a cgroup made and removed, the Kafel policy compiled by nsjail,
 * the agent started under it). Fills the capability report from what
 * actually worked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsjail.h"

/* nsjail has no version option; these options (and the configuration keys
 * behind them) arrived with nsjail 3.4, the oldest release we translate
 * for. */
static const char *const needed_options[] = {
        "--execute_fd",      /* exec_bin.exec_fd: the agent runs from an fd */
        "--symlink",         /* mount.is_symlink */
        "--rlimit_msgqueue", /* every rlimit, with its _type */
        "--disable_tsc",     /* configuration keys of the same release */
        "--nice_level",
        "--seccomp_policy",
};

static int check_options(struct nsjail_state *st, struct sbx_err *err)
{
    const struct sbx_host *h = st->h;
    const char *argv[] = {st->nsjail, "--help", NULL};
    char *out = malloc(65536);
    int status = 0, r;

    if (!out)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    r = h->run_capture(h, argv, 5000, out, 65536, &status, err);
    for (size_t i = 0; r == 0 && i < sizeof(needed_options) / sizeof(needed_options[0]); i++)
        if (!strstr(out, needed_options[i]))
            r = sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                    "%s lacks %s; llm-sandbox needs nsjail 3.4 or newer", st->nsjail,
                    needed_options[i]);
    free(out);
    return r;
}

int nsjail_probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    struct nsjail_state *st = state;
    const struct sbx_host *h = st->h;
    uint32_t uid, gid;
    char note[120];

    if (!jail_find_tool(h, "path", "nsjail", st->nsjail, sizeof(st->nsjail)))
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT,
                "nsjail not found%s%s (Debian has no package: scripts/install-deps.sh installs "
                "one, or set LLM_SANDBOX_NSJAIL_PATH)",
                st->nsjail[0] ? " at " : "", st->nsjail);
    if (check_options(st, err) < 0)
        return err->rc;
    jail_inspect_tops(&st->tops);
    jail_find_tool(h, "pasta", "pasta", st->pasta, sizeof(st->pasta));
    st->tun_ok = jail_tun_usable(h);
    h->sandbox_ids(h, &uid, &gid);
    nsjail_run_dir(h, uid, gid);
    if (jail_trial_box(&nsjail_ops, st, h, err) < 0)
        return err->rc;

    sbx_caps_set(caps, SBX_CTL_WALL_TIME, SBX_ENF_FULL,
            "core deadline, then SIGTERM to nsjail (SIGKILL of pid 1) and the cgroup");
    jail_common_caps(caps, st->pasta, st->tun_ok);
    sbx_caps_set(caps, SBX_CTL_READ_ONLY_SYSTEM, SBX_ENF_FULL,
            "read-only /usr binds, root tmpfs mounted read-only");
    sbx_caps_set(caps, SBX_CTL_ENV, SBX_ENF_FULL, "keep_env false: only the sandbox environment");
    sbx_caps_set(caps, SBX_CTL_SECCOMP, SBX_ENF_FULL,
            "the core's policy as Kafel (seccomp_policy_file)");
    sbx_caps_set(caps, SBX_CTL_NO_NEW_PRIVS, SBX_ENF_FULL,
            "nsjail: no_new_privs, no capabilities; new user, pid, ipc, uts, mount, cgroup, net "
            "ns");
    if (geteuid() == 0) {
        snprintf(note, sizeof(note), "root drops to the box's host uid (probe: %u) before nsjail",
                uid);
    } else {
        snprintf(note, sizeof(note), "runs as host uid %u", (unsigned)geteuid());
    }
    sbx_caps_set(caps, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL, note);
    h->cgroup_caps(h, caps);
    return 0;
}
