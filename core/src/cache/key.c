/* SPDX-License-Identifier: MIT */
/*
 * key.c: the cache's keys (key.h). Pure but for the stat(2) of the
 * toolchain's binary.
 */
#include "cache/key.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <llm-sandbox/plugin.h>

#include "base/util.h"
#include "plugins/manifest.h"

void cache_key_field(struct sha256_ctx *md, const char *tag, const void *data, size_t len)
{
    uint64_t n = len;

    sha256_update(md, strlen(tag) + 1, (const uint8_t *)tag);
    sha256_update(md, sizeof(n), (const uint8_t *)&n);
    sha256_update(md, len, data);
}

void cache_toolchain_id(const struct manifest *m, char *out, size_t len)
{
    const char *name = m->n_binaries              ? m->binaries[0].name
                       : m->lang->version_command ? m->lang->version_command[0]
                                                  : "";
    struct stat st;
    char buf[PATH_MAX];

    if (manifest_which(m, name, buf, sizeof(buf), &st) == 0)
        snprintf(out, len, "%s %ju:%ju %jd %jd", buf, (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                (intmax_t)st.st_size, (intmax_t)st.st_mtime);
    else
        snprintf(out, len, "%s (not found)", name);
}

void cache_key_hex(struct sha256_ctx *md, char out[65])
{
    uint8_t dig[SHA256_DIGEST_SIZE];

    sha256_digest(md, sizeof(dig), dig);
    hex_encode(out, dig, sizeof(dig));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void hash_str(struct sha256_ctx *md, const char *tag, const char *s)
{
    sha256_update(md, strlen(tag) + 1, (const uint8_t *)tag);
    sha256_update(md, s ? strlen(s) + 1 : 1, (const uint8_t *)(s ? s : ""));
}

int deps_key(const char *lang, const char *version, const struct manifest_install *in,
        char *const *libs, size_t n_libs, char out[65])
{
    const char **sorted = calloc(n_libs + 1, sizeof(*sorted));
    struct sha256_ctx md;

    if (!sorted)
        return SBX_E_NOMEM;
    for (size_t i = 0; i < n_libs; i++)
        sorted[i] = libs[i];
    qsort(sorted, n_libs, sizeof(*sorted), cmp_str);
    sha256_init(&md);
    hash_str(&md, "format", "llm-sandbox dependency set 1");
    hash_str(&md, "language", lang);
    hash_str(&md, "version", version);
    for (size_t i = 0; i < in->n_steps; i++)
        for (char **a = in->steps[i].run; *a; a++)
            hash_str(&md, i == 0 && a == in->steps[i].run ? "step0" : "arg", *a);
    for (char **e = in->env; *e; e++)
        hash_str(&md, "env", *e);
    for (size_t i = 0; i < n_libs; i++)
        if (i == 0 || strcmp(sorted[i], sorted[i - 1]) != 0)
            hash_str(&md, "library", sorted[i]);
    free(sorted);
    cache_key_hex(&md, out);
    return 0;
}
