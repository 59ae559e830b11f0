/* SPDX-License-Identifier: MIT */
/*
 * sdbus.c: libsystemd's sd-bus, opened on first use (sdbus.h, dlib.h).
 */
#include "sdbus.h"

#include <stdio.h>

#include "dlib.h"

static struct sdbus_api api;

/* clang-format off */
#define SDBUS_SYM(symbol) {.name = #symbol, .fn = (void **)&api.symbol}
/* clang-format on */

static const struct dlib_sym sdbus_syms[] = {
        SDBUS_SYM(sd_bus_open_system),
        SDBUS_SYM(sd_bus_new),
        SDBUS_SYM(sd_bus_set_address),
        SDBUS_SYM(sd_bus_set_bus_client),
        SDBUS_SYM(sd_bus_start),
        SDBUS_SYM(sd_bus_flush_close_unref),
        SDBUS_SYM(sd_bus_message_new_method_call),
        SDBUS_SYM(sd_bus_message_append_basic),
        SDBUS_SYM(sd_bus_message_open_container),
        SDBUS_SYM(sd_bus_message_close_container),
        SDBUS_SYM(sd_bus_call),
        SDBUS_SYM(sd_bus_message_read_basic),
        SDBUS_SYM(sd_bus_message_enter_container),
        SDBUS_SYM(sd_bus_message_exit_container),
        SDBUS_SYM(sd_bus_message_unref),
        SDBUS_SYM(sd_bus_match_signal),
        SDBUS_SYM(sd_bus_slot_unref),
        SDBUS_SYM(sd_bus_process),
        SDBUS_SYM(sd_bus_wait),
        SDBUS_SYM(sd_bus_error_free),
};

static struct dlib sdbus_lib =
        DLIB_INIT("libsystemd.so.0", "asking systemd for a delegated cgroup", sdbus_syms);

const struct sdbus_api *sdbus_api_get(char *errbuf, unsigned errlen)
{
    if (dlib_open(&sdbus_lib) == 0)
        return &api;
    if (errbuf && errlen)
        snprintf(errbuf, errlen, "%s", sdbus_lib.error);
    return NULL;
}
