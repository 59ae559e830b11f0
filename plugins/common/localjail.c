/* SPDX-License-Identifier: MIT */
/*
 * localjail.c: see localjail.h.
 */
#include "localjail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
/* The WSL2 plugin's Windows build uses what here is not Linux's own: the
 * translators' input, the trial box, the common capabilities. */
/* clang-format off */
#include <windows.h>
/* clang-format on */
#else
#include <linux/nsfs.h>
#include <poll.h>
#include <sys/ioctl.h>
#endif

#ifndef _WIN32
/* The default PATH's directories: plugins do not read the environment
 * (STYLE I3), so a tool elsewhere is named by its setting. */
static const char *const tool_dirs[] = {
        "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"};

static bool in_dir(const char *dir, size_t dir_len, const char *name, char *out, size_t len)
{
    int n = snprintf(out, len, "%.*s/%s", (int)dir_len, dir, name);

    return n > 0 && (size_t)n < len && out[0] == '/' && access(out, X_OK) == 0;
}

bool jail_find_tool(
        const struct sbx_host *h, const char *setting, const char *name, char *out, size_t len)
{
    const char *v = h->setting(h, setting);

    if (v) {
        snprintf(out, len, "%s", v);
        return v[0] == '/' && access(v, X_OK) == 0;
    }
    for (size_t i = 0; i < sizeof(tool_dirs) / sizeof(tool_dirs[0]); i++)
        if (in_dir(tool_dirs[i], strlen(tool_dirs[i]), name, out, len))
            return true;
    out[0] = '\0';
    return false;
}

#endif

#ifdef _WIN32
/* From Windows the distribution's root cannot be looked at: the merged-/usr
 * layout every distribution WSL2 offers now has (Debian 12, Ubuntu 22.04
 * and later); unverified for others. */
void jail_inspect_tops(struct jail_tops *t)
{
    static const char *const merged[][2] = {{"/bin", "usr/bin"}, {"/sbin", "usr/sbin"},
            {"/lib", "usr/lib"}, {"/lib64", "usr/lib64"}};

    t->n = 0;
    for (size_t i = 0; i < sizeof(merged) / sizeof(merged[0]); i++, t->n++) {
        snprintf(t->store[i][0], sizeof(t->store[i][0]), "%s", merged[i][0]);
        snprintf(t->store[i][1], sizeof(t->store[i][1]), "%s", merged[i][1]);
        t->top[i].name = t->store[i][0];
        t->top[i].target = t->store[i][1];
    }
}
#else
void jail_inspect_tops(struct jail_tops *t)
{
    static const char *const names[] = {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"};
    struct stat s;

    t->n = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char(*slot)[32] = t->store[t->n];
        ssize_t n;

        if (lstat(names[i], &s) < 0)
            continue;
        snprintf(slot[0], sizeof(slot[0]), "%s", names[i]);
        t->top[t->n].name = slot[0];
        t->top[t->n].target = NULL;
        if (S_ISLNK(s.st_mode)) {
            n = readlink(names[i], slot[1], sizeof(slot[1]) - 1);
            if (n <= 0)
                continue;
            slot[1][n] = '\0';
            t->top[t->n].target = slot[1];
        } else if (!S_ISDIR(s.st_mode)) {
            continue;
        }
        t->n++;
    }
}

bool jail_tun_usable(const struct sbx_host *h)
{
    uint32_t uid, gid;
    struct stat s;

    if (stat("/dev/net/tun", &s) < 0 || !S_ISCHR(s.st_mode))
        return false;
    h->sandbox_ids(h, &uid, &gid);
    if (geteuid() != 0)
        return access("/dev/net/tun", R_OK | W_OK) == 0;
    return (s.st_mode & 0006) == 0006 || (s.st_uid == uid && (s.st_mode & 0600) == 0600) ||
           (s.st_gid == gid && (s.st_mode & 0060) == 0060);
}

/* True once the namespace has a default route (pasta configured it). */
static bool ns_has_route(int pid)
{
    char path[64], buf[512];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/net/route", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    return n > 0 && memchr(buf, '\n', (size_t)n) != NULL &&
           strchr(buf, '\n') + 1 < buf + n; /* a line after the header */
}

#endif

/*
 * The jail may put the sandbox in a user namespace nested inside the one
 * that owns the network namespace, so pasta is given the owner
 * (NS_GET_USERNS) explicitly. This pasta has no readiness notification in
 * the foreground, so we watch for the route it installs: a bounded poll
 * (at most 5 s), the one deliberate wait-by-polling of the local jails.
 */
void jail_spawn_ids(const struct sbx_box_spec *spec, struct sbx_spawn *sp)
{
    if (SBX_HAS_FIELD(struct sbx_box_spec, spec, host_gid) && spec->host_uid && spec->host_gid) {
        sp->uid = spec->host_uid;
        sp->gid = spec->host_gid;
    }
}

#ifndef _WIN32
int jail_attach_pasta(const struct sbx_host *h, const char *pasta, int pid,
        const struct sbx_box_spec *spec, struct sbx_cgroup *cg, struct sbx_proc **ret_pasta,
        struct sbx_err *err)
{
    char path[64];
    int netns, userns, r;
    struct timespec ts = {0, 2000000};

    snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
    netns = open(path, O_RDONLY | O_CLOEXEC);
    userns = netns < 0 ? -1 : ioctl(netns, NS_GET_USERNS);
    if (userns < 0) {
        r = errno;
        if (netns >= 0)
            close(netns);
        return sbx_err_fill(
                err, SBX_E_BACKEND, r, "cannot open the sandbox's namespaces: %s", strerror(r));
    }
    const char *argv[] = {pasta, "--config-net", "--foreground", "--quiet", "-t", "none", "-u",
            "none", "-T", "none", "-U", "none", "--no-map-gw", "--userns", "/proc/self/fd/3",
            "--netns", "/proc/self/fd/4", NULL};
    struct sbx_fd_map map[] = {{userns, 3}, {netns, 4}};
    struct sbx_spawn sp = {.size = sizeof(sp),
            .path = pasta,
            .argv = argv,
            .envp = spec->envp,
            .stdin_fd = SBX_FD_NULL,
            .stdout_fd = SBX_FD_NULL,
            .stderr_fd = SBX_FD_NULL,
            .fds = map,
            .n_fds = 2,
            .cgroup = cg,
            .flags = SBX_SPAWN_DROP_PRIVS | SBX_SPAWN_PDEATHSIG};

    jail_spawn_ids(spec, &sp); /* the owner of the box's user namespace */
    r = h->proc_spawn(h, &sp, ret_pasta, err);
    close(netns);
    close(userns);
    if (r < 0)
        return r;
    for (int i = 0; i < 2500 && !ns_has_route(pid); i++) {
        if (h->proc_wait(*ret_pasta, 0, NULL) == 1)
            return sbx_err_fill(err, SBX_E_BACKEND, 0, "pasta exited while attaching");
        nanosleep(&ts, NULL);
    }
    if (!ns_has_route(pid))
        return sbx_err_fill(err, SBX_E_BACKEND, ETIMEDOUT, "pasta did not configure the network");
    return 0;
}

#endif

int jail_trial_box(const struct sbx_backend_ops *ops, void *state, const struct sbx_host *h,
        struct sbx_err *err)
{
    static const char *const env[] = {"PATH=/usr/bin:/bin", NULL};
    struct sbx_policy pol = {.size = sizeof(pol),
            .network = SBX_NET_OFF,
            .wall_time_ms = 5000,
            .memory_bytes = 64u << 20,
            .cpu_millicores = 1000,
            .pids_max = 16,
            .output_bytes = 4096,
            .file_size_bytes = 1u << 20,
            .workspace_bytes = 1u << 20,
            .tmpfs_bytes = 1u << 20,
            .open_files_max = 64,
            .read_only_system = 1};
    struct sbx_box_spec spec = {.size = sizeof(spec),
            .policy = &pol,
            .language = "probe",
            .envp = env,
            .cancel_fd = -1};
    struct sbx_box_stats stats = {.size = sizeof(stats)};
    char byte, id[96];
    void *box = NULL;
    int r;

    snprintf(id, sizeof(id), "%s-probe", h->instance_id(h));
    spec.id = id;
    r = ops->box_open(state, &spec, &box, err);
    if (r < 0)
        return r;
#ifdef _WIN32
    /* no poll here: box_read does not block (jailbox.c peeks the pipe) */
    r = 0;
    for (int i = 0; i < 1000 && !r; i++) {
        int64_t n = ops->box_read(box, &byte, 1);

        r = n == 1;
        if (n == 0 || (n < 0 && errno != EAGAIN))
            break;
        if (!r)
            Sleep(10);
    }
#else
    struct pollfd pfd = {.fd = ops->box_poll_fd(box), .events = POLLIN};
    r = poll(&pfd, 1, 10000) == 1 && ops->box_read(box, &byte, 1) == 1;
#endif
    if (!r)
        ops->box_kill(box);
    /* Closing its input ends the agent normally, so the launcher reaps it. */
    if (ops->box_close(box, &stats, err) < 0)
        return err->rc; /* the jail's own words */
    return r ? 0 : sbx_err_fill(err, SBX_E_UNAVAILABLE, 0, "the sandbox agent did not start");
}

#ifndef _WIN32
int jail_parent_of(int pid)
{
    char path[64], buf[512], *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    if (!p || strlen(p) < 5)
        return -1;
    return (int)strtol(p + 4, NULL, 10); /* ") S PPID" */
}

#endif

void jail_common_caps(struct sbx_caps *caps, const char *pasta, bool tun_ok)
{
    sbx_caps_set(caps, SBX_CTL_OUTPUT, SBX_ENF_FULL, "capped by the core while streaming");
    sbx_caps_set(caps, SBX_CTL_FILE_SIZE, SBX_ENF_FULL, "RLIMIT_FSIZE");
    sbx_caps_set(caps, SBX_CTL_WORKSPACE, SBX_ENF_FULL,
            "tmpfs /workspace, /tmp, /dev/shm; RAM, so at most 3/4 of the memory limit each");
    sbx_caps_set(caps, SBX_CTL_NET_OFF, SBX_ENF_FULL, "empty network namespace (loopback only)");
    if (pasta[0] && tun_ok)
        sbx_caps_set(caps, SBX_CTL_NET_ON, SBX_ENF_FULL,
                "own namespace, pasta user-mode NAT, no host loopback");
    else
        sbx_caps_set(caps, SBX_CTL_NET_ON, SBX_ENF_NONE,
                !pasta[0] ? "pasta not found (install Debian's passt package)"
                          : "/dev/net/tun is not usable by the sandbox uid (Debian's default "
                            "mode is 0666)");
    sbx_caps_set(caps, SBX_CTL_NET_HOST, SBX_ENF_FULL,
            "host network namespace (operator override only)");
    sbx_caps_set(caps, SBX_CTL_NET_REGISTRIES, SBX_ENF_FULL,
            "loopback-only namespace; the core's filtering proxy through a unix socket");
    sbx_caps_set(caps, SBX_CTL_NET_ALLOWLIST, SBX_ENF_FULL,
            "loopback-only namespace; the core's filtering proxy through a unix socket");
    sbx_caps_set(caps, SBX_CTL_HOST_MOUNTS, SBX_ENF_FULL,
            "bind mounts of the core's dependency sets, read-only for programs");
}

void jail_input_init(
        struct jail_input *in, const struct sbx_box_spec *spec, const struct jail_tops *tops)
{
    bool v12 = SBX_HAS_FIELD(struct sbx_box_spec, spec, proxy_socket);

    *in = (struct jail_input){.policy = spec->policy,
            .tops = tops->top,
            .n_tops = tops->n,
            .ro_paths = spec->ro_paths,
            .mounts = v12 ? spec->mounts : NULL,
            .n_mounts = v12 ? spec->n_mounts : 0,
            .proxy_socket = v12 ? spec->proxy_socket : NULL,
            .envp = spec->envp,
            .sandbox_uid = 1000,
            .sandbox_gid = 1000,
            .zygote = SBX_HAS_FIELD(struct sbx_box_spec, spec, flags) &&
                      (spec->flags & SBX_BOX_ZYGOTE) != 0};
}
