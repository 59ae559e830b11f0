/* SPDX-License-Identifier: MIT */
/*
 * test_scope.c: cmocka tests for host/scope.c: the transient scope request
 * (unit name, slice, bus address) and what goes over the bus, through a
 * fake sd-bus table (dl/sdbus.h) that records every call and answers as
 * systemd does: StartTransientUnit's job, then its JobRemoved signal among
 * others; GetUnit and the Delegate property. The real bus is exercised in
 * the Debian 12 guest (scripts/vm-test.sh). Takes no arguments.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* cmocka needs these four before it */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "host/scope.h"
#include "sdbus.h"

/* ---- the fake bus ------------------------------------------------------- */

struct sd_bus {
    int open;
};

/* A message: what was appended (for calls), or what is to be read. */
struct sd_bus_message {
    char member[64];
    char vals[6][160]; /* to read, each "<type><text>" */
    size_t n_vals, next;
};

struct sd_bus_slot {
    sd_bus_message_handler_t cb;
    void *userdata;
};

static struct {
    char log[4096];       /* the calls, in order */
    char address[256];    /* sd_bus_set_address */
    bool system;          /* sd_bus_open_system */
    const char *result;   /* our job's result in JobRemoved; NULL: never sent */
    bool other_job_first; /* a JobRemoved of another job comes first */
    int call_errno;       /* sd_bus_call fails with it */
    int delegate;         /* the Delegate property */
    struct sd_bus_slot slot;
    struct sd_bus bus;
    struct sd_bus_message msgs[8];
    size_t n_msgs;
    int signals_sent;
    int unrefs, closes;
} fk;

static void logf_(const char *fmt, ...)
{
    size_t n = strlen(fk.log);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(fk.log + n, sizeof(fk.log) - n, fmt, ap);
    va_end(ap);
}

static sd_bus_message *msg_new(void)
{
    assert_true(fk.n_msgs < 8);
    memset(&fk.msgs[fk.n_msgs], 0, sizeof(fk.msgs[0]));
    return &fk.msgs[fk.n_msgs++];
}

static void msg_put(sd_bus_message *m, char type, const char *text)
{
    snprintf(m->vals[m->n_vals++], sizeof(m->vals[0]), "%c%s", type, text);
}

static int f_open_system(sd_bus **ret)
{
    fk.system = true;
    fk.bus.open = 1;
    *ret = &fk.bus;
    return 0;
}

static int f_new(sd_bus **ret)
{
    fk.bus.open = 1;
    *ret = &fk.bus;
    return 0;
}

static int f_set_address(sd_bus *bus, const char *address)
{
    (void)bus;
    snprintf(fk.address, sizeof(fk.address), "%s", address);
    return 0;
}

static int f_set_bus_client(sd_bus *bus, int b)
{
    (void)bus;
    return b ? 0 : -EINVAL;
}

static int f_start(sd_bus *bus)
{
    (void)bus;
    return 0;
}

static sd_bus *f_close_unref(sd_bus *bus)
{
    if (bus)
        fk.closes++;
    return NULL;
}

static int f_new_method_call(sd_bus *bus, sd_bus_message **m, const char *destination,
        const char *path, const char *interface, const char *member)
{
    (void)bus;
    *m = msg_new();
    snprintf((*m)->member, sizeof((*m)->member), "%s", member);
    logf_("%s %s %s.%s", destination, path, interface, member);
    return 0;
}

static int f_append_basic(sd_bus_message *m, char type, const void *p)
{
    (void)m;
    if (type == 's' || type == 'o')
        logf_(" %c:%s", type, (const char *)p);
    else if (type == 'u')
        logf_(" u:%u", *(const uint32_t *)p);
    else if (type == 'b')
        logf_(" b:%d", *(const int *)p);
    else
        fail_msg("unexpected type %c", type);
    return 0;
}

static int f_open_container(sd_bus_message *m, char type, const char *contents)
{
    (void)m;
    logf_(" %c(%s)[", type, contents);
    return 0;
}

static int f_close_container(sd_bus_message *m)
{
    (void)m;
    logf_(" ]");
    return 0;
}

static int f_call(sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *ret_error,
        sd_bus_message **reply)
{
    (void)bus;
    (void)usec;
    logf_("\n");
    if (fk.call_errno) {
        ret_error->name = "org.freedesktop.DBus.Error.AccessDenied";
        ret_error->message = "Access denied";
        return -fk.call_errno;
    }
    *reply = msg_new();
    if (strcmp(m->member, "StartTransientUnit") == 0)
        msg_put(*reply, 'o', "/org/freedesktop/systemd1/job/455");
    else if (strcmp(m->member, "GetUnit") == 0)
        msg_put(*reply, 'o', "/org/freedesktop/systemd1/unit/run_2dr1_2escope");
    else if (strcmp(m->member, "Get") == 0)
        msg_put(*reply, 'b', fk.delegate ? "1" : "0");
    return 0;
}

static int f_read_basic(sd_bus_message *m, char type, void *p)
{
    const char *v;

    if (m->next >= m->n_vals)
        return -ENXIO;
    v = m->vals[m->next++];
    if (v[0] != type)
        return -ENXIO;
    if (type == 's' || type == 'o')
        *(const char **)p = v + 1;
    else if (type == 'u')
        *(uint32_t *)p = (uint32_t)strtoul(v + 1, NULL, 10);
    else if (type == 'b')
        *(int *)p = v[1] == '1';
    return 0;
}

static int f_enter_container(sd_bus_message *m, char type, const char *contents)
{
    (void)m;
    return type == 'v' && strcmp(contents, "b") == 0 ? 1 : -ENXIO;
}

static int f_exit_container(sd_bus_message *m)
{
    (void)m;
    return 1;
}

static sd_bus_message *f_msg_unref(sd_bus_message *m)
{
    if (m)
        fk.unrefs++;
    return NULL;
}

static int f_match_signal(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path,
        const char *interface, const char *member, sd_bus_message_handler_t callback,
        void *userdata)
{
    (void)bus;
    logf_("match %s %s %s.%s\n", sender, path, interface, member);
    fk.slot.cb = callback;
    fk.slot.userdata = userdata;
    *ret = &fk.slot;
    return 0;
}

static sd_bus_slot *f_slot_unref(sd_bus_slot *slot)
{
    if (slot)
        fk.slot.cb = NULL;
    return NULL;
}

/* Each call dispatches one pending signal: another job's first, if asked,
 * then ours. */
static int f_process(sd_bus *bus, sd_bus_message **r)
{
    sd_bus_message *sig;
    int which = fk.signals_sent + (fk.other_job_first ? 0 : 1);

    (void)bus;
    (void)r;
    if (!fk.slot.cb || !fk.result || which > 1)
        return 0;
    sig = msg_new();
    msg_put(sig, 'u', which == 0 ? "454" : "455");
    msg_put(sig, 'o',
            which == 0 ? "/org/freedesktop/systemd1/job/454" : "/org/freedesktop/systemd1/job/455");
    msg_put(sig, 's', "other.service");
    msg_put(sig, 's', which == 0 ? "done" : fk.result);
    fk.signals_sent++;
    fk.slot.cb(sig, fk.slot.userdata, NULL);
    return 1;
}

static int f_wait(sd_bus *bus, uint64_t timeout_usec)
{
    struct timespec ts = {0, 1000000};

    (void)bus;
    (void)timeout_usec;
    nanosleep(&ts, NULL);
    return 0;
}

static void f_error_free(sd_bus_error *e)
{
    e->name = e->message = NULL;
}

static const struct sdbus_api fake = {
        .sd_bus_open_system = f_open_system,
        .sd_bus_new = f_new,
        .sd_bus_set_address = f_set_address,
        .sd_bus_set_bus_client = f_set_bus_client,
        .sd_bus_start = f_start,
        .sd_bus_flush_close_unref = f_close_unref,
        .sd_bus_message_new_method_call = f_new_method_call,
        .sd_bus_message_append_basic = f_append_basic,
        .sd_bus_message_open_container = f_open_container,
        .sd_bus_message_close_container = f_close_container,
        .sd_bus_call = f_call,
        .sd_bus_message_read_basic = f_read_basic,
        .sd_bus_message_enter_container = f_enter_container,
        .sd_bus_message_exit_container = f_exit_container,
        .sd_bus_message_unref = f_msg_unref,
        .sd_bus_match_signal = f_match_signal,
        .sd_bus_slot_unref = f_slot_unref,
        .sd_bus_process = f_process,
        .sd_bus_wait = f_wait,
        .sd_bus_error_free = f_error_free,
};

static int reset(void **state)
{
    (void)state;
    memset(&fk, 0, sizeof(fk));
    fk.result = "done";
    return 0;
}

#define OWNER "p4242t99h0123456789abcdef"

/* ---- the request ---------------------------------------------------------- */

static void test_request_root(void **state)
{
    struct scope_request req;
    struct sbx_error *err = NULL;

    (void)state;
    assert_int_equal(scope_request_init(&req, "/user.slice/user-0.slice/session-2.scope", OWNER,
                             4242, 0, "/run/user/0", &err),
            0);
    assert_false(req.user_manager);
    assert_string_equal(req.unit, "llm-sandbox-" OWNER ".scope");
    assert_string_equal(req.slice, "user-0.slice"); /* stays in the session's slice */
    assert_string_equal(req.address, "");           /* the system bus */
    assert_int_equal(req.pid, 4242);
    assert_non_null(strstr(req.description, "4242"));
    /* directly under the root, or under no slice: the manager's default */
    assert_int_equal(scope_request_init(&req, "/init.scope", OWNER, 1, 0, NULL, &err), 0);
    assert_string_equal(req.slice, "");
    assert_int_equal(
            scope_request_init(&req, "/system.slice/x.service/inner", OWNER, 1, 0, NULL, &err), 0);
    assert_string_equal(req.slice, "");
    assert_null(err);
}

static void test_request_user(void **state)
{
    struct scope_request req;
    struct sbx_error *err = NULL;
    char long_dir[PATH_MAX + 32];

    (void)state;
    assert_int_equal(scope_request_init(&req, "/user.slice/user-1000.slice/session-1.scope", OWNER,
                             7, 1000, NULL, &err),
            0);
    assert_true(req.user_manager);
    assert_string_equal(req.slice, ""); /* the user's manager picks (app.slice) */
    assert_string_equal(req.address, "unix:path=/run/user/1000/bus");
    assert_int_equal(
            scope_request_init(&req, "/x.scope", OWNER, 7, 1000, "/run/user/1000", &err), 0);
    assert_string_equal(req.address, "unix:path=/run/user/1000/bus");
    assert_int_equal(scope_request_init(&req, "/x.scope", OWNER, 7, 1000, "", &err), 0);
    assert_string_equal(req.address, "unix:path=/run/user/1000/bus");
    /* a D-Bus address is a list: a ';' or ',' in the directory would add to it */
    assert_int_equal(
            scope_request_init(&req, "/x.scope", OWNER, 7, 1000, "/tmp/a;b", &err), SBX_E_INVALID);
    err = sbx_error_free(err);
    memset(long_dir, 'd', sizeof(long_dir) - 1);
    long_dir[0] = '/';
    long_dir[sizeof(long_dir) - 1] = '\0';
    assert_int_equal(
            scope_request_init(&req, "/x.scope", OWNER, 7, 1000, long_dir, &err), SBX_E_INVALID);
    err = sbx_error_free(err);
    /* names systemd would refuse */
    assert_int_equal(scope_request_init(&req, "/x.scope", "a/b", 7, 0, NULL, &err), SBX_E_INVALID);
    err = sbx_error_free(err);
}

/* ---- what goes over the bus --------------------------------------------- */

static const char *const START_LOG =
        "match org.freedesktop.systemd1 /org/freedesktop/systemd1 "
        "org.freedesktop.systemd1.Manager.JobRemoved\n"
        "org.freedesktop.systemd1 /org/freedesktop/systemd1 "
        "org.freedesktop.systemd1.Manager.StartTransientUnit"
        " s:llm-sandbox-" OWNER ".scope s:fail"
        " a((sv))["
        " r(sv)[ s:PIDs v(au)[ a(u)[ u:4242 ] ] ]"
        " r(sv)[ s:Delegate v(b)[ b:1 ] ]"
        " r(sv)[ s:CollectMode v(s)[ s:inactive-or-failed ] ]"
        " r(sv)[ s:Description v(s)[ s:llm-sandbox (process 4242) and its sandboxes ] ]"
        "%s"
        " ]"
        " a((sa(sv)))[ ]\n";

static void test_start_system(void **state)
{
    struct scope_request req;
    struct sbx_error *err = NULL;
    char want[2048];

    (void)state;
    assert_int_equal(scope_request_init(&req, "/user.slice/user-0.slice/session-2.scope", OWNER,
                             4242, 0, NULL, &err),
            0);
    fk.other_job_first = true;
    assert_int_equal(scope_start(&fake, &req, 5000, &err), 0);
    assert_null(err);
    snprintf(want, sizeof(want), START_LOG, " r(sv)[ s:Slice v(s)[ s:user-0.slice ] ]");
    assert_string_equal(fk.log, want);
    assert_true(fk.system);
    assert_int_equal(fk.signals_sent, 2); /* it waited past the other job for ours */
    assert_int_equal(fk.closes, 1);
    assert_null(fk.slot.cb); /* the match is gone */
}

static void test_start_user(void **state)
{
    struct scope_request req;
    struct sbx_error *err = NULL;
    char want[2048];

    (void)state;
    assert_int_equal(scope_request_init(&req, "/user.slice/user-1000.slice/session-1.scope", OWNER,
                             4242, 1000, "/run/user/1000", &err),
            0);
    assert_int_equal(scope_start(&fake, &req, 5000, &err), 0);
    snprintf(want, sizeof(want), START_LOG, "");
    assert_string_equal(fk.log, want);
    assert_false(fk.system);
    assert_string_equal(fk.address, "unix:path=/run/user/1000/bus");
}

static void test_start_failures(void **state)
{
    struct scope_request req;
    struct sbx_error *err = NULL;
    int64_t t0;

    (void)state;
    assert_int_equal(scope_request_init(&req, "/a.slice/s.scope", OWNER, 1, 0, NULL, &err), 0);
    fk.result = "failed";
    assert_int_equal(scope_start(&fake, &req, 5000, &err), SBX_E_BACKEND);
    assert_non_null(strstr(err->msg, "ended 'failed'"));
    err = sbx_error_free(err);

    reset(NULL);
    fk.call_errno = EACCES;
    assert_int_equal(scope_start(&fake, &req, 5000, &err), SBX_E_UNAVAILABLE);
    assert_non_null(strstr(err->msg, "Access denied"));
    assert_non_null(strstr(err->msg, "system manager"));
    err = sbx_error_free(err);

    reset(NULL);
    fk.result = NULL; /* the job never ends */
    t0 = (int64_t)time(NULL);
    assert_int_equal(scope_start(&fake, &req, 200, &err), SBX_E_BACKEND);
    assert_int_equal(err->sys_errno, ETIMEDOUT);
    assert_true((int64_t)time(NULL) - t0 < 5);
    err = sbx_error_free(err);
    assert_int_equal(fk.closes, 1);
}

static void test_unit_delegated(void **state)
{
    struct scope_request req;
    struct sbx_error *err = NULL;

    (void)state;
    assert_int_equal(scope_request_init(&req, "", OWNER, 1, 1000, "/run/user/1000", &err), 0);
    fk.delegate = 1;
    assert_int_equal(scope_unit_delegated(&fake, &req, "run-r1.scope", &err), 1);
    assert_string_equal(fk.log,
            "org.freedesktop.systemd1 /org/freedesktop/systemd1 "
            "org.freedesktop.systemd1.Manager.GetUnit s:run-r1.scope\n"
            "org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/run_2dr1_2escope "
            "org.freedesktop.DBus.Properties.Get s:org.freedesktop.systemd1.Scope "
            "s:Delegate\n");
    reset(NULL);
    assert_int_equal(scope_unit_delegated(&fake, &req, "app.service", &err), 0);
    assert_non_null(strstr(fk.log, "org.freedesktop.systemd1.Service s:Delegate"));
    reset(NULL);
    fk.call_errno = ENOENT;
    assert_int_equal(scope_unit_delegated(&fake, &req, "app.service", &err), SBX_E_UNAVAILABLE);
    assert_non_null(strstr(err->msg, "whether app.service has Delegate=yes"));
    err = sbx_error_free(err);
    assert_int_equal(scope_unit_delegated(&fake, &req, "not-a-unit", &err), SBX_E_INVALID);
    err = sbx_error_free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup(test_request_root, reset),
            cmocka_unit_test_setup(test_request_user, reset),
            cmocka_unit_test_setup(test_start_system, reset),
            cmocka_unit_test_setup(test_start_user, reset),
            cmocka_unit_test_setup(test_start_failures, reset),
            cmocka_unit_test_setup(test_unit_delegated, reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
