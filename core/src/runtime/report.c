/* SPDX-License-Identifier: MIT */
/*
 * report.c: what `llm-sandbox plugins` and `llm-sandbox doctor` say, as
 * JSON the front ends print. Plugins: every plugin found, its state and
 * error, and for backends the controls they can enforce here (probed by
 * trying). Doctor: host checks, each with a status, the detail and the
 * fix, plus every plugin problem. Reads /proc and runs probes; decides
 * nothing about runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/util.h"
#include "host/cgroup.h"
#include "host/seccomp_policy.h"
#include "plugins/host_table.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime_state.h"

static const char *const state_names[] = {"ok", "broken", "shadowed", "disabled", "unloaded"};
static const char *const level_names[] = {"none", "fallback", "full"};

static struct json_object *strv_json(char *const *v)
{
    struct json_object *a = json_object_new_array();

    for (size_t i = 0; a && v && v[i]; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

static struct json_object *caps_json(const struct sbx_caps *caps)
{
    struct json_object *o = json_object_new_object();

    for (int c = 0; o && c < SBX_CTL_COUNT; c++) {
        struct json_object *e = json_object_new_object();

        json_object_object_add(e, "level", json_object_new_string(level_names[caps->level[c] % 3]));
        json_object_object_add(e, "note", json_object_new_string(caps->note[c]));
        json_object_object_add(o, policy_control_name((enum sbx_control)c), e);
    }
    return o;
}

static struct json_object *plugin_json(struct sbx_runtime *rt, struct plugin *pl)
{
    struct json_object *o = json_object_new_object();
    const struct manifest *m = pl->m;
    cleanup_free char *path = NULL;

    if (!o || asprintf(&path, "%s/%s", pl->dir, pl->file) < 0)
        return o;
    json_object_object_add(o, "name", json_object_new_string(pl->name));
    json_object_object_add(o, "kind",
            m ? json_object_new_string(m->kind == SBX_KIND_BACKEND ? "backend" : "language")
              : NULL);
    json_object_object_add(o, "version", m ? json_object_new_string(m->version) : NULL);
    json_object_object_add(o, "status", json_object_new_string(state_names[pl->state]));
    json_object_object_add(o, "error", pl->error ? json_object_new_string(pl->error) : NULL);
    json_object_object_add(o, "manifest", json_object_new_string(path));
    if (m) {
        json_object_object_add(o, "description", json_object_new_string(m->description));
        json_object_object_add(o, "aliases", strv_json(m->aliases));
    }
    if (pl->state == PLUGIN_OK && m->kind == SBX_KIND_BACKEND) {
        struct sbx_error *e = NULL;
        int r = backend_probe(rt, pl, &e);

        json_object_object_add(o, "probe", json_object_new_string(r < 0 ? "failed" : "ok"));
        json_object_object_add(o, "probe_error", e ? json_object_new_string(e->msg) : NULL);
        json_object_object_add(o, "controls", caps_json(&pl->caps));
        sbx_error_free(e);
    }
    if (pl->state == PLUGIN_OK && m->kind == SBX_KIND_LANGUAGE) {
        json_object_object_add(o, "source_file", json_object_new_string(m->lang->source_file));
        json_object_object_add(o, "run", strv_json(m->lang->run));
        json_object_object_add(o, "package_manager",
                m->lang->package_manager ? json_object_new_string(m->lang->package_manager) : NULL);
    }
    return o;
}

struct json_object *sbx_runtime_plugins_json(struct sbx_runtime *rt)
{
    struct json_object *a = json_object_new_array();

    for (size_t i = 0; a && i < rt->n_plugins; i++)
        json_object_array_add(a, plugin_json(rt, rt->plugins[i]));
    return a;
}

static void check(struct json_object *a, const char *name, const char *status, const char *detail,
        const char *fix)
{
    struct json_object *o = json_object_new_object();

    json_object_object_add(o, "check", json_object_new_string(name));
    json_object_object_add(o, "status", json_object_new_string(status));
    json_object_object_add(o, "detail", json_object_new_string(detail));
    json_object_object_add(o, "fix", fix ? json_object_new_string(fix) : NULL);
    json_object_array_add(a, o);
}

static long read_long(const char *path)
{
    char buf[64];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

static void check_userns(struct json_object *a)
{
    long max = read_long("/proc/sys/user/max_user_namespaces");
    long clone = read_long("/proc/sys/kernel/unprivileged_userns_clone");
    long apparmor = read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    char detail[160];

    snprintf(detail, sizeof(detail), "user.max_user_namespaces=%ld%s", max,
            clone == 0 ? ", kernel.unprivileged_userns_clone=0" : "");
    if (max == 0 || clone == 0)
        check(a, "user_namespaces", "fail", detail,
                "sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1");
    else if (apparmor == 1)
        check(a, "user_namespaces", "warn", "AppArmor restricts unprivileged user namespaces",
                "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor "
                "profile for bwrap");
    else
        check(a, "user_namespaces", "ok", detail, NULL);
}

static void check_cgroups(struct sbx_runtime *rt, struct json_object *a)
{
    enum cg_mode mode = cg_service_mode(rt->cg);

    if (mode == CG_NONE)
        check(a, "cgroups", "warn", cg_service_describe(rt->cg),
                "run llm-sandbox as root, or under a delegated cgroup v2 subtree (e.g. "
                "systemd-run --user --scope -p Delegate=yes llm-sandbox ...); until then "
                "memory and process limits fall back to rlimits and CPU quota is unavailable");
    else
        check(a, "cgroups", "ok", cg_service_describe(rt->cg), NULL);
    if (mode == CG_V1 && !cg_service_swap_accounted(rt->cg))
        check(a, "swap_accounting", "warn", "memory.memsw is missing: swap is not counted",
                "boot with swapaccount=1 (cgroup v1) or use cgroup v2");
    if (mode != CG_V2)
        check(a, "cgroup_v2_code", "warn",
                "the cgroup v2 code path is unverified on this host (only unit-tested against "
                "a fake cgroupfs tree)",
                NULL);
}

/* Which config file was read (a broken one fails start-up, so doctor
 * itself reports that as its error). */
static void check_config(const struct settings *s, struct json_object *a)
{
    char detail[512];

    if (!s->config) {
        check(a, "config", "ok", "no config file (environment and defaults only)", NULL);
        return;
    }
    snprintf(detail, sizeof(detail), "%s: %zu setting%s", s->config->path, s->config->n,
            s->config->n == 1 ? "" : "s");
    check(a, "config", "ok", detail, NULL);
}

static void check_seccomp(struct json_object *a)
{
    struct sbx_error *e = NULL;
    const void *bpf;
    size_t len;
    char detail[96];

    if (seccomp_bpf_get(&bpf, &len, &e) < 0) {
        check(a, "seccomp", "fail", e->msg, "report this as a bug");
        sbx_error_free(e);
        return;
    }
    snprintf(detail, sizeof(detail), "policy compiled: %zu BPF instructions", len / 8);
    check(a, "seccomp", "ok", detail, NULL);
}

static void check_runtimes(struct sbx_runtime *rt, struct json_object *a)
{
    for (size_t i = 0; i < rt->n_plugins; i++) {
        const struct plugin *pl = rt->plugins[i];
        char name[96], detail[PATH_MAX + 64];

        if (pl->state != PLUGIN_OK || pl->m->kind != SBX_KIND_LANGUAGE)
            continue;
        for (size_t b = 0; b < pl->m->n_binaries; b++) {
            const char *bin = pl->m->binaries[b].name;
            char where[PATH_MAX];
            struct stat st;

            snprintf(name, sizeof(name), "runtime:%s", pl->name);
            if (manifest_which(pl->m, bin, where, sizeof(where), &st) < 0 ||
                    access(where, X_OK) != 0) {
                snprintf(detail, sizeof(detail), "%s: %s", bin,
                        bin[0] == '/' ? strerror(errno) : "not found along the language's PATH");
                check(a, name, "fail", detail,
                        "install the language's toolchain "
                        "(scripts/install-deps.sh does for the in-tree languages)");
            } else {
                snprintf(detail, sizeof(detail), "%s found", where);
                check(a, name, "ok", detail, NULL);
            }
        }
    }
}

struct json_object *sbx_runtime_doctor_json(struct sbx_runtime *rt)
{
    struct json_object *o = json_object_new_object(), *a = json_object_new_array();
    bool ok = true;

    if (!o || !a)
        return o;
    check_userns(a);
    check_cgroups(rt, a);
    check_config(rt->settings, a);
    check_seccomp(a);
    check_runtimes(rt, a);
    for (size_t i = 0; i < rt->n_plugins; i++) {
        struct plugin *pl = rt->plugins[i];
        char name[96];

        snprintf(name, sizeof(name), "plugin:%s", pl->name);
        if (pl->state == PLUGIN_DISABLED) {
            check(a, name, "ok", pl->error, NULL);
        } else if (pl->state != PLUGIN_OK) {
            check(a, name, pl->state == PLUGIN_SHADOWED ? "warn" : "fail",
                    pl->error ? pl->error : "unknown problem",
                    pl->state == PLUGIN_SHADOWED ? "remove the duplicate"
                                                 : "fix or remove this plugin's files");
        } else if (pl->m->kind == SBX_KIND_BACKEND) {
            struct sbx_error *e = NULL;

            /* an installed backend nobody configured may lack its daemon
             * or tool; only the configured one's problems fail the check */
            if (backend_probe(rt, pl, &e) < 0)
                check(a, name,
                        e->rc == SBX_E_UNAVAILABLE && registry_find_any(rt, SBX_KIND_BACKEND,
                                                              rt->settings->backend) != pl
                                ? "warn"
                                : "fail",
                        e->msg, "see the backend's requirements in the README");
            else
                check(a, name, "ok", "probe passed", NULL);
            sbx_error_free(e);
        }
    }
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        struct json_object *c = json_object_array_get_idx(a, i), *st;

        if (json_object_object_get_ex(c, "status", &st) &&
                strcmp(json_object_get_string(st), "fail") == 0)
            ok = false;
    }
    json_object_object_add(o, "ok", json_object_new_boolean(ok));
    json_object_object_add(o, "default_backend", json_object_new_string(rt->settings->backend));
    json_object_object_add(o, "checks", a);
    json_object_object_add(o, "plugins", sbx_runtime_plugins_json(rt));
    return o;
}
