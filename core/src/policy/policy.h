/* SPDX-License-Identifier: MIT */
/*
 * policy.h: resolve the one policy (defaults < configuration < request) and
 * check it against what a backend can enforce. Decides policy; does no I/O.
 *
 * A request may narrow what configuration allows but never widen it: a
 * value above the configured ceiling is refused, naming the control, never
 * clamped. A control the backend cannot enforce is refused when the
 * operator or the request asked for it; at its built-in default it becomes
 * a warning on the result. Isolation controls (seccomp, no_new_privs,
 * unprivileged, environment, the network mode, read-only system) are never
 * downgraded: without them the run is refused. The one exception is a
 * network mode a backend reports at fallback, which it does only when its
 * operator accepted the weaker guarantee: the run goes on, with a warning.
 */
#ifndef SBX_POLICY_H
#define SBX_POLICY_H

#include <stdint.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

struct settings;

/* "wall_time", "memory", ...; NULL for an unknown control. */
const char *policy_control_name(enum sbx_control c);

/* The size of each tmpfs of a box (struct sbx_policy.tmpfs_bytes): the
 * workspace size, at most 3/4 of the memory limit. */
uint64_t policy_tmpfs_bytes(const struct sbx_policy *p);

/* Resolve into *ret (tmpfs_bytes derived); *ret_explicit gets a bit per control that the
 * operator or the request set. SBX_E_INVALID (malformed) or
 * SBX_E_UNSUPPORTED (above a ceiling) with the field named. */
int policy_resolve(const struct settings *s, const struct sbx_req_limits *req,
        struct sbx_policy *ret, uint32_t *ret_explicit, struct sbx_error **err);

/* Check p against caps. Warnings for default-valued controls enforced
 * weakly or not at all are appended to *warnings (NULL-terminated strv).
 * SBX_E_UNSUPPORTED naming the control when the run must be refused. */
int policy_check(const struct sbx_policy *p, uint32_t explicit_mask, const struct sbx_caps *caps,
        const char *backend, char ***warnings, struct sbx_error **err);

/* The effective policy as JSON (for sandbox://policy and doctor). */
struct json_object *policy_to_json(const struct sbx_policy *p);
/* The same, as compact text. (transfer full, NULL when out of memory) */
char *policy_to_text(const struct sbx_policy *p);

#endif
