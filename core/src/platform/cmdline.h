/* SPDX-License-Identifier: MIT */
/*
 * cmdline.h: the Windows command line for an argv (issue 28's platform
 * layer). CreateProcess takes one string, which the child's C runtime (and
 * CommandLineToArgvW) splits back into arguments by its own rules; this
 * builds the string those rules split into exactly the argv given. Pure:
 * no I/O, builds on every platform, unit-tested on Linux
 * (tests/unit/test_cmdline.c) and against Windows' own parsers under wine
 * (tests/windows/cmdline_check.c).
 */
#ifndef SBX_PLATFORM_CMDLINE_H
#define SBX_PLATFORM_CMDLINE_H

#include "base/dynbuf.h"
#include "base/error.h"

/* CreateProcessW's limit, in UTF-16 units with the terminating NUL. */
#define WIN_CMDLINE_MAX 32767

/* argv (NULL-terminated, UTF-8, at least the program) as one command line,
 * appended to out. Returns 0, or:
 *  SBX_E_INVALID  no program; a program name holding '"' (its part of the
 *                 line has no escapes); a program that is a batch file
 *                 (.bat, .cmd: cmd.exe re-parses the line by other rules,
 *                 CVE-2024-24576), refused rather than quoted wrongly;
 *  SBX_E_LIMIT    the line would not fit WIN_CMDLINE_MAX (counted in bytes,
 *                 which is never fewer than its UTF-16 units) or out's cap;
 *  SBX_E_NOMEM. */
int win_cmdline_build(const char *const *argv, struct dynbuf *out, struct sbx_error **err);

#endif
