/* SPDX-License-Identifier: MIT */
/*
 * engine_loop.c: per-run cost of the engine in a long-lived process (as
 * the MCP server will be), without the one-time start-up and probe that a
 * one-shot CLI run pays. Alternates sbx_run() of `pass` with a bare
 * fork+exec of `/usr/bin/python3 -c pass` and prints medians and p95.
 * A benchmark, never a test.
 *
 * usage: engine_loop [RUNS]   (build: cmake --build build --target engine_loop)
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <llm-sandbox/sbx.h>

#include "timing.h"

extern char **environ;

static double bare(void)
{
    char *argv[] = {"/usr/bin/python3", "-c", "pass", NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    double t0 = bench_now_ms();
    pid_t pid;
    int st;

    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, envp) != 0 || waitpid(pid, &st, 0) < 0)
        exit(1);
    return bench_now_ms() - t0;
}

static double sandboxed(struct sbx_runtime *rt)
{
    struct sbx_request req = {.language = "python", .code = "pass", .code_len = 4};
    struct sbx_execution *ex = NULL;
    struct sbx_error *err = NULL;
    double t0 = bench_now_ms();

    if (sbx_run(rt, &req, &ex, &err) < 0 || ex->status != SBX_STATUS_OK) {
        fprintf(stderr, "run failed: %s\n", err ? err->msg : ex->message);
        exit(1);
    }
    sbx_execution_free(ex);
    return bench_now_ms() - t0;
}

static void report(const char *what, double *v, size_t n)
{
    qsort(v, n, sizeof(*v), bench_cmp_double);
    printf("%-34s %10.1f %10.1f\n", what, v[n / 2], v[(n * 95) / 100]);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 200;
    double *a = calloc(n, sizeof(double)), *b = calloc(n, sizeof(double)), ma, mb;
    struct sbx_runtime *rt = NULL;
    struct sbx_error *err = NULL;

    if (!a || !b || n < 2 || sbx_runtime_new(&rt, &err) < 0) {
        fprintf(stderr, "setup failed%s%s\n", err ? ": " : "", err ? err->msg : "");
        return 1;
    }
    for (int i = 0; i < 5; i++) /* probe the backend, warm caches */
        sandboxed(rt), bare();
    for (size_t i = 0; i < n; i++) {
        a[i] = sandboxed(rt);
        b[i] = bare();
    }
    printf("runs: %zu each, in one process (probe done once, before timing)\n", n);
    printf("%-34s %10s %10s\n", "", "median ms", "p95 ms");
    report("/usr/bin/python3 -c pass (spawn)", b, n);
    report("sbx_run python 'pass'", a, n);
    ma = a[n / 2], mb = b[n / 2];
    printf("per-run sandbox overhead (median): %.1f ms, ratio %.2fx\n", ma - mb, ma / mb);
    sbx_runtime_free(rt);
    free(a);
    free(b);
    return 0;
}
