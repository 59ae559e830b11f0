/* SPDX-License-Identifier: MIT */
/*
 * session.h: what the parts of sessions share: session.c (the registry,
 * lifetime, the warm interpreter's start, create, close, list),
 * session_call.c (calls) and session_files.c (a session's files). Private
 * to the core; see session.c for the design.
 */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <llm-sandbox/sbx.h>

#include "engine/engine.h"

#define ID_BYTES     16 /* 128 random bits */
#define NONCE_BYTES  16
#define START_OUTPUT 4096 /* what an interpreter that failed to start said */
#define KILL_WAIT_MS 5000 /* for a call's processes to end after a kill */

struct sbx_session {
    struct sbx_session *next;
    char id[3 + 2 * ID_BYTES];
    char *owner;          /* req->owner at creation ("" for NULL); never changes */
    unsigned refs;        /* the registry's (while listed), and one per caller */
    bool listed, busy;    /* under the registry's lock */
    pthread_mutex_t lock; /* one call or file operation at a time */
    struct sbx_cancel *kill;
    struct run base; /* the box, channel, environment, sets and policy */
    struct sbx_request req;
    struct sbx_execution base_ex;
    char *language, *backend;
    char **libs;           /* the union of every call's libraries */
    struct deps_set *live; /* the newest set copied in (session_libs.c), or NULL */
    unsigned libs_gen;     /* how many sets were copied in (or began to be) */
    /* the warm interpreter, or repl_argv NULL */
    char **repl_argv, **repl_env;
    char head[8 + 2 * NONCE_BYTES];
    bool repl_alive;
    bool seeded; /* the language's warm-up set is linked in */
    bool dead;   /* the box is gone */
    int64_t created_ms, used_ms;
    time_t created_wall, used_wall;
    uint64_t calls;
};

struct sessions {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct sbx_session *head;
    size_t n, pending; /* listed, and being created */
    bool reaping, stopping;
    pthread_t reaper;
    struct sbx_runtime *rt;
};

/* owner's session id, referenced and locked for one caller, or NULL
 * (also when it is another owner's). The timed one gives up after wait_ms
 * (-1: never) while a call holds it. */
struct sbx_session *session_get(struct sessions *ss, const struct sbx_session_ref *ref);
struct sbx_session *session_get_timed(
        struct sessions *ss, const struct sbx_session_ref *ref, int wait_ms);
/* Unlock and drop the caller's reference (the last one frees it). */
void session_put(struct sessions *ss, struct sbx_session *s);

/* The registry, made with the runtime; freeing it closes every session. */
struct sessions *sessions_new(void);
void sessions_free(struct sessions *ss);

/* session_call.c: a call in an open session (r->req->session_id): 0 with
 * r->ex decided or ready for engine_output, or < 0: error of the tool. */
int session_call(struct run *r, struct sbx_error **err);

/* session_libs.c: the call's libraries that the session lacks, with the
 * session's, installed (or found) as one set, copied into the box and put
 * on the language's search path: 0 to go on (r->env and r->deps are the
 * session's new ones), 1 when decided (refused or failed: r->ex says why),
 * or < 0. */
int session_add_libraries(struct sbx_session *s, struct run *r, struct sbx_error **err);

/* session.c: the interpreter's argv and environment (with a fresh nonce),
 * and starting it: 0, 1 when it did not start (r->ex says why), or < 0. */
int repl_prepare(struct sbx_session *s, struct sbx_error **err);
int repl_start(struct sbx_session *s, struct run *r, struct sbx_error **err);

#endif
