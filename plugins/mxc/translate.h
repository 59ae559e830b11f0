/* SPDX-License-Identifier: MIT */
/*
 * translate.h: policy -> Microsoft MXC's one-shot configuration (contract
 * version 1.0.0), a pure function (no I/O) so golden tests pin it
 * (tests/golden/mxc/). The runner copies the agent where the box can bind
 * it and filters the paths by what exists; the translator only arranges.
 */
#ifndef MXC_TRANSLATE_H
#define MXC_TRANSLATE_H

#include <json-c/json.h>

#include <llm-sandbox/plugin.h>

#include "localjail.h"

/* The contract version we write, one of those lxc-exec 1.0.1 accepts. */
#define MXC_CONTRACT_VERSION "1.0.0"
/* Seconds past the box's wall time before MXC's own timeout ends it: a
 * backstop, never the limit (the core's deadline fires first). */
#define MXC_TIMEOUT_SLACK_MS 60000u

/* Which executor reads the configuration: the paths' syntax and how the
 * command line is parsed differ (sh -c on Linux, CreateProcess on Windows). */
enum mxc_target {
    MXC_TARGET_LINUX = 0,   /* lxc-exec: bubblewrap */
    MXC_TARGET_WINDOWS = 1, /* wxc-exec.exe: ProcessContainer (unverified) */
};

/* Host paths every Linux box sees read-only besides MXC's own system
 * directories (MXC binds /usr/bin, /usr/lib, ... but not /usr/local or
 * /usr/include), and the /etc files runtimes need: /etc itself is denied
 * (MXC would show all of it), these come back one by one. */
#define MXC_LINUX_RO_PATHS "/usr", JAIL_ETC_FILES
/* Host paths a Linux box never sees: MXC binds the host's whole /etc; each
 * denied path is an empty tmpfs in the box. */
#define MXC_LINUX_DENIED "/etc", "/root", "/home"
/* Where a Linux box's workspace is: made by the command line in MXC's
 * private root (a tmpfs of the box), so every box has it at the same path. */
#define MXC_LINUX_WORKSPACE "/workspace"

struct mxc_input {
    const struct sbx_policy *policy;
    enum mxc_target target;
    const char *agent; /* host path of the agent (a copy of the core's), bound read-only */
    /* Windows: the host directory bound read-write as the workspace (the
     * cwd). Linux: NULL; the workspace is MXC_LINUX_WORKSPACE in the box. */
    const char *workspace;
    uint32_t uid, gid; /* Linux: the ids the box runs as, for its /etc/passwd */
    /* Linux: the descriptor the executor read this configuration from,
     * which it passes on into the box; closed before the agent starts (or
     * -1: none). */
    int config_fd;
    const char *const *envp;   /* the agent's environment, exactly (NULL-terminated) */
    const char *const *ro;     /* other host paths read-only, each present (or NULL) */
    const char *const *denied; /* host paths denied besides MXC_LINUX_DENIED (or NULL) */
};

/* The configuration (transfer full: json_object_put), or NULL with err
 * filled: SBX_E_INVALID (a path that is not absolute for the target, a
 * character the command line cannot carry), SBX_E_UNSUPPORTED (a network
 * mode MXC cannot give the box: field "network"), SBX_E_NOMEM. */
struct json_object *mxc_translate(const struct mxc_input *in, struct sbx_err *err);

#endif
