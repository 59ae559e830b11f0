/* SPDX-License-Identifier: MIT */
/*
 * probe.c: check, through the launcher, that the configured distribution
 * is installed (`wsl.exe -l -q`), is WSL version 2 (`-l -v`), has bwrap
 * 0.8.0 or newer and this build's opener (open.c), what limits the opener
 * can enforce there (--caps: the distribution's cgroup, or the rlimit
 * fallbacks; never the core's cgroup here), and that user namespaces work
 * in it (a real box opened and closed); each failure says what to do.
 * Fills the capability report from what worked, marking enforcement on
 * Windows unverified. Never runs
 * anything in the distribution through a shell.
 */
#ifdef _WIN32
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include <io.h>
#else
#include <dlfcn.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wsl2.h"
#include "wslframe.h"
#include "wslist.h"

#define LIST_BYTES 8192

static const char unverified[] = " (WSL2, unverified on Windows)";

#ifdef _WIN32
/* Windows: the first word as a Windows path (a drive or a UNC name), or
 * a bare name in the system directory (System32, where wsl.exe lives). */
static bool launcher_path(struct wsl2_state *st)
{
    const char *w = st->launcher[0];
    char sys[MAX_PATH];
    UINT n;

    if (strchr(w, '\\') || strchr(w, ':') || strchr(w, '/')) {
        snprintf(st->b.launcher, sizeof(st->b.launcher), "%s", w);
        return _access(st->b.launcher, 0) == 0;
    }
    n = GetSystemDirectoryA(sys, sizeof(sys));
    if (n == 0 || n >= sizeof(sys))
        return false;
    snprintf(st->b.launcher, sizeof(st->b.launcher), "%s\\%s", sys, w);
    return _access(st->b.launcher, 0) == 0;
}
#endif

/* The launcher setting split at spaces; its first word as an absolute
 * path (searched in the default PATH's directories when it has no '/';
 * on Windows, launcher_path above). */
static int find_launcher(struct wsl2_state *st, struct sbx_err *err)
{
    static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
    const struct sbx_host *h = st->b.h;
    const char *set = h->setting(h, "launcher");
    char *save = NULL, *w;
    size_t n = 0;

    snprintf(st->words, sizeof(st->words), "%s", set ? set : "wsl.exe");
    for (w = strtok_r(st->words, " \t", &save); w && n < WSL2_LAUNCHER_WORDS;
            w = strtok_r(NULL, " \t", &save))
        st->launcher[n++] = w;
    st->launcher[n] = NULL;
    if (n == 0 || w)
        return sbx_err_fill(err, SBX_E_INVALID, 0,
                "LLM_SANDBOX_WSL2_LAUNCHER must be 1 to %d words (default wsl.exe)",
                WSL2_LAUNCHER_WORDS);
#ifdef _WIN32
    (void)dirs;
    if (launcher_path(st))
        return 0;
#else
    if (strchr(st->launcher[0], '/')) {
        snprintf(st->b.launcher, sizeof(st->b.launcher), "%s", st->launcher[0]);
        if (st->launcher[0][0] == '/' && access(st->b.launcher, X_OK) == 0)
            return 0;
    } else {
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
            snprintf(st->b.launcher, sizeof(st->b.launcher), "%s/%s", dirs[i], st->launcher[0]);
            if (access(st->b.launcher, X_OK) == 0)
                return 0;
        }
    }
#endif
    return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT,
            "WSL launcher '%.100s' not found: run llm-sandbox on a Windows host with WSL "
            "installed (wsl --install), or set LLM_SANDBOX_WSL2_LAUNCHER to wsl.exe's path",
            st->launcher[0]);
}

/* Run the launcher with extra arguments (a NULL-terminated list); its
 * output, NUL-padded, in out. */
static int launch(struct wsl2_state *st, const char *const *extra, unsigned char *out, size_t len,
        int *ret_status, struct sbx_err *err)
{
    const char *argv[WSL2_LAUNCHER_WORDS + 16];
    size_t n = 0;

    for (const char *const *a = st->launcher; *a; a++, n++)
        argv[n] = n == 0 ? st->b.launcher : *a;
    for (const char *const *a = extra; *a && n + 1 < sizeof(argv) / sizeof(argv[0]); a++)
        argv[n++] = *a;
    argv[n] = NULL;
    memset(out, 0, len); /* UTF-16 holds NULs: the padding marks the end */
    return st->b.h->run_capture(st->b.h, argv, 30000, (char *)out, len, ret_status, err);
}

/* launch(), but as the boxes are launched (as the sandbox uid when the
 * core is root): what the opener may do in the distribution is what USER
 * may, and here under the stand-in USER is that uid. */
static int launch_as_box(struct wsl2_state *st, const char *const *extra, unsigned char *out,
        size_t len, int *ret_status, struct sbx_err *err)
{
    static const char *const env[] = {"PATH=/usr/bin:/bin", NULL};
    const struct sbx_host *h = st->b.h;
    const char *argv[WSL2_LAUNCHER_WORDS + 16];
    struct sbx_proc *p = NULL;
    size_t n = 0, got = 0;
    int fd;

    for (const char *const *a = st->launcher; *a; a++, n++)
        argv[n] = *a;
    for (const char *const *a = extra; *a && n + 1 < sizeof(argv) / sizeof(argv[0]); a++)
        argv[n++] = *a;
    argv[n] = NULL;
    memset(out, 0, len);
    struct sbx_spawn sp = {.size = sizeof(sp),
            .path = st->b.launcher,
            .argv = argv,
            .envp = env,
            .stdin_fd = SBX_FD_NULL,
            .stdout_fd = SBX_FD_PIPE,
            .stderr_fd = SBX_FD_NULL,
            .flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG};
    if (h->proc_spawn(h, &sp, &p, err) < 0)
        return err->rc;
    fd = h->proc_fd(p, 1);
    for (;;) { /* to its end: the opener prints three short lines and exits */
#ifdef _WIN32  /* the CRT counts in unsigned int; the buffer is 1 KiB */
        ssize_t r = _read(fd, out + got, (unsigned)(len - 1 - got));
#else
        ssize_t r = read(fd, out + got, len - 1 - got);
#endif

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (got += (size_t)r) + 1 >= len)
            break;
    }
    if (h->proc_wait(p, 30000, ret_status) != 1) {
        h->proc_free(p);
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ETIMEDOUT,
                "the WSL2 opener in '%s' did not answer --caps within 30 s", st->distro);
    }
    h->proc_free(p);
    return 0;
}

static int check_distro(struct wsl2_state *st, struct sbx_err *err)
{
    static const char *const list_q[] = {"-l", "-q", NULL};
    static const char *const list_v[] = {"-l", "-v", NULL};
    unsigned char *raw = malloc(LIST_BYTES);
    char *text = malloc(LIST_BYTES), names[200];
    int status = 0, r, v = 0;

    if (!raw || !text) {
        free(raw);
        free(text);
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    r = launch(st, list_q, raw, LIST_BYTES, &status, err);
    if (r == 0) {
        wsl_text_decode(raw, LIST_BYTES, text, LIST_BYTES);
        if (!wsl_list_has(text, st->distro)) {
            wsl_list_names(text, names, sizeof(names));
            r = sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                    "WSL distribution '%s' is not installed (wsl.exe -l -q lists: %s); install "
                    "it (wsl --install -d Debian) or set LLM_SANDBOX_WSL2_DISTRO to one listed",
                    st->distro, names[0] ? names : "none");
        }
    }
    if (r == 0)
        r = launch(st, list_v, raw, LIST_BYTES, &status, err);
    if (r == 0) {
        wsl_text_decode(raw, LIST_BYTES, text, LIST_BYTES);
        v = wsl_list_version(text, st->distro);
        if (v == 1)
            r = sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                    "WSL distribution '%s' is WSL version 1, which has no Linux kernel of its "
                    "own: convert it with 'wsl --set-version %s 2'",
                    st->distro, st->distro);
        else if (v != 2)
            r = sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                    "cannot read the WSL version of '%s' from 'wsl.exe -l -v' (update WSL: "
                    "wsl --update)",
                    st->distro);
    }
    free(raw);
    free(text);
    return r;
}

/* "bubblewrap 0.8.0" or newer inside the distribution. */
static int check_bwrap(struct wsl2_state *st, struct sbx_err *err)
{
    const char *const cmd[] = {"-d", st->distro, "-u", st->user, "--cd", "/", "--exec",
            st->wsl.bwrap, "--version", NULL};
    unsigned char out[256];
    int status = 0, a = 0, b = 0, c = 0;
    const char *p;

    if (launch(st, cmd, out, sizeof(out), &status, err) < 0)
        return err->rc;
    out[sizeof(out) - 1] = '\0';
    p = strstr((const char *)out, "bubblewrap ");
    if (status != 0 || !p || sscanf(p + 11, "%d.%d.%d", &a, &b, &c) < 2)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT,
                "no bwrap at %s in WSL distribution '%s' (it said '%.60s'): install it there "
                "(wsl -d %s -u root --exec apt-get install -y bubblewrap) or set "
                "LLM_SANDBOX_WSL2_BWRAP",
                st->wsl.bwrap, st->distro, (const char *)out, st->distro);
    snprintf(st->b.version, sizeof(st->b.version), "%d.%d.%d", a, b, c);
    if (a == 0 && b < 8)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                "bwrap in WSL distribution '%s' is %s; llm-sandbox needs bubblewrap 0.8.0 or "
                "newer (update the distribution, e.g. Debian 12 or Ubuntu 24.04)",
                st->distro, st->b.version);
    return 0;
}

#ifdef _WIN32
/* The opener's path in the distribution: the setting, else where Debian's
 * amd64 package puts it (this plugin's own path, on Windows, says nothing
 * of the distribution's). */
static int default_opener(struct wsl2_state *st, const char *set)
{
    snprintf(st->opener, sizeof(st->opener), "%s",
            set && *set ? set : "/usr/lib/x86_64-linux-gnu/llm-sandbox/plugins/wsl2-open");
    return 0;
}
#else
/* Something of ours to ask dladdr about (an object: ISO C has no cast
 * from a function pointer). */
static const char anchor;

/* The opener's path in the distribution: the setting, else where it lies
 * beside this plugin's library here (the same package installed there). */
static int default_opener(struct wsl2_state *st, const char *set)
{
    Dl_info info;
    const char *slash;

    if (set && *set) {
        snprintf(st->opener, sizeof(st->opener), "%s", set);
        return 0;
    }
    if (!dladdr(&anchor, &info) || !info.dli_fname || !(slash = strrchr(info.dli_fname, '/')) ||
            (size_t)(slash - info.dli_fname) + sizeof("/wsl2-open") > sizeof(st->opener))
        return -1;
    snprintf(st->opener, sizeof(st->opener), "%.*s/wsl2-open", (int)(slash - info.dli_fname),
            info.dli_fname);
    return 0;
}
#endif

/* The opener (open.c) in the distribution speaks this plugin's stream. */
static int check_opener(struct wsl2_state *st, struct sbx_err *err)
{
    const char *const cmd[] = {"-d", st->distro, "-u", st->user, "--cd", "/", "--exec",
            st->wsl.opener, "--version", NULL};
    char want[48];
    unsigned char out[256];
    int status = 0;

    if (launch(st, cmd, out, sizeof(out), &status, err) < 0)
        return err->rc;
    out[sizeof(out) - 1] = '\0';
    snprintf(want, sizeof(want), "wsl2-open stream %.7s", WSL_FRAME_MAGIC);
    if (status != 0 || !strstr((const char *)out, want))
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, ENOENT,
                "no llm-sandbox WSL2 opener at %s in WSL distribution '%s' speaking stream "
                "%.7s (it said '%.60s'): install this build's wsl2-open there (e.g. wsl -d "
                "%s -u root --exec install -D -m 0755 /mnt/c/PATH/wsl2-open %s) or set "
                "LLM_SANDBOX_WSL2_OPENER",
                st->wsl.opener, st->distro, WSL_FRAME_MAGIC, (const char *)out, st->distro,
                st->wsl.opener);
    return 0;
}

/* "NOTE in 'DISTRO'": the core's words, then where; a note too long is
 * cut at a UTF-8 boundary and ends in "..." before the distribution. */
static void note_in(char *out, size_t size, const char *distro, const char *note)
{
    char where[80];
    size_t w = (size_t)snprintf(where, sizeof(where), " in '%s'", distro), n = strlen(note);

    if (n + w >= size) {
        n = size - 1 - w - 3;
        while (n > 0 && ((unsigned char)note[n] & 0xC0) == 0x80)
            n--;
        snprintf(out, size, "%.*s...%s", (int)n, note, where);
    } else {
        snprintf(out, size, "%s%s", note, where);
    }
}

/* What the opener can enforce in the distribution (wsl2-open --caps: the
 * core's cgroup service run there, in its own words): memory, CPU and pids
 * into lim, each note naming the distribution; the boxes send the opener
 * their limits only when all three are held by a cgroup there. */
static int check_limits(struct wsl2_state *st, struct sbx_caps *lim, struct sbx_err *err)
{
    static const struct {
        enum sbx_control c;
        const char *name;
    } ctl[] = {{SBX_CTL_MEMORY, "memory"}, {SBX_CTL_CPU, "cpu"}, {SBX_CTL_PIDS, "pids"}};
    static const char *const level[] = {"none", "fallback", "full"};
    const char *const cmd[] = {"-d", st->distro, "-u", st->user, "--cd", "/", "--exec",
            st->wsl.opener, "--caps", NULL};
    unsigned char out[1024];
    int status = 0, seen = 0, full = 0;
    char *line, *save = NULL;

    if (launch_as_box(st, cmd, out, sizeof(out), &status, err) < 0)
        return err->rc;
    out[sizeof(out) - 1] = '\0';
    for (line = strtok_r((char *)out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        for (size_t i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++) {
            size_t n = strlen(ctl[i].name);

            if (strncmp(line, "caps ", 5) != 0 || strncmp(line + 5, ctl[i].name, n) != 0 ||
                    line[5 + n] != ' ')
                continue;
            for (int l = 0; l < 3; l++) {
                size_t m = strlen(level[l]);
                const char *note = line + 6 + n + m + 1;

                if (strncmp(line + 6 + n, level[l], m) != 0 || line[6 + n + m] != ' ')
                    continue;
                lim->level[ctl[i].c] = (uint8_t)l;
                note_in(lim->note[ctl[i].c], sizeof(lim->note[0]), st->distro, note);
                seen |= 1 << i;
                full += l == SBX_ENF_FULL;
            }
        }
    }
    if (status != 0 || seen != 7)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                "the WSL2 opener at %s in '%s' did not say what it can enforce (--caps: "
                "'%.60s'): install this build's wsl2-open there",
                st->wsl.opener, st->distro, (const char *)out);
    st->b.wsl_cgroup = full == 3;
    return 0;
}

/* The trial box failed: say what to do when user namespaces are the cause. */
static int trial_failed(const struct wsl2_state *st, struct sbx_err *err)
{
    char was[sizeof(err->msg)];

    if (!strstr(err->msg, "namespace") && !strstr(err->msg, "uid map") &&
            !strstr(err->msg, "Operation not permitted"))
        return err->rc;
    snprintf(was, sizeof(was), "%s", err->msg);
    return sbx_err_fill(err, SBX_E_UNAVAILABLE, err->sys_errno,
            "user namespaces do not work for '%s' in WSL distribution '%s' (%.90s): allow "
            "them there (sysctl kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu)",
            st->user, st->distro, was);
}

static void report(const struct wsl2_state *st, const struct sbx_caps *lim, struct sbx_caps *caps)
{
    const struct sbx_host *h = st->b.h;
    char note[120];

    sbx_caps_set(caps, SBX_CTL_WALL_TIME, SBX_ENF_FULL,
            "core deadline, then SIGKILL of the sandbox's pid 1 and the launcher");
    jail_common_caps(caps, "", false); /* pasta cannot join a namespace across wsl.exe */
    sbx_caps_set(caps, SBX_CTL_NET_ON, SBX_ENF_NONE,
            "not offered: pasta cannot attach to a namespace inside the distribution");
    snprintf(note, sizeof(note), "read-only binds of the distribution's /usr%s", unverified);
    sbx_caps_set(caps, SBX_CTL_READ_ONLY_SYSTEM, SBX_ENF_FULL, note);
    sbx_caps_set(caps, SBX_CTL_ENV, SBX_ENF_FULL,
            "bwrap --clearenv --setenv: only the sandbox environment, no WSL interop variables");
    snprintf(note, sizeof(note), "bwrap --seccomp with the core's policy (AF_VSOCK refused)%s",
            unverified);
    sbx_caps_set(caps, SBX_CTL_SECCOMP, SBX_ENF_FULL, note);
    snprintf(note, sizeof(note), "bubblewrap %s in '%.30s': user, pid, ipc, uts, mount, net ns",
            st->b.version, st->distro);
    sbx_caps_set(caps, SBX_CTL_NO_NEW_PRIVS, SBX_ENF_FULL, note);
    snprintf(note, sizeof(note), "runs as '%.32s' in the distribution%s", st->user, unverified);
    sbx_caps_set(caps, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL, note);
    /* the distribution's cgroup, or the agent's rlimits there: never the
     * core's cgroup here (h->cgroup_caps), which holds nothing of the box */
    (void)h;
    for (int c = 0; c < SBX_CTL_MAX; c++)
        if (c == SBX_CTL_MEMORY || c == SBX_CTL_CPU || c == SBX_CTL_PIDS) {
            caps->level[c] = lim->level[c];
            memcpy(caps->note[c], lim->note[c], sizeof(caps->note[c]));
        }
}

int wsl2_probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    struct wsl2_state *st = state;
    const struct sbx_host *h = st->b.h;
    const char *distro = h->setting(h, "distro"), *user = h->setting(h, "user");
    const char *bwrap = h->setting(h, "bwrap"), *opener = h->setting(h, "opener");
    struct sbx_caps lim = {.size = sizeof(lim)};

    if (!distro || !*distro)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                "no WSL distribution configured: set LLM_SANDBOX_WSL2_DISTRO to a WSL2 "
                "distribution ('wsl.exe -l -v' lists them)");
    if (!user || !*user || strcmp(user, "root") == 0)
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, 0,
                "no WSL user configured: set LLM_SANDBOX_WSL2_USER to an unprivileged user of "
                "WSL distribution '%.64s'",
                distro);
    snprintf(st->distro, sizeof(st->distro), "%s", distro);
    snprintf(st->user, sizeof(st->user), "%s", user);
    snprintf(st->b.bwrap, sizeof(st->b.bwrap), "%s", bwrap ? bwrap : "/usr/bin/bwrap");
    if (default_opener(st, opener) < 0 || st->opener[0] != '/')
        return sbx_err_fill(err, SBX_E_INVALID, 0,
                "set LLM_SANDBOX_WSL2_OPENER to wsl2-open's absolute path inside the "
                "distribution");
    st->wsl = (struct bwrap_wsl){.launcher = st->launcher,
            .distro = st->distro,
            .user = st->user,
            .opener = st->opener,
            .bwrap = st->b.bwrap};
    st->b.wsl = &st->wsl;
    st->b.pasta[0] = '\0';
    st->b.tun_ok = false;
    if (find_launcher(st, err) < 0 || check_distro(st, err) < 0 || check_bwrap(st, err) < 0 ||
            check_opener(st, err) < 0 || check_limits(st, &lim, err) < 0)
        return err->rc;
    /* The host's merged-/usr layout stands for the distribution's: the
     * same machine under the tests' launcher; on Windows, unverified. */
    jail_inspect_tops(&st->b.tops);
    if (jail_trial_box(&wsl2_ops, st, h, err) < 0)
        return trial_failed(st, err);
    report(st, &lim, caps);
    return 0;
}
