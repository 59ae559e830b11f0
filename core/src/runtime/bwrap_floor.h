/* SPDX-License-Identifier: MIT */
/*
 * bwrap_floor.h: doctor's check of the installed bubblewrap against the
 * 0.12.0 floor (GHSA-pxhw-h44j-8pfx), with Debian's backports read from
 * the package changelog.
 */
#ifndef SBX_RUNTIME_BWRAP_FLOOR_H
#define SBX_RUNTIME_BWRAP_FLOOR_H

#include <stddef.h>

/* bwrap: the binary's absolute path; changelog: the package changelog
 * (gzip), NULL for Debian's. 1: the fix is in (0.12.0 or newer, or the
 * changelog names the advisory); 0: not known to be; -1: bwrap did not say
 * its version. detail always says what was found and why the backend is
 * not exposed; fix ("" when none) what to do. */
int bwrap_floor_check(const char *bwrap, const char *changelog, char *detail, size_t detail_len,
        char *fix, size_t fix_len);

#endif
