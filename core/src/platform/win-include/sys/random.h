/* SPDX-License-Identifier: MIT */
/*
 * sys/random.h for the Windows build (cmake/SbxWindowsCore.cmake puts this
 * directory on the include path only there): getrandom(2) on the system's
 * generator, BCryptGenRandom (win_base.c). The flags must be 0.
 */
#ifndef SBX_WIN_SYS_RANDOM_H
#define SBX_WIN_SYS_RANDOM_H

#include <stddef.h>
#include <sys/types.h>

ssize_t getrandom(void *buf, size_t len, unsigned flags);

#endif
