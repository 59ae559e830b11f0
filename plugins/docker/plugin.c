/* SPDX-License-Identifier: MIT */
/*
 * plugin.c: the Docker/Podman backend's descriptor and entry point. The
 * backend name the core loaded (docker.yaml or podman.yaml) picks the
 * default endpoint; settings host and cert_path override it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

static int dk_init(
        const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    struct dk_state *st = calloc(1, sizeof(*st));
    const char *ep = h->setting(h, "host"), *tls = h->setting(h, "tls_verify"),
               *certs = h->setting(h, "cert_path");

    if (!st)
        return dk_fail(err, SBX_E_NOMEM, 12, "out of memory");
    st->h = h;
    st->podman = strcmp(name, "podman") == 0;
    snprintf(st->name, sizeof(st->name), "%s", name);
    snprintf(st->endpoint, sizeof(st->endpoint), "%s",
            ep           ? ep
            : st->podman ? "unix:///run/podman/podman.sock"
                         : "unix:///var/run/docker.sock");
    /* as the docker CLI: any value turns verification on, even "0"; the
     * certificates default to ~/.docker (the core's settings say so) */
    if (tls && tls[0])
        snprintf(st->tls_dir, sizeof(st->tls_dir), "%s", certs ? certs : "/root/.docker");
    pthread_mutex_init(&st->lock, NULL);
    dk_reaper_init(st);
    *ret_state = st;
    return 0;
}

static void dk_fini(void *state)
{
    struct dk_state *st = state;

    dk_reaper_stop(st); /* every container removed before the plugin goes */
    pthread_mutex_destroy(&st->lock);
    free(st);
}

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
