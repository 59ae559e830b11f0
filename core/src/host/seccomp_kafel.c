/* SPDX-License-Identifier: MIT */
/*
 * seccomp_kafel.c: the one seccomp policy as a Kafel program, the language
 * nsjail reads (seccomp_policy_file). Translated from the expanded rules
 * (seccomp_policy_expand), the same ones the BPF program for bwrap is
 * compiled from, so the two cannot disagree on what is allowed:
 *
 *   - syscalls by their native number (SYSCALL[N]), resolved by libseccomp
 *     exactly as for the BPF program; names it does not know are skipped;
 *   - every condition as (aN & MASK) == VALUE on all 64 bits, the only
 *     comparison the expansion produces; the rules of one syscall never
 *     overlap with a different action, so Kafel's first-match order does
 *     not matter;
 *   - a syscall never listed fails with ENOSYS (DEFAULT ERRNO).
 *
 * One difference from the BPF program: Kafel kills only a foreign
 * architecture; an x32 syscall number on x86-64 matches no rule and fails
 * with ENOSYS instead of killing the process. Either way it never runs.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/error.h"
#include "host/seccomp_policy.h"

#define KAFEL_MAX_BYTES (1024 * 1024)

static bool same_block(const struct seccomp_flat_rule *a, const struct seccomp_flat_rule *b)
{
    return a->action == b->action &&
           (a->action == SECCOMP_RULE_ALLOW || a->errno_value == b->errno_value);
}

/* (a0 & 0x..) == 0x.. && (a2 & 0x..) == 0x.. */
static void emit_conds(struct dynbuf *out, const struct seccomp_flat_rule *r, int *rc)
{
    for (size_t i = 0; i < r->n_atoms && *rc == 0; i++)
        *rc = dynbuf_printf(out, "%s(a%u & 0x%" PRIx64 ") == 0x%" PRIx64, i ? " && " : "",
                r->atoms[i].arg, r->atoms[i].mask, r->atoms[i].value);
}

/* One syscall of one block: every rule of it there, OR-ed (Kafel's comma).
 * A rule without conditions covers the whole syscall. */
static int emit_syscall(struct dynbuf *out, const struct seccomp_flat *f, size_t first, int nr,
        bool *done, bool *first_in_block)
{
    const struct seccomp_flat_rule *r0 = &f->rules[first];
    bool whole = false, any = false;
    int rc;

    for (size_t i = first; i < f->n_rules; i++)
        if (same_block(&f->rules[i], r0) && strcmp(f->rules[i].name, r0->name) == 0)
            whole = whole || f->rules[i].n_atoms == 0;
    rc = dynbuf_printf(out, "%s    SYSCALL[%d]", *first_in_block ? "" : ",\n", nr);
    *first_in_block = false;
    if (rc == 0 && !whole)
        rc = dynbuf_append_str(out, "(a0, a1, a2, a3, a4, a5) { ");
    for (size_t i = first; rc == 0 && i < f->n_rules; i++) {
        const struct seccomp_flat_rule *r = &f->rules[i];

        if (!same_block(r, r0) || strcmp(r->name, r0->name) != 0)
            continue;
        done[i] = true;
        if (whole)
            continue;
        if (any)
            rc = dynbuf_append_str(out, ", ");
        any = true;
        emit_conds(out, r, &rc);
    }
    if (rc == 0 && !whole)
        rc = dynbuf_append_str(out, " }");
    return rc;
}

/* All rules with the action of rule `first`, as one Kafel action block. */
static int emit_block(struct dynbuf *out, const struct seccomp_flat *f, size_t first, bool *done,
        bool *first_block)
{
    const struct seccomp_flat_rule *r0 = &f->rules[first];
    bool first_in_block = true;
    int rc;

    if (r0->action == SECCOMP_RULE_ALLOW)
        rc = dynbuf_printf(out, "%s  ALLOW {\n", *first_block ? "" : ",\n");
    else
        rc = dynbuf_printf(out, "%s  ERRNO(%d) {\n", *first_block ? "" : ",\n", r0->errno_value);
    *first_block = false;
    for (size_t i = first; rc == 0 && i < f->n_rules; i++) {
        int nr;

        if (done[i] || !same_block(&f->rules[i], r0))
            continue;
        /* negative: unknown here, or a pseudo-number for another architecture */
        nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, f->rules[i].name);
        if (nr < 0) {
            done[i] = true;
            continue;
        }
        rc = emit_syscall(out, f, i, nr, done, &first_in_block);
    }
    if (rc == 0 && first_in_block) /* Kafel wants no empty block: name an impossible call */
        rc = dynbuf_append_str(out, "    SYSCALL[-1]");
    if (rc == 0)
        rc = dynbuf_append_str(out, "\n  }");
    return rc;
}

int seccomp_policy_kafel(const struct seccomp_policy *p, char **ret, struct sbx_error **err)
{
    struct seccomp_flat *f = NULL;
    bool first_block = true;
    struct dynbuf out;
    bool *done;
    int rc;

    if (!p || !ret)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "seccomp_policy_kafel: NULL argument");
    rc = seccomp_policy_expand(p, &f, err);
    if (rc < 0)
        return rc;
    done = calloc(f->n_rules + 1, sizeof(*done));
    if (!done) {
        seccomp_flat_free(f);
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    dynbuf_init(&out, KAFEL_MAX_BYTES);
    rc = dynbuf_append_str(&out, "POLICY llm_sandbox {\n");
    for (size_t i = 0; rc == 0 && i < f->n_rules; i++)
        if (!done[i])
            rc = emit_block(&out, f, i, done, &first_block);
    if (rc == 0)
        rc = dynbuf_printf(&out, "\n}\nUSE llm_sandbox DEFAULT ERRNO(%d)\n", ENOSYS);
    free(done);
    seccomp_flat_free(f);
    if (rc < 0) {
        dynbuf_done(&out);
        return rc == SBX_E_LIMIT ? sbx_error_set(err, rc, 0,
                                           "seccomp: the Kafel policy does not fit in %d bytes",
                                           KAFEL_MAX_BYTES)
                                 : sbx_error_set(err, rc, ENOMEM, "out of memory");
    }
    *ret = dynbuf_take(&out, NULL);
    return *ret ? 0 : sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

static pthread_once_t kafel_once = PTHREAD_ONCE_INIT;
static char *kafel_text;
static int kafel_rc;
static char kafel_msg[256];

static void kafel_build(void)
{
    const char *text = seccomp_policy_text();
    struct seccomp_policy *p = NULL;
    struct sbx_error *e = NULL;

    kafel_rc = seccomp_policy_parse(text, strlen(text), &p, &e);
    if (kafel_rc == 0)
        kafel_rc = seccomp_policy_kafel(p, &kafel_text, &e);
    if (kafel_rc < 0)
        snprintf(kafel_msg, sizeof(kafel_msg), "%s", e ? e->msg : "failed without a message");
    seccomp_policy_free(p);
    sbx_error_free(e);
}

int seccomp_kafel_get(const char **ret, struct sbx_error **err)
{
    if (!ret)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "seccomp_kafel_get: NULL argument");
    pthread_once(&kafel_once, kafel_build);
    if (kafel_rc < 0)
        return sbx_error_set(err, kafel_rc, 0, "built-in seccomp policy: %s", kafel_msg);
    *ret = kafel_text;
    return 0;
}

/* The zygote box's policy, for nsjail (plugin.h, SBX_BOX_ZYGOTE). */
static pthread_once_t zyg_kafel_once = PTHREAD_ONCE_INIT;
static char *zyg_kafel_text;
static int zyg_kafel_rc;
static char zyg_kafel_msg[256];

static void zyg_kafel_build(void)
{
    const char *text = seccomp_policy_text();
    struct seccomp_policy *p = NULL;
    struct sbx_error *e = NULL;

    zyg_kafel_rc = seccomp_policy_parse(text, strlen(text), &p, &e);
    if (zyg_kafel_rc == 0)
        zyg_kafel_rc = seccomp_policy_zygote(p, &e);
    if (zyg_kafel_rc == 0)
        zyg_kafel_rc = seccomp_policy_kafel(p, &zyg_kafel_text, &e);
    if (zyg_kafel_rc < 0)
        snprintf(zyg_kafel_msg, sizeof(zyg_kafel_msg), "%s",
                e ? e->msg : "failed without a message");
    seccomp_policy_free(p);
    sbx_error_free(e);
}

int seccomp_zygote_kafel_get(const char **ret, struct sbx_error **err)
{
    if (!ret)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "seccomp_zygote_kafel_get: NULL argument");
    pthread_once(&zyg_kafel_once, zyg_kafel_build);
    if (zyg_kafel_rc < 0)
        return sbx_error_set(
                err, zyg_kafel_rc, 0, "the zygote's seccomp policy: %s", zyg_kafel_msg);
    *ret = zyg_kafel_text;
    return 0;
}
