/* SPDX-License-Identifier: MIT */
/*
 * log.c: the logger of log.h. Formats a whole line first and emits it with a
 * single write(2) to fd 2, so concurrent jobs never interleave mid-line and
 * nothing ever reaches stdout (which belongs to the MCP transport, G1).
 * Quotes in messages are escaped so a line stays one parseable record.
 */
#include "base/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_int log_level = SBX_LOG_WARN;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(int level)
{
    if (level >= SBX_LOG_ERROR && level <= SBX_LOG_DEBUG)
        atomic_store(&log_level, level);
}

int log_get_level(void)
{
    return atomic_load(&log_level);
}

void log_vmsg(int level, const char *plugin, const char *fmt, va_list ap)
{
    char msg[1024], line[1400];
    size_t o = 0;
    int n;

    if (level > atomic_load(&log_level) || level < SBX_LOG_ERROR)
        return;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = snprintf(line, sizeof(line), "llm-sandbox: level=%s%s%s msg='", level_names[level],
            plugin ? " plugin=" : "", plugin ? plugin : "");
    if (n < 0)
        return;
    o = (size_t)n;
    for (const char *p = msg; *p && o + 4 < sizeof(line); p++) {
        if (*p == '\'' || *p == '\\')
            line[o++] = '\\';
        line[o++] = *p == '\n' ? ' ' : *p;
    }
    line[o++] = '\'';
    line[o++] = '\n';
    (void)!write(STDERR_FILENO, line, o);
}

void log_msg(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(level, plugin, fmt, ap);
    va_end(ap);
}
