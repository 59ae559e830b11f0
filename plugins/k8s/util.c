/* SPDX-License-Identifier: MIT */
/*
 * util.c: the plugin's error report and boolean settings, shared by every
 * file (and linked into the unit tests, which have no host table).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "k8s.h"

int k8s_fail(struct sbx_err *err, int rc, int sys_errno, const char *fmt, ...)
{
    va_list ap;

    if (err) {
        err->rc = rc;
        err->sys_errno = sys_errno;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return rc;
}

bool k8s_setting_true(const struct k8s_state *st, const char *key, bool dflt)
{
    const char *v = st->h->setting(st->h, key);

    if (!v || !*v)
        return dflt;
    return strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0;
}
