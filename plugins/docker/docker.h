/* SPDX-License-Identifier: MIT */
/*
 * docker.h: shared between the Docker/Podman plugin's files. One plugin
 * serves both backends: Podman is driven through its Docker-compatible API
 * (`podman system service`), so the only differences are the default
 * endpoint and a name. Plugin-private; only llm-sandbox/plugin.h crosses
 * to the core.
 */
#ifndef DOCKER_DOCKER_H
#define DOCKER_DOCKER_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/plugin_kit.h>

#define DK_API "/v1.41" /* Docker 20.10; Podman 4's compatible API says the same */
#define DK_LIBPOD_API                                                                              \
    "/v4.0.0/libpod" /* Podman's own API (4 and later), for what the                               \
                      * compatible one does not tell */
#define DK_LABEL        "org.llm-sandbox.owner"
#define DK_LABEL_RUN    "org.llm-sandbox.run"
#define DK_LABEL_SOURCE "org.llm-sandbox.source" /* a set volume's host directory */
#define DK_AGENT_REPO   "llm-sandbox-agent"
#define DK_REAP_FAILED  16 /* removals to try again at unload */

struct dk_box;

struct dk_state {
    const struct sbx_host *h;
    char name[16];      /* "docker" or "podman" */
    char endpoint[512]; /* unix:///..., tcp://... */
    char tls_dir[512];  /* client certificates, or "" */
    bool podman;
    bool swap_limit;      /* the daemon can limit memory+swap */
    pthread_mutex_t lock; /* serialises making agent images */
    /* reaper.c: closed boxes whose containers are still to be removed */
    pthread_mutex_t reap_lock;
    pthread_cond_t reap_cond;
    struct dk_box *reap_head, **reap_tail;
    pthread_t reaper;
    bool reaper_on, reap_stop;
    char reap_failed[DK_REAP_FAILED][80]; /* container ids whose removal failed */
};

/* api.c: one Engine API call. path is under DK_API. body (borrowed) is
 * sent as JSON when not NULL. On HTTP status >= 400 the daemon's message
 * becomes an SBX_E_BACKEND error (SBX_E_UNAVAILABLE for 404 when
 * missing_ok is false); *ret_status gets the status either way when not
 * NULL; *ret_json (transfer full) the parsed body when asked for. */
struct dk_call {
    const char *method;
    const char *path;
    struct json_object *body;
    const void *raw; /* a non-JSON body (a tar archive), or NULL */
    size_t raw_len;
    int64_t timeout_ms;
    bool missing_ok; /* 404 is an answer, not an error */
    bool libpod;     /* path is under DK_LIBPOD_API (Podman only) */
};
int dk_api(struct dk_state *st, const struct dk_call *c, long *ret_status,
        struct json_object **ret_json, struct sbx_err *err);
/* Percent-encode s into out for a URL query or path segment. */
bool dk_escape(const char *s, char *out, size_t len);
/* How a missing image may be fetched. */
struct dk_fetch {
    int cancel_fd; /* a pull stops when it becomes readable, or -1 */
    bool no_pull;  /* a probe: SBX_E_UNAVAILABLE instead of a pull */
    bool pulled;   /* set: the image was pulled for this call */
};
/* The image's ID (inspect), pulling the image when missing (as f allows). */
int dk_image_id(struct dk_state *st, const char *image, struct dk_fetch *f, char *id, size_t len,
        struct sbx_err *err);
/* The image to run for a box: ensure `image` is present (pulled with
 * progress when missing, as f allows), then the derived image holding the
 * agent at DK_AGENT (made once per image and agent; read-only root
 * filesystems cannot receive it at run time), its /etc/passwd naming the
 * sandbox uid and, when uid (a box's own host uid) is not 0, every uid of
 * uid's block of DK_UID_BLOCK "sandbox" (one image per block in use: the
 * core hands out the lowest free uids). */
#define DK_UID_BLOCK 256u
int dk_agent_image(struct dk_state *st, const char *image, uint32_t uid, struct dk_fetch *f,
        char *ret_ref, size_t len, struct sbx_err *err);
/* Remove containers whose owner instance (label) is a dead process here. */
void dk_sweep(struct dk_state *st);

/* cgroup.c: counters of a running container's own cgroup (local daemons
 * only; fds of -1 when unknown). */
struct dk_cg {
    int pids_fd, mem_fd;         /* pids.events, memory.events (v1: memory.oom_control) */
    int64_t pids_max, oom_kills; /* the highest counts seen */
};
void dk_cg_open(struct dk_cg *c, const struct dk_state *st, int pid);
/* Read the counters again: true when the memory counter was read (the
 * cgroup still exists), so the counts include everything until now. */
bool dk_cg_sample(struct dk_cg *c);
void dk_cg_close(struct dk_cg *c);

/* volume.c: the core's directories (spec->mounts) as named volumes. A
 * read-only one is a cached copy of the directory (made once per
 * directory); a writable one (a set's install staging) is a fresh volume,
 * read back into the directory by dk_volumes_collect. */
#define DK_MOUNTS_MAX 4
struct dk_vols {
    size_t n;
    struct {
        char name[96];
        char target[256];
        char *source; /* the host directory */
        bool rw;
    } v[DK_MOUNTS_MAX];
};
/* Make the volumes for spec's mounts (image: the agent image, for the
 * helper container that fills a volume), all but a read-only one at skip
 * (the image holds it), or NULL. */
int dk_volumes_open(struct dk_state *st, const struct sbx_box_spec *spec, const char *image,
        const char *skip, struct dk_vols *v, struct sbx_err *err);
/* A hash (FNV-1a) of salt (may be NULL), the directory's path and its
 * identity (device, inode, ctime): a new set directory hashes anew. */
int dk_dir_hash(const char *dir, const char *salt, uint64_t *ret, struct sbx_err *err);
/* An fd of dir holding an exclusive flock (close it to unlock), or -1. */
int dk_lock_dir(const char *dir);
/* Create a container of image that is never started (with volume at
 * target, when not NULL) and put a tar of dir at target. *ret_cid (the
 * caller removes it) is set once the container exists, even on error. */
int dk_fill_container(struct dk_state *st, const char *image, const char *volume, const char *dir,
        const char *target, char *ret_cid, size_t len, struct sbx_err *err);

/* commit.c: COMMIT_CONTAINER (setting commit_container, default false) and
 * KEEP_TEMPLATE (keep_template, default true). */
#define DK_COMMIT_REPO "llm-sandbox-commit"
bool dk_commit_enabled(struct dk_state *st);
/* A boolean setting (true, 1, yes), dflt when unset. */
bool dk_setting_true(struct dk_state *st, const char *key, bool dflt);
bool dk_keep_template(struct dk_state *st);
/* The image holding image plus dir at /deps, made once (labelled, a new
 * tag of DK_COMMIT_REPO): its reference in ret_ref. */
int dk_commit_image(struct dk_state *st, const char *image, const char *dir, const char *language,
        char *ret_ref, size_t len, struct sbx_err *err);
/* Remove an image unless a container uses it (KEEP_TEMPLATE=false). */
void dk_image_release(struct dk_state *st, const char *ref);
/* Remove the writable volumes; free the names. */
void dk_volumes_close(struct dk_state *st, struct dk_vols *v);
/* An unlinked temporary file in /var/tmp (O_TMPFILE), or -1 with err. */
int dk_tmpfile_fd(struct sbx_err *err);
#define DK_FILL_MS (10 * 60 * 1000) /* moving a set's tar either way */

/* setread.c: copy each writable volume, as container cid left it, into
 * its host directory. */
int dk_volumes_collect(
        struct dk_state *st, const char *cid, const struct dk_vols *v, struct sbx_err *err);

extern const struct sbx_backend_ops dk_ops;

int dk_probe(void *state, struct sbx_caps *caps, struct sbx_err *err);
/* Read container id back: SBX_E_UNSUPPORTED when a limit of p did not stick. */
int dk_verify(struct dk_state *st, const char *id, const struct sbx_policy *p, struct sbx_err *err);
int dk_box_open(void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err);
int dk_box_poll_fd(void *box);
int dk_box_write_fd(void *box);
int64_t dk_box_read(void *box, void *buf, size_t len);
int64_t dk_box_write(void *box, const void *buf, size_t len);
int dk_box_kill(void *box);
int dk_box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err);
int dk_box_image_id(void *state, const struct sbx_box_spec *spec, char *ret_id, size_t len,
        struct sbx_err *err);

#endif
