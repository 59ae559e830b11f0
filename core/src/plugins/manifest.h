/* SPDX-License-Identifier: MIT */
/*
 * manifest.h: plugin manifests (NAME.yaml beside NAME.so). Parsed with
 * libyaml into a small tree, then checked against a schema table: unknown
 * keys, wrong types, duplicate keys, aliases, bad values, oversize files
 * (64 KiB) and nesting deeper than 8 are errors reported as
 * "FILE:LINE:COLUMN: message". A manifest is read before its library is
 * opened. The format is documented in docs/plugins.md.
 */
#ifndef SBX_MANIFEST_H
#define SBX_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include <llm-sandbox/plugin.h>
#include <llm-sandbox/sbx.h>

#define MANIFEST_MAX_BYTES (64u * 1024u)
#define MANIFEST_MAX_DEPTH 8

struct manifest_binary {
    char *name;        /* absolute path or bare command name */
    char *min_version; /* dotted numbers, or NULL */
};

/* What get_language_details tells a model about a language. */
struct manifest_example {
    char *title;
    char *description; /* or NULL */
    char *code;
};

struct manifest_docs {
    char **use_cases; /* NULL-terminated, may be empty */
    /* libraries whose presence (by the libraries probe) means plots come
     * back as images (matplotlib, R's grDevices); may be empty */
    char **plot_libraries;
    struct manifest_example *examples;
    size_t n_examples;
};

/* Another way to build and run the program, chosen by the language's
 * prepare hook (Go's test mode). Replaces the language's build and run. */
struct manifest_mode {
    char *name;        /* [a-z][a-z0-9_]*, a key of language.modes */
    char *source_file; /* or NULL: the language's */
    char **build;      /* argv template, or NULL when nothing is built */
    char **run;        /* argv template, at least one element */
};

/* One command of a dependency install (language.install.steps). */
struct manifest_step {
    char **run; /* argv template; "{libraries}" expands to the requested names */
};

/* How a language installs libraries at run time (language.install): the
 * steps run in a sandbox whose only network is the core's filtering proxy,
 * which lets them reach `hosts` and nothing else, and whose /deps is the
 * dependency set being built; programs then run with the finished set
 * mounted read-only at /deps. */
struct manifest_install {
    char **hosts;                /* registry host names, "*.example.org" for subdomains */
    struct manifest_step *steps; /* in order, at least one */
    size_t n_steps;
    char **env;          /* "KEY=VALUE" for the steps, NULL-terminated, may be empty */
    char **run_env;      /* "KEY=VALUE" added for build and run with a set, may be empty */
    char **stage;        /* files of the set copied into the workspace, may be empty */
    char *workspace_dir; /* a directory of the set also mounted at /workspace/NAME, or NULL */
    char **seed;         /* language.warm only: argv run before each build with the set at
                            /warm (Go links its build cache into the writable GOCACHE), or
                            NULL: the set is used where it is */
    char *repo_var;      /* an env key naming the repository: a file:// one is mounted
                            read-only at /repo for the steps and the value rewritten */
};

/* A warm interpreter for sessions (language.session): run starts it, with
 * the element "{driver}" replaced by the text of the file `driver` beside
 * the manifest; it speaks the protocol of core/src/sessions/session.c. */
struct manifest_session {
    char **run;       /* argv template, at least one element */
    char *driver;     /* a file name beside the manifest */
    bool feed_source; /* prestart only, feed: source (pool.c) */
    bool holds;       /* zygote only, holds: true: a FORK may hold its child
                         until GO (core/agent/proto.h), so that the core can
                         give each run a cgroup of its own (pool_zygote.c) */
    char *libraries;  /* session only, or NULL: code the interpreter runs to put a
                         dependency set staged at {libs} on its search path
                         (sessions/session_libs.c) */
};

/* A file of the language staged in every sandbox before the program
 * (language.support), beneath /tmp/.sbx/: out of the workspace, so it is
 * neither the program's file nor an artifact. */
struct manifest_support {
    char *path; /* "/tmp/.sbx/..." */
    char *file; /* a file name beside the manifest */
};

struct manifest_lang {
    char *source_file;      /* file name, no '/' */
    char **extensions;      /* ".py", ...; NULL-terminated, may be empty */
    char **build;           /* argv template, or NULL when nothing is built */
    char **run;             /* argv template, at least one element */
    char **env;             /* "KEY=VALUE", NULL-terminated, may be empty */
    char *image;            /* default container image, or NULL */
    char *package_manager;  /* "pip", ..., or NULL */
    char **version_command; /* argv, or NULL */
    char *version_pattern;  /* POSIX ERE with one group, or NULL */
    /* argv printing "NAME VERSION" per library importable without an
     * install, and the absolute directories they were found in, or NULL */
    char **libraries_command;
    char **host_paths; /* absolute paths bound read-only by local backends */
    struct manifest_docs docs;
    uint64_t address_space;      /* language.address_space: virtual memory the runtime reserves
                                    beyond what it uses (the RLIMIT_AS fallback adds it), or 0 */
    struct manifest_mode *modes; /* language.modes, in file order */
    size_t n_modes;
    struct manifest_install *install;  /* language.install, or NULL: no installs */
    char **build_outputs;              /* language.build_outputs: what build makes for run;
                                          when set, identical builds are cached, or NULL */
    struct manifest_install *warm;     /* language.warm, or NULL: a set built once per
                                          toolchain without network (no hosts) */
    struct manifest_session *session;  /* language.session, or NULL: a session runs each
                                          call's program anew (files persist) */
    struct manifest_session *prestart; /* language.prestart, or NULL: a pooled sandbox
                                          execs the program (pool.c: the protocol) */
    struct manifest_session *zygote;   /* language.zygote, or NULL: no zygote boxes
                                          (pool.c; core/agent/proto.h, FORK) */
    struct manifest_support *support;  /* language.support, in file order */
    size_t n_support;
};

/* A plugin setting that is also read under foreign names (settings: in
 * the manifest), such as Docker's DOCKER_HOST for the docker plugin's
 * `host`. LLM_SANDBOX_<PLUGIN>_<KEY> always comes first; then each name in
 * env, in order; then the default. A key ending in "_*" is a family
 * ("image_*"): its names end in "_*" too, and the rest of the key,
 * upper-cased, takes the star's place (image_python: SANDBOX_IMAGE_PYTHON). */
struct manifest_setting {
    char *key;           /* [a-z][a-z0-9_]{0,31}, or such a prefix and "_*" */
    char **env;          /* [A-Z][A-Z0-9_]* (and "_*" for a family), NULL-terminated */
    char *default_value; /* or NULL; "~/" at its start is the server's home */
};

#define MANIFEST_MAX_SETTINGS 32

struct manifest {
    char *path; /* the file it was read from */
    char *name;
    enum sbx_plugin_kind kind;
    char *version;
    unsigned abi_major;
    unsigned abi_minor;
    char *library; /* file name beside the manifest; NULL only for languages */
    char *description;
    char **aliases;                   /* NULL-terminated, may be empty */
    struct manifest_binary *binaries; /* requires.binaries */
    size_t n_binaries;
    char **kernel_features;            /* requires.kernel: user_namespaces, seccomp, cgroups */
    char **host_services;              /* requires.host: http (the loader opens libcurl) */
    struct manifest_lang *lang;        /* kind == SBX_KIND_LANGUAGE, else NULL */
    struct manifest_setting *settings; /* settings:, in file order (ABI 1.4) */
    size_t n_settings;
};

/* The declaration of setting key in m (exactly, or a family "x_*" whose
 * prefix key starts with), or NULL. (transfer none) */
const struct manifest_setting *manifest_setting_find(const struct manifest *m, const char *key);

/* Parse len bytes of YAML; path is used in messages. (transfer full) */
int manifest_parse(const char *path, const char *data, size_t len, struct manifest **ret,
        struct sbx_error **err);
/* Read dir/filename (at most MANIFEST_MAX_BYTES, no symlinks) and parse it. */
int manifest_load(
        const char *dir, const char *filename, struct manifest **ret, struct sbx_error **err);
struct stat;
struct manifest *manifest_free(struct manifest *m); /* returns NULL */
/* Where a language's binary is on this host: name itself when absolute,
 * else the first regular file of that name along the PATH of the
 * language's env (default /usr/bin:/bin), into out, and its stat into
 * *ret_st. 0, or -1 with errno set (ENOENT when no directory has it). */
int manifest_which(
        const struct manifest *m, const char *name, char *out, size_t len, struct stat *ret_st);

#endif
