/* SPDX-License-Identifier: MIT */
/*
 * probe.c: the plugin's state (its endpoint: settings host, tls_verify and
 * cert_path, else the default socket of the name the core loaded); reach
 * the daemon, learn what its host can enforce (/info: the cgroup
 * controllers, swap accounting, seccomp), sweep the containers of dead
 * instances, and fill the capability report. Each box then proves its own
 * settings: box_open reads the created container back and refuses to
 * start it when a limit did not stick (run.c), since no probe here can
 * create a container without a language's image (dk_verify, below).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box.h"

static bool info_bool(struct json_object *info, const char *key)
{
    struct json_object *v;

    return json_object_object_get_ex(info, key, &v) && json_object_get_boolean(v);
}

static bool has_security_option(struct json_object *info, const char *name)
{
    struct json_object *v;

    if (!json_object_object_get_ex(info, "SecurityOptions", &v) ||
            !json_object_is_type(v, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(v); i++)
        if (strstr(json_object_get_string(json_object_array_get_idx(v, i)), name))
            return true;
    return false;
}

static void fill_caps(struct dk_state *st, struct json_object *info, struct sbx_caps *caps)
{
    bool mem = info_bool(info, "MemoryLimit"), cpu = info_bool(info, "CpuCfsQuota"),
         pids = info_bool(info, "PidsLimit"), seccomp = has_security_option(info, "seccomp");

    st->swap_limit = info_bool(info, "SwapLimit");
    sbx_caps_set(caps, SBX_CTL_WALL_TIME, SBX_ENF_FULL,
            "core deadline, then the daemon kills the container");
    sbx_caps_set(caps, SBX_CTL_MEMORY, mem && st->swap_limit ? SBX_ENF_FULL : SBX_ENF_NONE,
            mem && st->swap_limit ? "HostConfig.Memory and MemorySwap"
                                  : "the daemon cannot limit memory and swap together");
    sbx_caps_set(caps, SBX_CTL_CPU, cpu ? SBX_ENF_FULL : SBX_ENF_NONE,
            cpu ? "HostConfig.NanoCpus (CFS quota)" : "the daemon has no CFS quota");
    sbx_caps_set(caps, SBX_CTL_PIDS, pids ? SBX_ENF_FULL : SBX_ENF_NONE,
            pids ? "HostConfig.PidsLimit" : "the daemon has no pids controller");
    sbx_caps_set(caps, SBX_CTL_OUTPUT, SBX_ENF_FULL, "capped by the core while streaming");
    sbx_caps_set(caps, SBX_CTL_FILE_SIZE, SBX_ENF_FULL, "RLIMIT_FSIZE set by the agent");
    sbx_caps_set(caps, SBX_CTL_WORKSPACE, SBX_ENF_FULL, "size-limited tmpfs /workspace and /tmp");
    sbx_caps_set(caps, SBX_CTL_NET_OFF, SBX_ENF_FULL, "NetworkMode none");
    /* the proxy is a unix socket of ours: only a daemon on this host can
     * bind it into a container */
    bool local = strncmp(st->endpoint, "unix://", 7) == 0;

    sbx_caps_set(caps, SBX_CTL_NET_REGISTRIES, local ? SBX_ENF_FULL : SBX_ENF_NONE,
            local ? "NetworkMode none; the core's proxy socket, relayed by the agent"
                  : "the filtering proxy needs a local daemon (unix://)");
    sbx_caps_set(caps, SBX_CTL_NET_ALLOWLIST, local ? SBX_ENF_FULL : SBX_ENF_NONE,
            local ? "NetworkMode none; the core's proxy socket, relayed by the agent"
                  : "the filtering proxy needs a local daemon (unix://)");
    sbx_caps_set(caps, SBX_CTL_HOST_MOUNTS, SBX_ENF_FULL,
            "the core's directories as named volumes holding copies");
    sbx_caps_set(caps, SBX_CTL_NET_ON, SBX_ENF_NONE, "container networks are not supported yet");
    sbx_caps_set(caps, SBX_CTL_NET_HOST, SBX_ENF_FULL, "NetworkMode host");
    sbx_caps_set(caps, SBX_CTL_READ_ONLY_SYSTEM, SBX_ENF_FULL, "HostConfig.ReadonlyRootfs");
    sbx_caps_set(
            caps, SBX_CTL_ENV, SBX_ENF_FULL, "each program gets exactly the core's environment");
    sbx_caps_set(caps, SBX_CTL_SECCOMP, seccomp ? SBX_ENF_FULL : SBX_ENF_NONE,
            seccomp ? "SecurityOpt seccomp= the core's policy as a profile"
                    : "the daemon has no seccomp support");
    sbx_caps_set(caps, SBX_CTL_NO_NEW_PRIVS, SBX_ENF_FULL, "CapDrop ALL, no-new-privileges");
    sbx_caps_set(
            caps, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL, "User is the core's sandbox uid, never 0");
}

/* TLS verification on: Docker's three files, each readable, before any
 * connection (curl's own error for a missing one names none). */
static int tls_files(struct dk_state *st, struct sbx_err *err)
{
    const char *names[] = {"ca.pem", "cert.pem", "key.pem"};
    char path[600];

    for (size_t i = 0; st->tls_dir[0] && i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", st->tls_dir, names[i]);
        if (access(path, R_OK) < 0)
            return sbx_err_fill(err, SBX_E_INVALID, errno,
                    "TLS verification is on (DOCKER_TLS_VERIFY) but %s is not readable: %s "
                    "(DOCKER_CERT_PATH must hold ca.pem, cert.pem and key.pem)",
                    path, strerror(errno));
    }
    return 0;
}

int dk_probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    struct dk_state *st = state;
    struct json_object *info = NULL;
    struct dk_call ping = {.method = "GET", .path = "/_ping", .timeout_ms = 10000};
    struct dk_call c = {.method = "GET", .path = "/info", .timeout_ms = 30000};

    if (tls_files(st, err) < 0)
        return err->rc;
    if (dk_api(st, &ping, NULL, NULL, err) < 0) {
        char why[sizeof(err->msg)];

        snprintf(why, sizeof(why), "%s", err->msg);
        /* curl's detail without "GET /v1.41/_ping on '<endpoint>': " (the
         * message has room for 255 bytes) */
        const char *detail = strstr(why, "': ");

        if (st->tls_dir[0])
            return sbx_err_fill(err, SBX_E_UNAVAILABLE, err->sys_errno,
                    "no %s daemon answers over TLS at %s with DOCKER_CERT_PATH '%s': %s", st->name,
                    st->endpoint, st->tls_dir, detail ? detail + 3 : why);
        return sbx_err_fill(err, SBX_E_UNAVAILABLE, err->sys_errno,
                "no %s daemon answers: %s; start it (%s) or point %s at one that runs", st->name,
                why,
                st->podman ? "systemctl [--user] start podman.socket"
                           : "systemctl start docker, or dockerd as root",
                st->podman ? "CONTAINER_HOST" : "DOCKER_HOST");
    }
    if (dk_api(st, &c, NULL, &info, err) < 0)
        return err->rc;
    fill_caps(st, info, caps);
    json_object_put(info);
    dk_sweep(st);
    return 0;
}

/* The container's own cgroup namespace: Docker says so in its inspect
 * (CgroupnsMode). Podman's compatible API takes CgroupnsMode, but Podman 4.3
 * (Debian 12) ignores it and keeps the host's namespace on cgroup v1 (where
 * containers.conf cannot change it either): its own inspect's CgroupMode
 * tells what was made. Refused unless the operator accepted the host's
 * namespace for Podman (setting allow_host_cgroupns). */
static int verify_cgroupns(
        struct dk_state *st, const char *id, struct json_object *hc, struct sbx_err *err)
{
    struct json_object *j = NULL, *lhc, *v;
    const char *got = NULL;
    char path[128];
    int r = 0;

    if (!st->podman && json_object_object_get_ex(hc, "CgroupnsMode", &v))
        got = json_object_get_string(v);
    if (st->podman) {
        snprintf(path, sizeof(path), "/containers/%s/json", id);
        struct dk_call c = {.method = "GET", .path = path, .libpod = true};
        r = dk_api(st, &c, NULL, &j, err);
        if (r == 0 && json_object_object_get_ex(j, "HostConfig", &lhc) &&
                json_object_object_get_ex(lhc, "CgroupMode", &v))
            got = json_object_get_string(v);
    }
    if (r == 0 && got && strcmp(got, "host") == 0 && st->podman &&
            dk_setting_true(st, "allow_host_cgroupns", false))
        st->h->log(st->h, SBX_LOG_INFO,
                "container %.12s shares the host's cgroup namespace (allow_host_cgroupns)", id);
    else if (r == 0 && (!got || strcmp(got, "private") != 0))
        r = sbx_err_fill(err, SBX_E_UNSUPPORTED, 0,
                "the %s daemon did not give the container its own cgroup namespace (it has "
                "'%s'); refusing to run%s",
                st->name, got ? got : "",
                st->podman
                        ? " (Podman 4.3, as in Debian 12, ignores CgroupnsMode on cgroup v1: set "
                          "LLM_SANDBOX_PODMAN_ALLOW_HOST_CGROUPNS=true to accept the host's)"
                        : "");
    json_object_put(j);
    return r;
}

/* Each tmpfs asked for is there with its size (an unsized tmpfs is bounded
 * only by the memory limit). */
static int verify_tmpfs(struct dk_state *st, struct json_object *hc, struct sbx_err *err)
{
    const char *paths[] = {"/workspace", "/tmp", "/var/tmp", "/run"};
    struct json_object *t = NULL, *v;

    json_object_object_get_ex(hc, "Tmpfs", &t);
    for (size_t i = 0; i < (st->podman ? 4u : 2u); i++)
        if (!json_object_object_get_ex(t, paths[i], &v) ||
                !strstr(json_object_get_string(v), "size="))
            return sbx_err_fill(err, SBX_E_UNSUPPORTED, 0,
                    "the %s daemon did not keep the sized tmpfs at %s; refusing to run", st->name,
                    paths[i]);
    return 0;
}

/* Read the container back: every hardening setting must have stuck
 * (daemons drop what the host cannot do, sometimes with only a warning). */
int dk_verify(struct dk_state *st, const char *id, const struct sbx_policy *p, struct sbx_err *err)
{
    struct json_object *j = NULL, *hc, *v;
    char path[128];
    int r;

    snprintf(path, sizeof(path), "/containers/%s/json", id);
    struct dk_call c = {.method = "GET", .path = path};
    r = dk_api(st, &c, NULL, &j, err);
    if (r < 0)
        return r;
    if (!json_object_object_get_ex(j, "HostConfig", &hc))
        r = sbx_err_fill(err, SBX_E_BACKEND, 0, "container %.12s has no HostConfig", id);
    struct {
        const char *key;
        int64_t want;
    } checks[] = {{"Memory", (int64_t)p->memory_bytes},
            {"MemorySwap", st->swap_limit ? (int64_t)p->memory_bytes : 0},
            {"NanoCpus", (int64_t)p->cpu_millicores * 1000000}, {"PidsLimit", (int64_t)p->pids_max},
            {"ReadonlyRootfs", p->read_only_system ? 1 : 0}};
    for (size_t i = 0; r == 0 && i < sizeof(checks) / sizeof(checks[0]); i++) {
        int64_t got =
                json_object_object_get_ex(hc, checks[i].key, &v) ? json_object_get_int64(v) : -1;

        if (checks[i].want && got != checks[i].want)
            r = sbx_err_fill(err, SBX_E_UNSUPPORTED, 0,
                    "the %s daemon did not keep %s=%lld (it has %lld); refusing to run", st->name,
                    checks[i].key, (long long)checks[i].want, (long long)got);
    }
    if (r == 0)
        r = verify_tmpfs(st, hc, err);
    if (r == 0)
        r = verify_cgroupns(st, id, hc, err);
    json_object_put(j);
    return r;
}

int dk_init(const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    struct dk_state *st = calloc(1, sizeof(*st));
    const char *ep = h->setting(h, "host"), *tls = h->setting(h, "tls_verify"),
               *certs = h->setting(h, "cert_path");

    if (!st)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    st->h = h;
    st->podman = strcmp(name, "podman") == 0;
    snprintf(st->name, sizeof(st->name), "%s", name);
    snprintf(st->endpoint, sizeof(st->endpoint), "%s",
            ep           ? ep
            : st->podman ? "unix:///run/podman/podman.sock"
                         : "unix:///var/run/docker.sock");
    /* as the docker CLI: any value turns verification on, even "0"; the
     * certificates default to ~/.docker (the core's settings say so) */
    if (tls && tls[0])
        snprintf(st->tls_dir, sizeof(st->tls_dir), "%s", certs ? certs : "/root/.docker");
    pthread_mutex_init(&st->lock, NULL);
    dk_reaper_init(st);
    *ret_state = st;
    return 0;
}

void dk_fini(void *state)
{
    struct dk_state *st = state;

    dk_reaper_stop(st); /* every container removed before the plugin goes */
    pthread_mutex_destroy(&st->lock);
    free(st);
}
