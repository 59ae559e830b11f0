/* SPDX-License-Identifier: MIT */
/*
 * test_language.c: a language plugin for the loader tests, well-formed
 * except in the one way its compile definitions choose (TEST_NAME,
 * TEST_VERSION, TEST_ABI_MAJOR, TEST_ABI_MINOR, TEST_NO_ENTRY,
 * TEST_INIT_FAILS, TEST_ABORT_ON_LOAD; tests/plugins/CMakeLists.txt builds
 * it once per case).
 * Never installed and never put into the real plugin directory. Includes
 * only the ABI header, like every plugin (STYLE H4).
 */
#include <stdio.h>
#include <stdlib.h>

#include <llm-sandbox/plugin.h>

#ifdef TEST_ABORT_ON_LOAD
/* Proves the loader refused the manifest before running any library code:
 * loading this library kills the test. */
__attribute__((constructor)) static void abort_on_load(void)
{
    abort();
}
#endif

#ifndef TEST_NAME
#error "TEST_NAME must name the plugin"
#endif
#ifndef TEST_VERSION
#define TEST_VERSION "1.0.0"
#endif
#ifndef TEST_ABI_MAJOR
#define TEST_ABI_MAJOR SBX_ABI_MAJOR
#endif
#ifndef TEST_ABI_MINOR
#define TEST_ABI_MINOR SBX_ABI_MINOR
#endif

static int check_library(void *state, const char *spec, struct sbx_err *err)
{
    (void)state;
    (void)spec;
    (void)err;
    return 0;
}

#ifdef TEST_INIT_FAILS
/* The message the loader must pass on as "init failed: <message>". */
static int init_fail(
        const struct sbx_host *host, const char *name, void **ret_state, struct sbx_err *err)
{
    (void)host;
    (void)name;
    (void)ret_state;
    err->rc = SBX_E_UNAVAILABLE;
    snprintf(err->msg, sizeof(err->msg), "the test plugin refuses to start");
    return SBX_E_UNAVAILABLE;
}
#endif

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .check_library = check_library,
};

static const struct sbx_plugin descriptor = {
        .abi_major = TEST_ABI_MAJOR,
        .abi_minor = TEST_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = TEST_NAME,
        .version = TEST_VERSION,
#ifdef TEST_INIT_FAILS
        .init = init_fail,
#endif
        .language = &ops,
};

#ifdef TEST_NO_ENTRY
/* A near miss: a future ABI's entry point, which a 1.x core must not use. */
SBX_EXPORT const struct sbx_plugin *sbx_plugin_entry_v2(void);

SBX_EXPORT const struct sbx_plugin *sbx_plugin_entry_v2(void)
{
    return &descriptor;
}
#else
SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
#endif
