/* SPDX-License-Identifier: MIT */
/*
 * bwrap_floor.c: doctor's look at the bubblewrap version floor. Before
 * 0.12.0, bwrap's setup follows a symlink in the parent of a bind target
 * it creates, through /oldroot, to the host (GHSA-pxhw-h44j-8pfx). Debian
 * backports fixes without changing the upstream version, so below 0.12.0
 * the installed package's changelog decides whether the fix is in. Either
 * way the bwrap backend is not exposed: every bind target it asks for is
 * created in bwrap's fresh root tmpfs or in a fresh tmpfs before any
 * sandboxed code runs, so none lies under a path the sandbox could have
 * written (plugins/bwrap/translate.c); the check says so.
 */
#include "runtime/bwrap_floor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/exec.h"

#define ADVISORY  "GHSA-pxhw-h44j-8pfx"
#define CHANGELOG "/usr/share/doc/bubblewrap/changelog.Debian.gz"
#define NOT_EXPOSED                                                                                \
    "llm-sandbox is not exposed to it: every bind target is created in bwrap's fresh root "        \
    "tmpfs or a fresh tmpfs before sandboxed code runs, none under a sandbox-writable path"

/* argv's output (stdout and stderr), or NULL. (transfer full) */
static char *capture(const char *const *argv, size_t cap)
{
    struct sbx_error *e = NULL;
    char *out;
    int status = 0;

    if (access(argv[0], X_OK) != 0 || !(out = malloc(cap)))
        return NULL;
    if (exec_capture(argv, 5000, out, cap, &status, &e) < 0 || status != 0) {
        sbx_error_free(e);
        free(out);
        return NULL;
    }
    return out;
}

int bwrap_floor_check(const char *bwrap, const char *changelog, char *detail, size_t detail_len,
        char *fix, size_t fix_len)
{
    const char *ver_argv[] = {bwrap, "--version", NULL};
    const char *log_argv[] = {"/usr/bin/gzip", "-dc", changelog ? changelog : CHANGELOG, NULL};
    const char *pkg_argv[] = {"/usr/bin/dpkg-query", "-W", "-f", "${Version}", "bubblewrap", NULL};
    char *ver = capture(ver_argv, 256), *log, *pkg;
    const char *p;
    int a = 0, b = 0, c = 0;
    bool fixed;

    fix[0] = '\0';
    p = ver ? strstr(ver, "bubblewrap ") : NULL;
    if (!p || sscanf(p + 11, "%d.%d.%d", &a, &b, &c) < 2) {
        snprintf(detail, detail_len, "'%s --version' did not say its version", bwrap);
        free(ver);
        return -1;
    }
    free(ver);
    if (a > 0 || b >= 12) {
        snprintf(detail, detail_len,
                "bubblewrap %d.%d.%d (0.12.0 or newer: fixed for " ADVISORY ")", a, b, c);
        return 1;
    }
    log = capture(log_argv, 1u << 20);
    pkg = log ? capture(pkg_argv, 128) : NULL;
    fixed = log && strstr(log, ADVISORY);
    snprintf(detail, detail_len,
            "bubblewrap %d.%d.%d%s%s%s, before 0.12.0: %s " ADVISORY
            " (bwrap's setup can follow a symlink in a bind target's parent to the host "
            "through /oldroot); " NOT_EXPOSED,
            a, b, c, pkg ? " (package " : "", pkg ? pkg : "", pkg ? ")" : "",
            !log    ? "no package changelog (" CHANGELOG ") says whether it carries the fix for"
            : fixed ? "its package changelog says it carries the fix for"
                    : "its package changelog does not mention the fix for");
    if (!fixed)
        snprintf(fix, fix_len,
                "upgrade bubblewrap to 0.12.0 or newer, or to a package that backports the fix "
                "for " ADVISORY ", before adding binds under sandbox-writable paths");
    free(log);
    free(pkg);
    return fixed ? 1 : 0;
}
