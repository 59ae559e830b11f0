/* SPDX-License-Identifier: MIT */
/*
 * plugin.c: the bubblewrap backend's descriptor and entry point.
 */
#include <stdlib.h>

#include "bwrap.h"

static int bwrap_init(
        const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    struct bwrap_state *st = calloc(1, sizeof(*st));

    (void)name;
    if (!st)
        return sbx_err_fill(err, SBX_E_NOMEM, 12, "out of memory");
    st->h = h;
    *ret_state = st;
    return 0;
}

static void bwrap_fini(void *state)
{
    free(state);
}

const struct sbx_backend_ops bwrap_ops = {
        .size = sizeof(struct sbx_backend_ops),
        .probe = bwrap_probe,
        .box_open = bwrap_box_open,
        .box_poll_fd = jail_box_poll_fd,
        .box_read = jail_box_read,
        .box_write = jail_box_write,
        .box_write_fd = jail_box_write_fd,
        .box_kill = bwrap_box_kill,
        .box_close = bwrap_box_close,
};

static const char *const names[] = {"bwrap", NULL};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 6, /* box mounts, the proxy socket (1.2); tmpfs_bytes (1.4); host_uid (1.5);
                           zygote boxes (1.6) */
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .name = "bwrap",
        .version = "0.1.0",
        .backend_names = names,
        .init = bwrap_init,
        .fini = bwrap_fini,
        .backend = &bwrap_ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
