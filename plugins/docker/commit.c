/* SPDX-License-Identifier: MIT */
/*
 * commit.c: the reference's COMMIT_CONTAINER and KEEP_TEMPLATE.
 *
 * COMMIT_CONTAINER=true: a language's dependency set (the read-only mount
 * at /deps) goes into an image instead of a volume: the agent image plus
 * the set, committed once as llm-sandbox-commit:<hash of the agent image
 * and the set's directory>, labelled (org.llm-sandbox.run=commit, the
 * set's directory in org.llm-sandbox.source, the language), and reused by
 * every later run of the same language and library set. The tag is new
 * and unique; the base image is never written. The install itself still
 * runs in a container of its own whose /deps is a volume (a commit of it
 * would not hold the volume), so what is committed is the installed set
 * on top of the image the install ran in.
 *
 * KEEP_TEMPLATE=false: images made or pulled for a box (the pulled base
 * image, the agent image, a committed image) are removed when the box
 * closes, unless another container still uses them (the daemon refuses,
 * and they stay). Unset or true: kept, as the reference's server does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker.h"
#include "translate.h"

bool dk_setting_true(struct dk_state *st, const char *key, bool dflt)
{
    const char *v = st->h->setting(st->h, key);

    if (!v || !*v)
        return dflt;
    return strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0;
}

bool dk_commit_enabled(struct dk_state *st)
{
    return dk_setting_true(st, "commit_container", false);
}

bool dk_keep_template(struct dk_state *st)
{
    return dk_setting_true(st, "keep_template", true);
}

static bool image_exists(struct dk_state *st, const char *ref)
{
    struct sbx_err err = {.size = sizeof(err)};
    char esc[300], path[400];
    long status = 0;

    dk_escape(ref, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/images/%s/json", esc);
    struct dk_call c = {.method = "GET", .path = path, .missing_ok = true};
    return dk_api(st, &c, &status, NULL, &err) == 0 && status == 200;
}

/* Commit container cid as ref (repo:tag), with labels. */
static int commit(struct dk_state *st, const char *cid, const char *tag, const char *dir,
        const char *language, struct sbx_err *err)
{
    struct json_object *body = json_object_new_object(), *labels = json_object_new_object();
    char esc[200], change[1200], esc_change[3600], path[4000];
    int r;

    json_object_object_add(labels, DK_LABEL_RUN, json_object_new_string("commit"));
    json_object_object_add(labels, DK_LABEL_SOURCE, json_object_new_string(dir));
    json_object_object_add(
            labels, "org.llm-sandbox.language", json_object_new_string(language ? language : ""));
    json_object_object_add(body, "Labels", labels);
    dk_escape(tag, esc, sizeof(esc));
    /* Podman's compatible /commit ignores the body's Labels: say them
     * again as Dockerfile instructions, one label each (both daemons take
     * "changes", repeated) */
    const char *const kv[][2] = {{DK_LABEL_RUN, "commit"},
            {"org.llm-sandbox.language", language ? language : ""}, {DK_LABEL_SOURCE, dir}};
    size_t o = (size_t)snprintf(
            path, sizeof(path), "/commit?container=%s&repo=%s&tag=%s", cid, DK_COMMIT_REPO, esc);

    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]) && o < sizeof(path); i++) {
        snprintf(change, sizeof(change), "LABEL %s=\"%s\"", kv[i][0], kv[i][1]);
        if (!dk_escape(change, esc_change, sizeof(esc_change))) {
            json_object_put(body);
            return sbx_err_fill(err, SBX_E_INVALID, EINVAL, "the set's path is too long");
        }
        o += (size_t)snprintf(path + o, sizeof(path) - o, "&changes=%s", esc_change);
    }
    struct dk_call c = {.method = "POST", .path = path, .body = body};
    r = dk_api(st, &c, NULL, NULL, err);
    json_object_put(body);
    return r;
}

int dk_commit_image(struct dk_state *st, const char *image, const char *dir, const char *language,
        char *ret_ref, size_t len, struct sbx_err *err)
{
    char tag[64], ref[128], cid[80] = "";
    uint64_t h;
    int r = 0;

    if ((r = dk_dir_hash(dir, image, &h, err)) < 0)
        return r;
    snprintf(tag, sizeof(tag), "%s-%016" PRIx64, language ? language : "x", h);
    snprintf(ref, sizeof(ref), "%s:%s", DK_COMMIT_REPO, tag);
    int lock = dk_lock_dir(dir); /* across processes, as for volumes */

    pthread_mutex_lock(&st->lock);
    if (!image_exists(st, ref)) {
        st->h->log(st->h, SBX_LOG_INFO, "committing '%s' on %s as %s", dir, image, ref);
        r = dk_fill_container(st, image, NULL, dir, "/deps", cid, sizeof(cid), err);
        if (r == 0)
            r = commit(st, cid, tag, dir, language, err);
        if (cid[0]) {
            struct sbx_err e2 = {.size = sizeof(e2)};
            char path[160];

            snprintf(path, sizeof(path), "/containers/%s?force=1", cid);
            struct dk_call rm = {.method = "DELETE", .path = path, .missing_ok = true};
            dk_api(st, &rm, NULL, NULL, &e2);
        }
    }
    pthread_mutex_unlock(&st->lock);
    if (lock >= 0)
        close(lock);
    if (r == 0)
        snprintf(ret_ref, len, "%s", ref);
    return r;
}

void dk_image_release(struct dk_state *st, const char *ref)
{
    struct sbx_err err = {.size = sizeof(err)};
    char esc[300], path[400];

    if (!ref || !*ref)
        return;
    dk_escape(ref, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/images/%s", esc);
    /* no force: an image a container still uses stays (409) */
    struct dk_call c = {.method = "DELETE", .path = path, .missing_ok = true};
    if (dk_api(st, &c, NULL, NULL, &err) == 0)
        st->h->log(st->h, SBX_LOG_DEBUG, "removed image %s (KEEP_TEMPLATE=false)", ref);
}
