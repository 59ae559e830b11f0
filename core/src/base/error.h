/* SPDX-License-Identifier: MIT */
/*
 * error.h: the core's error convention (STYLE E1), after crun's.
 *
 * A function that can fail returns an int (0, or a negative enum sbx_rc) or a
 * pointer (NULL on failure) and takes `struct sbx_error **err` last. On
 * failure it sets *err, if *err is still NULL, to an allocated error; on
 * success it leaves *err alone. Callers add context on the way up with
 * sbx_error_wrap() and release with sbx_error_free(). A failure of the user's
 * code is never an error: it is an execution status (E5).
 *
 * Across the plugin ABI errors travel in caller-owned struct sbx_err (E2),
 * filled on either side by llm-sandbox/plugin_kit.h's sbx_err_fill() (the
 * host table's services fill them too); sbx_error_from_plugin() converts
 * one, naming the plugin.
 */
#ifndef SBX_ERROR_H
#define SBX_ERROR_H

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/plugin_kit.h>
#include <llm-sandbox/sbx.h>

/* Set *err (if not already set); returns rc so callers can `return`. */
int sbx_error_set(struct sbx_error **err, int rc, int sys_errno, const char *fmt, ...)
        SBX_PRINTF(4, 5);
/* The same, naming the policy control or argument concerned. */
int sbx_error_set_field(struct sbx_error **err, int rc, const char *field, const char *fmt, ...)
        SBX_PRINTF(4, 5);
/* Prefix context: "ctx: old message". Returns (*err)->rc, or SBX_E_INTERNAL. */
int sbx_error_wrap(struct sbx_error **err, const char *fmt, ...) SBX_PRINTF(2, 3);
/* Convert a plugin's report (E2) into an error with the plugin as context. */
int sbx_error_from_plugin(struct sbx_error **err, const struct sbx_err *perr, const char *plugin);

#endif
