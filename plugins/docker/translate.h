/* SPDX-License-Identifier: MIT */
/*
 * translate.h: policy -> the JSON body of POST /containers/create, and the
 * core's seccomp rules -> a Docker seccomp profile. Pure (no I/O), so
 * golden tests pin both (tests/golden/docker/).
 */
#ifndef DOCKER_TRANSLATE_H
#define DOCKER_TRANSLATE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include <llm-sandbox/plugin.h>

#define DK_AGENT "/.sbx/agent"

struct dk_mount {
    const char *volume; /* a named volume */
    const char *target; /* absolute path in the container */
    bool read_only;
};

struct dk_input {
    const struct sbx_policy *policy;
    const char *image;                       /* the image with the agent */
    const char *const *envp;                 /* the agent's environment */
    const char *owner;                       /* instance id, for the owner label */
    const char *run_id;                      /* the box's id */
    const struct sbx_seccomp_rules *seccomp; /* the core's policy */
    uint32_t uid, gid;                       /* who runs inside */
    /* Podman reads "seccomp=" as a path on its host, Docker as the profile
     * itself: the path of the profile (the runner's memfd), or NULL. */
    const char *seccomp_path;
    bool podman; /* Podman's dialect: tmpfs "U", an explicit nproc ulimit */
    /* named volumes (volume.c) and where they go */
    const struct dk_mount *mounts;
    size_t n_mounts;
    /* the core's filtering proxy (a unix socket on the daemon's host), bound
     * read-only at SBX_PROXY_SOCKET for network registries/allowlist */
    const char *proxy_socket;
};

/* The create body (transfer full), or NULL with err filled
 * (SBX_E_UNSUPPORTED for a network mode containers cannot give, SBX_E_NOMEM). */
struct json_object *dk_translate(const struct dk_input *in, struct sbx_err *err);
/* The seccomp profile as a JSON text (transfer full), or NULL. */
char *dk_seccomp_profile(const struct sbx_seccomp_rules *rules);

#endif
