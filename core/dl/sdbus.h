/* SPDX-License-Identifier: MIT */
/*
 * sdbus.h: the part of libsystemd's sd-bus the core calls (to ask systemd
 * whether a unit is delegated, and for a delegated scope: host/scope.c), opened on first use
 * (dlib.h) so that the core runs where libsystemd is missing and builds without libsystemd-dev. The
 * declarations below are sd-bus.h's own (systemd 221 and later; sd-bus keeps its ABI stable),
 * copied rather than included; sd_bus_error's layout is part of that ABI. Nothing here links
 * against libsystemd: the names serve only to type the table's pointers.
 *
 * The core reaches sd-bus only through struct sdbus_api, so unit tests can
 * drive the same code with a recording fake (tests/unit/test_scope.c).
 */
#ifndef SBX_DL_SDBUS_H
#define SBX_DL_SDBUS_H

#include <stdint.h>

typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;
typedef struct sd_bus_slot sd_bus_slot;
typedef struct {
    const char *name;
    const char *message;
    int _need_free;
} sd_bus_error;
typedef int (*sd_bus_message_handler_t)(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

int sd_bus_open_system(sd_bus **ret);
int sd_bus_new(sd_bus **ret);
int sd_bus_set_address(sd_bus *bus, const char *address);
int sd_bus_set_bus_client(sd_bus *bus, int b);
int sd_bus_start(sd_bus *bus);
sd_bus *sd_bus_flush_close_unref(sd_bus *bus);
int sd_bus_message_new_method_call(sd_bus *bus, sd_bus_message **m, const char *destination,
        const char *path, const char *interface, const char *member);
int sd_bus_message_append_basic(sd_bus_message *m, char type, const void *p);
int sd_bus_message_open_container(sd_bus_message *m, char type, const char *contents);
int sd_bus_message_close_container(sd_bus_message *m);
int sd_bus_call(sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *ret_error,
        sd_bus_message **reply);
int sd_bus_message_read_basic(sd_bus_message *m, char type, void *p);
int sd_bus_message_enter_container(sd_bus_message *m, char type, const char *contents);
int sd_bus_message_exit_container(sd_bus_message *m);
sd_bus_message *sd_bus_message_unref(sd_bus_message *m);
int sd_bus_match_signal(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path,
        const char *interface, const char *member, sd_bus_message_handler_t callback,
        void *userdata);
sd_bus_slot *sd_bus_slot_unref(sd_bus_slot *slot);
int sd_bus_process(sd_bus *bus, sd_bus_message **r);
int sd_bus_wait(sd_bus *bus, uint64_t timeout_usec);
void sd_bus_error_free(sd_bus_error *e);

#define SDBUS_FN(symbol) __typeof__(symbol) *symbol

/* One pointer per function, named as the function. */
struct sdbus_api {
    SDBUS_FN(sd_bus_open_system);
    SDBUS_FN(sd_bus_new);
    SDBUS_FN(sd_bus_set_address);
    SDBUS_FN(sd_bus_set_bus_client);
    SDBUS_FN(sd_bus_start);
    SDBUS_FN(sd_bus_flush_close_unref);
    SDBUS_FN(sd_bus_message_new_method_call);
    SDBUS_FN(sd_bus_message_append_basic);
    SDBUS_FN(sd_bus_message_open_container);
    SDBUS_FN(sd_bus_message_close_container);
    SDBUS_FN(sd_bus_call);
    SDBUS_FN(sd_bus_message_read_basic);
    SDBUS_FN(sd_bus_message_enter_container);
    SDBUS_FN(sd_bus_message_exit_container);
    SDBUS_FN(sd_bus_message_unref);
    SDBUS_FN(sd_bus_match_signal);
    SDBUS_FN(sd_bus_slot_unref);
    SDBUS_FN(sd_bus_process);
    SDBUS_FN(sd_bus_wait);
    SDBUS_FN(sd_bus_error_free);
};

/* libsystemd's table, opened on the first call: NULL when it cannot be
 * loaded, with why in errbuf. Thread-safe. (transfer none) */
const struct sdbus_api *sdbus_api_get(char *errbuf, unsigned errlen);

#endif
