/* SPDX-License-Identifier: MIT */
/*
 * progress.c: what `run` is doing before the program runs (installing
 * libraries, compiling, warming a build cache), on stderr while it
 * happens. On a terminal: one status line, rewritten in place with the
 * seconds so far and erased when the program starts; on a pipe or file:
 * one plain line per step, so a log reads in order. Stdout is never
 * touched. Warnings are not repeated here: `run` reports them at the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define STATUS_MAX 200

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t ticker;
    bool tty, started, stop;
    char status[STATUS_MAX]; /* the terminal's status line, "" when none */
    struct timespec since;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Under g.lock. */
static void draw(void)
{
    char line[STATUS_MAX + 64];
    int n;

    if (!g.status[0])
        return;
    n = snprintf(line, sizeof(line), "\r\033[Kllm-sandbox: %s ... %.0fs", g.status,
            seconds_since(&g.since));
    if (n > 0)
        cli_write_all(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Under g.lock: erase the status line, if one is shown. */
static void erase(void)
{
    if (g.tty && g.status[0])
        cli_write_all(STDERR_FILENO, "\r\033[K", 4);
    g.status[0] = '\0';
}

/* Rewrites the status line once a second, so a long install shows it is
 * alive. Waits on a condition variable, so stopping it is immediate. */
static void *tick(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.lock);
    while (!g.stop) {
        struct timespec at;

        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_sec += 1;
        pthread_cond_timedwait(&g.wake, &g.lock, &at);
        if (!g.stop)
            draw();
    }
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

static void show(const char *what)
{
    pthread_mutex_lock(&g.lock);
    if (g.tty) {
        snprintf(g.status, sizeof(g.status), "%s", what);
        clock_gettime(CLOCK_MONOTONIC, &g.since);
        draw();
    } else {
        fprintf(stderr, "llm-sandbox: %s\n", what);
    }
    pthread_mutex_unlock(&g.lock);
}

void cli_progress_start(void)
{
    g.tty = isatty(STDERR_FILENO) == 1;
    g.stop = false;
    if (g.tty && pthread_create(&g.ticker, NULL, tick, NULL) == 0)
        g.started = true;
}

void cli_progress_stop(void)
{
    pthread_mutex_lock(&g.lock);
    erase();
    g.stop = true;
    pthread_cond_signal(&g.wake);
    pthread_mutex_unlock(&g.lock);
    if (g.started)
        pthread_join(g.ticker, NULL);
    g.started = false;
}

void cli_progress_clear(void)
{
    pthread_mutex_lock(&g.lock);
    erase();
    pthread_mutex_unlock(&g.lock);
}

void cli_progress_phase(void *ud, const char *phase)
{
    (void)ud;
    /* "installing" is said by the notice that names the libraries */
    if (strcmp(phase, "compiling") == 0)
        show("compiling");
    else if (strcmp(phase, "warming up") == 0)
        show("warming up the build cache");
    else if (strcmp(phase, "running") == 0)
        cli_progress_clear();
}

void cli_progress_notice(void *ud, enum sbx_notice level, const char *msg)
{
    (void)ud;
    if (level == SBX_NOTICE_INFO)
        show(msg);
}
