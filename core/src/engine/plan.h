/* SPDX-License-Identifier: MIT */
/*
 * plan.h: what one run does, made from a language's manifest templates and
 * its optional prepare hook: the source file name and the build and run
 * argv with every {placeholder} expanded. Pure: no I/O.
 */
#ifndef SBX_PLAN_H
#define SBX_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

struct plugin;
struct manifest_lang;
struct manifest_mode;

struct sbx_plan {
    const struct manifest_lang *lang; /* the manifest the plan is made from */
    const struct manifest_mode *mode; /* chosen by the prepare hook, or NULL */
    bool source_named;                /* set_source_name was called */
    char *source_name;
    char **vars;  /* "name=value", set by the prepare hook */
    char **build; /* expanded, or NULL */
    char **run;   /* expanded */
};

#define SANDBOX_WORKSPACE "/workspace"

/* (transfer full) */
int plan_make(const struct plugin *lang, const char *code, size_t code_len, struct sbx_plan **ret,
        struct sbx_error **err);
struct sbx_plan *plan_free(struct sbx_plan *p);
/* Expand "{name}" placeholders in one template element. (transfer full) */
int plan_expand(const struct sbx_plan *p, const char *tmpl, char **ret, struct sbx_error **err);

#endif
