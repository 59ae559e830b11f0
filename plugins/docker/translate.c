/* SPDX-License-Identifier: MIT */
/*
 * translate.c: the one policy -> Docker's container-create JSON (Engine API
 * 1.41, which Podman's compatible API accepts too). Pure: no I/O;
 * golden-tested (tests/golden/docker/).
 *
 * Mapping (policy field -> JSON path):
 *   identity               User "UID:GID" (the box's own host ids as root, else the
 *                          core's sandbox ids; never root);
 *                          HostConfig.CapDrop ["ALL"]; SecurityOpt "no-new-privileges"
 *   seccomp                SecurityOpt "seccomp=<profile>": the core's expanded rules,
 *                          default ERRNO(ENOSYS), native architecture only (Podman:
 *                          "seccomp=<path>", the profile in a memfd of ours)
 *   read_only_system       HostConfig.ReadonlyRootfs
 *   tmpfs_bytes            HostConfig.Tmpfs /workspace and /tmp (size=, exec, nosuid,
 *                          nodev), HostConfig.ShmSize (the workspace size, at most 3/4
 *                          of memory: plugin.h says why);
 *                          Podman: also /var/tmp and /run (16 MiB at most; its own
 *                          would be unsized)
 *   memory_bytes           HostConfig.Memory and MemorySwap (RAM and swap together)
 *   cpu_millicores         HostConfig.NanoCpus (0: no quota)
 *   pids_max               HostConfig.PidsLimit
 *   namespaces             HostConfig.CgroupnsMode "private" (on cgroup v1 the engines'
 *                          default is the host's); dk_verify refuses a container that
 *                          did not get one
 *   network off / host     HostConfig.NetworkMode "none" / "host" (operator override)
 *   network registries,    NetworkMode "none" and the core's proxy socket bound read-only
 *   allowlist              at SBX_PROXY_SOCKET (HostConfig.Mounts, Type bind); the agent
 *                          relays the container's loopback port to it. Refused without
 *                          the socket.
 *   network on             refused here (SBX_E_UNSUPPORTED)
 *   environment            Env: exactly the agent's; each program gets the core's env
 *                          from the agent's EXEC
 *   open_files_max         HostConfig.Ulimits nofile (and the agent's LIMITS)
 *   file_size              not here: an rlimit the agent sets inside (LIMITS)
 *   output                 not here: the core caps while reading; LogConfig "none" keeps
 *                          the daemon from writing the stream to disk
 *   lifetime               the agent (Entrypoint) is pid 1; OpenStdin + StdinOnce: the
 *                          container's stdin closes with our attach connection, so the
 *                          agent exits when the server dies (the lifeline)
 *   mounts (core-made      HostConfig.Mounts, Type volume: named volumes holding copies
 *   directories)           (volume.c), ReadOnly unless the core asked for a writable one;
 *                          no host path is bound except the proxy socket above
 *   ownership              Labels DK_LABEL (instance id) and DK_LABEL_RUN (box id)
 */
#include "translate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"

#define DK_NPROC 16384
/* Podman's /var/tmp and /run: nothing of ours uses them */
#define DK_RUN_BYTES (16u << 20)

static struct json_object *str_array(const char *const *v)
{
    struct json_object *a = json_object_new_array();

    for (; a && v && *v; v++)
        json_object_array_add(a, json_object_new_string(*v));
    return a;
}

static struct json_object *seccomp_rule(const struct sbx_seccomp_rule *r)
{
    struct json_object *o = json_object_new_object(), *names = json_object_new_array();

    json_object_array_add(names, json_object_new_string(r->name));
    json_object_object_add(o, "names", names);
    json_object_object_add(o, "action",
            json_object_new_string(r->errno_value ? "SCMP_ACT_ERRNO" : "SCMP_ACT_ALLOW"));
    if (r->errno_value)
        json_object_object_add(o, "errnoRet", json_object_new_int(r->errno_value));
    if (r->n_conds) {
        struct json_object *args = json_object_new_array();

        /* Docker's MASKED_EQ: (arg & value) == valueTwo */
        for (uint32_t i = 0; i < r->n_conds && i < 6; i++) {
            struct json_object *c = json_object_new_object();

            json_object_object_add(c, "index", json_object_new_int((int)r->conds[i].arg));
            json_object_object_add(c, "value", json_object_new_uint64(r->conds[i].mask));
            json_object_object_add(c, "valueTwo", json_object_new_uint64(r->conds[i].value));
            json_object_object_add(c, "op", json_object_new_string("SCMP_CMP_MASKED_EQ"));
            json_object_array_add(args, c);
        }
        json_object_object_add(o, "args", args);
    }
    return o;
}

char *dk_seccomp_profile(const struct sbx_seccomp_rules *rules)
{
    struct json_object *o = json_object_new_object(), *arch = json_object_new_array(),
                       *calls = json_object_new_array();
    char *text;

    json_object_object_add(o, "defaultAction", json_object_new_string("SCMP_ACT_ERRNO"));
    json_object_object_add(o, "defaultErrnoRet", json_object_new_int(rules->default_errno));
#if defined(__x86_64__)
    json_object_array_add(arch, json_object_new_string("SCMP_ARCH_X86_64"));
#elif defined(__aarch64__)
    json_object_array_add(arch, json_object_new_string("SCMP_ARCH_AARCH64"));
#endif
    json_object_object_add(o, "architectures", arch);
    for (size_t i = 0; i < rules->n_rules; i++)
        json_object_array_add(calls, seccomp_rule(&rules->rules[i]));
    json_object_object_add(o, "syscalls", calls);
    text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return text;
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v));
}

/* Open files as the policy says (the agent lowers it again; Podman's own
 * default, 1048576, can exceed what its host lets runc set). */
static void add_ulimit(struct json_object *a, const char *name, int64_t v)
{
    struct json_object *n = json_object_new_object();

    json_object_object_add(n, "Name", json_object_new_string(name));
    json_object_object_add(n, "Soft", json_object_new_int64(v));
    json_object_object_add(n, "Hard", json_object_new_int64(v));
    json_object_array_add(a, n);
}

static struct json_object *ulimits(const struct dk_input *in)
{
    struct json_object *a = json_object_new_array();

    add_ulimit(a, "nofile", (int64_t)in->policy->open_files_max);
    /* Podman also raises nproc to its maximum, which runc cannot set
     * without capabilities where the host's hard limit is lower. NPROC
     * counts every process of the sandbox uid on the host, so it is not
     * the per-box limit (the pids cgroup is): just far above it. */
    if (in->podman)
        add_ulimit(a, "nproc", DK_NPROC);
    return a;
}

static struct json_object *mount(const char *type, const char *src, const char *dst, bool ro)
{
    struct json_object *m = json_object_new_object();

    add_str(m, "Type", type);
    add_str(m, "Source", src);
    add_str(m, "Target", dst);
    json_object_object_add(m, "ReadOnly", json_object_new_boolean(ro));
    return m;
}

static struct json_object *mounts(const struct dk_input *in)
{
    struct json_object *a = json_object_new_array();

    for (size_t i = 0; i < in->n_mounts; i++)
        json_object_array_add(a, mount("volume", in->mounts[i].volume, in->mounts[i].target,
                                         in->mounts[i].read_only));
    if (in->proxy_socket)
        json_object_array_add(a, mount("bind", in->proxy_socket, SBX_PROXY_SOCKET, true));
    return a;
}

/* Podman mounts a tmpfs of its own, unsized, at /var/tmp and /run of a
 * read-only root (its read-only-tmpfs default, which the compatible API
 * cannot turn off). Ours replace them, sized: /run root's; /var/tmp ends up
 * 1777 whatever its mode= says (Podman's), so it says so. Docker mounts
 * neither (both are the image's, read-only). */
static void podman_tmpfs(struct json_object *tmpfs, uint64_t t)
{
    char opt[96];
    uint64_t n = t < DK_RUN_BYTES ? t : DK_RUN_BYTES;

    snprintf(opt, sizeof(opt), "rw,noexec,nosuid,nodev,size=%" PRIu64 ",mode=1777", n);
    add_str(tmpfs, "/var/tmp", opt);
    snprintf(opt, sizeof(opt), "rw,noexec,nosuid,nodev,size=%" PRIu64 ",mode=0755", n);
    add_str(tmpfs, "/run", opt);
}

static struct json_object *host_config(const struct dk_input *in, const char *profile)
{
    const struct sbx_policy *p = in->policy;
    struct json_object *hc = json_object_new_object(), *tmpfs = json_object_new_object(),
                       *sec = json_object_new_array(), *log = json_object_new_object();
    const char *drop[] = {"ALL", NULL};
    char opt[160], *seccomp = NULL;
    uint64_t t = p->tmpfs_bytes;

    json_object_object_add(hc, "NetworkMode",
            json_object_new_string(p->network == SBX_NET_HOST ? "host" : "none"));
    add_str(hc, "CgroupnsMode", "private");
    json_object_object_add(hc, "ReadonlyRootfs", json_object_new_boolean(p->read_only_system != 0));
    json_object_object_add(hc, "CapDrop", str_array(drop));
    json_object_array_add(sec, json_object_new_string("no-new-privileges"));
    if (asprintf(&seccomp, "seccomp=%s", in->seccomp_path ? in->seccomp_path : profile) > 0)
        json_object_array_add(sec, json_object_new_string(seccomp));
    free(seccomp);
    json_object_object_add(hc, "SecurityOpt", sec);
    json_object_object_add(hc, "Memory", json_object_new_int64((int64_t)p->memory_bytes));
    json_object_object_add(hc, "MemorySwap", json_object_new_int64((int64_t)p->memory_bytes));
    json_object_object_add(
            hc, "NanoCpus", json_object_new_int64((int64_t)p->cpu_millicores * 1000000));
    json_object_object_add(hc, "PidsLimit", json_object_new_int64((int64_t)p->pids_max));
    if (in->podman) /* Podman: no uid= for tmpfs; U chowns it to User */
        snprintf(opt, sizeof(opt), "rw,exec,nosuid,nodev,size=%" PRIu64 ",mode=0755,U", t);
    else
        snprintf(opt, sizeof(opt), "rw,exec,nosuid,nodev,size=%" PRIu64 ",mode=0755,uid=%u,gid=%u",
                t, in->uid, in->gid);
    add_str(tmpfs, "/workspace", opt);
    snprintf(opt, sizeof(opt), "rw,exec,nosuid,nodev,size=%" PRIu64 ",mode=1777", t);
    add_str(tmpfs, "/tmp", opt);
    if (in->podman)
        podman_tmpfs(tmpfs, t);
    json_object_object_add(hc, "Tmpfs", tmpfs);
    json_object_object_add(hc, "Ulimits", ulimits(in));
    json_object_object_add(hc, "ShmSize", json_object_new_int64((int64_t)t));
    add_str(log, "Type", "none");
    json_object_object_add(hc, "LogConfig", log);
    if (in->n_mounts || in->proxy_socket)
        json_object_object_add(hc, "Mounts", mounts(in));
    json_object_object_add(hc, "Privileged", json_object_new_boolean(0));
    json_object_object_add(hc, "Init", json_object_new_boolean(0));
    json_object_object_add(hc, "AutoRemove", json_object_new_boolean(0));
    return hc;
}

struct json_object *dk_translate(const struct dk_input *in, struct sbx_err *err)
{
    const struct sbx_policy *p = in->policy;
    struct json_object *o, *labels, *ep;
    const char *entry[] = {DK_AGENT, NULL};
    char user[32], *profile;

    bool proxied = (p->network == SBX_NET_REGISTRIES || p->network == SBX_NET_ALLOWLIST) &&
                   in->proxy_socket;

    if (p->network != SBX_NET_OFF && p->network != SBX_NET_HOST && !proxied) {
        sbx_err_fill(err, SBX_E_UNSUPPORTED, 0,
                "network mode %u needs %s, which this backend does not have", p->network,
                p->network == SBX_NET_ON ? "a container network" : "the core's filtering proxy");
        snprintf(err->field, sizeof(err->field), "network");
        return NULL;
    }
    profile = dk_seccomp_profile(in->seccomp);
    if (!profile) {
        sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        return NULL;
    }
    o = json_object_new_object();
    add_str(o, "Image", in->image);
    ep = str_array(entry);
    json_object_object_add(o, "Entrypoint", ep);
    json_object_object_add(o, "Cmd", json_object_new_array());
    json_object_object_add(o, "Env", str_array(in->envp));
    snprintf(user, sizeof(user), "%u:%u", in->uid, in->gid);
    add_str(o, "User", user);
    add_str(o, "WorkingDir", "/workspace");
    add_str(o, "Hostname", "sandbox");
    json_object_object_add(o, "AttachStdin", json_object_new_boolean(1));
    json_object_object_add(o, "AttachStdout", json_object_new_boolean(1));
    json_object_object_add(o, "AttachStderr", json_object_new_boolean(1));
    json_object_object_add(o, "OpenStdin", json_object_new_boolean(1));
    json_object_object_add(o, "StdinOnce", json_object_new_boolean(1));
    json_object_object_add(o, "Tty", json_object_new_boolean(0));
    labels = json_object_new_object();
    add_str(labels, DK_LABEL, in->owner);
    add_str(labels, DK_LABEL_RUN, in->run_id);
    json_object_object_add(o, "Labels", labels);
    json_object_object_add(o, "HostConfig", host_config(in, profile));
    free(profile);
    return o;
}
