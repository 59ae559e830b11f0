/* SPDX-License-Identifier: MIT */
/*
 * userns.c: whether the sysctls let this user make user namespaces
 * (userns.h), for doctor. Reads /proc/sys (a parameter); no logging.
 */
#include "host/userns.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A sysctl's number, or -1 when it is absent or unreadable. */
static long sysctl_read(const char *proc_sys, const char *name)
{
    char path[512], buf[32];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", proc_sys, name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

/* The profile Ubuntu's own packages use for programs that need user
 * namespaces (e.g. /etc/apparmor.d/bwrap-userns-restrict's simpler form). */
#define APPARMOR_FIX                                                                               \
    "give bwrap an AppArmor profile that allows user namespaces: printf 'abi <abi/4.0>,\\n"        \
    "include <tunables/global>\\nprofile bwrap /usr/bin/bwrap flags=(unconfined) {\\n  "           \
    "userns,\\n}\\n' "                                                                             \
    "| sudo tee /etc/apparmor.d/bwrap && sudo apparmor_parser -r /etc/apparmor.d/bwrap (nsjail: "  \
    "the same for its path); or, for the whole host, sudo sysctl -w "                              \
    "kernel.apparmor_restrict_unprivileged_userns=0"

void userns_check(const char *proc_sys, uid_t euid, struct userns_check *ret)
{
    long max = sysctl_read(proc_sys, "user/max_user_namespaces");
    long clone = sysctl_read(proc_sys, "kernel/unprivileged_userns_clone");
    long apparmor = sysctl_read(proc_sys, "kernel/apparmor_restrict_unprivileged_userns");
    bool root = euid == 0;

    memset(ret, 0, sizeof(*ret));
    snprintf(ret->detail, sizeof(ret->detail), "user.max_user_namespaces=%ld%s%s", max,
            clone == 0 ? ", kernel.unprivileged_userns_clone=0" : "",
            apparmor == 1 ? ", kernel.apparmor_restrict_unprivileged_userns=1" : "");
    if (max == 0) {
        ret->status = USERNS_FAIL;
        snprintf(ret->fix, sizeof(ret->fix),
                "sudo sysctl -w user.max_user_namespaces=15000 (and the same line in "
                "/etc/sysctl.d/50-llm-sandbox.conf to keep it)");
    } else if (clone == 0 && !root) {
        ret->status = USERNS_FAIL;
        snprintf(ret->fix, sizeof(ret->fix),
                "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and the same line in "
                "/etc/sysctl.d/50-llm-sandbox.conf to keep it), or run llm-sandbox as root");
    } else if (apparmor == 1 && !root) {
        ret->status = USERNS_FAIL;
        snprintf(ret->fix, sizeof(ret->fix), "%s", APPARMOR_FIX);
    } else {
        ret->status = USERNS_OK;
        if (root && (clone == 0 || apparmor == 1))
            snprintf(ret->detail + strlen(ret->detail), sizeof(ret->detail) - strlen(ret->detail),
                    " (restricts unprivileged users only; this is root)");
    }
}
