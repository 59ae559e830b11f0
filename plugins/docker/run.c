/* SPDX-License-Identifier: MIT */
/*
 * run.c: open, watch and destroy one container box. Thin: the create body
 * comes from translate.c, HTTP and the hijacked attach connection from the
 * core's host table. Order: create (refused if the daemon warns that it
 * dropped a setting, then checked by reading the container back), attach
 * (before start, so no byte is lost), start. The channel is the attach
 * connection: we write the agent's stdin; its stdout arrives multiplexed
 * (demux.c) with stderr, the agent's diagnostics, which we log.
 * Kill and close are in close.c, the removal after a result in reaper.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box.h"
#include "translate.h"

static int64_t conn_read(void *ctx, void *buf, size_t len)
{
    struct dk_box *b = ctx;

    return b->st->h->conn_read(b->conn, buf, len);
}

static void on_diag(void *ctx, const char *data, size_t len)
{
    struct dk_box *b = ctx;
    size_t room = sizeof(b->diag) - 1 - b->diag_len;

    if (len > room) { /* keep the latest */
        b->diag_len = 0;
        room = sizeof(b->diag) - 1;
    }
    memcpy(b->diag + b->diag_len, data, len < room ? len : room);
    b->diag_len += len < room ? len : room;
    b->diag[b->diag_len] = '\0';
}

/* The image for a language: setting image_<lang> (SANDBOX_IMAGE_<LANG>),
 * else the manifest's. */
static const char *pick_image(struct dk_state *st, const struct sbx_box_spec *spec)
{
    char key[64];
    const char *v;

    snprintf(key, sizeof(key), "image_%s", spec->language ? spec->language : "");
    v = st->h->setting(st->h, key);
    return v ? v : spec->image;
}

static int no_image(const struct sbx_box_spec *spec, struct sbx_err *err)
{
    char var[64] = "SANDBOX_IMAGE_";
    size_t o = strlen(var);

    for (const char *p = spec->language; p && *p && o + 1 < sizeof(var); p++)
        var[o++] = (char)toupper((unsigned char)*p);
    var[o] = '\0';
    return sbx_err_fill(err, SBX_E_INVALID, 0,
            "language '%s' names no image; set %s or its manifest's image", spec->language, var);
}

int dk_box_image_id(
        void *state, const struct sbx_box_spec *spec, char *ret_id, size_t len, struct sbx_err *err)
{
    struct dk_state *st = state;
    const char *image = pick_image(st, spec);
    struct dk_fetch f = {.cancel_fd = spec->cancel_fd,
            .no_pull = SBX_HAS_FIELD(struct sbx_box_spec, spec, flags) &&
                       (spec->flags & SBX_BOX_PROBE)};

    if (!image || !*image)
        return no_image(spec, err);
    return dk_image_id(st, image, &f, ret_id, len, err);
}

/* Podman opens the profile by path on its host (a local service): hand it
 * /proc/<our pid>/fd/<memfd>, open until the box is closed. */
static int seccomp_memfd(
        struct dk_box *b, struct dk_input *in, char *path, size_t len, struct sbx_err *err)
{
    char *profile = dk_seccomp_profile(in->seccomp);
    int r;

    if (!profile)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    r = b->st->h->memfd_new(
            b->st->h, "sbx-seccomp-json", profile, strlen(profile), &b->seccomp_fd, err);
    free(profile);
    if (r < 0)
        return r;
    snprintf(path, len, "/proc/%d/fd/%d", (int)getpid(), b->seccomp_fd);
    in->seccomp_path = path;
    return 0;
}

static int create(
        struct dk_box *b, const struct sbx_box_spec *spec, const char *image, struct sbx_err *err)
{
    const struct sbx_host *h = b->st->h;
    const struct sbx_seccomp_rules *rules;
    struct json_object *body, *res = NULL, *v;
    char path[160], mfd_path[64];
    uint32_t uid, gid;
    int r;

    if (h->seccomp_rules(h, &rules, err) < 0)
        return err->rc;
    h->sandbox_ids(h, &uid, &gid);
    if (SBX_HAS_FIELD(struct sbx_box_spec, spec, host_gid) && spec->host_uid && spec->host_gid)
        uid = spec->host_uid, gid = spec->host_gid; /* the box's own (ABI 1.5) */
    struct dk_input in = {.policy = spec->policy,
            .image = image,
            .envp = spec->envp,
            .owner = h->instance_id(h),
            .run_id = spec->id,
            .seccomp = rules,
            .podman = b->st->podman,
            .uid = uid,
            .gid = gid};
    struct dk_mount mounts[DK_MOUNTS_MAX];

    for (size_t i = 0; i < b->vols.n; i++)
        mounts[i] = (struct dk_mount){.volume = b->vols.v[i].name,
                .target = b->vols.v[i].target,
                .read_only = !b->vols.v[i].rw};
    in.mounts = mounts;
    in.n_mounts = b->vols.n;
    in.proxy_socket =
            SBX_HAS_FIELD(struct sbx_box_spec, spec, proxy_socket) ? spec->proxy_socket : NULL;
    /* the daemon binds the socket from its own filesystem: ours only when local */
    if (in.proxy_socket && strncmp(b->st->endpoint, "unix://", 7) != 0)
        return sbx_err_fill(err, SBX_E_UNSUPPORTED, 0,
                "the filtering proxy reaches only a local %s daemon (unix://)", b->st->name);
    if (b->st->podman && seccomp_memfd(b, &in, mfd_path, sizeof(mfd_path), err) < 0)
        return err->rc;
    body = dk_translate(&in, err);
    if (!body)
        return err->rc;
    snprintf(path, sizeof(path), "/containers/create?name=sbx-%s", spec->id);
    struct dk_call c = {.method = "POST", .path = path, .body = body};
    r = dk_api(b->st, &c, NULL, &res, err);
    json_object_put(body);
    if (r == 0 && json_object_object_get_ex(res, "Id", &v))
        snprintf(b->id, sizeof(b->id), "%s", json_object_get_string(v));
    else if (r == 0)
        r = sbx_err_fill(err, SBX_E_BACKEND, 0, "container create returned no Id");
    if (r == 0 && json_object_object_get_ex(res, "Warnings", &v) &&
            json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0)
        r = sbx_err_fill(err, SBX_E_UNSUPPORTED, 0, "the %s daemon cannot apply the policy: %s",
                b->st->name, json_object_get_string(json_object_array_get_idx(v, 0)));
    json_object_put(res);
    if (r == 0)
        r = dk_verify(b->st, b->id, spec->policy, err);
    return r;
}

static int attach_and_start(struct dk_box *b, struct sbx_err *err)
{
    const struct sbx_host *h = b->st->h;
    char path[200];
    int r;

    snprintf(path, sizeof(path), "%s/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1",
            DK_API, b->id);
    struct sbx_http req = {.size = sizeof(req),
            .endpoint = b->st->endpoint,
            .tls_dir = b->st->tls_dir[0] ? b->st->tls_dir : NULL,
            .method = "POST",
            .path = path,
            .timeout_ms = 30000,
            .cancel_fd = -1};
    r = h->http_upgrade(h, &req, &b->conn, err);
    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "/containers/%s/start", b->id);
    struct dk_call c = {.method = "POST", .path = path};
    r = dk_api(b->st, &c, NULL, NULL, err);
    if (r == 0)
        dk_cg_open(&b->cg, b->st, (int)dk_inspect_state(b, "Pid"));
    return r;
}

/* The read-only set at /deps, which COMMIT_CONTAINER puts in an image. */
static const char *deps_set(const struct sbx_box_spec *spec)
{
    size_t n = SBX_HAS_FIELD(struct sbx_box_spec, spec, mounts) ? spec->n_mounts : 0;

    for (size_t i = 0; i < n; i++)
        if (!(spec->mounts[i].flags & SBX_MOUNT_RW) && spec->mounts[i].target &&
                strcmp(spec->mounts[i].target, "/deps") == 0)
            return spec->mounts[i].source;
    return NULL;
}

/* The image to run (the agent image, or a committed one), the volumes. */
static int prepare(struct dk_box *b, const struct sbx_box_spec *spec, const char *image, char *ref,
        size_t len, struct sbx_err *err)
{
    const char *set = dk_commit_enabled(b->st) ? deps_set(spec) : NULL;
    struct dk_fetch f = {.cancel_fd = spec->cancel_fd,
            .no_pull = SBX_HAS_FIELD(struct sbx_box_spec, spec, flags) &&
                       (spec->flags & SBX_BOX_PROBE)};
    uint32_t uid = SBX_HAS_FIELD(struct sbx_box_spec, spec, host_gid) ? spec->host_uid : 0;
    int r = dk_agent_image(b->st, image, uid, &f, ref, len, err);

    if (f.pulled)
        snprintf(b->release[0], sizeof(b->release[0]), "%s", image);
    if (r == 0)
        snprintf(b->release[1], sizeof(b->release[1]), "%s", ref);
    if (r == 0)
        r = dk_volumes_open(b->st, spec, ref, set ? "/deps" : NULL, &b->vols, err);
    if (r == 0 && set) {
        r = dk_commit_image(b->st, ref, set, spec->language, ref, len, err);
        if (r == 0)
            snprintf(b->release[2], sizeof(b->release[2]), "%s", ref);
    }
    return r;
}

int dk_box_open(void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    struct dk_state *st = state;
    struct dk_box *b = calloc(1, sizeof(*b));
    const char *image = pick_image(st, spec);
    char ref[160];
    int r;

    if (!b)
        return sbx_err_fill(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    b->st = st;
    b->seccomp_fd = -1;
    b->cg.pids_fd = b->cg.mem_fd = -1;
    if (!image || !*image)
        r = no_image(spec, err);
    else
        r = prepare(b, spec, image, ref, sizeof(ref), err);
    if (r == 0)
        r = create(b, spec, ref, err);
    if (r == 0)
        r = attach_and_start(b, err);
    if (r < 0) {
        struct sbx_box_stats s = {.size = sizeof(s)};
        struct sbx_err e2 = {.size = sizeof(e2)};

        dk_box_close(b, &s, &e2);
        return r;
    }
    *ret_box = b;
    return 0;
}

int dk_box_poll_fd(void *box)
{
    struct dk_box *b = box;

    return b->conn ? b->st->h->conn_fd(b->conn) : -1;
}

int dk_box_write_fd(void *box)
{
    return dk_box_poll_fd(box);
}

int64_t dk_box_read(void *box, void *buf, size_t len)
{
    struct dk_box *b = box;
    int64_t n;

    if (!b->conn)
        return 0;
    n = dk_demux_read(&b->demux, conn_read, b, buf, len, on_diag, b);
    /* the program's end arrives here while its cgroup still exists */
    if (n > 0)
        b->cg_fresh = dk_cg_sample(&b->cg);
    return n;
}

int64_t dk_box_write(void *box, const void *buf, size_t len)
{
    struct dk_box *b = box;

    if (!b->conn) {
        errno = EPIPE;
        return -1;
    }
    return b->st->h->conn_write(b->conn, buf, len);
}
