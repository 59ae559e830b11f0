/* SPDX-License-Identifier: MIT */
/*
 * fuzz_manifest.c: libFuzzer target for manifest_parse(). Every input must
 * either parse or fail with one well-formed error: SBX_E_INVALID with a
 * one-line "fuzz.yaml:LINE:COLUMN: ..." message, or SBX_E_NOMEM. Anything
 * else, a crash or a leak is a bug. Build with clang -fsanitize=fuzzer, or
 * link with replay.c to replay a corpus without libFuzzer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plugins/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct manifest *m = NULL;
    struct sbx_error *err = NULL;
    int r = manifest_parse("fuzz.yaml", (const char *)data, size, &m, &err);

    if (r == 0) {
        if (!m || err || !m->name || !m->version || !m->description || !m->aliases ||
                !m->kernel_features || (m->kind == SBX_KIND_LANGUAGE) != (m->lang != NULL) ||
                (m->kind == SBX_KIND_BACKEND && !m->library))
            abort();
        if (m->lang && (!m->lang->run || !m->lang->run[0] || !m->lang->env ||
                               !m->lang->extensions || !m->lang->host_paths))
            abort();
    } else {
        if (m || !err || err->rc != r || (r != SBX_E_INVALID && r != SBX_E_NOMEM))
            abort();
        if (r == SBX_E_INVALID &&
                (strncmp(err->msg, "fuzz.yaml:", 10) != 0 || strchr(err->msg, '\n')))
            abort();
    }
    manifest_free(m);
    sbx_error_free(err);
    return 0;
}
