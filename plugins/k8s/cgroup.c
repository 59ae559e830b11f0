/* SPDX-License-Identifier: MIT */
/*
 * cgroup.c: a pod's OOM kill counter, read on this host when it is the
 * pod's node (a server beside its kubelet, as in the tests). On cgroup v1
 * the kernel kills the program, not the agent, so the pod's status never
 * says OOMKilled; the container's memory cgroup counts it. Found by
 * walking the hierarchy for the pod's folder (pod<uid>, or the systemd
 * driver's kubepods-...-pod<uid_>.slice) and the container's in it (its id,
 * or cri-containerd-<id>.scope); a remote node's cgroups are not here, and
 * the counter stays unknown. Read after every read from the channel, as
 * the folder goes once the container stops.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box.h"

#define WALK_DEPTH  7
#define WALK_BUDGET 4000

struct walk {
    char key[2][64]; /* pod<uid>, pod<uid with '_'> */
    const char *cid;
    int budget;
};

static bool matches_pod(const struct walk *w, const char *name)
{
    return strstr(name, w->key[0]) || strstr(name, w->key[1]);
}

/* Depth-first beneath path (len bytes used of cap): true with the
 * container's folder in path. */
static bool find(struct walk *w, char *path, size_t cap, int depth, bool in_pod)
{
    size_t len = strlen(path);
    DIR *d;
    struct dirent *e;
    bool found = false;

    if (depth > WALK_DEPTH || --w->budget < 0 || !(d = opendir(path)))
        return false;
    while (!found && (e = readdir(d)) && w->budget > 0) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        if (snprintf(path + len, cap - len, "/%s", e->d_name) >= (int)(cap - len))
            continue;
        if (in_pod && strstr(e->d_name, w->cid))
            found = true;
        else
            found = find(w, path, cap, depth + 1, in_pod || matches_pod(w, e->d_name));
        if (!found)
            path[len] = '\0';
    }
    closedir(d);
    return found;
}

void k8s_cg_open(struct k8s_cg *c, const char *pod_uid, const char *cid)
{
    static const char *const roots[][2] = {
            {"/sys/fs/cgroup/memory", "memory.oom_control"}, {"/sys/fs/cgroup", "memory.events"}};
    struct walk w = {.cid = cid, .budget = WALK_BUDGET};
    char path[4096];

    c->fd = -1;
    c->oom_kills = 0;
    if (!pod_uid[0] || strlen(cid) < 12)
        return;
    snprintf(w.key[0], sizeof(w.key[0]), "pod%s", pod_uid);
    snprintf(w.key[1], sizeof(w.key[1]), "pod%s", pod_uid);
    for (char *p = w.key[1]; *p; p++)
        if (*p == '-')
            *p = '_';
    for (size_t i = 0; i < 2 && c->fd < 0; i++) {
        snprintf(path, sizeof(path), "%s", roots[i][0]);
        if (!find(&w, path, sizeof(path) - 32, 0, false))
            continue;
        size_t len = strlen(path);
        snprintf(path + len, sizeof(path) - len, "/%s", roots[i][1]);
        c->fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    k8s_cg_sample(c);
}

void k8s_cg_sample(struct k8s_cg *c)
{
    char buf[512];
    ssize_t n;
    const char *p;

    if (c->fd < 0)
        return;
    n = pread(c->fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) /* the folder is gone: the counts so far are final */
        return;
    buf[n] = '\0';
    for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, "oom_kill ", 9) == 0) {
            int64_t v = strtoll(p + 9, NULL, 10);

            if (v > c->oom_kills)
                c->oom_kills = v;
        }
}

void k8s_cg_close(struct k8s_cg *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}
