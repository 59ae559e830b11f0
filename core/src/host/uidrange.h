/* SPDX-License-Identifier: MIT */
/*
 * uidrange.h: a host uid (and the gid of the same number) for each
 * sandbox, from a range no host account uses, so the kernel's per-user
 * quotas (inotify instances, message-queue bytes, queued signals, user
 * namespaces) are not shared between sandboxes, nor with the server's own
 * uid. For a core running as root.
 *
 * A lease is an exclusive flock(2) on DIR/<uid>: it ends with the lease or
 * with the process that held it, so a crashed server's ids come free on
 * their own, and several servers on one host (sharing DIR) never hand out
 * the same id. An id some process still runs as (a straggler of a dead
 * server, seen in /proc) is skipped, as is one /etc/passwd or /etc/group
 * names. Applies what it is given; decides no policy.
 */
#ifndef SBX_HOST_UIDRANGE_H
#define SBX_HOST_UIDRANGE_H

#include <stddef.h>
#include <stdint.h>

struct sbx_error;
struct uidrange;

struct uid_lease {
    uint32_t uid, gid;
    int lock_fd; /* the flock held on DIR/<uid> */
};

/* The range [first, first + count), leases locked under lock_dir (made,
 * mode 0700, when missing), minus the ids the passwd and group files in
 * etc_dir ("/etc") name. SBX_E_INVALID for an empty or overflowing range,
 * SBX_E_IO when lock_dir cannot be made, SBX_E_NOMEM. (transfer full) */
int uidrange_new(uint32_t first, uint32_t count, const char *lock_dir, const char *etc_dir,
        struct uidrange **ret, struct sbx_error **err);
struct uidrange *uidrange_free(struct uidrange *u);

/* How many ids of the range host accounts (passwd or group) use. */
size_t uidrange_skipped(const struct uidrange *u);
void uidrange_bounds(const struct uidrange *u, uint32_t *ret_first, uint32_t *ret_count);

/* The lowest free id: SBX_E_LIMIT when every one is leased or in use,
 * SBX_E_IO, SBX_E_NOMEM. Any thread. (transfer full: uid_lease_free) */
int uidrange_take(struct uidrange *u, struct uid_lease **ret, struct sbx_error **err);
/* Give the id back; NULL is fine. */
void uid_lease_free(struct uid_lease *l);

#endif
