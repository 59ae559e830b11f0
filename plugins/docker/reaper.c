/* SPDX-License-Identifier: MIT */
/*
 * reaper.c: stop and remove containers after their run's result is out.
 * box_close decides the outcome first (close.c) and hands the box here;
 * one thread per plugin state, started on first use, waits for each
 * container to stop and removes it (dk_box_finish), off the call's path.
 * A removal that fails is logged and tried again when the plugin is
 * unloaded; fini (dk_reaper_stop) finishes the queue first, so a server
 * that exits leaves nothing. A server killed with SIGKILL leaves no
 * running program either: its attach connections close, so each agent
 * gets its end of input and exits, and the next start-up's sweep
 * (dk_sweep) removes the stopped containers of the dead instance.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "box.h"

static void finish_one(struct dk_state *st, struct dk_box *b)
{
    struct sbx_err err = {.size = sizeof(err)};
    char id[sizeof(b->id)];

    snprintf(id, sizeof(id), "%s", b->id);
    if (dk_box_finish(b, NULL, &err) == 0 || !id[0])
        return;
    st->h->log(st->h, SBX_LOG_WARN, "removing container %.12s failed (%s); trying again later", id,
            err.msg);
    pthread_mutex_lock(&st->reap_lock);
    for (size_t i = 0; i < DK_REAP_FAILED; i++)
        if (!st->reap_failed[i][0]) {
            snprintf(st->reap_failed[i], sizeof(st->reap_failed[i]), "%s", id);
            break;
        }
    pthread_mutex_unlock(&st->reap_lock);
}

static void *reaper_main(void *arg)
{
    struct dk_state *st = arg;

    pthread_mutex_lock(&st->reap_lock);
    for (;;) {
        struct dk_box *b = st->reap_head;

        if (!b && st->reap_stop)
            break;
        if (!b) {
            pthread_cond_wait(&st->reap_cond, &st->reap_lock);
            continue;
        }
        st->reap_head = b->next;
        if (!st->reap_head)
            st->reap_tail = &st->reap_head;
        pthread_mutex_unlock(&st->reap_lock);
        finish_one(st, b);
        pthread_mutex_lock(&st->reap_lock);
    }
    pthread_mutex_unlock(&st->reap_lock);
    return NULL;
}

void dk_reaper_init(struct dk_state *st)
{
    pthread_mutex_init(&st->reap_lock, NULL);
    pthread_cond_init(&st->reap_cond, NULL);
    st->reap_head = NULL;
    st->reap_tail = &st->reap_head;
}

void dk_reap(struct dk_box *b)
{
    struct dk_state *st = b->st;
    bool queued = false;

    b->next = NULL;
    pthread_mutex_lock(&st->reap_lock);
    if (!st->reaper_on && !st->reap_stop) {
        sigset_t all, old;

        /* no signal of the server's may land on this thread: it starts
         * with all blocked, whichever thread started it */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        st->reaper_on = pthread_create(&st->reaper, NULL, reaper_main, st) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (st->reaper_on && !st->reap_stop) {
        *st->reap_tail = b;
        st->reap_tail = &b->next;
        pthread_cond_signal(&st->reap_cond);
        queued = true;
    }
    pthread_mutex_unlock(&st->reap_lock);
    if (!queued) /* no thread: on the caller's path, as before */
        finish_one(st, b);
}

void dk_reaper_stop(struct dk_state *st)
{
    struct sbx_err err = {.size = sizeof(err)};
    char path[160];

    pthread_mutex_lock(&st->reap_lock);
    st->reap_stop = true;
    pthread_cond_signal(&st->reap_cond);
    pthread_mutex_unlock(&st->reap_lock);
    if (st->reaper_on)
        pthread_join(st->reaper, NULL);
    st->reaper_on = false;
    for (size_t i = 0; i < DK_REAP_FAILED; i++) {
        if (!st->reap_failed[i][0])
            continue;
        snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", st->reap_failed[i]);
        struct dk_call c = {.method = "DELETE", .path = path, .missing_ok = true};
        if (dk_api(st, &c, NULL, NULL, &err) < 0)
            st->h->log(st->h, SBX_LOG_WARN,
                    "container %.12s is left (%s); the next start-up's sweep removes it",
                    st->reap_failed[i], err.msg);
    }
    pthread_cond_destroy(&st->reap_cond);
    pthread_mutex_destroy(&st->reap_lock);
}
