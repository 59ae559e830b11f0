/* SPDX-License-Identifier: MIT */
/*
 * close.c: kill a container box, decide its outcome, and remove it.
 * box_close answers as soon as the outcome is known: when the channel was
 * still open (the program's exit came through it, nothing was killed) and
 * the container's cgroup was readable after the last read from the channel
 * (cgroup.c), the counters already hold every OOM kill and every refused
 * fork of the program's life (the kernel counts them before the agent can
 * report the exit), so the stats come from them and the stop and removal
 * go to the reaper (reaper.c). Otherwise (a kill, a remote daemon, a box
 * with writable volumes to read back) it waits for the container to stop,
 * reads State.OOMKilled and removes it on the caller's path, as before.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box.h"

int64_t dk_inspect_state(struct dk_box *b, const char *key)
{
    struct sbx_err err = {.size = sizeof(err)};
    struct json_object *j = NULL, *state, *v;
    char path[128];
    int64_t r = -1;

    snprintf(path, sizeof(path), "/containers/%s/json", b->id);
    struct dk_call c = {.method = "GET", .path = path};
    if (dk_api(b->st, &c, NULL, &j, &err) == 0 && json_object_object_get_ex(j, "State", &state) &&
            json_object_object_get_ex(state, key, &v))
        r = json_object_get_int64(v);
    json_object_put(j);
    return r;
}

int dk_box_kill(void *box)
{
    struct dk_box *b = box;
    struct sbx_err err = {.size = sizeof(err)};
    char path[160];

    /* The channel ends here (reads see its end): the daemon cannot finish
     * killing a container whose output it is still copying to a socket we
     * no longer read. */
    if (b->conn)
        b->st->h->conn_free(b->conn);
    b->conn = NULL;
    if (!b->id[0])
        return 0;
    snprintf(path, sizeof(path), "/containers/%s/kill?signal=KILL", b->id);
    struct dk_call c = {.method = "POST", .path = path, .timeout_ms = 10000, .missing_ok = true};
    /* 409: not running any more, which is what we want */
    dk_api(b->st, &c, NULL, NULL, &err);
    return 0;
}

/* Wait (bounded) for the container to stop; 1 when it did. */
static int await_stop(struct dk_box *b, int64_t ms)
{
    struct sbx_err err = {.size = sizeof(err)};
    char path[160];

    snprintf(path, sizeof(path), "/containers/%s/wait?condition=not-running", b->id);
    struct dk_call c = {.method = "POST", .path = path, .timeout_ms = ms, .missing_ok = true};
    return dk_api(b->st, &c, NULL, NULL, &err) == 0;
}

int dk_box_finish(struct dk_box *b, struct sbx_box_stats *stats, struct sbx_err *err)
{
    const struct sbx_host *h = b->st->h;
    char path[160];
    int r = 0;

    if (b->conn)
        h->conn_free(b->conn);
    b->conn = NULL;
    if (b->id[0]) {
        if (!b->attached || !await_stop(b, 2000)) {
            dk_box_kill(b);
            await_stop(b, 10000);
        }
        if (stats) {
            /* Podman's OOMKilled is pid 1's only: the cgroup counts the rest */
            int64_t oom = dk_inspect_state(b, "OOMKilled");

            stats->oom_killed = oom == 1 || b->cg.oom_kills > 0 ? 1 : oom == 0 ? 0 : -1;
            stats->pids_limited = b->cg.pids_fd >= 0 ? b->cg.pids_max > 0 : -1;
        }
        r = dk_volumes_collect(b->st, b->id, &b->vols, err);
        snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", b->id);
        struct dk_call c = {.method = "DELETE", .path = path, .missing_ok = true};
        struct sbx_err e2 = {.size = sizeof(e2)};

        if (dk_api(b->st, &c, NULL, NULL, r < 0 ? &e2 : err) < 0 && r == 0)
            r = err->rc;
    }
    dk_volumes_close(b->st, &b->vols);
    dk_cg_close(&b->cg);
    for (int i = 2; i >= 0 && !dk_keep_template(b->st); i--) /* children first */
        dk_image_release(b->st, b->release[i]);
    if (b->diag_len)
        h->log(h, SBX_LOG_DEBUG, "agent: %s", b->diag);
    if (b->seccomp_fd >= 0)
        close(b->seccomp_fd);
    free(b);
    return r;
}

/* The outcome from the cgroup counters alone, when they cover the whole
 * run: false when only the stopped container can tell. */
static bool stats_from_cgroup(struct dk_box *b, struct sbx_box_stats *stats)
{
    bool now = b->cg.mem_fd >= 0 && dk_cg_sample(&b->cg);

    if (!b->id[0] || !b->attached || b->cg.mem_fd < 0 || !(now || b->cg_fresh))
        return false;
    for (size_t i = 0; i < b->vols.n; i++)
        if (b->vols.v[i].rw) /* read back from the stopped container */
            return false;
    stats->oom_killed = b->cg.oom_kills > 0;
    stats->pids_limited = b->cg.pids_fd >= 0 ? b->cg.pids_max > 0 : -1;
    return true;
}

int dk_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct dk_box *b = box;

    stats->oom_killed = stats->pids_limited = -1;
    /* Close the attach connection first: its end is the agent's end of
     * input (StdinOnce), and a daemon whose copy of the container's output
     * is blocked on our unread socket cannot finish stopping it. */
    b->attached = b->conn != NULL;
    if (b->conn)
        b->st->h->conn_free(b->conn);
    b->conn = NULL;
    if (stats_from_cgroup(b, stats)) {
        dk_reap(b);
        return 0;
    }
    return dk_box_finish(b, stats, err);
}
