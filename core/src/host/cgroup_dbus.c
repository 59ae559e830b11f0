/* SPDX-License-Identifier: MIT */
/*
 * cgroup_dbus.c: the cgroup service's way to systemd (cg_systemd_dbus,
 * cgroup.h) through libsystemd's sd-bus, opened on first use. Apart from
 * cgroup_v2_place.c so that the cgroup code links without sd-bus or
 * dlopen: the WSL2 opener (plugins/wsl2/open.c), a static program, builds
 * the service's files with systemd left NULL.
 */
#include "base/error.h"
#include "host/cgroup.h"
#include "host/scope.h"
#include "sdbus.h"

/* systemd answers in well under a second; a loaded or emulated machine
 * may take several. */
#define SCOPE_TIMEOUT_MS 30000

static int dbus_start_scope(const struct scope_request *req, void *userdata, struct sbx_error **err)
{
    char why[512];
    const struct sdbus_api *api = sdbus_api_get(why, sizeof(why));

    (void)userdata;
    if (!api)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s", why);
    return scope_start(api, req, SCOPE_TIMEOUT_MS, err);
}

static int dbus_unit_delegated(
        const struct scope_request *req, const char *unit, void *userdata, struct sbx_error **err)
{
    char why[512];
    const struct sdbus_api *api = sdbus_api_get(why, sizeof(why));

    (void)userdata;
    if (!api)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s", why);
    return scope_unit_delegated(api, req, unit, err);
}

const struct cg_systemd cg_systemd_dbus = {
        .start_scope = dbus_start_scope, .unit_delegated = dbus_unit_delegated};
