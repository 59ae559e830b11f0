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
#include "engine/engine.h"
#include "host/cgroup.h"
#include "host/seccomp_policy.h"
#include "host/uidrange.h"
#include "host/userns.h"
#include "plugins/host_table.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "runtime/bwrap_floor.h"
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

        /* loaded but not usable here: never shown as "ok" */
        if (r < 0)
            json_object_object_add(o, "status", json_object_new_string("unusable"));
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

#ifdef _WIN32
/* The backends the Windows build has not (issue 28), each with why: listed
 * as "absent", after the plugins found (a manifest found is listed as
 * such, with the loader's word on it). */
static void absent_backends(struct sbx_runtime *rt, struct json_object *a)
{
    static const char *const absent[][2] = {
            {"bwrap", "Linux only: user namespaces, cgroups and seccomp are not on Windows"},
            {"nsjail", "Linux only: namespaces, cgroups and seccomp are not on Windows"},
            {"docker", "not built for Windows: its daemon is reached through a unix socket"},
            {"podman", "not built for Windows: its daemon is reached through a unix socket"},
            {"kubernetes", "not built for Windows yet: needs HTTP and WebSocket for plugins"},
            {"mxc", "not built for Windows yet: its runner is Linux code (issue 28)"},
            {"wsl2", "not built with this Windows build (SBX_PLUGIN_WSL2=OFF)"},
    };

    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
        struct json_object *o;

        if (registry_find_any(rt, SBX_KIND_BACKEND, absent[i][0]))
            continue; /* its manifest was found: listed above, with its state */
        o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(absent[i][0]));
        json_object_object_add(o, "kind", json_object_new_string("backend"));
        json_object_object_add(o, "version", NULL);
        json_object_object_add(o, "status", json_object_new_string("absent"));
        json_object_object_add(o, "error", json_object_new_string(absent[i][1]));
        json_object_object_add(o, "manifest", json_object_new_string("-"));
        json_object_array_add(a, o);
    }
}
#endif

struct json_object *sbx_runtime_plugins_json(struct sbx_runtime *rt)
{
    struct json_object *a = json_object_new_array();

    for (size_t i = 0; a && i < rt->n_plugins; i++)
        json_object_array_add(a, plugin_json(rt, rt->plugins[i]));
#ifdef _WIN32
    if (a)
        absent_backends(rt, a);
#endif
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

/* "probe passed", and what an experimental backend's manifest says of
 * itself (its description): the operator reads it in doctor. */
static const char *ok_detail(const struct manifest *m, char *buf, size_t len)
{
    if (!m->description || !strstr(m->description, "experimental"))
        return "probe passed";
    snprintf(buf, len, "probe passed; %s", m->description);
    return buf;
}

#ifdef _WIN32
/* The Linux host services, absent from the Windows build (issue 28):
 * doctor says so instead of checking them. "absent" fails nothing: no
 * backend could use them here anyway, and the defaults check says that
 * no run is possible. */
static void check_windows(struct json_object *a)
{
    static const char *const absent[][2] = {
            {"user_namespaces", "user namespaces: not on Windows"},
            {"uid_range", "uid ranges: not on Windows"},
            {"cgroups", "cgroups: not on Windows"},
            {"seccomp", "seccomp: not on Windows"},
    };

    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        check(a, absent[i][0], "absent", absent[i][1], NULL);
}
#else
static void check_userns(struct json_object *a)
{
    static const char *const names[] = {"ok", "warn", "fail"};
    struct userns_check u;

    userns_check("/proc/sys", geteuid(), &u);
    check(a, "user_namespaces", names[u.status], u.detail, u.fix[0] ? u.fix : NULL);
}

/*
 * The host uids sandboxes run as, and so which of the kernel's per-user
 * quotas they share: the kernel charges a box's processes to the owner of
 * its user namespace (or its container's user), whatever ids are mapped
 * inside, so only distinct host uids separate them; subordinate ids
 * (/etc/subuid) map ids inside a namespace and do not.
 */
static void check_uids(const struct sbx_runtime *rt, struct json_object *a)
{
    const struct settings *s = rt->settings;
    char detail[640];
    uint32_t first, count;

    if (geteuid() == 0 && rt->uids) {
        uidrange_bounds(rt->uids, &first, &count);
        snprintf(detail, sizeof(detail),
                "each sandbox and session runs as a host uid and gid of its own from %u-%u "
                "(LLM_SANDBOX_UID_RANGE, %u ids, %zu skipped as host accounts use them): kernel "
                "per-user quotas are not shared; rlimits per sandbox: message queues %u KiB, "
                "locked memory %u KiB, queued signals %u",
                first, first + count - 1, count, uidrange_skipped(rt->uids),
                ENGINE_MSGQUEUE_BYTES / 1024, ENGINE_MEMLOCK_BYTES / 1024, ENGINE_SIGPENDING_MAX);
        check(a, "sandbox_uids", "ok", detail, NULL);
        return;
    }
    snprintf(detail, sizeof(detail),
            "every sandbox runs as host uid %u, so the kernel's per-user quotas stay shared "
            "between sandboxes%s: inotify instances (fs.inotify.max_user_instances) and user "
            "namespaces; each sandbox takes at most %u KiB of message queues, %u KiB of locked "
            "memory and %u queued signals (rlimits)",
            geteuid() == 0 ? s->sandbox_uid : (unsigned)geteuid(),
            geteuid() == 0 ? "" : " and with this user's own processes",
            ENGINE_MSGQUEUE_BYTES / 1024, ENGINE_MEMLOCK_BYTES / 1024, ENGINE_SIGPENDING_MAX);
    check(a, "sandbox_uids", "warn", detail,
            geteuid() == 0 ? "set LLM_SANDBOX_UID_RANGE=FIRST:COUNT (ids no host account uses)"
                           : "run llm-sandbox as root (each sandbox then gets a host uid of its "
                             "own from LLM_SANDBOX_UID_RANGE), or raise the shared quota: "
                             "sudo sysctl -w fs.inotify.max_user_instances=1024 (and the same "
                             "line in /etc/sysctl.d/50-llm-sandbox.conf); subordinate ids "
                             "(/etc/subuid) do not separate these quotas");
}

/* Append s to out (of len, used o); false when it does not fit. */
static bool put(char *out, size_t len, size_t *o, const char *s)
{
    size_t n = strlen(s);

    if (*o + n + 1 > len)
        return false;
    memcpy(out + *o, s, n + 1);
    *o += n;
    return true;
}

/* This process's command line, shell-quoted, with the executable's full
 * path: the exact line a fix can wrap ("" when it does not fit). */
static void self_command(char *out, size_t len)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "-_./=:,+@%";
    char buf[4096], exe[PATH_MAX];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1), e;
    size_t o = 0;
    bool ok = true;

    out[0] = '\0';
    if (fd >= 0)
        close(fd);
    e = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0 || e <= 0)
        return;
    buf[n] = '\0';
    exe[e] = '\0';
    for (char *arg = buf; ok && arg < buf + n; arg += strlen(arg) + 1) {
        const char *word = arg == buf ? exe : arg;

        if (o)
            ok = put(out, len, &o, " ");
        if (*word && strspn(word, plain) == strlen(word)) {
            ok = ok && put(out, len, &o, word);
            continue;
        }
        ok = ok && put(out, len, &o, "'");
        for (const char *c = word; ok && *c; c++) {
            char one[2] = {*c, '\0'};

            ok = put(out, len, &o, *c == '\'' ? "'\\''" : one);
        }
        ok = ok && put(out, len, &o, "'");
    }
    if (!ok)
        out[0] = '\0';
}

static const char *const how_names[] = {
        [CG_HOW_NONE] = "none",
        [CG_HOW_UNMANAGED] = "unmanaged",
        [CG_HOW_DELEGATED] = "delegated",
        [CG_HOW_SCOPE] = "scope",
        [CG_HOW_NOT_DELEGATED] = "not-delegated",
        [CG_HOW_SCOPE_FAILED] = "scope-failed",
};

/* The facts behind the cgroups check, for scripts and tests. */
static struct json_object *cgroup_json(const struct cg_info *ci, const char *describe)
{
    struct json_object *o = json_object_new_object(), *ctl = json_object_new_array();

    if (!o || !ctl) {
        json_object_put(ctl);
        return o;
    }
    for (const char *c = ci->controllers; c && *c;) {
        size_t n = strcspn(c, " ");

        json_object_array_add(ctl, json_object_new_string_len(c, (int)n));
        c += n + (c[n] == ' ');
    }
#define STR_OR_NULL(x) ((x) ? json_object_new_string(x) : NULL)
    json_object_object_add(o, "version",
            ci->mode == CG_NONE ? NULL : json_object_new_int(ci->mode == CG_V2 ? 2 : 1));
    json_object_object_add(o, "enforced", json_object_new_boolean(ci->mode != CG_NONE));
    json_object_object_add(
            o, "how", json_object_new_string(ci->mode == CG_V1 ? "v1" : how_names[ci->how]));
    json_object_object_add(o, "manager",
            ci->how == CG_HOW_SCOPE || ci->how == CG_HOW_SCOPE_FAILED
                    ? json_object_new_string(ci->user_manager ? "user" : "system")
                    : NULL);
    json_object_object_add(o, "own", STR_OR_NULL(ci->own));
    json_object_object_add(o, "unit", STR_OR_NULL(ci->unit));
    json_object_object_add(o, "scope", STR_OR_NULL(ci->scope));
    json_object_object_add(o, "parent", STR_OR_NULL(ci->parent));
    json_object_object_add(o, "controllers", ctl);
    json_object_object_add(o, "detail", json_object_new_string(describe));
#undef STR_OR_NULL
    return o;
}

/* What to do when no cgroup is used: a line that works here. */
static void cgroup_fix(const struct cg_info *ci, bool v2, char *fix, size_t len)
{
    char cmd[2048], wrap[2300];
    bool root = geteuid() == 0;

    self_command(cmd, sizeof(cmd));
    snprintf(wrap, sizeof(wrap), "systemd-run%s --scope -p Delegate=yes -- %s",
            root ? "" : " --user", cmd[0] ? cmd : "llm-sandbox ...");
    if (!v2) {
        snprintf(fix, len,
                root ? "cgroup v1 needs the memory, pids and cpu hierarchies mounted and writable "
                       "(or boot with systemd.unified_cgroup_hierarchy=1)"
                     : "cgroup v1 hierarchies belong to root: run llm-sandbox as root, or on a "
                       "host with the unified cgroup v2 hierarchy run it in a delegated scope");
    } else if (ci->how == CG_HOW_NOT_DELEGATED && ci->unit && strcmp(ci->unit, "-.slice") != 0) {
        snprintf(fix, len,
                "give %s Delegate=yes and OOMPolicy=continue (systemctl%s edit %s: [Service] "
                "Delegate=yes, OOMPolicy=continue), or run the shipped llm-sandbox.service or "
                "llm-sandbox.socket; until then memory and process limits fall back to rlimits, "
                "the CPU quota is unavailable, and a sandbox's OOM kill stops the whole unit "
                "under systemd's default OOMPolicy=stop",
                ci->unit, root ? "" : " --user", ci->unit);
    } else {
        snprintf(fix, len,
                "run it in a scope with Delegate=yes: %s; until then memory and process limits "
                "fall back to rlimits and the CPU quota is unavailable",
                wrap);
    }
}

static void check_cgroups(struct sbx_runtime *rt, struct json_object *a, struct json_object *rep)
{
    enum cg_mode mode = cg_service_mode(rt->cg);
    struct cg_info ci;
    char fix[3072];

    cg_service_info(rt->cg, &ci);
    json_object_object_add(rep, "cgroup", cgroup_json(&ci, cg_service_describe(rt->cg)));
    if (mode != CG_NONE) {
        check(a, "cgroups", "ok", cg_service_describe(rt->cg), NULL);
    } else if (!rt->settings->cgroup_v1 && !rt->settings->cgroup_v2) {
        check(a, "cgroups", "warn", cg_service_describe(rt->cg),
                "unset LLM_SANDBOX_CGROUP (or set it to auto) to use cgroups");
    } else {
        cgroup_fix(&ci, access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0, fix, sizeof(fix));
        check(a, "cgroups", "warn", cg_service_describe(rt->cg), fix);
    }
    if (mode == CG_V1 && !cg_service_swap_accounted(rt->cg))
        check(a, "swap_accounting", "warn", "memory.memsw is missing: swap is not counted",
                "boot with swapaccount=1 (cgroup v1) or use cgroup v2");
}

#endif

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

#ifndef _WIN32
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
#endif

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

#ifdef _WIN32
#define NO_BACKEND_FIX                                                                             \
    "none runs code on Windows yet ('llm-sandbox plugins' says why); the server starts "           \
    "and refuses every run"
#else
#define NO_BACKEND_FIX                                                                             \
    "set BACKEND (environment or config file) to a backend installed here ('llm-sandbox "          \
    "plugins' lists them); the server refuses to start until then"
#endif

/* The check the server makes before it starts (sbx_runtime_check): the
 * configured backend and default language exist, the backend works here,
 * the default policy fits it. Its message names what is installed. */
static void check_defaults(struct sbx_runtime *rt, struct json_object *a)
{
    const struct settings *s = rt->settings;
    const struct plugin *b = registry_find_any(rt, SBX_KIND_BACKEND, s->backend);
    const struct plugin *l = registry_find_any(rt, SBX_KIND_LANGUAGE, s->language);
    struct sbx_error *e = NULL;
    char detail[256];

    if (sbx_runtime_check(rt, &e) < 0) {
        check(a, "defaults", "fail", e->msg,
                !b || b->state != PLUGIN_OK ? NO_BACKEND_FIX
                : !l || l->state != PLUGIN_OK
                        ? "set LLM_SANDBOX_DEFAULT_LANGUAGE (environment or config file) to "
                          "an available language; the server refuses to start until then"
                        : "see the backend's requirements in the README; the server refuses "
                          "to start until then");
        sbx_error_free(e);
        return;
    }
    snprintf(detail, sizeof(detail), "backend '%s' and language '%s': the server can start",
            s->backend, s->language);
    check(a, "defaults", "ok", detail, NULL);
}

#ifndef _WIN32
/* The bubblewrap version floor (runtime/bwrap_floor.c), when the bwrap
 * backend is installed. */
static void check_bwrap_floor(struct sbx_runtime *rt, struct json_object *a)
{
    const struct plugin *pl = registry_find_any(rt, SBX_KIND_BACKEND, "bwrap");
    char where[PATH_MAX], detail[1024], fix[256];
    struct stat st;
    int r;

    if (!pl || pl->state != PLUGIN_OK ||
            manifest_which(pl->m, "bwrap", where, sizeof(where), &st) < 0)
        return;
    r = bwrap_floor_check(where, NULL, detail, sizeof(detail), fix, sizeof(fix));
    check(a, "bwrap_version", r == 1 ? "ok" : "warn", detail, fix[0] ? fix : NULL);
}
#endif

struct json_object *sbx_runtime_doctor_json(struct sbx_runtime *rt)
{
    struct json_object *o = json_object_new_object(), *a = json_object_new_array();
    bool ok = true;

    if (!o || !a)
        return o;
#ifdef _WIN32
    check_windows(a);
    check_config(rt->settings, a);
    check_runtimes(rt, a);
    check_defaults(rt, a);
#else
    check_userns(a);
    check_uids(rt, a);
    check_cgroups(rt, a, o);
    check_config(rt->settings, a);
    check_seccomp(a);
    check_runtimes(rt, a);
    check_defaults(rt, a);
    check_bwrap_floor(rt, a);
#endif
    for (size_t i = 0; i < rt->n_plugins; i++) {
        struct plugin *pl = rt->plugins[i];
        char name[96], detail[320];

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
                check(a, name, "ok", ok_detail(pl->m, detail, sizeof(detail)), NULL);
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
