/* SPDX-License-Identifier: MIT */
/*
 * manifest_rules.h: the value grammar of plugin manifests, one rule per
 * kind of value. Private to core/src (manifest.c is its user).
 */
#ifndef SBX_MANIFEST_RULES_H
#define SBX_MANIFEST_RULES_H

enum manifest_rule {
    MR_ANY,
    MR_NAME,        /* [a-z][a-z0-9_]{0,31} */
    MR_VERSION,     /* 1.2.3, 1.2.3-rc1, 1.2.3+git */
    MR_DOTTED,      /* 1 to 4 dotted numbers */
    MR_LIBRARY,     /* a file name ending in .so */
    MR_FILE,        /* a plain file name */
    MR_EXTENSION,   /* .py */
    MR_DESCRIPTION, /* one line of 1 to 500 characters */
    MR_PATH,        /* absolute, no '..' */
    MR_COMMAND,     /* an absolute path or a command name */
    MR_KERNEL,      /* user_namespaces, seccomp, cgroups */
    MR_TEMPLATE,    /* an argv element with {placeholders} */
    MR_IMAGE,       /* a container image name */
    MR_REGEX,       /* a POSIX ERE with a group and no {m,n} */
    MR_HOST,        /* a host service: http */
};

/* NULL when s satisfies rule, else what it must be (the end of a message
 * "key 'x' must be ..."). (transfer none: a static string) */
const char *manifest_check_value(enum manifest_rule rule, const char *s);

#endif
