/* SPDX-License-Identifier: MIT */
/*
 * probe.c: find bwrap and pasta, check versions, inspect the host's
 * merged-/usr layout, and prove the backend works by opening and closing a
 * real box (a cgroup made and removed, the agent started under seccomp).
 * Fills the capability report from what actually worked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bwrap.h"

/* "bubblewrap 0.8.0" -> 0.8.0 >= min? */
static bool version_at_least(const char *text, int maj, int min, int pat, char *ver, size_t len)
{
    const char *p = strstr(text, "bubblewrap ");
    int a = 0, b = 0, c = 0;

    if (!p || sscanf(p + 11, "%d.%d.%d", &a, &b, &c) < 2)
        return false;
    snprintf(ver, len, "%d.%d.%d", a, b, c);
    return a > maj || (a == maj && (b > min || (b == min && c >= pat)));
}

int bwrap_probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    struct bwrap_state *st = state;
    const struct sbx_host *h = st->h;
    char out[256], note[120];
    int status = 0;

    if (!jail_find_tool(h, "path", "bwrap", st->bwrap, sizeof(st->bwrap)))
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT,
                "bwrap not found%s%s (install Debian's bubblewrap package)",
                st->bwrap[0] ? " at " : "", st->bwrap);
    const char *argv[] = {st->bwrap, "--version", NULL};
    if (h->run_capture(h, argv, 5000, out, sizeof(out), &status, err) < 0)
        return err->rc;
    if (!version_at_least(out, 0, 8, 0, st->version, sizeof(st->version)))
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                "%s is '%.40s'; llm-sandbox needs bubblewrap 0.8.0 or newer", st->bwrap, out);
    jail_inspect_tops(&st->tops);
    jail_find_tool(h, "pasta", "pasta", st->pasta, sizeof(st->pasta));
    st->tun_ok = jail_tun_usable(h);
    if (jail_trial_box(&bwrap_ops, st, h, err) < 0)
        return err->rc;

    snprintf(note, sizeof(note), "bubblewrap %s: new user, pid, ipc, uts, mount, cgroup, net ns",
            st->version);
    sbx_caps_set(caps, SBX_CTL_WALL_TIME, SBX_ENF_FULL,
            "core deadline, then SIGKILL of the cgroup and pid 1");
    jail_common_caps(caps, st->pasta, st->tun_ok);
    sbx_caps_set(caps, SBX_CTL_READ_ONLY_SYSTEM, SBX_ENF_FULL,
            "read-only /usr binds, root tmpfs remounted read-only");
    sbx_caps_set(
            caps, SBX_CTL_ENV, SBX_ENF_FULL, "bwrap is executed with only the sandbox environment");
    sbx_caps_set(caps, SBX_CTL_SECCOMP, SBX_ENF_FULL, "bwrap --seccomp with the core's policy");
    sbx_caps_set(caps, SBX_CTL_NO_NEW_PRIVS, SBX_ENF_FULL, note);
    if (geteuid() == 0) {
        uint32_t uid, gid;

        h->sandbox_ids(h, &uid, &gid);
        snprintf(note, sizeof(note), "root drops to the box's host uid (probe: %u) before bwrap",
                uid);
        sbx_caps_set(caps, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL, note);
    } else {
        snprintf(note, sizeof(note), "runs as host uid %u", (unsigned)geteuid());
        sbx_caps_set(caps, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL, note);
    }
    h->cgroup_caps(h, caps);
    return 0;
}
