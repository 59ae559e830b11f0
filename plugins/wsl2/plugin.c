/* SPDX-License-Identifier: MIT */
/*
 * plugin.c: the WSL2 backend's descriptor and entry point (experimental:
 * enforcement on Windows is unverified; README.md). Every box operation is
 * the bubblewrap plugin's; the probe is this plugin's own.
 */
#include <stdlib.h>

#include "wsl2.h"

static int wsl2_init(
        const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    struct wsl2_state *st = calloc(1, sizeof(*st));

    (void)name;
    if (!st)
        return sbx_err_fill(err, SBX_E_NOMEM, 12, "out of memory");
    st->b.h = h;
    *ret_state = st;
    return 0;
}

static void wsl2_fini(void *state)
{
    free(state);
}

const struct sbx_backend_ops wsl2_ops = {
        .size = sizeof(struct sbx_backend_ops),
        .probe = wsl2_probe,
        .box_open = bwrap_box_open,
        .box_poll_fd = jail_box_poll_fd,
        .box_read = jail_box_read,
        .box_write = jail_box_write,
        .box_write_fd = jail_box_write_fd,
        .box_kill = bwrap_box_kill,
        .box_close = bwrap_box_close,
};

static const char *const names[] = {"wsl2", NULL};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 5, /* as bwrap: box mounts, the proxy socket (1.2); tmpfs_bytes (1.4);
                           host_uid (1.5: the launcher starts as the box's own uid) */
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .name = "wsl2",
        .version = "0.1.0",
        .backend_names = names,
        .init = wsl2_init,
        .fini = wsl2_fini,
        .backend = &wsl2_ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
