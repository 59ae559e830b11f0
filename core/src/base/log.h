/* SPDX-License-Identifier: MIT */
/*
 * log.h: one line per event on stderr (STYLE G3):
 *   llm-sandbox: level=warn plugin=bwrap msg='...'
 * Library code logs at debug only (G2); callers that decide log once.
 * Never log user code or secrets. Thread-safe (one write per line).
 */
#ifndef SBX_LOG_H
#define SBX_LOG_H

#include <stdarg.h>

#include <llm-sandbox/plugin.h>

void log_set_level(int level); /* enum sbx_log_level */
int log_get_level(void);
void log_msg(int level, const char *plugin, const char *fmt, ...) SBX_PRINTF(3, 4);
void log_vmsg(int level, const char *plugin, const char *fmt, va_list ap) SBX_PRINTF(3, 0);

#endif
