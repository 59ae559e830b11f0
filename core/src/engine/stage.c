/* SPDX-License-Identifier: MIT */
/*
 * stage.c: put a run's inputs in its box through the agent: the language's
 * support files beneath /tmp/.sbx, the files the language takes from its
 * dependency set, the request's files and the program beneath the
 * workspace. A session's call replaces earlier files of the same names.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/log.h"
#include "cache/deps.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"

/* The files the language takes from its dependency set (Go's go.mod). */
static int stage_from_set(struct run *r, int64_t deadline)
{
    int end = 0;

    for (char **f = r->lang->m->lang->install->stage; end == 0 && *f; f++) {
        struct sbx_error *e = NULL;
        char *data = NULL;
        size_t len = 0;

        if (deps_read_file(r->deps, *f, STAGE_FILE_MAX, &data, &len, &e) < 0) {
            log_msg(SBX_LOG_WARN, NULL, "%s", e->msg);
            sbx_error_free(e);
            return SBX_E_IO;
        }
        end = agentc_put_file(
                r->ac, *f, 0644, data, len, r->sess ? AGENTC_PUT_REPLACE : 0, deadline);
        free(data);
    }
    return end;
}

int engine_stage_support(struct run *r, int64_t deadline, struct sbx_error **err)
{
    const struct manifest_lang *l = r->lang->m->lang;
    int end = 0;

    for (size_t i = 0; end == 0 && i < l->n_support; i++) {
        size_t len;
        char *data = plugin_file_read(r->lang, l->support[i].file, &len, err);

        if (!data)
            return (*err)->rc;
        /* "/tmp/X" goes beneath the sandbox's /tmp as X */
        end = agentc_put_file(r->ac, l->support[i].path + 5, 0644, data, len,
                AGENTC_PUT_REPLACE | AGENTC_PUT_TMP, deadline);
        free(data);
    }
    if (end == AGENTC_TIMEOUT || end == AGENTC_LOST || end == SBX_E_IO)
        return sbx_error_set(err, SBX_E_BACKEND, 0, "staging the language's files failed: %s",
                end == AGENTC_TIMEOUT ? "timed out" : agentc_last_error(r->ac));
    return end == AGENTC_CANCELLED ? AGENTC_CANCELLED : 0;
}

/* The request's files, then the program (unless a session's interpreter
 * takes it), beneath the workspace; a session's call replaces earlier
 * files of the same names. 0, an enum agentc_end, or SBX_E_IO. */
int engine_stage(struct run *r, bool with_source, int64_t deadline)
{
    unsigned replace = r->sess ? AGENTC_PUT_REPLACE : 0;
    int end = r->deps ? stage_from_set(r, deadline) : 0;

    for (size_t i = 0; end == 0 && i < r->req->n_files; i++) {
        const struct sbx_file *f = &r->req->files[i];

        end = agentc_put_file(r->ac, f->path, 0644, f->data, f->len, replace, deadline);
    }
    if (end == 0 && with_source && !r->probe_argv) {
        end = agentc_put_file(r->ac, r->plan->source_name, 0644, r->req->code, r->req->code_len,
                replace, deadline);
        r->staged_source = true;
    }
    return end;
}
