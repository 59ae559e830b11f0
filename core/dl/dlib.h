/* SPDX-License-Identifier: MIT */
/*
 * dlib.h: libraries the core needs only for some requests (libcurl for the
 * container backends, libmicrohttpd for MCP over HTTP) are opened on first
 * use, so a server that never needs them does not map them: most of an
 * idle server's memory was these libraries and what they pull in (TLS,
 * Kerberos, LDAP). Each caller declares a pointer per symbol with
 * DLSYM_PROTOTYPE (typed from the library's own header) and lists them in
 * a struct dlib; dlib_open() resolves all or none, once, thread-safe.
 * A packager declares these libraries as dependencies by hand: the dynamic
 * section no longer names them.
 */
#ifndef SBX_DLIB_H
#define SBX_DLIB_H

#include <pthread.h>
#include <stddef.h>

#define DLSYM_PROTOTYPE(symbol) __typeof__(symbol) *sym_##symbol
/* clang-format off */
#define DLSYM_ARG(symbol) {.name = #symbol, .fn = (void **)&sym_##symbol}
/* clang-format on */

struct dlib_sym {
    const char *name;
    void **fn;
};

struct dlib {
    const char *soname; /* as the run-time loader knows it, e.g. "libcurl.so.4" */
    const char *why;    /* what needs it, for the error message */
    const struct dlib_sym *syms;
    size_t n_syms;
    pthread_mutex_t lock;
    int state; /* 0 not tried, 1 open, -1 failed */
    char error[512];
};

#define DLIB_INIT(so, what, table)                                                                 \
    {                                                                                              \
        .soname = (so), .why = (what), .syms = (table),                                            \
        .n_syms = sizeof(table) / sizeof((table)[0]), .lock = PTHREAD_MUTEX_INITIALIZER            \
    }

/* 0 when every symbol resolved (now or before); -1 with lib->error set. A
 * failure is remembered: the library is not searched for again. */
int dlib_open(struct dlib *lib);

#endif
