/* SPDX-License-Identifier: MIT */
/*
 * plugin.c: the MXC backend's descriptor and entry point.
 */
#include <stdlib.h>

#include "mxc.h"

static int mxc_init(
        const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    struct mxc_state *st = calloc(1, sizeof(*st));

    (void)name;
    if (!st)
        return sbx_err_fill(err, SBX_E_NOMEM, 12, "out of memory");
    st->h = h;
    *ret_state = st;
    return 0;
}

static void mxc_fini(void *state)
{
    mxc_agent_remove(state);
    free(state);
}

const struct sbx_backend_ops mxc_ops = {
        .size = sizeof(struct sbx_backend_ops),
        .probe = mxc_probe,
        .box_open = mxc_box_open,
        .box_poll_fd = jail_box_poll_fd,
        .box_read = jail_box_read,
        .box_write = jail_box_write,
        .box_write_fd = jail_box_write_fd,
        .box_kill = mxc_box_kill,
        .box_close = mxc_box_close,
};

static const char *const names[] = {"mxc", NULL};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 4, /* the agent applies the core's seccomp policy (1.4) */
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .name = "mxc",
        .version = "0.1.0",
        .backend_names = names,
        .init = mxc_init,
        .fini = mxc_fini,
        .backend = &mxc_ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
