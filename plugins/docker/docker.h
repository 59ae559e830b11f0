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

#define DK_API        "/v1.41" /* Docker 20.10; Podman 4's compatible API says the same */
#define DK_LABEL      "org.llm-sandbox.owner"
#define DK_LABEL_RUN  "org.llm-sandbox.run"
#define DK_AGENT_REPO "llm-sandbox-agent"

struct dk_state {
    const struct sbx_host *h;
    char name[16];      /* "docker" or "podman" */
    char endpoint[512]; /* unix:///..., tcp://... */
    char tls_dir[512];  /* client certificates, or "" */
    bool podman;
    bool swap_limit;      /* the daemon can limit memory+swap */
    pthread_mutex_t lock; /* serialises making agent images */
};

/* Fill err (if not NULL) and return rc. */
int dk_fail(struct sbx_err *err, int rc, int sys_errno, const char *fmt, ...) SBX_PRINTF(4, 5);

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
};
int dk_api(struct dk_state *st, const struct dk_call *c, long *ret_status,
        struct json_object **ret_json, struct sbx_err *err);
/* Percent-encode s into out for a URL query or path segment. */
bool dk_escape(const char *s, char *out, size_t len);
/* The image to run for a box: ensure `image` is present (pulled with
 * progress when missing), then the derived image holding the agent at
 * DK_AGENT (made once per image and agent; read-only root filesystems
 * cannot receive it at run time). A pull stops when cancel_fd (or -1)
 * becomes readable. */
int dk_agent_image(struct dk_state *st, const char *image, int cancel_fd, char *ret_ref, size_t len,
        struct sbx_err *err);
/* Remove containers whose owner instance (label) is a dead process here. */
void dk_sweep(struct dk_state *st);

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

#endif
