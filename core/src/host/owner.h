/* SPDX-License-Identifier: MIT */
/*
 * owner.h: the name of a running llm-sandbox instance,
 * "p<PID>t<STARTTIME>h<SCOPE>". PID and its start time (clock ticks after
 * boot, field 22 of /proc/PID/stat) tell a live instance from a dead one
 * whose pid was reused. SCOPE, 16 hex digits, is a hash of the kernel's
 * boot id and the instance's pid namespace: only an instance of the same
 * scope sees that PID in its own /proc, so only it may call the owner
 * dead. Cgroups ("<owner>-<n>") and containers (their owner label) are
 * named after the instance that made them, and a start-up sweep removes
 * those of dead owners of its own scope, never another's: a server in a
 * container and one on its host may share a cgroup tree or a Docker
 * daemon, and a remote daemon serves several hosts. Names without a scope
 * (made before it existed) are judged by their PID alone, as then.
 */
#ifndef SBX_OWNER_H
#define SBX_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OWNER_SCOPE_LEN 16

struct owner {
    uint64_t pid, start;
    char scope[OWNER_SCOPE_LEN + 1]; /* "" when the name has none */
};

/* This process's scope: OWNER_SCOPE_LEN hex digits. */
void owner_scope(char out[OWNER_SCOPE_LEN + 1]);
/* This process's name (at most 64 bytes with its NUL). */
void owner_make(char *out, size_t len);
/* The owner that name starts with: the length of that prefix, or 0 when
 * it starts with none. Numbers must print back as given (no signs,
 * spaces or leading zeros). */
size_t owner_parse(const char *name, struct owner *ret);
/* Is o dead, as far as an instance of scope `mine` can tell? A live
 * owner, one of another scope, or one we cannot read is not. */
bool owner_dead(const struct owner *o, const char *mine);

#endif
