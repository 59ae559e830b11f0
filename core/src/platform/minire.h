/* SPDX-License-Identifier: MIT */
/*
 * minire.h: the small subset of POSIX extended regular expressions that
 * language manifests use (version_pattern), for the Windows build, which
 * has no regcomp. Every in-tree pattern is of this subset, and where both
 * exist it matches as glibc's regexec does (tests/unit/test_minire.c
 * compares the two); anything outside it is refused, never guessed at.
 *
 * The subset: ordinary characters; `\` before a character that is not a
 * letter or digit (that character); `.`; bracket expressions `[...]` and
 * `[^...]` with ranges (`]` first is literal; no [:classes:], no
 * collating elements); `*`, `+` or `?` after one of those; one level of
 * capturing groups `(...)` with no quantifier after them; `^` first and
 * `$` last. No alternation, no intervals {m,n}, no back-references. The
 * match is POSIX's leftmost-longest; within the longest match, earlier
 * quantifiers take as much as they can. Pure C, no allocation; compiled
 * into both builds so it is tested on Linux too.
 */
#ifndef SBX_PLATFORM_MINIRE_H
#define SBX_PLATFORM_MINIRE_H

#include <stddef.h>

#define MINIRE_MAX_LEN    256 /* pattern bytes */
#define MINIRE_MAX_GROUPS 9

/* NULL when pattern is of the subset, else what it is not, as a phrase
 * ("alternation (|) is outside ..."). ret_groups: its groups, or NULL. */
const char *minire_check(const char *pattern, size_t *ret_groups);

/* Search text for pattern: 1 when it matched, with the whole match in
 * m[0] and group i in m[i] (both offsets -1 for a group that took no
 * part), for i < n_m; 0 when it did not match; -1 when the pattern is not
 * of the subset or the search gave up (a budget of steps, for patterns
 * that would take exponential time). m: n_m pairs {start, end}. */
int minire_search(const char *pattern, const char *text, long (*m)[2], size_t n_m);

#endif
