/* SPDX-License-Identifier: MIT */
/*
 * run.c: open, watch and destroy one pod box. Thin: the manifest comes
 * from translate.c, the pod's start from boot.c, HTTP and the WebSocket
 * from the core's host table. The channel is the attach stream (channel.c):
 * we write the agent's stdin; its stdout comes back on channel 1, its
 * diagnostics on channel 2. Killing closes the stream (stdin ends: the
 * agent, pid 1, kills everything and exits) and deletes the pod with
 * grace 0; closing does the same after the agent's own QUIT.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "box.h"

#define KILL_WAIT_MS  3000 /* for the agent's end after its stdin closed */
#define CLOSE_WAIT_MS 2000

/* The image for a language: setting image_<lang> (SANDBOX_IMAGE_<LANG>),
 * else the manifest's. */
static const char *pick_image(struct k8s_state *st, const struct sbx_box_spec *spec)
{
    char key[64];
    const char *v;

    snprintf(key, sizeof(key), "image_%s", spec->language ? spec->language : "");
    v = st->h->setting(st->h, key);
    return v && *v ? v : spec->image;
}

static int no_image(const struct sbx_box_spec *spec, struct sbx_err *err)
{
    char var[64] = "SANDBOX_IMAGE_";
    size_t o = strlen(var);

    for (const char *p = spec->language; p && *p && o + 1 < sizeof(var); p++)
        var[o++] = (char)toupper((unsigned char)*p);
    var[o] = '\0';
    return k8s_fail(err, SBX_E_INVALID, 0,
            "language '%s' names no image; set %s or its manifest's image", spec->language, var);
}

/* A box's pod: named after the run id, which is unique and made of
 * [a-z0-9.-] (a valid DNS subdomain once prefixed). */
struct k8s_box *k8s_box_new(struct k8s_state *st, const char *name, int cancel_fd)
{
    struct k8s_box *b = calloc(1, sizeof(*b));

    if (!b)
        return NULL;
    b->st = st;
    b->cancel_fd = cancel_fd;
    b->cg.fd = -1;
    snprintf(b->name, sizeof(b->name), "sbx-%s", name);
    b->ready_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
    if (b->ready_fd < 0) {
        free(b);
        return NULL;
    }
    return b;
}

void k8s_pod_input_init(struct k8s_state *st, struct k8s_pod_input *in, const struct sbx_policy *p,
        const char *name, const char *image)
{
    *in = (struct k8s_pod_input){.policy = p,
            .name = name,
            .image = image,
            .owner = st->owner,
            .pull_policy = st->pull_policy,
            .uid = st->uid,
            .gid = st->gid,
            .request_percent = st->request_percent,
            .labelled_off = !st->prove,
            .netcheck_len = st->prove ? st->netcheck_len : 0,
            .agent_len = st->agent_len,
            .agent_sha = st->agent_sha,
            .witness_port = st->witness_port,
            .netpol_ms = st->netpol_ms,
            /* the run's time, the start, and a minute for staging and the rest */
            .life_s = (int64_t)(p->wall_time_ms / 1000) + st->start_ms / 1000 + 60};
}

int k8s_box_open(void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    struct k8s_state *st = state;
    const char *image = pick_image(st, spec);
    int64_t deadline = k8s_now_ms() + st->start_ms;
    struct k8s_pod_input in;
    struct k8s_box *b;
    int r;

    if (!image || !*image)
        return no_image(spec, err);
    if (SBX_HAS_FIELD(struct sbx_box_spec, spec, mounts) && spec->n_mounts > 0)
        return k8s_fail(err, SBX_E_UNSUPPORTED, 0,
                "the kubernetes backend cannot mount the core's directories into a pod");
    r = k8s_binaries(st, err);
    if (r < 0)
        return r;
    b = k8s_box_new(st, spec->id, spec->cancel_fd);
    if (!b)
        return k8s_fail(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    k8s_pod_input_init(st, &in, spec->policy, b->name, image);
    in.envp = spec->envp;
    /* a language's version probe fetches nothing the node lacks */
    if (SBX_HAS_FIELD(struct sbx_box_spec, spec, flags) && (spec->flags & SBX_BOX_PROBE))
        in.pull_policy = "Never";
    r = k8s_pod_start(b, &in, deadline, err);
    if (r == 0) {
        k8s_cg_open(&b->cg, b->uid, b->cid);
        st->h->log(st->h, SBX_LOG_DEBUG, "pod %s attached after %lld ms", b->name,
                (long long)(k8s_now_ms() + st->start_ms - deadline));
    }
    if (r == 0 && st->prove) {
        r = k8s_pod_prove(b, deadline, err);
        st->h->log(st->h, SBX_LOG_DEBUG, "pod %s: '%s' after %lld ms", b->name, b->line,
                (long long)(k8s_now_ms() + st->start_ms - deadline));
    }
    if (r == 0)
        r = k8s_pod_send(b, st->agent, st->agent_len, deadline, err);
    if (r < 0) {
        k8s_box_free(b);
        return r;
    }
    *ret_box = b;
    return 0;
}

int k8s_box_poll_fd(void *box)
{
    struct k8s_box *b = box;

    if (!b->ws || kch_pending(&b->ch))
        return b->ready_fd; /* box_read will not block */
    return b->st->h->ws_fd(b->ws);
}

int k8s_box_write_fd(void *box)
{
    struct k8s_box *b = box;

    return b->ws ? b->st->h->ws_fd(b->ws) : b->ready_fd;
}

int64_t k8s_box_read(void *box, void *buf, size_t len)
{
    struct k8s_box *b = box;
    int64_t n;

    if (!b->ws)
        return 0;
    n = kch_read(&b->ch, buf, len);
    /* the program's end arrives while its cgroup still exists */
    if (n > 0)
        k8s_cg_sample(&b->cg);
    return n;
}

int64_t k8s_box_write(void *box, const void *buf, size_t len)
{
    struct k8s_box *b = box;

    if (!b->ws) {
        errno = EPIPE;
        return -1;
    }
    return kch_write(&b->ch, buf, len);
}

/* Close the agent's stdin (v5) and wait, bounded, for the stream's end:
 * at its end of input the agent, pid 1, kills every process in the pod and
 * exits, and the container's end ends the stream. true when seen. */
static bool end_agent(struct k8s_box *b, int64_t ms)
{
    const struct sbx_host *h = b->st->h;
    int64_t end = k8s_now_ms() + ms;
    unsigned char buf[4096];

    if (kch_close_stdin(&b->ch) < 0)
        return false;
    while (k8s_now_ms() < end) {
        struct pollfd p = {.fd = h->ws_fd(b->ws), .events = POLLIN};
        int64_t n = kch_read(&b->ch, buf, sizeof(buf)); /* what is left is dropped */

        if (n == 0)
            return true;
        if (n < 0 && errno != EAGAIN)
            return false;
        if (n < 0)
            poll(&p, 1, (int)(end - k8s_now_ms() > 0 ? end - k8s_now_ms() : 0));
    }
    return false;
}

int k8s_box_kill(void *box)
{
    struct k8s_box *b = box;
    struct sbx_err err = {.size = sizeof(err)};

    /* the stream's end is the agent's end of input: as pid 1 it kills
     * every process in the pod at once; the deletion is the backstop */
    if (b->ws && !end_agent(b, KILL_WAIT_MS))
        b->st->h->log(b->st->h, SBX_LOG_DEBUG, "pod %s: the agent's end was not seen", b->name);
    if (b->ws)
        b->st->h->ws_free(b->ws);
    b->ws = NULL;
    if (b->created && !b->killed) {
        b->killed = true;
        k8s_delete_pod(b->st, b->name, K8S_DELETE_MS, &err);
    }
    return 0;
}

int k8s_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    struct k8s_box *b = box;

    (void)err;
    k8s_cg_sample(&b->cg);
    stats->oom_killed = b->cg.fd >= 0 ? b->cg.oom_kills > 0 : -1;
    stats->pids_limited = -1;
    /* nothing of the run outlives the call: the agent (told QUIT by now, or
     * its stdin closes here) ends the pod's processes before we return */
    int64_t t0 = k8s_now_ms();
    bool seen = b->ws && end_agent(b, CLOSE_WAIT_MS);

    b->st->h->log(b->st->h, SBX_LOG_DEBUG, "pod %s: the agent's end %s after %lld ms", b->name,
            seen ? "seen" : "not seen", (long long)(k8s_now_ms() - t0));
    if (b->diag_len)
        b->st->h->log(b->st->h, SBX_LOG_DEBUG, "pod %s: agent said: %s", b->name, b->diag);
    k8s_box_free(b);
    return 0;
}
