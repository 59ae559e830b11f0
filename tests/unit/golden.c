/* SPDX-License-Identifier: MIT */
/*
 * golden.c: golden files for the unit tests (golden.h). The source tree
 * is SBX_SOURCE_DIR (ctest sets it), else the working directory.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include "golden.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void golden_check(const char *dir, const char *name, const char *ext, const char *got)
{
    const char *src = getenv("SBX_SOURCE_DIR");
    size_t len = strlen(got);
    bool nl = len == 0 || got[len - 1] != '\n';
    char path[4096], *want;
    FILE *f;
    long n;

    snprintf(path, sizeof(path), "%s/tests/golden/%s/%s.%s", src ? src : ".", dir, name, ext);
    if (getenv("SBX_UPDATE_GOLDEN")) {
        f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "%s%s", got, nl ? "\n" : "");
        fclose(f);
    }
    f = fopen(path, "r");
    if (!f)
        fail_msg("missing golden file %s (run with SBX_UPDATE_GOLDEN=1)", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    want = calloc(1, (size_t)n + 1);
    assert_non_null(want);
    assert_int_equal(fread(want, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    if ((size_t)n != len + nl || strncmp(want, got, len) != 0 || (nl && want[len] != '\n'))
        fail_msg("%s differs from the golden file %s:\n--- got ---\n%s", name, path, got);
    free(want);
}
