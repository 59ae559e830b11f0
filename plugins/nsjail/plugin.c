/* SPDX-License-Identifier: MIT */
/*
 * plugin.c: the NsJail backend's descriptor and entry point.
 */
#include <stdlib.h>

#include "nsjail.h"

static int nsjail_init(
        const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    struct nsjail_state *st;

    (void)name;
    /* the seccomp policy comes as Kafel, a host service of ABI 1.1 */
    if (h->abi_minor < 1 ||
            h->size < offsetof(struct sbx_host, seccomp_kafel_fd) + sizeof(h->seccomp_kafel_fd) ||
            !h->seccomp_kafel_fd)
        return sbx_err_fill(err, SBX_E_ABI, 0, "this core has no Kafel seccomp policy (ABI 1.1)");
    st = calloc(1, sizeof(*st));
    if (!st)
        return sbx_err_fill(err, SBX_E_NOMEM, 12, "out of memory");
    st->h = h;
    *ret_state = st;
    return 0;
}

static void nsjail_fini(void *state)
{
    free(state);
}

const struct sbx_backend_ops nsjail_ops = {
        .size = sizeof(struct sbx_backend_ops),
        .probe = nsjail_probe,
        .box_open = nsjail_box_open,
        .box_poll_fd = jail_box_poll_fd,
        .box_read = jail_box_read,
        .box_write = jail_box_write,
        .box_write_fd = jail_box_write_fd,
        .box_kill = nsjail_box_kill,
        .box_close = nsjail_box_close,
};

static const char *const names[] = {"nsjail", NULL};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 6, /* box mounts, the proxy socket (1.2); tmpfs_bytes (1.4); host_uid (1.5);
                           zygote boxes with the zygote's Kafel policy (1.6) */
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .name = "nsjail",
        .version = "0.1.0",
        .backend_names = names,
        .init = nsjail_init,
        .fini = nsjail_fini,
        .backend = &nsjail_ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
