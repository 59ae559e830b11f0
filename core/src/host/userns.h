/* SPDX-License-Identifier: MIT */
/*
 * userns.h: can this user make user namespaces (what bwrap and nsjail need
 * to run unprivileged), judged from the sysctls that say no: Debian's
 * kernel.unprivileged_userns_clone=0, user.max_user_namespaces=0 (any
 * kernel), and Ubuntu's kernel.apparmor_restrict_unprivileged_userns=1
 * (23.10 and later: only programs whose AppArmor profile says `userns`
 * may). Reads files under a /proc/sys given as a parameter, so tests can
 * point it at a fake tree; decides nothing else.
 */
#ifndef SBX_HOST_USERNS_H
#define SBX_HOST_USERNS_H

#include <sys/types.h>

enum userns_status { USERNS_OK = 0, USERNS_WARN, USERNS_FAIL };

struct userns_check {
    enum userns_status status;
    char detail[256]; /* the sysctls read, and what they mean here */
    char fix[512];    /* what to do ("" when nothing) */
};

/* Judge for a process of euid (root is not held back by the unprivileged
 * sysctls); proc_sys is "/proc/sys". A sysctl that is absent does not
 * restrict. */
void userns_check(const char *proc_sys, uid_t euid, struct userns_check *ret);

#endif
