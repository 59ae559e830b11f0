/* SPDX-License-Identifier: MIT */
/*
 * plugin.c: the Kubernetes backend's descriptor and entry point (names
 * kubernetes and k8s). State, probe and sweep in probe.c; the box
 * operations in run.c.
 */
#include "k8s.h"

static const struct sbx_backend_ops ops = {.size = sizeof(struct sbx_backend_ops),
        .probe = k8s_probe,
        .box_open = k8s_box_open,
        .box_poll_fd = k8s_box_poll_fd,
        .box_read = k8s_box_read,
        .box_write = k8s_box_write,
        .box_write_fd = k8s_box_write_fd,
        .box_kill = k8s_box_kill,
        .box_close = k8s_box_close};

static const char *const names[] = {"kubernetes", NULL};

static const struct sbx_plugin descriptor = {.abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .name = "kubernetes",
        .version = "0.1.0",
        .backend_names = names,
        .init = k8s_init,
        .fini = k8s_fini,
        .backend = &ops};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
