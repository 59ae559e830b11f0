/* SPDX-License-Identifier: MIT */
/*
 * fuzz_seccomp_list.c: libFuzzer target for seccomp_policy_parse() and
 * seccomp_policy_expand(). Every input must either parse or fail with one
 * well-formed error (SBX_E_INVALID "policy.list:LINE: ...", SBX_E_LIMIT or
 * SBX_E_NOMEM, one line). A list that parses must expand, or fail with
 * SBX_E_LIMIT or SBX_E_NOMEM; the expansion must mean what the list means:
 * for argument vectors built from the list's own values, the flat rules of
 * a syscall give the same verdict as the parsed lines, and rules of one
 * syscall with different actions never overlap. Anything else, a crash or
 * a leak is a bug. Build with clang -fsanitize=fuzzer, or link with
 * replay.c to replay a corpus without libFuzzer.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "host/seccomp_policy.h"

#define SAMPLES_PER_NAME 48
#define CHECK_MAX_RULES  4096 /* skip the quadratic overlap check above this */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Verdicts: what a call with given arguments gets. */
enum verdict { V_NOT_LISTED = -1, V_ALLOW = -2 }; /* else: an errno value >= 0 */

static void check_error(int r, const struct sbx_error *err)
{
    if (!err || err->rc != r || !err->msg || strchr(err->msg, '\n'))
        abort();
    if (r != SBX_E_INVALID && r != SBX_E_LIMIT && r != SBX_E_NOMEM)
        abort();
    if (r == SBX_E_INVALID && strncmp(err->msg, "policy.list:", 12) != 0)
        abort();
}

static bool cond_holds(const struct seccomp_cond *c, const uint64_t *args)
{
    uint64_t a = args[c->arg];
    bool in = false;

    switch (c->op) {
    case SECCOMP_OP_EQ: return (a & UINT64_C(0xFFFFFFFF)) == c->values[0];
    case SECCOMP_OP_MASK_EQ: return (a & c->mask) == c->values[0];
    case SECCOMP_OP_IN:
    case SECCOMP_OP_NOT_IN:
        for (size_t i = 0; i < c->n_values; i++)
            in = in || (a & UINT64_C(0xFFFFFFFF)) == c->values[i];
        return c->op == SECCOMP_OP_IN ? in : !in;
    }
    abort();
}

/* What the parsed list says for name(args). */
static int list_verdict(const struct seccomp_policy *p, const char *name, const uint64_t *args)
{
    int v = V_NOT_LISTED;

    for (size_t i = 0; i < p->n_rules; i++) {
        const struct seccomp_rule *r = &p->rules[i];
        bool all = true;

        if (strcmp(r->name, name) != 0)
            continue;
        if (r->action == SECCOMP_RULE_ERRNO) {
            if (v == V_NOT_LISTED)
                v = r->errno_value;
            continue;
        }
        for (size_t k = 0; k < r->n_conds && all; k++)
            all = cond_holds(&r->conds[k], args);
        if (all)
            return V_ALLOW;
    }
    return v;
}

static bool atoms_hold(const struct seccomp_flat_rule *f, const uint64_t *args)
{
    for (size_t k = 0; k < f->n_atoms; k++) {
        if ((args[f->atoms[k].arg] & f->atoms[k].mask) != f->atoms[k].value)
            return false;
    }
    return true;
}

/* What the expansion says for name(args); abort if two actions match. */
static int flat_verdict(const struct seccomp_flat *fl, const char *name, const uint64_t *args)
{
    int v = V_NOT_LISTED;

    for (size_t i = 0; i < fl->n_rules; i++) {
        const struct seccomp_flat_rule *f = &fl->rules[i];
        int this;

        if (strcmp(f->name, name) != 0 || !atoms_hold(f, args))
            continue;
        this = f->action == SECCOMP_RULE_ALLOW ? V_ALLOW : f->errno_value;
        if (v != V_NOT_LISTED && v != this)
            abort();
        v = this;
    }
    return v;
}

/* Interesting values for one argument of name: the list's own, their
 * neighbours, and each with the high half set. */
static size_t candidates(
        const struct seccomp_policy *p, const char *name, unsigned arg, uint64_t *out, size_t cap)
{
    size_t n = 0;

    out[n++] = 0;
    out[n++] = UINT64_MAX;
    for (size_t i = 0; i < p->n_rules && n + 4 <= cap; i++) {
        const struct seccomp_rule *r = &p->rules[i];

        if (strcmp(r->name, name) != 0)
            continue;
        for (size_t k = 0; k < r->n_conds; k++) {
            const struct seccomp_cond *c = &r->conds[k];

            for (size_t j = 0; c->arg == arg && j < c->n_values && n + 4 <= cap; j++) {
                out[n++] = c->values[j];
                out[n++] = c->values[j] + 1;
                out[n++] = c->values[j] | UINT64_C(0xFFFFFFFF00000000);
                out[n++] = c->op == SECCOMP_OP_MASK_EQ ? c->values[j] | ~c->mask : c->values[j] ^ 1;
            }
        }
    }
    return n;
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The parsed list and its expansion agree on sampled calls of name. */
static void check_name(const struct seccomp_policy *p, const struct seccomp_flat *fl,
        const char *name, uint64_t seed)
{
    uint64_t cand[SECCOMP_MAX_ARGS][128], args[SECCOMP_MAX_ARGS];
    size_t n[SECCOMP_MAX_ARGS];

    for (unsigned a = 0; a < SECCOMP_MAX_ARGS; a++)
        n[a] = candidates(p, name, a, cand[a], sizeof(cand[a]) / sizeof(cand[a][0]));
    for (int s = 0; s < SAMPLES_PER_NAME; s++) {
        for (unsigned a = 0; a < SECCOMP_MAX_ARGS; a++)
            args[a] = cand[a][next_rand(&seed) % n[a]];
        if (list_verdict(p, name, args) != flat_verdict(fl, name, args))
            abort();
    }
}

static bool atoms_overlap(const struct seccomp_flat_rule *x, const struct seccomp_flat_rule *y)
{
    for (size_t i = 0; i < x->n_atoms; i++) {
        for (size_t k = 0; k < y->n_atoms; k++) {
            const struct seccomp_atom *a = &x->atoms[i], *b = &y->atoms[k];

            if (a->arg == b->arg && ((a->value ^ b->value) & a->mask & b->mask) != 0)
                return false;
        }
    }
    return true;
}

static void check_flat(const struct seccomp_policy *p, const struct seccomp_flat *fl)
{
    uint64_t seed = UINT64_C(0x9E3779B97F4A7C15) ^ fl->n_rules;

    for (size_t i = 0; i < fl->n_rules; i++) {
        const struct seccomp_flat_rule *f = &fl->rules[i];

        if (f->n_atoms > SECCOMP_MAX_ARGS || !memchr(f->name, '\0', sizeof(f->name)))
            abort();
        for (size_t k = 0; k < f->n_atoms; k++) {
            if (f->atoms[k].arg >= SECCOMP_MAX_ARGS || f->atoms[k].mask == 0 ||
                    (f->atoms[k].value & ~f->atoms[k].mask) != 0 ||
                    (k > 0 && f->atoms[k].arg <= f->atoms[k - 1].arg))
                abort();
        }
        for (size_t j = 0; fl->n_rules <= CHECK_MAX_RULES && j < i; j++) {
            const struct seccomp_flat_rule *g = &fl->rules[j];

            if (strcmp(f->name, g->name) == 0 &&
                    (f->action != g->action || f->errno_value != g->errno_value) &&
                    atoms_overlap(f, g))
                abort();
        }
    }
    for (size_t i = 0; i < p->n_rules; i++) {
        bool seen = false;

        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(p->rules[j].name, p->rules[i].name) == 0;
        if (!seen)
            check_name(p, fl, p->rules[i].name, seed + i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct seccomp_policy *p = NULL;
    struct seccomp_flat *fl = NULL;
    struct sbx_error *err = NULL;
    int r = seccomp_policy_parse((const char *)data, size, &p, &err);

    if (r < 0) {
        if (p)
            abort();
        check_error(r, err);
    } else {
        if (!p || err)
            abort();
        r = seccomp_policy_expand(p, &fl, &err);
        if (r < 0) {
            if (fl || r == SBX_E_INVALID)
                abort();
            check_error(r, err);
        } else {
            if (!fl || err)
                abort();
            check_flat(p, fl);
        }
    }
    seccomp_flat_free(fl);
    seccomp_policy_free(p);
    sbx_error_free(err);
    return 0;
}
