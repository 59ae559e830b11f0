/* SPDX-License-Identifier: MIT */
/*
 * plan.c: expand a language manifest's argv templates into the plan of one
 * run. {source} is the staged source file, {workspace} the sandbox's
 * working directory; other names come from the language's prepare hook
 * (sbx_plan_ops.set_var), which may also choose one of the manifest's
 * modes (select_mode). An unknown placeholder is a plugin bug and an
 * error naming it. Pure: no I/O.
 */
#include "engine/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/dynbuf.h"
#include "base/error.h"
#include "base/util.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "runtime_state.h"

static bool var_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || *s == '_'))
            return false;
    return true;
}

static int ops_set_var(struct sbx_plan *p, const char *name, const char *value)
{
    size_t n = strlen(name);

    if (!var_name_ok(name) || !value || strcmp(name, "source") == 0 ||
            strcmp(name, "workspace") == 0)
        return SBX_E_INVALID;
    for (char **v = p->vars; v && *v; v++) {
        if (strncmp(*v, name, n) == 0 && (*v)[n] == '=') {
            char *nv = NULL;

            if (asprintf(&nv, "%s=%s", name, value) < 0)
                return SBX_E_NOMEM;
            free(*v);
            *v = nv;
            return 0;
        }
    }
    return strv_pushf(&p->vars, "%s=%s", name, value);
}

static int ops_set_source_name(struct sbx_plan *p, const char *name)
{
    char *s;

    if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
            strlen(name) > 255)
        return SBX_E_INVALID;
    s = strdup(name);
    if (!s)
        return SBX_E_NOMEM;
    free(p->source_name);
    p->source_name = s;
    p->source_named = true;
    return 0;
}

static int ops_select_mode(struct sbx_plan *p, const char *name)
{
    const struct manifest_mode *m = NULL;

    for (size_t i = 0; name && i < p->lang->n_modes && !m; i++)
        if (strcmp(p->lang->modes[i].name, name) == 0)
            m = &p->lang->modes[i];
    if (!m)
        return SBX_E_INVALID;
    p->mode = m;
    if (m->source_file && !p->source_named) {
        char *s = strdup(m->source_file);

        if (!s)
            return SBX_E_NOMEM;
        free(p->source_name);
        p->source_name = s;
    }
    return 0;
}

static const struct sbx_plan_ops plan_ops = {
        .size = sizeof(struct sbx_plan_ops),
        .set_var = ops_set_var,
        .set_source_name = ops_set_source_name,
        .select_mode = ops_select_mode,
};

static const char *lookup(const struct sbx_plan *p, const char *name, size_t n)
{
    if (n == 6 && strncmp(name, "source", 6) == 0)
        return p->source_name;
    if (n == 9 && strncmp(name, "workspace", 9) == 0)
        return SANDBOX_WORKSPACE;
    for (char **v = p->vars; v && *v; v++)
        if (strncmp(*v, name, n) == 0 && (*v)[n] == '=')
            return *v + n + 1;
    return NULL;
}

int plan_expand(const struct sbx_plan *p, const char *tmpl, char **ret, struct sbx_error **err)
{
    struct dynbuf b;
    const char *s = tmpl;

    dynbuf_init(&b, 64 * 1024);
    while (*s) {
        const char *open = strchr(s, '{'), *close, *val;

        if (!open) {
            if (dynbuf_append_str(&b, s) < 0)
                goto fail;
            break;
        }
        close = strchr(open, '}');
        if (!close || dynbuf_append(&b, s, (size_t)(open - s)) < 0)
            goto fail;
        val = lookup(p, open + 1, (size_t)(close - open - 1));
        if (!val) {
            dynbuf_done(&b);
            return sbx_error_set(err, SBX_E_INTERNAL, 0, "unknown placeholder %.*s in '%s'",
                    (int)(close - open + 1), open, tmpl);
        }
        if (dynbuf_append_str(&b, val) < 0)
            goto fail;
        s = close + 1;
    }
    *ret = dynbuf_take(&b, NULL);
    return *ret ? 0 : sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
fail:
    dynbuf_done(&b);
    return sbx_error_set(err, SBX_E_INVALID, 0, "bad template '%s'", tmpl);
}

static int expand_all(
        const struct sbx_plan *p, char *const *tmpl, char ***ret, struct sbx_error **err)
{
    char **out = NULL;

    for (size_t i = 0; tmpl && tmpl[i]; i++) {
        char *s = NULL;

        if (plan_expand(p, tmpl[i], &s, err) < 0 || strv_push(&out, s) < 0) {
            free(s);
            strv_free(out);
            return err && *err ? (*err)->rc : sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "oom");
        }
        free(s);
    }
    *ret = out;
    return 0;
}

int plan_make(const struct plugin *lang, const char *code, size_t code_len, struct sbx_plan **ret,
        struct sbx_error **err)
{
    const struct manifest_lang *ml = lang->m->lang;
    struct sbx_plan *p = calloc(1, sizeof(*p));
    int r;

    if (!p || !(p->source_name = strdup(ml->source_file))) {
        free(p);
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    p->lang = ml;
    if (lang->desc && lang->desc->language->prepare) {
        struct sbx_lang_job job = {.size = sizeof(job), .code = code, .code_len = code_len};
        struct sbx_err perr;

        sbx_err_init(&perr);
        r = lang->desc->language->prepare(lang->pstate, &job, &plan_ops, p, &perr);
        if (r < 0) {
            plan_free(p);
            return sbx_error_from_plugin(err, &perr, lang->name);
        }
    }
    char *const *build = p->mode ? p->mode->build : ml->build;
    char *const *run = p->mode ? p->mode->run : ml->run;

    if ((build && expand_all(p, build, &p->build, err) < 0) ||
            expand_all(p, run, &p->run, err) < 0) {
        plan_free(p);
        return sbx_error_wrap(err, "language '%s'", lang->name);
    }
    *ret = p;
    return 0;
}

struct sbx_plan *plan_free(struct sbx_plan *p)
{
    if (p) {
        free(p->source_name);
        strv_free(p->vars);
        strv_free(p->build);
        strv_free(p->run);
        free(p);
    }
    return NULL;
}
