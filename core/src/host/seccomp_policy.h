/* SPDX-License-Identifier: MIT */
/*
 * seccomp_policy.h: the one seccomp policy every backend applies. The policy is a
 * text list kept in the repository (core/seccomp/policy.list), embedded at
 * build time, parsed here into rules, and compiled with libseccomp into a
 * BPF program for the native architecture (bwrap --seccomp). Later backends
 * turn the same rules, expanded by seccomp_policy_expand(), into a Docker
 * JSON profile or Kafel.
 *
 * It is an allow-list: a syscall not listed fails with ENOSYS (so runtimes
 * fall back, as for clone3), a syscall listed as "deny" fails with EPERM or
 * the errno its line names, a foreign architecture (i386, x32 numbers)
 * kills the process. The list format is described at the top of
 * policy.list.
 */
#ifndef SBX_SECCOMP_POLICY_H
#define SBX_SECCOMP_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include <llm-sandbox/sbx.h>

enum seccomp_action { SECCOMP_RULE_ALLOW = 0, SECCOMP_RULE_ERRNO = 1 };
enum seccomp_op {
    SECCOMP_OP_EQ = 0,      /* (uint32)arg == value */
    SECCOMP_OP_MASK_EQ = 1, /* (arg & mask) == value, 64-bit */
    SECCOMP_OP_IN = 2,      /* (uint32)arg is one of values */
    SECCOMP_OP_NOT_IN = 3,  /* (uint32)arg is none of values */
};

#define SECCOMP_MAX_VALUES 8
#define SECCOMP_MAX_CONDS  3
#define SECCOMP_MAX_ARGS   6
/* Allow lines of one syscall name: the expansion keeps them in a uint64_t. */
#define SECCOMP_ALLOWS_PER_NAME 64
#define SECCOMP_LOW32           UINT64_C(0xFFFFFFFF)

struct seccomp_cond {
    unsigned arg; /* 0..5 */
    enum seccomp_op op;
    uint64_t mask;
    uint64_t values[SECCOMP_MAX_VALUES];
    size_t n_values;
};

struct seccomp_rule {
    char name[40]; /* syscall name */
    enum seccomp_action action;
    int errno_value; /* for SECCOMP_RULE_ERRNO */
    struct seccomp_cond conds[SECCOMP_MAX_CONDS];
    size_t n_conds;
    unsigned line; /* in the list, for messages */
};

struct seccomp_policy {
    struct seccomp_rule *rules;
    size_t n_rules;
};

/* The embedded list text (NUL-terminated, static). */
const char *seccomp_policy_text(void);
/* Parse a list (format: top of policy.list). SBX_E_INVALID with a message
 * naming "policy.list:LINE" for any malformed or conflicting line,
 * SBX_E_LIMIT past 1 MiB or 2048 rules, SBX_E_NOMEM. (transfer full) */
int seccomp_policy_parse(
        const char *text, size_t len, struct seccomp_policy **ret, struct sbx_error **err);
struct seccomp_policy *seccomp_policy_free(struct seccomp_policy *p);
/* Compile to a BPF program (struct sock_filter array bytes) for the native
 * architecture. Syscalls that this libseccomp or architecture does not know
 * are skipped. SBX_E_LIMIT past the kernel's 4096 instructions,
 * SBX_E_INTERNAL if libseccomp refuses a rule, SBX_E_IO, SBX_E_NOMEM.
 * (transfer full) */
int seccomp_policy_compile(
        const struct seccomp_policy *p, void **ret_bpf, size_t *ret_len, struct sbx_error **err);
/* The list expanded into the only comparison the compiled filter uses,
 * (arg & mask) == value, so that what is allowed never depends on how a
 * backend compares 32-bit arguments (libseccomp's 32-bit operators also
 * test the high half). `in` becomes one rule per value; `notin`, and the
 * errno of a deny line next to conditional allows, become partitions of the
 * argument's bits. Rules of one syscall never overlap with a different
 * action. Later backends translate these rules, not the parsed ones. */
struct seccomp_atom {
    unsigned arg; /* 0..5 */
    uint64_t mask;
    uint64_t value; /* (arg & mask) == value; value has no bit outside mask */
};

struct seccomp_flat_rule {
    char name[40];
    enum seccomp_action action;
    int errno_value;
    struct seccomp_atom atoms[SECCOMP_MAX_ARGS]; /* all must hold; one per arg */
    size_t n_atoms;                              /* 0: the whole syscall */
    unsigned line;                               /* the list line it came from */
};

struct seccomp_flat {
    struct seccomp_flat_rule *rules;
    size_t n_rules;
};

/* Expand a parsed list. SBX_E_LIMIT if a line expands to too many rules,
 * SBX_E_NOMEM. (transfer full) */
int seccomp_policy_expand(
        const struct seccomp_policy *p, struct seccomp_flat **ret, struct sbx_error **err);
struct seccomp_flat *seccomp_flat_free(struct seccomp_flat *f);

/* The policy as a Kafel program for nsjail (seccomp_kafel.c): native
 * syscall numbers, the expanded rules' conditions, ENOSYS by default.
 * SBX_E_LIMIT past 1 MiB, SBX_E_NOMEM. (transfer full) */
int seccomp_policy_kafel(const struct seccomp_policy *p, char **ret, struct sbx_error **err);
/* The embedded policy as Kafel, translated once per process (thread-safe).
 * (transfer none: valid until exit) */
int seccomp_kafel_get(const char **ret, struct sbx_error **err);
/* The zygote box's policy (seccomp_policy_zygote) as Kafel, for nsjail;
 * as seccomp_kafel_get. */
int seccomp_zygote_kafel_get(const char **ret, struct sbx_error **err);

/* The embedded policy, parsed and compiled once per process (thread-safe).
 * (transfer none: valid until exit) */
int seccomp_bpf_get(const void **ret_bpf, size_t *ret_len, struct sbx_error **err);
/* Make a parsed list the zygote box's (plugin.h, SBX_BOX_ZYGOTE): unshare,
 * mount and umount2, which the list denies, allowed outright; nothing else
 * changes. SBX_E_INTERNAL when the list does not name each exactly once,
 * SBX_E_INVALID. */
int seccomp_policy_zygote(struct seccomp_policy *p, struct sbx_error **err);
/* The zygote box's program: the list made the zygote's, compiled once; as
 * seccomp_bpf_get. */
int seccomp_zygote_bpf_get(const void **ret_bpf, size_t *ret_len, struct sbx_error **err);

#endif
