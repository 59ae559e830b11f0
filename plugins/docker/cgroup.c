/* SPDX-License-Identifier: MIT */
/*
 * cgroup.c: what the Engine API does not report, read from the container's
 * own cgroup on this host: how often its pids limit refused a fork
 * (pids.events "max") and how many processes the kernel's OOM killer
 * ended (memory.events "oom_kill"; v1: memory.oom_control). Inspect's
 * State.OOMKilled covers only pid 1 on Podman, and no API field counts
 * pids events.
 *
 * The cgroup is removed with the container, and the container stops as
 * soon as the agent leaves, so the counters are sampled while the box is
 * alive: after start, and after every read from its channel (the agent's
 * EXIT frame arrives while the cgroup still exists). Only for a local
 * daemon (unix://): a remote host's cgroups are not ours to read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docker.h"

/* The cgroup directory of pid for a controller: v2 ("0::/path") when
 * controller is NULL, else the v1 hierarchy that lists it. */
static bool cgroup_dir(int pid, const char *controller, char *out, size_t len)
{
    char path[64], line[1024];
    bool found = false;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
    f = fopen(path, "re");
    if (!f)
        return false;
    while (!found && fgets(line, sizeof(line), f)) {
        char *ctl = strchr(line, ':'), *rel = ctl ? strchr(ctl + 1, ':') : NULL;

        if (!rel)
            continue;
        *rel++ = '\0';
        rel[strcspn(rel, "\n")] = '\0';
        ctl++;
        if (!controller && strcmp(line, "0") == 0 && ctl[0] == '\0') {
            snprintf(out, len, "/sys/fs/cgroup%s", strcmp(rel, "/") == 0 ? "" : rel);
            found = true;
        } else if (controller) {
            for (char *save = NULL, *c = strtok_r(ctl, ",", &save); c && !found;
                    c = strtok_r(NULL, ",", &save))
                if (strcmp(c, controller) == 0) {
                    snprintf(out, len, "/sys/fs/cgroup/%s%s", controller, rel);
                    found = true;
                }
        }
    }
    fclose(f);
    return found;
}

static int open_in(const char *dir, const char *name)
{
    char path[1200];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

void dk_cg_open(struct dk_cg *c, const struct dk_state *st, int pid)
{
    char dir[1024];

    c->pids_fd = c->mem_fd = -1;
    c->pids_max = c->oom_kills = 0;
    if (pid <= 0 || strncmp(st->endpoint, "unix://", 7) != 0)
        return;
    if (cgroup_dir(pid, NULL, dir, sizeof(dir)) && access(dir, F_OK) == 0) {
        c->pids_fd = open_in(dir, "pids.events");
        c->mem_fd = open_in(dir, "memory.events");
    } else {
        if (cgroup_dir(pid, "pids", dir, sizeof(dir)))
            c->pids_fd = open_in(dir, "pids.events");
        if (cgroup_dir(pid, "memory", dir, sizeof(dir)))
            c->mem_fd = open_in(dir, "memory.oom_control");
    }
    dk_cg_sample(c);
}

/* The value of "key N" in a small flat-keyed cgroup file; -1 when the
 * file is gone (the cgroup was removed) or has no such key. */
static int64_t flat_key(int fd, const char *key)
{
    char buf[512];
    size_t klen = strlen(key);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, key, klen) == 0 && l[klen] == ' ')
            return strtoll(l + klen + 1, NULL, 10);
    return -1;
}

bool dk_cg_sample(struct dk_cg *c)
{
    int64_t pids = flat_key(c->pids_fd, "max"), ooms = flat_key(c->mem_fd, "oom_kill");

    if (pids > c->pids_max)
        c->pids_max = pids;
    if (ooms > c->oom_kills)
        c->oom_kills = ooms;
    return ooms >= 0;
}

void dk_cg_close(struct dk_cg *c)
{
    if (c->pids_fd >= 0)
        close(c->pids_fd);
    if (c->mem_fd >= 0)
        close(c->mem_fd);
    c->pids_fd = c->mem_fd = -1;
}
