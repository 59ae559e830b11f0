/* SPDX-License-Identifier: MIT */
/*
 * api.c: the Kubernetes API calls the plugin makes, through the core's
 * HTTP client (host->http_request, ABI 1.4: TLS material as PEM data or
 * files, a bearer token as a header the core never logs): JSON in and
 * out, the API server's Status messages as errors, and pod deletion with
 * a retry list for the calls that failed (unload tries them again; the
 * next start-up's sweep finds the rest).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"

#define RESP_CAP       (8u * 1024u * 1024u)
#define TOKEN_MAX      (64u * 1024u)
#define API_TIMEOUT_MS 30000

/* The token file is read at every call: a projected service-account token
 * is rotated by the kubelet while we run. */
static char *read_token(const char *path, struct sbx_err *err)
{
    FILE *f = fopen(path, "re");
    char *buf;
    size_t n;

    if (!f) {
        k8s_fail(err, SBX_E_UNAVAILABLE, errno, "cannot read the token file %s: %s", path,
                strerror(errno));
        return NULL;
    }
    buf = malloc(TOKEN_MAX);
    n = buf ? fread(buf, 1, TOKEN_MAX - 1, f) : 0;
    fclose(f);
    if (!buf) {
        k8s_fail(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        return NULL;
    }
    while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
        n--;
    buf[n] = '\0';
    return buf;
}

int k8s_http_init(struct k8s_state *st, struct k8s_http *hr, const char *method, const char *path,
        struct sbx_err *err)
{
    const struct k8s_cluster *cl = &st->cl;
    char *tok = NULL;

    memset(hr, 0, sizeof(*hr));
    snprintf(hr->path, sizeof(hr->path), "%s%s", cl->prefix ? cl->prefix : "", path);
    if (cl->token_file && !cl->token) {
        tok = read_token(cl->token_file, err);
        if (!tok)
            return err->rc;
    }
    if (cl->token || tok) {
        if (asprintf(&hr->auth, "Authorization: Bearer %s", cl->token ? cl->token : tok) < 0)
            hr->auth = NULL;
        free(tok);
        if (!hr->auth)
            return k8s_fail(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        hr->headers[0] = hr->auth;
    }
    hr->req = (struct sbx_http){.size = sizeof(hr->req),
            .endpoint = cl->endpoint,
            .method = method,
            .path = hr->path,
            .timeout_ms = API_TIMEOUT_MS,
            .cancel_fd = -1,
            .headers = hr->headers,
            .ca_pem = cl->ca_pem,
            .ca_file = cl->ca_file,
            .cert_pem = cl->cert_pem,
            .cert_file = cl->cert_file,
            .key_pem = cl->key_pem,
            .key_file = cl->key_file};
    return 0;
}

void k8s_http_done(struct k8s_http *hr)
{
    free(hr->auth);
    hr->auth = NULL;
}

/* The API server's Status message, or the start of the body. */
static const char *api_message(struct json_object *j, const char *body)
{
    struct json_object *m;

    if (j && json_object_object_get_ex(j, "message", &m))
        return json_object_get_string(m);
    return body && body[0] ? body : "no message";
}

static int status_error(struct k8s_state *st, const struct k8s_call *c, long status,
        struct json_object *j, const char *body, struct sbx_err *err)
{
    if (status == 401)
        return k8s_fail(err, SBX_E_UNAVAILABLE, 0,
                "the API server at %s did not accept our credentials (%s; HTTP 401)",
                st->cl.endpoint, st->cl.source ? st->cl.source : "?");
    return k8s_fail(err, status == 403 ? SBX_E_UNAVAILABLE : SBX_E_BACKEND, 0,
            "%s %.80s: %s (HTTP %ld)", c->method, c->path, api_message(j, body), status);
}

int k8s_api(struct k8s_state *st, const struct k8s_call *c, long *ret_status,
        struct json_object **ret_json, struct sbx_err *err)
{
    const char *text = NULL;
    struct sbx_http_resp resp = {.size = sizeof(resp), .cap = c->on_body ? 0 : RESP_CAP};
    struct json_object *j = NULL;
    struct k8s_http hr;
    int r = k8s_http_init(st, &hr, c->method, c->path, err);

    if (r < 0)
        return r;
    if (c->body)
        text = json_object_to_json_string_ext(c->body, JSON_C_TO_STRING_PLAIN);
    hr.req.content_type = c->patch ? "application/merge-patch+json" : "application/json";
    hr.req.body = text;
    hr.req.body_len = text ? strlen(text) : 0;
    hr.req.timeout_ms = c->timeout_ms ? c->timeout_ms : API_TIMEOUT_MS;
    hr.req.cancel_fd = c->cancel_fd;
    hr.req.on_body = c->on_body;
    hr.req.userdata = c->userdata;
    resp.body = c->on_body ? NULL : malloc(RESP_CAP);
    if (!c->on_body && !resp.body) {
        k8s_http_done(&hr);
        return k8s_fail(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    r = st->h->http_request(st->h, &hr.req, &resp, err);
    k8s_http_done(&hr);
    if (r == 0 && resp.truncated)
        r = k8s_fail(err, SBX_E_LIMIT, 0, "%s %.80s: the answer exceeds %u bytes", c->method,
                c->path, RESP_CAP);
    if (r == 0 && resp.len)
        j = json_tokener_parse(resp.body);
    if (r == 0 && ret_status)
        *ret_status = resp.status;
    if (r == 0 && resp.status >= 400 && !(resp.status == 404 && c->missing_ok) &&
            !(resp.status == 409 && c->exists_ok))
        r = status_error(st, c, resp.status, j, resp.body, err);
    free(resp.body);
    if (r == 0 && ret_json)
        *ret_json = j;
    else
        json_object_put(j);
    return r;
}

int k8s_delete(struct k8s_state *st, const char *kind, const char *name, int64_t timeout_ms,
        struct sbx_err *err)
{
    bool pod = strcmp(kind, "pods") == 0;
    char path[400];

    if (timeout_ms <= 0)
        return k8s_fail(
                err, SBX_E_UNAVAILABLE, ETIMEDOUT, "no time left to delete %s %s", kind, name);
    snprintf(path, sizeof(path), "%s/namespaces/%s/%s/%.127s%s",
            pod ? "/api/v1" : "/apis/networking.k8s.io/v1", st->ns, kind, name,
            pod ? "?gracePeriodSeconds=0" : "");
    struct k8s_call c = {.method = "DELETE",
            .path = path,
            .timeout_ms = timeout_ms,
            .cancel_fd = -1,
            .missing_ok = true};
    return k8s_api(st, &c, NULL, NULL, err);
}

int k8s_delete_pod(struct k8s_state *st, const char *name, int64_t timeout_ms, struct sbx_err *err)
{
    int r = k8s_delete(st, "pods", name, timeout_ms, err);

    if (r == 0)
        return 0;
    st->h->log(
            st->h, SBX_LOG_WARN, "deleting pod %s failed (%s); trying again later", name, err->msg);
    pthread_mutex_lock(&st->lock);
    for (size_t i = 0; i < K8S_RETRY_MAX; i++)
        if (!st->retry[i][0]) {
            snprintf(st->retry[i], sizeof(st->retry[i]), "%s", name);
            break;
        }
    pthread_mutex_unlock(&st->lock);
    return r;
}

/* Each within the time left before deadline (a monotonic ms): a stalled
 * API server must not hold up a server's exit. */
void k8s_retry_flush(struct k8s_state *st, int64_t deadline)
{
    char names[K8S_RETRY_MAX][128];

    pthread_mutex_lock(&st->lock);
    memcpy(names, st->retry, sizeof(names));
    memset(st->retry, 0, sizeof(st->retry));
    pthread_mutex_unlock(&st->lock);
    for (size_t i = 0; i < K8S_RETRY_MAX; i++) {
        struct sbx_err err = {.size = sizeof(err)};

        if (names[i][0] && k8s_delete(st, "pods", names[i], deadline - k8s_now_ms(), &err) < 0)
            st->h->log(st->h, SBX_LOG_WARN,
                    "pod %s is left (%s); the next start-up's sweep or its deadline ends it",
                    names[i], err.msg);
    }
}
