/* SPDX-License-Identifier: MIT */
/*
 * plugin_settings.h: a plugin's settings, by the names its manifest
 * declares (plugin_settings.c).
 */
#ifndef SBX_PLUGINS_PLUGIN_SETTINGS_H
#define SBX_PLUGINS_PLUGIN_SETTINGS_H

#include <stddef.h>

#include <llm-sandbox/sbx.h>

struct manifest;
struct settings;

/* Once plugins are found: each config file key that is no core variable
 * must be LLM_SANDBOX_<PLUGIN>_<KEY> for one of the plugins whose manifests
 * are ms (n of them; NULL entries are skipped), or a foreign name one of
 * them declares (settings:). Else SBX_E_INVALID "FILE:LINE:COLUMN:
 * unknown key ...". */
int plugin_settings_check_keys(const struct settings *s, const struct manifest *const *ms, size_t n,
        struct sbx_error **err);

/* Expand "~/" at the start of m's setting defaults to the server's home.
 * 0 or SBX_E_NOMEM. */
int plugin_settings_expand_defaults(const struct settings *s, struct manifest *m);

/* A plugin's setting KEY: LLM_SANDBOX_<PLUGIN>_<KEY> (upper-cased) from
 * the environment, else the config file; else each foreign name m declares
 * for it, in order; else m's default; or NULL. m may be NULL. (transfer
 * none: points into the environment, s or m) */
const char *plugin_setting_value(
        const struct settings *s, const struct manifest *m, const char *plugin, const char *key);

#endif
