/* SPDX-License-Identifier: MIT */
/*
 * proof.c: the probe's proof that the cluster enforces NetworkPolicy,
 * remembered for proof_ttl_s (default 300 s) in a small file per cluster,
 * namespace, CA, probe image and witness port, so that a short-lived CLI
 * does not start a probe pod every time. Only a proof is kept, never a
 * failure, and it never replaces the proof each pod gives before its agent
 * starts (boot.c): a cluster that stopped enforcing fails every run closed.
 * A file that cannot be written just means no cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "k8s.h"

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return (h ^ 0xffu) * 0x100000001b3ull; /* a separator */
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    return fnv(h, s, s ? strlen(s) : 0);
}

/* The CA the server is verified with, as text (a file's content). */
static uint64_t fnv_ca(uint64_t h, const struct k8s_cluster *cl)
{
    char buf[65536];
    size_t n = 0;
    FILE *f;

    if (cl->ca_pem)
        return fnv_str(h, cl->ca_pem);
    f = cl->ca_file ? fopen(cl->ca_file, "re") : NULL;
    if (f) {
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
    }
    return fnv(h, buf, n);
}

/* The file for this cluster, or false when there is no cache. */
static bool proof_path(struct k8s_state *st, char *path, size_t len)
{
    const char *dir = st->h->setting(st->h, "cache_dir");
    uint64_t h = 0xcbf29ce484222325ull;
    char num[32];

    if (!dir || !*dir || st->proof_ttl_s <= 0)
        return false;
    h = fnv_str(h, st->cl.endpoint);
    h = fnv_str(h, st->cl.prefix);
    h = fnv_str(h, st->ns);
    h = fnv_ca(h, &st->cl);
    h = fnv_str(h, st->probe_image);
    snprintf(num, sizeof(num), "%" PRId64, st->witness_port);
    h = fnv_str(h, num);
    return snprintf(path, len, "%s/kubernetes-netpol-%016" PRIx64, dir, h) < (int)len;
}

bool k8s_proof_fresh(struct k8s_state *st)
{
    char path[4096], buf[32] = "";
    struct stat sb;
    FILE *f;
    long long until = 0;

    if (!proof_path(st, path, sizeof(path)) || stat(path, &sb) < 0 || sb.st_uid != geteuid() ||
            (sb.st_mode & 022))
        return false;
    f = fopen(path, "re");
    if (!f)
        return false;
    if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%lld", &until) != 1)
        until = 0;
    fclose(f);
    return until > (long long)time(NULL) && until <= (long long)time(NULL) + st->proof_ttl_s;
}

void k8s_proof_keep(struct k8s_state *st)
{
    char path[4096], tmp[4200];
    FILE *f;
    int fd;

    if (!proof_path(st, path, sizeof(path)))
        return;
    for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) { /* its directory */
        *p = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST) {
            *p = '/';
            return;
        }
        *p = '/';
    }
    snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    fprintf(f, "%lld\n", (long long)time(NULL) + (long long)st->proof_ttl_s);
    if (fclose(f) != 0 || rename(tmp, path) < 0)
        unlink(tmp);
}
