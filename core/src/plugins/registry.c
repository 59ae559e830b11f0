/* SPDX-License-Identifier: MIT */
/*
 * registry.c: the plugins the loader found, by name or alias, and the data
 * files beside their manifests. Read-only once sbx_runtime_new returned
 * (runtime_state.h), so any thread may look things up without a lock.
 */
#include "plugins/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/dynbuf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "plugins/host_table.h"
#include "plugins/manifest.h"
#include "plugins/plugin_settings.h"
#include "policy/settings.h"
#include "runtime_state.h"

#define PLUGIN_FILE_MAX (256u << 10) /* a data file beside a manifest (driver, support) */

bool plugin_has_name(const struct plugin *pl, const char *name)
{
    if (strcmp(pl->name, name) == 0)
        return true;
    return pl->m && strv_contains(pl->m->aliases, name);
}

struct plugin *registry_find_any(
        struct sbx_runtime *rt, enum sbx_plugin_kind kind, const char *name)
{
    for (size_t i = 0; name && i < rt->n_plugins; i++) {
        struct plugin *pl = rt->plugins[i];

        if (pl->state != PLUGIN_SHADOWED && pl->m && pl->m->kind == kind &&
                plugin_has_name(pl, name))
            return pl;
    }
    return NULL;
}

struct plugin *registry_find(struct sbx_runtime *rt, enum sbx_plugin_kind kind, const char *name)
{
    struct plugin *pl = registry_find_any(rt, kind, name);

    return pl && pl->state == PLUGIN_OK ? pl : NULL;
}

static char *names_of(struct sbx_runtime *rt, enum sbx_plugin_kind kind, bool usable)
{
    struct dynbuf b;

    dynbuf_init(&b, 64 * 1024);
    for (size_t i = 0; i < rt->n_plugins; i++) {
        const struct plugin *pl = rt->plugins[i];

        if (!pl->m || pl->m->kind != kind || pl->state == PLUGIN_SHADOWED ||
                (usable && pl->state != PLUGIN_OK))
            continue;
        if ((b.len && dynbuf_append_str(&b, ", ") < 0) || dynbuf_append_str(&b, pl->name) < 0) {
            dynbuf_done(&b);
            return NULL;
        }
    }
    return dynbuf_take(&b, NULL);
}

char *registry_names(struct sbx_runtime *rt, enum sbx_plugin_kind kind)
{
    return names_of(rt, kind, true);
}

char *registry_names_found(struct sbx_runtime *rt, enum sbx_plugin_kind kind)
{
    return names_of(rt, kind, false);
}

char *plugin_file_read(
        const struct plugin *pl, const char *name, size_t *ret_len, struct sbx_error **err)
{
    cleanup_free char *path = NULL;
    cleanup_close int fd = -1;
    char *buf;
    size_t len = 0;

    if (asprintf(&path, "%s/%s", pl->dir, name) < 0) {
        sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
        return NULL;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    buf = fd >= 0 ? malloc(PLUGIN_FILE_MAX + 1) : NULL;
    while (buf && len < PLUGIN_FILE_MAX) {
        ssize_t n = read(fd, buf + len, PLUGIN_FILE_MAX - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (!buf || len == 0 || len == PLUGIN_FILE_MAX || memchr(buf, 0, len)) {
        free(buf);
        sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "plugin '%s': its file %s is %s", pl->name,
                path, fd < 0 ? "missing" : "unreadable, empty or too big");
        return NULL;
    }
    buf[len] = '\0';
    *ret_len = len;
    return buf;
}

int host_ctx_error(struct sbx_err *perr, struct sbx_error *e)
{
    int rc = e ? e->rc : SBX_E_INTERNAL;

    if (perr) {
        perr->rc = rc;
        perr->sys_errno = e ? e->sys_errno : 0;
        snprintf(perr->msg, sizeof(perr->msg), "%s", e && e->msg ? e->msg : "failed");
        snprintf(perr->field, sizeof(perr->field), "%s", e && e->field ? e->field : "");
    }
    sbx_error_free(e);
    return rc;
}

void host_ctx_log(const struct sbx_host *h, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(level, host_ctx_of(h)->plugin->name, fmt, ap);
    va_end(ap);
}

const char *host_ctx_setting(const struct sbx_host *h, const char *key)
{
    const struct host_ctx *hc = host_ctx_of(h);

    return plugin_setting_value(hc->rt->settings, hc->plugin->m, hc->plugin->name, key);
}

void host_ctx_sandbox_ids(const struct sbx_host *h, uint32_t *ret_uid, uint32_t *ret_gid)
{
    const struct settings *s = host_ctx_of(h)->rt->settings;

    *ret_uid = s->sandbox_uid;
    *ret_gid = s->sandbox_gid;
}

const char *host_ctx_instance_id(const struct sbx_host *h)
{
    return host_ctx_of(h)->rt->owner;
}

int backend_probe(struct sbx_runtime *rt, struct plugin *pl, struct sbx_error **err)
{
    struct sbx_err perr;
    int rc;

    (void)rt;
    pthread_mutex_lock(&pl->probe_lock);
    if (!pl->probed) {
        sbx_err_init(&perr);
        memset(&pl->caps, 0, sizeof(pl->caps));
        pl->caps.size = sizeof(pl->caps);
        pl->probe_rc = pl->desc->backend->probe(pl->pstate, &pl->caps, &perr);
        if (pl->probe_rc < 0)
            pl->probe_error = strdup(perr.msg[0] ? perr.msg : "probe failed");
        else
            host_probe_caps(pl);
        pl->probed = true;
    }
    rc = pl->probe_rc;
    pthread_mutex_unlock(&pl->probe_lock);
    if (rc < 0)
        return sbx_error_set(err, rc, 0, "backend '%s' cannot run here: %s", pl->name,
                pl->probe_error ? pl->probe_error : "probe failed");
    return 0;
}
