/* SPDX-License-Identifier: MIT */
/*
 * test_backend.c: a minimal backend for the loader tests. It loads, and
 * its probe says SBX_E_UNAVAILABLE "test backend", so no run ever picks it;
 * every box operation fails the same way. With TEST_MISSING_OPS its
 * box_open is NULL, which the loader must refuse. Never installed and never
 * put into the real plugin directory (tests/plugins/CMakeLists.txt).
 */
#include <errno.h>
#include <stdio.h>

#include <llm-sandbox/plugin.h>

#ifndef TEST_NAME
#error "TEST_NAME must name the plugin"
#endif

static int unavailable(struct sbx_err *err)
{
    err->rc = SBX_E_UNAVAILABLE;
    snprintf(err->msg, sizeof(err->msg), "test backend: runs nothing");
    return SBX_E_UNAVAILABLE;
}

static int probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    (void)state;
    (void)caps;
    return unavailable(err);
}

#ifndef TEST_MISSING_OPS
static int box_open(
        void *state, const struct sbx_box_spec *spec, void **ret_box, struct sbx_err *err)
{
    (void)state;
    (void)spec;
    (void)ret_box;
    return unavailable(err);
}
#endif

static int box_fd(void *box)
{
    (void)box;
    return -1;
}

static int64_t box_read(void *box, void *buf, size_t len)
{
    (void)box;
    (void)buf;
    (void)len;
    errno = EBADF;
    return -1;
}

static int64_t box_write(void *box, const void *buf, size_t len)
{
    (void)box;
    (void)buf;
    (void)len;
    errno = EBADF;
    return -1;
}

static int box_kill(void *box)
{
    (void)box;
    return 0;
}

static int box_close(void *box, struct sbx_box_stats *stats, struct sbx_err *err)
{
    (void)box;
    (void)stats;
    (void)err;
    return 0;
}

static const struct sbx_backend_ops ops = {
        .size = sizeof(struct sbx_backend_ops),
        .probe = probe,
#ifndef TEST_MISSING_OPS
        .box_open = box_open,
#endif
        .box_poll_fd = box_fd,
        .box_read = box_read,
        .box_write = box_write,
        .box_write_fd = box_fd,
        .box_kill = box_kill,
        .box_close = box_close,
};

static const char *const names[] = {TEST_NAME, NULL};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = SBX_ABI_MINOR,
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_BACKEND,
        .name = TEST_NAME,
        .version = "1.0.0",
        .backend_names = names,
        .backend = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
