/* SPDX-License-Identifier: MIT */
/*
 * plugin_settings.c: a plugin's settings (host->setting): where each is
 * looked up (LLM_SANDBOX_<PLUGIN>_<KEY>, then the foreign names its
 * manifest declares, then its default), which config file keys belong to
 * some plugin found here, and the defaults' "~/". The values come from
 * policy/settings.c (environment, then config file); the names from the
 * manifests.
 */
#include "plugins/plugin_settings.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plugins/manifest.h"
#include "policy/config.h"
#include "policy/settings.h"

#define PLUGIN_PREFIX "LLM_SANDBOX_"

/* Does a manifest declare name (a foreign name of one of its settings)? */
static bool declared(const struct manifest *m, const char *name)
{
    for (size_t i = 0; m && i < m->n_settings; i++) {
        for (char **e = m->settings[i].env; e && *e; e++) {
            size_t len = strlen(*e);

            if (strcmp(*e, name) == 0)
                return true;
            if (len > 2 && strcmp(*e + len - 2, "_*") == 0 && strncmp(name, *e, len - 1) == 0 &&
                    name[len - 1] != '\0')
                return true;
        }
    }
    return false;
}

/* Is key LLM_SANDBOX_<NAME>_<KEY> for plugin name? */
static bool is_key_of(const char *key, const char *name)
{
    const char *rest = key + strlen(PLUGIN_PREFIX);
    size_t k = 0;

    if (strncmp(key, PLUGIN_PREFIX, strlen(PLUGIN_PREFIX)) != 0)
        return false;
    while (name[k] && toupper((unsigned char)name[k]) == rest[k])
        k++;
    return !name[k] && rest[k] == '_' && rest[k + 1];
}

int plugin_settings_check_keys(const struct settings *s, const struct manifest *const *ms, size_t n,
        struct sbx_error **err)
{
    const struct config *c = s ? s->config : NULL;

    for (size_t i = 0; c && i < c->n; i++) {
        const char *key = c->entries[i].key;
        bool found = false;

        if (settings_is_core_key(key))
            continue;
        for (size_t j = 0; j < n && !found; j++)
            found = ms[j] && (is_key_of(key, ms[j]->name) || declared(ms[j], key));
        if (!found)
            return sbx_error_set_field(err, SBX_E_INVALID, key,
                    "%s:%zu:%zu: unknown key '%s': neither a setting, nor "
                    "LLM_SANDBOX_<PLUGIN>_<KEY> for a plugin found here, nor a name a plugin "
                    "found here reads (its manifest's settings)",
                    c->path, c->entries[i].line, c->entries[i].col, key);
    }
    return 0;
}

int plugin_settings_expand_defaults(const struct settings *s, struct manifest *m)
{
    for (size_t i = 0; i < m->n_settings; i++) {
        char *d = m->settings[i].default_value, *x = NULL;

        if (!d || strncmp(d, "~/", 2) != 0)
            continue;
        if (asprintf(&x, "%s%s", s->home, d + 1) < 0)
            return SBX_E_NOMEM;
        free(d);
        m->settings[i].default_value = x;
    }
    return 0;
}

/* A declared foreign name of key (a family's with the rest of the key,
 * upper-cased, in place of its "*"), looked up. */
static const char *foreign_value(const struct settings *s, const char *name, const char *key,
        const struct manifest_setting *decl)
{
    size_t len = strlen(name), klen = strlen(decl->key), o;
    char buf[160];

    if (len < 2 || strcmp(name + len - 2, "_*") != 0)
        return settings_lookup(s, name);
    o = len - 1; /* keep the '_' */
    if (o + strlen(key) - (klen - 1) >= sizeof(buf))
        return NULL;
    memcpy(buf, name, o);
    for (const char *p = key + klen - 1; *p; p++)
        buf[o++] = (char)toupper((unsigned char)*p);
    buf[o] = '\0';
    return settings_lookup(s, buf);
}

const char *plugin_setting_value(
        const struct settings *s, const struct manifest *m, const char *plugin, const char *key)
{
    const struct manifest_setting *decl;
    const char *v;
    char name[128];
    size_t o = 0;

    for (const char *p = PLUGIN_PREFIX; *p; p++)
        name[o++] = *p;
    for (const char *parts[] = {plugin, "_", key}, **q = parts; q < parts + 3; q++) {
        for (const char *p = *q; *p && o + 1 < sizeof(name); p++)
            name[o++] = (char)toupper((unsigned char)*p);
    }
    name[o] = '\0';
    v = settings_lookup(s, name);
    decl = v ? NULL : manifest_setting_find(m, key);
    for (char **e = decl ? decl->env : NULL; e && *e && !v; e++)
        v = foreign_value(s, *e, key, decl);
    return v ? v : decl ? decl->default_value : NULL;
}
