/* SPDX-License-Identifier: MIT */
/*
 * plugin_kit_only.c: the helpers every plugin compiles in
 * (<llm-sandbox/plugin_kit.h>) stand alone and stay plain C11 and
 * C++-clean, as plugin.h does (STYLE L2). tests/CMakeLists.txt compiles it
 * with -std=c11 -Wpedantic -Werror and with g++ -std=c++17; every helper
 * is used once. Never built into a library or run.
 */
#include <llm-sandbox/plugin_kit.h>

int kit_demo(struct sbx_caps *caps, struct sbx_err *err);

int kit_demo(struct sbx_caps *caps, struct sbx_err *err)
{
    sbx_err_init(err);
    sbx_caps_set(caps, SBX_CTL_MEMORY, SBX_ENF_FULL, "cgroup v2 memory.max");
    return sbx_err_fill(err, SBX_E_UNAVAILABLE, 2, "tool '%s' not found", "demo");
}
