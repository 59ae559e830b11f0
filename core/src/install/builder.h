/* SPDX-License-Identifier: MIT */
/*
 * builder.h: what install.c (libraries) and warm.c (the warm-up set) share
 * to build a set in a box of its own (builder.c). Private to install/.
 */
#ifndef SBX_INSTALL_BUILDER_H
#define SBX_INSTALL_BUILDER_H

#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/sbx.h>

struct deps_set;
struct dynbuf;
struct manifest_install;
struct run;

#define INSTALL_LOG_MAX (64u * 1024u) /* a set's build log */

/* Append to the build log (a struct dynbuf *, as userdata), capped. */
void install_output(void *userdata, enum sbx_stream stream, const char *buf, size_t len);
/* A recipe's base environment: the run's without the operator's
 * pass-through variables, then the recipe's own env. 0 or SBX_E_NOMEM. */
int recipe_env(const struct run *r, const struct manifest_install *in, char ***ret);
/* The set's key (65 bytes): everything that decides what the recipe
 * produces (backend, language, image, toolchain tool, hosts, env, the
 * libraries when the recipe has hosts). 0 or SBX_E_NOMEM. */
int install_key(const struct run *r, const struct manifest_install *in, const char *tool,
        char *const *hosts, char *const *env, char *key);
/* Build set in a box (r->box_policy, r->box_mounts say how); what names the
 * work in messages. 0 with *ok set when built; 0 with *ok unset when it
 * failed (r->ex says why); < 0 for errors of the tool. */
int install_box(struct run *r, const struct manifest_install *in, const struct deps_set *set,
        const char *what, char **env, struct dynbuf *log, bool *ok, struct sbx_error **err);

#endif
