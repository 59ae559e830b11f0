/* SPDX-License-Identifier: MIT */
/*
 * error.c: allocate, wrap and free core errors; name the return codes.
 * Does no logging (STYLE G2). The convention is written down in error.h.
 * An allocation failure while reporting an error degrades to a static
 * out-of-memory error rather than losing the return code.
 */
#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sbx_error oom_error = {
        .rc = SBX_E_NOMEM, .sys_errno = ENOMEM, .field = NULL, .msg = (char *)"out of memory"};

const char *sbx_rc_str(int rc)
{
    switch (rc) {
    case SBX_OK: return "ok";
    case SBX_E_INVALID: return "invalid";
    case SBX_E_UNSUPPORTED: return "unsupported";
    case SBX_E_UNAVAILABLE: return "unavailable";
    case SBX_E_BACKEND: return "backend";
    case SBX_E_LIMIT: return "limit";
    case SBX_E_ABI: return "abi";
    case SBX_E_NOMEM: return "nomem";
    case SBX_E_CANCELLED: return "cancelled";
    case SBX_E_IO: return "io";
    case SBX_E_INTERNAL: return "internal";
    default: return NULL;
    }
}

static int error_vset(struct sbx_error **err, int rc, int sys_errno, const char *field,
        const char *fmt, va_list ap) SBX_PRINTF(5, 0);

static int error_vset(struct sbx_error **err, int rc, int sys_errno, const char *field,
        const char *fmt, va_list ap)
{
    struct sbx_error *e;
    char *msg = NULL;

    if (!err || *err)
        return rc;
    if (vasprintf(&msg, fmt, ap) < 0) {
        *err = &oom_error;
        return rc;
    }
    e = calloc(1, sizeof(*e));
    if (!e || (field && !(e->field = strdup(field)))) {
        free(msg);
        free(e);
        *err = &oom_error;
        return rc;
    }
    e->rc = rc;
    e->sys_errno = sys_errno;
    e->msg = msg;
    *err = e;
    return rc;
}

int sbx_error_set(struct sbx_error **err, int rc, int sys_errno, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    error_vset(err, rc, sys_errno, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

int sbx_error_set_field(struct sbx_error **err, int rc, const char *field, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    error_vset(err, rc, 0, field, fmt, ap);
    va_end(ap);
    return rc;
}

int sbx_error_wrap(struct sbx_error **err, const char *fmt, ...)
{
    va_list ap;
    char *ctx = NULL, *msg = NULL;

    if (!err || !*err)
        return SBX_E_INTERNAL;
    if (*err == &oom_error)
        return SBX_E_NOMEM;
    va_start(ap, fmt);
    if (vasprintf(&ctx, fmt, ap) < 0)
        ctx = NULL;
    va_end(ap);
    if (ctx && asprintf(&msg, "%s: %s", ctx, (*err)->msg) >= 0) {
        free((*err)->msg);
        (*err)->msg = msg;
    }
    free(ctx);
    return (*err)->rc;
}

int sbx_error_from_plugin(struct sbx_error **err, const struct sbx_err *perr, const char *plugin)
{
    int rc = perr->rc < 0 ? perr->rc : SBX_E_INTERNAL;
    const char *msg = perr->msg[0] ? perr->msg : "failed without a message";

    if (perr->field[0])
        return sbx_error_set_field(err, rc, perr->field, "plugin '%s': %s", plugin, msg);
    return sbx_error_set(err, rc, perr->sys_errno, "plugin '%s': %s", plugin, msg);
}

struct sbx_error *sbx_error_free(struct sbx_error *e)
{
    if (!e || e == &oom_error)
        return NULL;
    free(e->field);
    free(e->msg);
    free(e);
    return NULL;
}
