/* SPDX-License-Identifier: MIT */
/*
 * plugin.c: the Docker/Podman backend's descriptor and entry point. One
 * library serves both names (docker.yaml, podman.yaml); dk_init (probe.c)
 * picks the endpoint by the name the core loaded.
 */
#include "box.h"

const struct sbx_backend_ops dk_ops = {.size = sizeof(struct sbx_backend_ops),
        .probe = dk_probe,
        .box_open = dk_box_open,
        .box_poll_fd = dk_box_poll_fd,
        .box_read = dk_box_read,
        .box_write = dk_box_write,
        .box_write_fd = dk_box_write_fd,
        .box_kill = dk_box_kill,
        .box_close = dk_box_close,
        .image_id = dk_box_image_id};

static const char *const names[] = {"docker", "podman", NULL};

static const struct sbx_plugin descriptor = {.abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .name = "docker",
        .version = "0.1.0",
        .backend_names = names,
        .init = dk_init,
        .fini = dk_fini,
        .backend = &dk_ops};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
