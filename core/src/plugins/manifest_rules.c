/* SPDX-License-Identifier: MIT */
/*
 * manifest_rules.c: what each manifest value must look like (names,
 * versions, file names, paths, argv templates, images, version regexes).
 * Pure string checks: no I/O, no allocation that outlives a call. The
 * grammar is documented in docs/plugins.md; manifest.c applies it.
 */
#include "plugins/manifest_rules.h"

#include <ctype.h>
#ifndef _WIN32
#include <regex.h>
#endif
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#ifdef _WIN32
#include "platform/minire.h"
#endif

#define FILE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-"
#define DIGITS     "0123456789"

/* 1 to 4 dot-separated components of 1 to 9 digits; the end, or NULL. */
static const char *scan_dotted(const char *s)
{
    for (int i = 0; i < 4; i++) {
        size_t d = strspn(s, DIGITS);

        if (d == 0 || d > 9)
            return NULL;
        s += d;
        if (*s++ != '.')
            return s - 1;
    }
    return NULL;
}

/* min..max bytes of [A-Za-z0-9._+-]. */
static bool is_word(const char *s, size_t min, size_t max)
{
    size_t len = strlen(s);

    return len >= min && len <= max && strspn(s, FILE_CHARS) == len;
}

static bool is_version(const char *s)
{
    const char *e = scan_dotted(s);

    if (!e || strlen(s) > 64)
        return false;
    return *e == '\0' ||
           ((*e == '-' || *e == '+') && isalnum((unsigned char)e[1]) && is_word(e + 1, 1, 64));
}

/* One line of 1 to 500 characters (UTF-8 lead bytes). */
static bool is_description(const char *s)
{
    size_t chars = 0;

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return false;
        chars += (*p & 0xC0) != 0x80;
    }
    return chars >= 1 && chars <= 500;
}

static const char *check_path(const char *s)
{
    if (s[0] != '/' || strlen(s) > 4096)
        return "an absolute path";
    for (const char *p = s; p; p = strchr(p + 1, '/')) {
        if (strncmp(p, "/..", 3) == 0 && (p[3] == '/' || p[3] == '\0'))
            return "a path without '..' components";
    }
    return NULL;
}

/* Argv templates: every '{' opens a placeholder {name}, name [a-z_]+. */
static bool is_template(const char *s)
{
    for (const char *p = strchr(s, '{'); p; p = strchr(p, '{')) {
        size_t n = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_");

        if (n == 0 || p[n + 1] != '}')
            return false;
        p += n + 2;
    }
    return true;
}

static bool is_image(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= 0x20 || *p == 0x7f)
            return false;
    }
    return s[0] && strlen(s) <= 255;
}

#ifdef _WIN32
/* Windows has no POSIX regular expressions: a pattern must be of the
 * small subset platform/minire.c implements (every in-tree manifest's
 * is); one outside it is refused with what it used, not guessed at. */
static const char *check_regex(const char *s)
{
    static _Thread_local char why[160];
    const char *outside;
    size_t groups = 0;

    if (strlen(s) > 256)
        return "a regular expression of at most 256 bytes";
    outside = minire_check(s, &groups);
    if (outside) {
        snprintf(why, sizeof(why), "a regular expression of the Windows build's subset (%s)",
                outside);
        return why;
    }
    return groups >= 1 ? NULL : "a regular expression with at least one group, like ([0-9.]+)";
}
#else
static const char *check_regex(const char *s)
{
    regex_t re;
    size_t groups;

    if (strlen(s) > 256)
        return "a regular expression of at most 256 bytes";
    /* glibc expands nested {m,n} when compiling: ((a{1,255}){1,255}){1,255}
     * takes minutes and gigabytes. Version patterns do without them. */
    if (strchr(s, '{'))
        return "a regular expression without {m,n} intervals (use +, * or ?)";
    if (regcomp(&re, s, REG_EXTENDED) != 0)
        return "a valid POSIX extended regular expression";
    groups = re.re_nsub;
    regfree(&re);
    return groups >= 1 ? NULL : "a regular expression with at least one group, like ([0-9.]+)";
}
#endif

const char *manifest_check_value(enum manifest_rule rule, const char *s)
{
    const char *e;

    switch (rule) {
    case MR_ANY: return NULL;
    case MR_NAME: return name_is_valid(s) ? NULL : "a name matching [a-z][a-z0-9_]{0,31}";
    case MR_VERSION:
        return is_version(s) ? NULL : "a string like 1.2.3 (1 to 4 numbers, then -rc1 or +git)";
    case MR_DOTTED: e = scan_dotted(s); return e && *e == '\0' ? NULL : "dotted numbers like 1.2.3";
    case MR_LIBRARY:
        if (is_word(s, 4, 64) && s[0] != '.' && strcmp(s + strlen(s) - 3, ".so") == 0)
            return NULL;
        return "a file name ending in '.so' (no '/', not starting with '.', at most 64 bytes)";
    case MR_FILE:
        if (is_word(s, 1, 64) && !strstr(s, "..") && strcmp(s, ".") != 0)
            return NULL;
        return "a file name of at most 64 bytes of [A-Za-z0-9._+-] (no '/', no '..')";
    case MR_EXTENSION:
        return s[0] == '.' && is_word(s, 2, 16) ? NULL : "a file extension like '.py'";
    case MR_DESCRIPTION: return is_description(s) ? NULL : "one line of 1 to 500 characters";
    case MR_PATH: return check_path(s);
    case MR_COMMAND:
        if (s[0] == '/')
            return check_path(s);
        if (is_word(s, 1, 255) && strcmp(s, ".") != 0 && strcmp(s, "..") != 0)
            return NULL;
        return "an absolute path or a command name of [A-Za-z0-9._+-]";
    case MR_KERNEL:
        if (strcmp(s, "user_namespaces") == 0 || strcmp(s, "seccomp") == 0 ||
                strcmp(s, "cgroups") == 0)
            return NULL;
        return "one of user_namespaces, seccomp, cgroups";
    case MR_TEMPLATE:
        return is_template(s) ? NULL : "an argument whose '{' starts a placeholder like {name}";
    case MR_IMAGE: return is_image(s) ? NULL : "an image name of 1 to 255 bytes without spaces";
    case MR_REGEX: return check_regex(s);
    case MR_HOST: return strcmp(s, "http") == 0 ? NULL : "'http' (the one host service)";
    }
    return "valid";
}
