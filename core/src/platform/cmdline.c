/* SPDX-License-Identifier: MIT */
/*
 * cmdline.c: quote an argv into one Windows command line (cmdline.h).
 * The rules are the C runtime's (and CommandLineToArgvW's), as Microsoft
 * documents them under "Parsing C command-line arguments":
 *  - arguments are separated by spaces or tabs; a double quote starts or
 *    ends a quoted part, where spaces and tabs are literal;
 *  - 2n backslashes before a '"' are n backslashes, and the quote is a
 *    delimiter; 2n+1 backslashes before a '"' are n backslashes and a
 *    literal '"'; backslashes not before a '"' are literal;
 *  - the program name (argv[0]) is read differently: everything up to the
 *    next space or tab, or inside quotes up to the next quote, with no
 *    escapes at all.
 * So each argument is written bare when it holds nothing special, and
 * otherwise in quotes with every run of backslashes doubled where it
 * precedes a quote (its own or the closing one). No policy, no I/O.
 */
#include "platform/cmdline.h"

#include <string.h>
#include <strings.h>

static int needs_quotes(const char *a)
{
    return a[0] == '\0' || strpbrk(a, " \t\n\v\"") != NULL;
}

/* Windows drops trailing dots and spaces from a file name, so "x.bat. "
 * runs x.bat too. */
static int is_batch(const char *prog)
{
    size_t n = strlen(prog);

    while (n > 0 && (prog[n - 1] == '.' || prog[n - 1] == ' '))
        n--;
    return n >= 4 &&
           (strncasecmp(prog + n - 4, ".bat", 4) == 0 || strncasecmp(prog + n - 4, ".cmd", 4) == 0);
}

static int append_backslashes(struct dynbuf *out, size_t n)
{
    int rc = 0;

    while (n-- > 0 && rc == 0)
        rc = dynbuf_append(out, "\\", 1);
    return rc;
}

static int append_quoted(struct dynbuf *out, const char *a)
{
    size_t slashes = 0;
    int rc;

    if (!needs_quotes(a))
        return dynbuf_append_str(out, a);
    rc = dynbuf_append(out, "\"", 1);
    for (const char *p = a; *p && rc == 0; p++) {
        if (*p == '\\') {
            slashes++;
            continue;
        }
        if (*p == '"') /* 2n+1: n literal backslashes, then a literal quote */
            rc = append_backslashes(out, slashes * 2 + 1);
        else
            rc = append_backslashes(out, slashes);
        slashes = 0;
        if (rc == 0)
            rc = dynbuf_append(out, p, 1);
    }
    if (rc == 0) /* 2n before the closing quote: n literal backslashes */
        rc = append_backslashes(out, slashes * 2);
    if (rc == 0)
        rc = dynbuf_append(out, "\"", 1);
    return rc;
}

int win_cmdline_build(const char *const *argv, struct dynbuf *out, struct sbx_error **err)
{
    size_t start = out->len;
    int rc;

    if (!argv || !argv[0] || !argv[0][0])
        return sbx_error_set(err, SBX_E_INVALID, 0, "no program to run");
    if (strchr(argv[0], '"'))
        return sbx_error_set(err, SBX_E_INVALID, 0,
                "program name '%s' holds a double quote, which Windows cannot pass", argv[0]);
    if (is_batch(argv[0]))
        return sbx_error_set(err, SBX_E_INVALID, 0,
                "program '%s' is a batch file, whose command line cmd.exe re-parses "
                "by its own rules; run cmd.exe or the program it calls instead",
                argv[0]);
    /* argv[0]: quotes only, no escapes (it cannot hold '"', checked above) */
    if (strpbrk(argv[0], " \t"))
        rc = dynbuf_printf(out, "\"%s\"", argv[0]);
    else
        rc = dynbuf_append_str(out, argv[0]);
    for (size_t i = 1; argv[i] && rc == 0; i++) {
        rc = dynbuf_append(out, " ", 1);
        if (rc == 0)
            rc = append_quoted(out, argv[i]);
    }
    if (rc == 0 && out->len - start >= WIN_CMDLINE_MAX)
        rc = SBX_E_LIMIT;
    if (rc == 0)
        return 0;
    out->len = start;
    if (out->buf)
        out->buf[start] = '\0';
    if (rc == SBX_E_LIMIT)
        return sbx_error_set(err, rc, 0,
                "the command line for '%s' is longer than Windows takes (%d characters)", argv[0],
                WIN_CMDLINE_MAX - 1);
    return sbx_error_set(err, rc, 0, "out of memory building the command line for '%s'", argv[0]);
}
