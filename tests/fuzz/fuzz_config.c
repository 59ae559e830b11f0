/* SPDX-License-Identifier: MIT */
/*
 * fuzz_config.c: libFuzzer target for the config file, through
 * settings_load_data() (config.c's shape checks, then settings.c's value
 * checks) and plugin_settings_check_keys(). Every input must either load
 * or fail with one well-formed error: SBX_E_INVALID or SBX_E_UNSUPPORTED
 * with a one-line message that starts "fuzz.yaml:" (a location), or
 * SBX_E_NOMEM. Anything else, a crash or a leak is a bug. The environment
 * is cleared of the variables the seeds use, so the file decides. Build
 * with clang -fsanitize=fuzzer, or link with replay.c to replay a corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plugins/manifest.h"
#include "plugins/plugin_settings.h"
#include "policy/config.h"
#include "policy/settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vars[] = {"BACKEND", "SANDBOX_MEMORY", "SANDBOX_MEM_LIMIT", "SANDBOX_CPUS",
        "SANDBOX_NETWORK_MODE", "SANDBOX_READ_ONLY", "SANDBOX_PRIVILEGED", "LLM_SANDBOX_TIMEOUT",
        "LLM_SANDBOX_MAX_TIMEOUT", "LLM_SANDBOX_MAX_MEMORY", "LLM_SANDBOX_PIDS",
        "LLM_SANDBOX_NETWORK", "LLM_SANDBOX_ALLOW_HOST_NETWORK", "LLM_SANDBOX_ENV_ALLOW",
        "LLM_SANDBOX_UID", "LLM_SANDBOX_GID", "LLM_SANDBOX_UID_RANGE", "LLM_SANDBOX_CGROUP",
        "LLM_SANDBOX_LOG_LEVEL", "LLM_SANDBOX_PLUGIN_PATH", "LLM_SANDBOX_DEFAULT_LANGUAGE",
        "LLM_SANDBOX_CONFIG", "LLM_SANDBOX_BWRAP_PATH", "LLM_SANDBOX_BWRAP_PASTA"};

static void check_error(int r, const struct sbx_error *err)
{
    if (!err || err->rc != r)
        abort();
    if (r == SBX_E_NOMEM)
        return;
    if (r != SBX_E_INVALID && r != SBX_E_UNSUPPORTED)
        abort();
    if (strncmp(err->msg, "fuzz.yaml:", 10) != 0 || strchr(err->msg, '\n'))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct manifest bwrap = {.name = (char *)"bwrap"}, python = {.name = (char *)"python"};
    const struct manifest *const ms[] = {&bwrap, &python};
    struct settings *s = NULL;
    struct sbx_error *err = NULL;
    int r;

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    r = settings_load_data("fuzz.yaml", (const char *)data, size, &s, &err);
    if (r == 0) {
        if (!s || err || !s->config || !s->backend || !s->language)
            abort();
        for (size_t i = 0; i < s->config->n; i++) {
            if (config_find(s->config, s->config->entries[i].key) != &s->config->entries[i])
                abort(); /* a duplicate key got through */
        }
        (void)plugin_setting_value(s, &bwrap, "bwrap", "path");
        r = plugin_settings_check_keys(s, ms, 2, &err);
        if (r < 0)
            check_error(r, err);
    } else {
        if (s)
            abort();
        check_error(r, err);
    }
    settings_free(s);
    sbx_error_free(err);
    return 0;
}
