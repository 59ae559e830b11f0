/* SPDX-License-Identifier: MIT */
/*
 * llm-sandbox/plugin_kit.h: the few helpers every plugin and the core
 * share, header-only so a plugin compiles them in (it links no core
 * symbol): filling the caller's struct sbx_err, and one capability's
 * level and note. Installed beside plugin.h; plain C11 and C++-clean,
 * like it.
 */
#ifndef LLM_SANDBOX_PLUGIN_KIT_H
#define LLM_SANDBOX_PLUGIN_KIT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An empty report, its size set: what a caller hands a plugin. */
static inline void sbx_err_init(struct sbx_err *err)
{
    memset(err, 0, sizeof(*err));
    err->size = sizeof(*err);
}

/* Fill err (when not NULL) with rc, the errno behind it (or 0) and a
 * one-line message; return rc, so that `return sbx_err_fill(...)` fails a
 * call in one line. The field named is left as it is. */
static inline int sbx_err_fill(struct sbx_err *err, int rc, int sys_errno, const char *fmt, ...)
        SBX_PRINTF(4, 5);
static inline int sbx_err_fill(struct sbx_err *err, int rc, int sys_errno, const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return rc;
    err->rc = rc;
    err->sys_errno = sys_errno;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return rc;
}

/* Set what a backend enforces of one control here, and how (or why not). */
static inline void sbx_caps_set(
        struct sbx_caps *caps, enum sbx_control ctl, enum sbx_enforce level, const char *note)
{
    caps->level[ctl] = (uint8_t)level;
    snprintf(caps->note[ctl], sizeof(caps->note[ctl]), "%s", note);
}

#ifdef __cplusplus
}
#endif

#endif /* LLM_SANDBOX_PLUGIN_KIT_H */
