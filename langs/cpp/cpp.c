/* SPDX-License-Identifier: MIT */
/*
 * cpp.c: what the cpp manifest cannot say: which C++ standard to compile
 * with. The operator's LLM_SANDBOX_CPP_STD (c++11 ... c++26, gnu++ too)
 * becomes the {std} template variable; anything else is refused at start
 * rather than passed to the compiler. C++ has no package manager here, so
 * library requests are refused by the core.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llm-sandbox/plugin.h>

struct cpp_state {
    char std[16];
};

static bool std_ok(const char *s)
{
    static const char *const known[] = {"c++11", "c++14", "c++17", "c++20", "c++23", "c++26",
            "gnu++11", "gnu++14", "gnu++17", "gnu++20", "gnu++23", "gnu++26"};

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(s, known[i]) == 0)
            return true;
    return false;
}

static int cpp_init(
        const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    const char *std = h->setting(h, "std");
    struct cpp_state *st;

    (void)name;
    if (std && !std_ok(std)) {
        err->rc = SBX_E_INVALID;
        snprintf(err->field, sizeof(err->field), "LLM_SANDBOX_CPP_STD");
        snprintf(err->msg, sizeof(err->msg),
                "LLM_SANDBOX_CPP_STD='%.20s' is not one of c++11 ... c++26 (or gnu++)", std);
        return SBX_E_INVALID;
    }
    st = calloc(1, sizeof(*st));
    if (!st) {
        err->rc = SBX_E_NOMEM;
        snprintf(err->msg, sizeof(err->msg), "out of memory");
        return SBX_E_NOMEM;
    }
    snprintf(st->std, sizeof(st->std), "%s", std ? std : "c++17");
    *ret_state = st;
    return 0;
}

static void cpp_fini(void *state)
{
    free(state);
}

static int cpp_prepare(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
        struct sbx_plan *plan, struct sbx_err *err)
{
    const struct cpp_state *st = state;

    (void)job;
    if (ops->set_var(plan, "std", st->std) < 0) {
        err->rc = SBX_E_NOMEM;
        snprintf(err->msg, sizeof(err->msg), "out of memory");
        return SBX_E_NOMEM;
    }
    return 0;
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .prepare = cpp_prepare,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 0,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = "cpp",
        .version = "0.1.0",
        .init = cpp_init,
        .fini = cpp_fini,
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
