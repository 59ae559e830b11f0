/* SPDX-License-Identifier: MIT */
/*
 * boot.c: bring a pod from nothing to a ready agent, every step bounded
 * by the box's deadline and cancel fd:
 *   1. create it (translate.c's manifest; no network label yet unless the
 *      operator accepted an unproven policy);
 *   2. watch it until its container runs (an image that cannot be pulled,
 *      a container that cannot be created, or a pod that ends fails at once);
 *   3. attach to the container's stdin/stdout/stderr over a WebSocket
 *      (v5.channel.k8s.io, else v4); the boot script waits on stdin, so
 *      nothing runs that we did not send;
 *   4. send the network check; once it says the node answers, label the
 *      pod network=off (our deny-all selects it) and wait until it says
 *      the node is refused: the policy is in force for this pod;
 *   5. send the agent, whose SHA-256 the script checks before exec'ing it.
 * The agent and the check are read once per plugin state.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "box.h"

#define BIN_MAX   (64u * 1024u * 1024u)
#define LINE_WAIT "sbx-k8s: "
#define FATAL_WAITING                                                                              \
    "ErrImagePull ImagePullBackOff ErrImageNeverPull InvalidImageName "                            \
    "CreateContainerConfigError CreateContainerError RunContainerError "

int64_t k8s_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int read_fd_all(int fd, char **ret, size_t *ret_len)
{
    struct stat sb;
    char *buf;
    size_t got = 0;

    if (fstat(fd, &sb) < 0 || sb.st_size <= 0 || (uint64_t)sb.st_size > BIN_MAX)
        return -1;
    buf = malloc((size_t)sb.st_size);
    while (buf && got < (size_t)sb.st_size) {
        ssize_t n = pread(fd, buf + got, (size_t)sb.st_size - got, (off_t)got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (!buf || got != (size_t)sb.st_size) {
        free(buf);
        return -1;
    }
    *ret = buf;
    *ret_len = got;
    return 0;
}

/* Something of ours to ask dladdr about (an object: ISO C has no cast
 * from a function pointer). */
static const char anchor;

/* The network check sits beside the plugin's library as kubernetes-netcheck. */
static int read_netcheck(struct k8s_state *st, struct sbx_err *err)
{
    Dl_info info;
    char path[4096];
    const char *slash;
    int fd, r;

    if (!dladdr(&anchor, &info) || !info.dli_fname || !(slash = strrchr(info.dli_fname, '/')))
        return k8s_fail(err, SBX_E_INTERNAL, 0, "cannot find the plugin's own directory");
    snprintf(path, sizeof(path), "%.*s/kubernetes-netcheck", (int)(slash - info.dli_fname),
            info.dli_fname);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    r = fd >= 0 ? read_fd_all(fd, &st->netcheck, &st->netcheck_len) : -1;
    if (fd >= 0)
        close(fd);
    if (r < 0)
        return k8s_fail(err, SBX_E_UNAVAILABLE, errno,
                "the network check %s is missing or unreadable (reinstall the kubernetes "
                "plugin)",
                path);
    return 0;
}

int k8s_binaries(struct k8s_state *st, struct sbx_err *err)
{
    const struct sbx_host *h = st->h;
    int fd = -1, r = 0;

    pthread_mutex_lock(&st->lock);
    if (!st->agent) {
        r = h->agent_fd(h, &fd, err);
        if (r == 0 && read_fd_all(fd, &st->agent, &st->agent_len) < 0)
            r = k8s_fail(err, SBX_E_UNAVAILABLE, errno, "cannot read the agent binary");
        if (fd >= 0)
            close(fd);
        if (r == 0)
            r = h->agent_sha256(h, st->agent_sha, err);
    }
    if (r == 0 && !st->netcheck)
        r = read_netcheck(st, err);
    pthread_mutex_unlock(&st->lock);
    return r;
}

/* ---- the WebSocket under the channel layer ----------------------------- */

static int64_t ws_recv(void *box, void *buf, size_t len, uint32_t *flags)
{
    struct k8s_box *b = box;

    return b->st->h->ws_recv(b->ws, buf, len, flags);
}

static int ws_send(void *box, const void *buf, size_t len, uint32_t flags)
{
    struct k8s_box *b = box;

    return b->st->h->ws_send(b->ws, buf, len, flags);
}

/* stderr: the boot script's complaints, then the agent's diagnostics;
 * the latest are kept for an error message. */
static void on_stderr(void *box, const char *data, size_t len)
{
    struct k8s_box *b = box;
    size_t room = sizeof(b->diag) - 1 - b->diag_len;

    if (len > room) {
        b->diag_len = 0;
        room = sizeof(b->diag) - 1;
    }
    if (len > room) {
        data += len - room;
        len = room;
    }
    memcpy(b->diag + b->diag_len, data, len);
    b->diag_len += len;
    b->diag[b->diag_len] = '\0';
    b->st->h->log(b->st->h, SBX_LOG_DEBUG, "pod %s: %.*s", b->name, (int)len, data);
}

/* ---- create and watch ---------------------------------------------------- */

static int create_pod(struct k8s_box *b, const struct k8s_pod_input *in, struct sbx_err *err)
{
    struct k8s_state *st = b->st;
    struct json_object *pod = k8s_pod_json(in, err), *res = NULL, *meta, *v;
    char path[200];
    int r;

    if (!pod)
        return err->rc;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", st->ns);
    struct k8s_call c = {.method = "POST", .path = path, .body = pod, .cancel_fd = b->cancel_fd};
    r = k8s_api(st, &c, NULL, &res, err);
    json_object_put(pod);
    if (r == 0) {
        b->created = true;
        if (json_object_object_get_ex(res, "metadata", &meta)) {
            if (json_object_object_get_ex(meta, "uid", &v))
                snprintf(b->uid, sizeof(b->uid), "%s", json_object_get_string(v));
            if (json_object_object_get_ex(meta, "resourceVersion", &v))
                snprintf(b->rv, sizeof(b->rv), "%s", json_object_get_string(v));
        }
    }
    json_object_put(res);
    return r;
}

struct watch {
    struct k8s_box *b;
    char *buf;
    size_t len, cap;
    int done; /* 1: running; -1: it cannot run (why) */
    char why[200];
    char pending[160]; /* the last reason it was still pending */
};

static const char *jstr(struct json_object *o, const char *key)
{
    struct json_object *v;

    return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

/* A container's state: running (1), cannot start (-1, why), or not yet (0). */
static int container_state(struct watch *w, struct json_object *cs)
{
    struct json_object *state, *s;
    const char *reason, *msg, *id = jstr(cs, "containerID");

    if (!json_object_object_get_ex(cs, "state", &state))
        return 0;
    if (json_object_object_get_ex(state, "running", &s)) {
        const char *sep = id ? strstr(id, "://") : NULL;

        snprintf(w->b->cid, sizeof(w->b->cid), "%s", sep ? sep + 3 : id ? id : "");
        return 1;
    }
    if (json_object_object_get_ex(state, "terminated", &s) ||
            json_object_object_get_ex(state, "waiting", &s)) {
        reason = jstr(s, "reason");
        msg = jstr(s, "message");
        snprintf(w->pending, sizeof(w->pending), "%s%s%.100s", reason ? reason : "?",
                msg ? ": " : "", msg ? msg : "");
        if (json_object_object_get_ex(state, "terminated", NULL) ||
                (reason && strstr(FATAL_WAITING, reason))) {
            snprintf(w->why, sizeof(w->why), "its container cannot run: %s", w->pending);
            return -1;
        }
    }
    return 0;
}

static void pod_event(struct watch *w, struct json_object *ev)
{
    struct json_object *obj, *status, *css, *conds;
    const char *type = jstr(ev, "type"), *phase;

    if (!json_object_object_get_ex(ev, "object", &obj))
        return;
    if (type && strcmp(type, "ERROR") == 0) {
        snprintf(w->why, sizeof(w->why), "the watch failed: %.150s", jstr(obj, "message"));
        w->done = -1;
        return;
    }
    if (type && strcmp(type, "DELETED") == 0) {
        snprintf(w->why, sizeof(w->why), "it was deleted while starting");
        w->done = -1;
        return;
    }
    if (!json_object_object_get_ex(obj, "status", &status))
        return;
    phase = jstr(status, "phase");
    if (phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0)) {
        snprintf(w->why, sizeof(w->why), "it ended (%s%s%.120s)", phase,
                jstr(status, "message") ? ": " : "", jstr(status, "message"));
        w->done = -1;
        return;
    }
    if (json_object_object_get_ex(status, "conditions", &conds))
        for (size_t i = 0; i < json_object_array_length(conds); i++) {
            struct json_object *c = json_object_array_get_idx(conds, i);
            const char *m = jstr(c, "message");

            if (jstr(c, "reason") && strcmp(jstr(c, "reason"), "Unschedulable") == 0 && m)
                snprintf(w->pending, sizeof(w->pending), "unschedulable: %.140s", m);
        }
    if (json_object_object_get_ex(status, "containerStatuses", &css) &&
            json_object_array_length(css) > 0) {
        int s = container_state(w, json_object_array_get_idx(css, 0));

        if (s != 0 && (s < 0 || (phase && strcmp(phase, "Running") == 0)))
            w->done = s;
    }
}

/* One line of the watch stream is one event. */
static int on_watch(void *userdata, const char *data, size_t len)
{
    struct watch *w = userdata;

    for (size_t i = 0; i < len && !w->done; i++) {
        if (data[i] != '\n') {
            if (w->len + 1 >= w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 16384;
                char *p = cap <= BIN_MAX ? realloc(w->buf, cap) : NULL;

                if (!p)
                    return 1;
                w->buf = p;
                w->cap = cap;
            }
            w->buf[w->len++] = data[i];
            continue;
        }
        w->buf[w->len] = '\0';
        struct json_object *ev = json_tokener_parse(w->buf);
        if (ev)
            pod_event(w, ev);
        json_object_put(ev);
        w->len = 0;
    }
    return w->done != 0;
}

static int await_running(struct k8s_box *b, int64_t deadline, struct sbx_err *err)
{
    struct k8s_state *st = b->st;
    struct watch w = {.b = b};
    char path[512];
    int r = 0;

    while (!w.done) {
        int64_t left = deadline - k8s_now_ms();

        if (left <= 0) {
            r = k8s_fail(err, SBX_E_UNAVAILABLE, ETIMEDOUT,
                    "pod %s did not start within %lld s%s%s", b->name,
                    (long long)(st->start_ms / 1000), w.pending[0] ? ": " : "", w.pending);
            break;
        }
        snprintf(path, sizeof(path),
                "/api/v1/namespaces/%s/pods?watch=1&fieldSelector=metadata.name%%3D%s"
                "&resourceVersion=%s&timeoutSeconds=%lld",
                st->ns, b->name, b->rv, (long long)(left / 1000 + 1));
        struct k8s_call c = {.method = "GET",
                .path = path,
                .timeout_ms = left,
                .cancel_fd = b->cancel_fd,
                .on_body = on_watch,
                .userdata = &w};
        w.len = 0;
        r = k8s_api(st, &c, NULL, NULL, err);
        if (w.done)
            r = 0;
        else if (r < 0)
            break;
    }
    free(w.buf);
    if (r == 0 && w.done < 0)
        r = k8s_fail(err, SBX_E_UNAVAILABLE, 0, "pod %s: %s", b->name, w.why);
    return r;
}

static int attach(struct k8s_box *b, struct sbx_err *err)
{
    static const char *const protocols[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", NULL};
    const struct sbx_host *h = b->st->h;
    char path[300];
    struct k8s_http hr;
    int r;

    snprintf(path, sizeof(path),
            "/api/v1/namespaces/%s/pods/%s/attach?container=" K8S_CONTAINER
            "&stdin=true&stdout=true&stderr=true&tty=false",
            b->st->ns, b->name);
    r = k8s_http_init(b->st, &hr, "GET", path, err);
    if (r < 0)
        return r;
    hr.req.cancel_fd = b->cancel_fd;
    hr.req.timeout_ms = 30000;
    r = h->ws_open(h, &hr.req, protocols, &b->ws, err);
    k8s_http_done(&hr);
    if (r < 0)
        return r;
    struct kch_ws io = {.recv = ws_recv, .send = ws_send, .ws = b};
    kch_init(&b->ch, &io, strcmp(h->ws_protocol(b->ws), "v5.channel.k8s.io") == 0);
    b->ch.on_stderr = on_stderr;
    b->ch.userdata = b;
    return 0;
}

int k8s_pod_start(
        struct k8s_box *b, const struct k8s_pod_input *in, int64_t deadline, struct sbx_err *err)
{
    int r = create_pod(b, in, err);

    if (r == 0)
        r = await_running(b, deadline, err);
    if (r == 0)
        r = attach(b, err);
    return r;
}

/* ---- talking to the boot script -------------------------------------------- */

/* Wait until fd is ready for events (or the cancel fd fires, or the
 * deadline passes). */
static int wait_fd(struct k8s_box *b, short events, int64_t deadline, struct sbx_err *err)
{
    struct pollfd p[2] = {{.fd = b->st->h->ws_fd(b->ws), .events = events},
            {.fd = b->cancel_fd, .events = POLLIN}};
    int64_t left = deadline - k8s_now_ms();

    if (left <= 0)
        return k8s_fail(err, SBX_E_UNAVAILABLE, ETIMEDOUT,
                "pod %s: no answer from its container in time (%s)", b->name,
                b->line[0] ? b->line : "the API server or the kubelet stopped answering");
    if (poll(p, 2, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
        return k8s_fail(err, SBX_E_IO, errno, "poll: %s", strerror(errno));
    if (p[1].revents)
        return k8s_fail(err, SBX_E_CANCELLED, 0, "cancelled while the pod started");
    return 0;
}

int k8s_pod_send(
        struct k8s_box *b, const char *data, size_t len, int64_t deadline, struct sbx_err *err)
{
    size_t off = 0;

    while (off < len) {
        int64_t n = kch_write(&b->ch, data + off, len - off);

        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (errno != EAGAIN)
            return k8s_fail(
                    err, SBX_E_BACKEND, errno, "pod %s: the stream ended while sending", b->name);
        if (wait_fd(b, POLLOUT, deadline, err) < 0)
            return err->rc;
    }
    return 0;
}

/* Why the stream ended before the script said what we waited for. */
static int ended(struct k8s_box *b, struct sbx_err *err)
{
    char msg[160];
    int code = kch_exit_code(&b->ch);

    kch_status_message(&b->ch, msg, sizeof(msg));
    while (b->diag_len && strchr("\r\n", b->diag[b->diag_len - 1]))
        b->diag[--b->diag_len] = '\0';
    return k8s_fail(err, SBX_E_BACKEND, 0, "pod %s: its boot ended (exit %d%s%s)%s%s", b->name,
            code, msg[0] ? ", " : "", msg, b->diag_len ? ": " : "", b->diag);
}

/* The next line the script prints on stdout: 0 with it in b->line. */
static int read_line(struct k8s_box *b, int64_t deadline, struct sbx_err *err)
{
    size_t n = 0;

    for (;;) {
        char c;
        int64_t r = kch_read(&b->ch, &c, 1);

        if (r == 1 && c == '\n') {
            b->line[n] = '\0';
            return 0;
        }
        if (r == 1) {
            if (n + 1 < sizeof(b->line))
                b->line[n++] = c;
            continue;
        }
        if (r == 0)
            return ended(b, err);
        if (errno != EAGAIN)
            return k8s_fail(
                    err, SBX_E_BACKEND, errno, "pod %s: reading its stream failed", b->name);
        if (wait_fd(b, POLLIN, deadline, err) < 0)
            return err->rc;
    }
}

/* Lines until one that starts with want; another of ours ends it. */
static int expect(struct k8s_box *b, const char *want, int64_t deadline, struct sbx_err *err)
{
    for (;;) {
        if (read_line(b, deadline, err) < 0)
            return err->rc;
        if (strncmp(b->line, want, strlen(want)) == 0)
            return 0;
        if (strncmp(b->line, LINE_WAIT, strlen(LINE_WAIT)) == 0)
            return k8s_fail(err, SBX_E_UNSUPPORTED, 0, "%s", b->line + strlen(LINE_WAIT));
    }
}

int k8s_pod_prove(struct k8s_box *b, int64_t deadline, struct sbx_err *err)
{
    struct k8s_state *st = b->st;
    struct json_object *patch;
    char path[300];
    int r;

    if (k8s_pod_send(b, st->netcheck, st->netcheck_len, deadline, err) < 0 ||
            expect(b, K8S_BOOT_REACH, deadline, err) < 0)
        return err->rc;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", st->ns, b->name);
    patch = k8s_label_off_json();
    struct k8s_call c = {.method = "PATCH",
            .path = path,
            .body = patch,
            .patch = true,
            .timeout_ms = deadline - k8s_now_ms(),
            .cancel_fd = b->cancel_fd};
    r = c.timeout_ms > 0
                ? k8s_api(st, &c, NULL, NULL, err)
                : k8s_fail(err, SBX_E_UNAVAILABLE, ETIMEDOUT, "pod %s: no time left", b->name);
    json_object_put(patch);
    if (r == 0)
        r = expect(b, K8S_BOOT_BLOCKED, deadline, err);
    return r;
}

void k8s_box_free(struct k8s_box *b)
{
    struct sbx_err err = {.size = sizeof(err)};

    if (b->ws)
        b->st->h->ws_free(b->ws);
    b->ws = NULL;
    if (b->created && !b->killed)
        k8s_delete_pod(b->st, b->name, K8S_DELETE_MS, &err);
    k8s_cg_close(&b->cg);
    if (b->ready_fd >= 0)
        close(b->ready_fd);
    free(b);
}
