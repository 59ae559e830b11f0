/* SPDX-License-Identifier: MIT */
/*
 * scope.c: a transient scope with Delegate=yes for this process, asked of
 * systemd over D-Bus (scope.h). The calls are the ones `systemd-run
 * --scope -p Delegate=yes` makes: StartTransientUnit on the manager
 * object, then the job's JobRemoved signal, matched before the call so
 * that it cannot pass unseen (systemd sends a job's signals to the client
 * that asked for it, subscribed or not). sd-bus comes from dl/sdbus.h; a
 * NULL table means libsystemd is missing. Errors via error.h.
 */
#include "host/scope.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/util.h"
#include "sdbus.h"

#define SD_DEST  "org.freedesktop.systemd1"
#define SD_PATH  "/org/freedesktop/systemd1"
#define SD_IFACE "org.freedesktop.systemd1.Manager"

/* Unit names: [A-Za-z0-9:_.\-] (systemd.unit(5)); ours are made of an
 * instance name and fixed words, so anything else is a bug upstream. */
static bool unit_chars_ok(const char *s)
{
    return *s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.-") ==
                         strlen(s);
}

/* The slice own_rel's unit sits in, when its parent is a slice: the last
 * component of the parent ("user-0.slice"); "" otherwise. */
static void parent_slice(const char *own_rel, char *out, size_t len)
{
    const char *end = strrchr(own_rel, '/'), *start;
    size_t n;

    out[0] = '\0';
    if (!end || end == own_rel)
        return;
    start = end;
    while (start > own_rel && start[-1] != '/')
        start--;
    n = (size_t)(end - start);
    if (n > strlen(".slice") && n < len && strncmp(end - 6, ".slice", 6) == 0) {
        memcpy(out, start, n);
        out[n] = '\0';
    }
}

int scope_request_init(struct scope_request *req, const char *own_rel, const char *owner, pid_t pid,
        uid_t euid, const char *runtime_dir, struct sbx_error **err)
{
    int n;

    memset(req, 0, sizeof(*req));
    req->pid = (uint32_t)pid;
    req->user_manager = euid != 0;
    n = snprintf(req->unit, sizeof(req->unit), "llm-sandbox-%s.scope", owner);
    if (n < 0 || (size_t)n >= sizeof(req->unit) || !unit_chars_ok(req->unit))
        return sbx_error_set(err, SBX_E_INVALID, 0, "no unit name fits instance '%s'", owner);
    snprintf(req->description, sizeof(req->description),
            "llm-sandbox (process %ld) and its sandboxes", (long)pid);
    if (!req->user_manager) {
        parent_slice(own_rel, req->slice, sizeof(req->slice));
        return 0;
    }
    if (runtime_dir && *runtime_dir)
        n = snprintf(req->address, sizeof(req->address), "unix:path=%s/bus", runtime_dir);
    else
        n = snprintf(req->address, sizeof(req->address), "unix:path=/run/user/%lu/bus",
                (unsigned long)euid);
    if (n < 0 || (size_t)n >= sizeof(req->address) || strchr(req->address, ';') ||
            strchr(req->address, ','))
        return sbx_error_set(err, SBX_E_INVALID, 0, "XDG_RUNTIME_DIR '%s' cannot name a bus",
                runtime_dir ? runtime_dir : "");
    return 0;
}

/* ---- the call ------------------------------------------------------------ */

struct job_wait {
    const struct sdbus_api *api;
    const char *job; /* the path StartTransientUnit returned */
    char result[32]; /* its result: "done", "failed", ...; "" until it ends */
};

static void result_set(struct job_wait *w, const char *result)
{
    snprintf(w->result, sizeof(w->result), "%s", result && *result ? result : "unknown");
}

/* JobRemoved(u id, o job, s unit, s result). */
static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
    struct job_wait *w = userdata;
    const char *path = NULL, *unit = NULL, *result = NULL;
    uint32_t id;

    (void)ret_error;
    if (w->api->sd_bus_message_read_basic(m, 'u', &id) < 0 ||
            w->api->sd_bus_message_read_basic(m, 'o', &path) < 0 ||
            w->api->sd_bus_message_read_basic(m, 's', &unit) < 0 ||
            w->api->sd_bus_message_read_basic(m, 's', &result) < 0 || !path)
        return 0;
    if (w->job && strcmp(path, w->job) == 0)
        result_set(w, result);
    return 0;
}

/* One (sv) property; the value's signature is one basic type, or "au"
 * with one element. */
static int prop(const struct sdbus_api *api, sd_bus_message *m, const char *name, const char *sig,
        const void *value)
{
    int r = api->sd_bus_message_open_container(m, 'r', "sv");

    if (r >= 0)
        r = api->sd_bus_message_append_basic(m, 's', name);
    if (r >= 0)
        r = api->sd_bus_message_open_container(m, 'v', sig);
    if (r >= 0 && sig[0] == 'a') {
        r = api->sd_bus_message_open_container(m, 'a', sig + 1);
        if (r >= 0)
            r = api->sd_bus_message_append_basic(m, sig[1], value);
        if (r >= 0)
            r = api->sd_bus_message_close_container(m);
    } else if (r >= 0) {
        r = api->sd_bus_message_append_basic(m, sig[0], value);
    }
    if (r >= 0)
        r = api->sd_bus_message_close_container(m);
    if (r >= 0)
        r = api->sd_bus_message_close_container(m);
    return r;
}

static int build_call(const struct sdbus_api *api, sd_bus *bus, const struct scope_request *req,
        sd_bus_message **ret)
{
    sd_bus_message *m = NULL;
    int yes = 1;
    int r = api->sd_bus_message_new_method_call(
            bus, &m, SD_DEST, SD_PATH, SD_IFACE, "StartTransientUnit");

    if (r >= 0)
        r = api->sd_bus_message_append_basic(m, 's', req->unit);
    if (r >= 0)
        r = api->sd_bus_message_append_basic(m, 's', "fail");
    if (r >= 0)
        r = api->sd_bus_message_open_container(m, 'a', "(sv)");
    if (r >= 0)
        r = prop(api, m, "PIDs", "au", &req->pid);
    if (r >= 0)
        r = prop(api, m, "Delegate", "b", &yes);
    /* gone from the manager once it ends, even when it ends badly */
    if (r >= 0)
        r = prop(api, m, "CollectMode", "s", "inactive-or-failed");
    if (r >= 0)
        r = prop(api, m, "Description", "s", req->description);
    if (r >= 0 && req->slice[0])
        r = prop(api, m, "Slice", "s", req->slice);
    if (r >= 0)
        r = api->sd_bus_message_close_container(m);
    if (r >= 0)
        r = api->sd_bus_message_open_container(m, 'a', "(sa(sv))");
    if (r >= 0)
        r = api->sd_bus_message_close_container(m);
    if (r < 0) {
        if (m)
            api->sd_bus_message_unref(m);
        return r;
    }
    *ret = m;
    return 0;
}

static int bus_open(const struct sdbus_api *api, const struct scope_request *req, sd_bus **ret)
{
    sd_bus *bus = NULL;
    int r;

    if (!req->user_manager)
        return api->sd_bus_open_system(ret);
    r = api->sd_bus_new(&bus);
    if (r < 0)
        return r;
    r = api->sd_bus_set_address(bus, req->address);
    if (r >= 0)
        r = api->sd_bus_set_bus_client(bus, 1);
    if (r >= 0)
        r = api->sd_bus_start(bus);
    if (r < 0) {
        api->sd_bus_flush_close_unref(bus);
        return r;
    }
    *ret = bus;
    return 0;
}

/* Dispatch what arrives until our job has ended or the deadline passed.
 * sd_bus_call() queues the signals that come while it waits for the reply
 * and sd_bus_process() dispatches them here, once w->job is known. */
static int job_wait(const struct sdbus_api *api, sd_bus *bus, struct job_wait *w, int64_t deadline)
{
    while (!w->result[0]) {
        int64_t left = deadline - now_ms();
        int r;

        if (left <= 0)
            return -ETIMEDOUT;
        r = api->sd_bus_process(bus, NULL);
        if (r < 0)
            return r;
        if (r > 0)
            continue;
        r = api->sd_bus_wait(bus, (uint64_t)left * 1000u);
        if (r < 0 && r != -EINTR)
            return r;
    }
    return 0;
}

/* "asking the system manager (what): why" */
static int fail(struct sbx_error **err, int rc, const struct scope_request *req, const char *what,
        int r, const sd_bus_error *e)
{
    return sbx_error_set(err, rc, r < 0 ? -r : 0, "asking the %s manager (%s): %s",
            req->user_manager ? "user's" : "system", what,
            e && e->message ? e->message : strerror(r < 0 ? -r : EIO));
}

/* The unit type's D-Bus interface, which carries its Delegate property. */
static const char *unit_iface(const char *unit)
{
    static const char *const map[][2] = {{".scope", "Scope"}, {".service", "Service"},
            {".slice", "Slice"}, {".socket", "Socket"}, {".mount", "Mount"}, {".swap", "Swap"}};
    size_t n = strlen(unit);

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        size_t m = strlen(map[i][0]);

        if (n > m && strcmp(unit + n - m, map[i][0]) == 0)
            return map[i][1];
    }
    return NULL;
}

/* One method call with string arguments (NULL-terminated): its reply. */
static int call_s(const struct sdbus_api *api, sd_bus *bus, const char *path, const char *iface,
        const char *member, const char *const *args, sd_bus_error *e, sd_bus_message **reply)
{
    sd_bus_message *m = NULL;
    int r = api->sd_bus_message_new_method_call(bus, &m, SD_DEST, path, iface, member);

    for (size_t i = 0; r >= 0 && args[i]; i++)
        r = api->sd_bus_message_append_basic(m, 's', args[i]);
    if (r >= 0)
        r = api->sd_bus_call(bus, m, 0, e, reply);
    if (m)
        api->sd_bus_message_unref(m);
    return r;
}

int scope_unit_delegated(const struct sdbus_api *api, const struct scope_request *req,
        const char *unit, struct sbx_error **err)
{
    const char *kind = unit_iface(unit), *path = NULL;
    sd_bus_error e = {NULL, NULL, 0};
    sd_bus *bus = NULL;
    sd_bus_message *reply = NULL;
    char iface[64], pathbuf[256], what[192];
    int r, yes = 0;

    if (!kind)
        return sbx_error_set(err, SBX_E_INVALID, 0, "'%s' is not a unit with a cgroup", unit);
    snprintf(iface, sizeof(iface), "org.freedesktop.systemd1.%s", kind);
    snprintf(what, sizeof(what), "whether %s has Delegate=yes", unit);
    r = bus_open(api, req, &bus);
    if (r < 0)
        return fail(err, SBX_E_UNAVAILABLE, req, what, r, NULL);
    r = call_s(
            api, bus, SD_PATH, SD_IFACE, "GetUnit", (const char *const[]){unit, NULL}, &e, &reply);
    if (r >= 0)
        r = api->sd_bus_message_read_basic(reply, 'o', &path);
    if (r >= 0 && path)
        snprintf(pathbuf, sizeof(pathbuf), "%s", path);
    if (reply)
        reply = api->sd_bus_message_unref(reply);
    if (r >= 0)
        r = call_s(api, bus, pathbuf, "org.freedesktop.DBus.Properties", "Get",
                (const char *const[]){iface, "Delegate", NULL}, &e, &reply);
    if (r >= 0)
        r = api->sd_bus_message_enter_container(reply, 'v', "b");
    if (r >= 0)
        r = api->sd_bus_message_read_basic(reply, 'b', &yes);
    if (r < 0)
        r = fail(err, SBX_E_UNAVAILABLE, req, what, r, &e);
    else
        r = yes != 0;
    api->sd_bus_error_free(&e);
    if (reply)
        api->sd_bus_message_unref(reply);
    api->sd_bus_flush_close_unref(bus);
    return r;
}

int scope_start(const struct sdbus_api *api, const struct scope_request *req, int64_t timeout_ms,
        struct sbx_error **err)
{
    struct job_wait w = {.api = api};
    sd_bus_error e = {NULL, NULL, 0};
    sd_bus *bus = NULL;
    sd_bus_message *m = NULL, *reply = NULL;
    sd_bus_slot *slot = NULL;
    const char *job = NULL;
    int64_t deadline = now_ms() + timeout_ms;
    char jobbuf[128], what[PATH_MAX + 192];
    int r, rc = 0;

    snprintf(what, sizeof(what), "for %s over %s", req->unit,
            req->user_manager ? req->address : "the system bus");
    r = bus_open(api, req, &bus);
    if (r < 0)
        return fail(err, SBX_E_UNAVAILABLE, req, what, r, NULL);
    r = api->sd_bus_match_signal(
            bus, &slot, SD_DEST, SD_PATH, SD_IFACE, "JobRemoved", on_job_removed, &w);
    if (r >= 0)
        r = build_call(api, bus, req, &m);
    if (r < 0) {
        rc = fail(err, SBX_E_BACKEND, req, what, r, NULL);
        goto out;
    }
    r = api->sd_bus_call(bus, m, (uint64_t)timeout_ms * 1000u, &e, &reply);
    if (r < 0) {
        rc = fail(err, SBX_E_UNAVAILABLE, req, what, r, &e);
        goto out;
    }
    r = api->sd_bus_message_read_basic(reply, 'o', &job);
    if (r < 0 || !job) {
        rc = fail(err, SBX_E_BACKEND, req, what, r, NULL);
        goto out;
    }
    snprintf(jobbuf, sizeof(jobbuf), "%s", job);
    w.job = jobbuf;
    r = job_wait(api, bus, &w, deadline);
    if (r < 0)
        rc = fail(err, SBX_E_BACKEND, req, what, r, NULL);
    else if (strcmp(w.result, "done") != 0)
        rc = sbx_error_set(err, SBX_E_BACKEND, 0,
                "the %s manager could not start %s: job %s ended '%s' (journalctl -u %s)",
                req->user_manager ? "user's" : "system", req->unit, jobbuf, w.result, req->unit);
out:
    api->sd_bus_error_free(&e);
    if (reply)
        api->sd_bus_message_unref(reply);
    if (m)
        api->sd_bus_message_unref(m);
    if (slot)
        api->sd_bus_slot_unref(slot);
    api->sd_bus_flush_close_unref(bus);
    return rc;
}
