/* SPDX-License-Identifier: MIT */
/*
 * golden.h: comparing a test's output with its golden file
 * (tests/golden/DIR/NAME.EXT), for the translators' plans and the runners'
 * transcripts. SBX_UPDATE_GOLDEN=1 rewrites the files first.
 */
#ifndef SBX_TEST_GOLDEN_H
#define SBX_TEST_GOLDEN_H

/* Fail the test, showing got, unless the file holds got (and a final
 * newline, when got has none). */
void golden_check(const char *dir, const char *name, const char *ext, const char *got);

#endif
