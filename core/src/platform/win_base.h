/* SPDX-License-Identifier: MIT */
/*
 * win_base.h: what the Windows build of the core asks of Windows itself
 * (win_base.c), beside the POSIX names compat_win.h maps.
 */
#ifndef SBX_PLATFORM_WIN_BASE_H
#define SBX_PLATFORM_WIN_BASE_H

/* The directory of the running executable, UTF-8 with '/' separators
 * (GetModuleFileNameW), malloc'd; NULL on failure. */
char *win_exe_dir(void);

#endif
