/* SPDX-License-Identifier: MIT */
/*
 * scope.h: ask systemd for a transient scope unit with Delegate=yes that
 * holds this process, so that the cgroup v2 code has a subtree of its own
 * where it would otherwise write into one systemd manages (a login
 * session's session-N.scope, or an application scope of a user manager).
 * As root the system manager is asked (system bus), otherwise the user's
 * own manager (user bus): each creates the unit, moves the process into
 * it and answers with a job, whose JobRemoved signal we wait for on the
 * bus (no sleeps). The request is a plain struct, built first, so it can
 * be checked on its own; sd-bus is reached through dl/sdbus.h's table.
 * Does no logging; errors via error.h.
 */
#ifndef SBX_HOST_SCOPE_H
#define SBX_HOST_SCOPE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <llm-sandbox/sbx.h>

struct sdbus_api;

struct scope_request {
    bool user_manager;           /* the user's own manager, on the user bus */
    char address[PATH_MAX + 16]; /* "unix:path=..." of the user bus; "" for the system bus */
    char unit[128];              /* "llm-sandbox-<owner>.scope" */
    char slice[128];             /* the slice to put it in; "": the manager's default */
    char description[128];
    uint32_t pid;
};

/* The request for process pid (our own), whose cgroup v2 path is own_rel
 * ("/user.slice/user-0.slice/session-2.scope"), named after owner (an
 * instance name, owner.h), as euid; runtime_dir is $XDG_RUNTIME_DIR (NULL
 * or "": /run/user/<euid>). Root asks the system manager and keeps the
 * scope in the slice it was in; anyone else asks their own manager, which
 * picks the slice. SBX_E_INVALID when a name does not fit. */
int scope_request_init(struct scope_request *req, const char *own_rel, const char *owner, pid_t pid,
        uid_t euid, const char *runtime_dir, struct sbx_error **err);

/* Ask the manager req names whether unit (one of its units) has
 * Delegate=yes: 1 yes, 0 no; SBX_E_UNAVAILABLE when it cannot be asked
 * (GetUnit, then the Delegate property of the unit's type). */
int scope_unit_delegated(const struct sdbus_api *api, const struct scope_request *req,
        const char *unit, struct sbx_error **err);

/* Send StartTransientUnit(unit, "fail", [PIDs, Delegate, CollectMode,
 * Description, Slice], []) and wait up to timeout_ms for its job to end.
 * 0 when the job is done (the process is in the new unit's cgroup);
 * SBX_E_UNAVAILABLE when the bus cannot be reached or systemd refuses,
 * SBX_E_BACKEND when the job fails or times out. */
int scope_start(const struct sdbus_api *api, const struct scope_request *req, int64_t timeout_ms,
        struct sbx_error **err);

#endif
