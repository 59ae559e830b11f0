/* SPDX-License-Identifier: MIT */
/*
 * seccomp.c: expand the one seccomp policy (parsed by seccomp_parse.c) into
 * masked-equality rules and compile those with libseccomp. Only (arg & mask) == value reaches
 * libseccomp: its 32-bit comparisons also test the high half of the
 * register, so `arg1 > X` style rules can be bypassed by setting high bits,
 * while a mask of 0xffffffff ignores them. Strict: anything unexpected in the
 * list is an error (STYLE E6). Errors follow error.h.
 */
#include <ctype.h>
#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/util.h"
#include "host/seccomp_policy.h"

#define FLAT_MAX_RULES 8192
#define WALK_MAX_STEPS (1u << 20)
#define BPF_MAX_INSNS  4096
#define DEFAULT_ACTION SCMP_ACT_ERRNO(ENOSYS) /* for syscalls not listed */

struct seccomp_flat *seccomp_flat_free(struct seccomp_flat *f)
{
    if (f) {
        free(f->rules);
        free(f);
    }
    return NULL;
}

/*
 * Expansion. walk() visits the argument space of one syscall as a binary
 * trie: for one argument it splits on the highest bit that some still
 * compatible pattern tests and has not been decided yet, until every
 * pattern either matches the whole region or none of it. A region's
 * decided bits form one (arg & mask) == value atom, so regions are disjoint
 * and each leaf knows exactly which allow lines hold there; then it moves on
 * to the next argument with those lines. For `notin v1..vn` the leaves are
 * the at most 32*n prefixes that contain no excluded value: exactly the
 * complement. want_covered selects the leaves where some line holds (the
 * allow rules of one line) or where none does (a deny line's fallback).
 */
struct walk {
    const struct seccomp_rule *rules[SECCOMP_ALLOWS_PER_NAME];
    size_t n_rules;
    bool want_covered;
    struct seccomp_flat_rule proto;
    struct seccomp_flat *out;
    size_t alloc;
    size_t steps; /* walk_bits() calls for this line, against pathological lists */
    struct sbx_error **err;
};

static const struct seccomp_cond *rule_cond(const struct seccomp_rule *r, unsigned arg)
{
    for (size_t i = 0; i < r->n_conds; i++) {
        if (r->conds[i].arg == arg)
            return &r->conds[i];
    }
    return NULL;
}

static uint64_t cond_mask(const struct seccomp_cond *c)
{
    return c->op == SECCOMP_OP_MASK_EQ ? c->mask : SECCOMP_LOW32;
}

static int emit(struct walk *w, const struct seccomp_atom *atoms, size_t n)
{
    struct seccomp_flat *f = w->out;
    struct seccomp_flat_rule *r;

    if (f->n_rules == FLAT_MAX_RULES)
        return sbx_error_set(w->err, SBX_E_LIMIT, 0,
                "policy.list:%u: '%s' expands to more than %d rules", w->proto.line, w->proto.name,
                FLAT_MAX_RULES);
    if (f->n_rules == w->alloc) {
        size_t cap = w->alloc ? w->alloc * 2 : 512;
        struct seccomp_flat_rule *q = realloc(f->rules, cap * sizeof(*q));

        if (!q)
            return sbx_error_set(w->err, SBX_E_NOMEM, ENOMEM, "out of memory");
        f->rules = q;
        w->alloc = cap;
    }
    r = &f->rules[f->n_rules++];
    *r = w->proto;
    memcpy(r->atoms, atoms, n * sizeof(*atoms));
    r->n_atoms = n;
    return 0;
}

static int walk_args(
        struct walk *w, unsigned arg, uint64_t active, struct seccomp_atom *atoms, size_t n);

static int walk_bits(struct walk *w, unsigned arg, uint64_t active, uint64_t mask, uint64_t value,
        struct seccomp_atom *atoms, size_t n)
{
    uint64_t undecided = 0, next = 0, bit = UINT64_C(1) << 63;
    int r;

    if (++w->steps > WALK_MAX_STEPS)
        return sbx_error_set(w->err, SBX_E_LIMIT, 0,
                "policy.list:%u: the conditions for '%s' are too complex to expand", w->proto.line,
                w->proto.name);
    for (size_t j = 0; j < w->n_rules; j++) {
        const struct seccomp_cond *c = rule_cond(w->rules[j], arg);
        bool hit = false;

        if (!(active >> j & 1))
            continue;
        if (!c) {
            next |= UINT64_C(1) << j;
            continue;
        }
        for (size_t k = 0; k < c->n_values; k++) {
            if (((c->values[k] ^ value) & cond_mask(c) & mask) == 0) {
                undecided |= cond_mask(c) & ~mask;
                hit = true;
            }
        }
        if (hit != (c->op == SECCOMP_OP_NOT_IN))
            next |= UINT64_C(1) << j;
    }
    if (undecided == 0) {
        atoms[n] = (struct seccomp_atom){.arg = arg, .mask = mask, .value = value};
        return walk_args(w, arg + 1, next, atoms, n + 1);
    }
    while (!(undecided & bit))
        bit >>= 1;
    r = walk_bits(w, arg, active, mask | bit, value, atoms, n);
    if (r < 0)
        return r;
    return walk_bits(w, arg, active, mask | bit, value | bit, atoms, n);
}

static int walk_args(
        struct walk *w, unsigned arg, uint64_t active, struct seccomp_atom *atoms, size_t n)
{
    unsigned first = SECCOMP_MAX_ARGS;

    if (active == 0)
        return w->want_covered ? 0 : emit(w, atoms, n);
    for (size_t j = 0; j < w->n_rules; j++) {
        unsigned rule_first = SECCOMP_MAX_ARGS;

        if (!(active >> j & 1))
            continue;
        for (size_t k = 0; k < w->rules[j]->n_conds; k++) {
            unsigned a = w->rules[j]->conds[k].arg;

            if (a >= arg && a < rule_first)
                rule_first = a;
        }
        if (rule_first == SECCOMP_MAX_ARGS) /* this line holds whatever follows */
            return w->want_covered ? emit(w, atoms, n) : 0;
        if (rule_first < first)
            first = rule_first;
    }
    return walk_bits(w, first, active, 0, 0, atoms, n);
}

static int walk_run(struct walk *w, const struct seccomp_rule *proto_rule)
{
    struct seccomp_atom atoms[SECCOMP_MAX_ARGS];
    uint64_t active;

    memset(&w->proto, 0, sizeof(w->proto));
    memcpy(w->proto.name, proto_rule->name, sizeof(w->proto.name));
    w->proto.action = proto_rule->action;
    w->proto.errno_value = proto_rule->errno_value;
    w->proto.line = proto_rule->line;
    w->steps = 0;
    if (w->n_rules == 0)
        return emit(w, atoms, 0);
    active = w->n_rules == 64 ? UINT64_MAX : (UINT64_C(1) << w->n_rules) - 1;
    return walk_args(w, 0, active, atoms, 0);
}

int seccomp_policy_expand(
        const struct seccomp_policy *p, struct seccomp_flat **ret, struct sbx_error **err)
{
    struct walk w = {.err = err};
    int r = 0;

    if (!p || !ret)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "seccomp_policy_expand: NULL argument");
    w.out = calloc(1, sizeof(*w.out));
    if (!w.out)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    for (size_t i = 0; i < p->n_rules && r == 0; i++) {
        const struct seccomp_rule *rule = &p->rules[i];

        w.n_rules = 0;
        w.want_covered = rule->action == SECCOMP_RULE_ALLOW;
        if (w.want_covered) {
            w.rules[w.n_rules++] = rule;
        } else {
            /* a deny: its fallback region is what no allow line of the name covers */
            for (size_t k = 0; k < p->n_rules; k++) {
                if (p->rules[k].action == SECCOMP_RULE_ALLOW &&
                        strcmp(p->rules[k].name, rule->name) == 0)
                    w.rules[w.n_rules++] = &p->rules[k];
            }
        }
        r = walk_run(&w, rule);
    }
    if (r < 0) {
        seccomp_flat_free(w.out);
        return r;
    }
    *ret = w.out;
    return 0;
}

/* The exported program, read back from a memfd: libseccomp 2.5 can only
 * export to a file descriptor. */
static int export_bpf(scmp_filter_ctx ctx, void **ret_bpf, size_t *ret_len, struct sbx_error **err)
{
    cleanup_close int fd = memfd_create("sbx-seccomp", MFD_CLOEXEC);
    cleanup_free void *buf = NULL;
    struct stat st;
    size_t len;
    ssize_t got;
    int r;

    if (fd < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "seccomp: memfd_create: %s", strerror(errno));
    r = seccomp_export_bpf(ctx, fd);
    if (r < 0)
        return sbx_error_set(
                err, SBX_E_INTERNAL, -r, "seccomp: exporting the filter: %s", strerror(-r));
    if (fstat(fd, &st) < 0)
        return sbx_error_set(err, SBX_E_IO, errno, "seccomp: fstat: %s", strerror(errno));
    len = (size_t)st.st_size;
    if (len == 0 || len % 8 != 0)
        return sbx_error_set(err, SBX_E_INTERNAL, 0, "seccomp: exported %zu bytes", len);
    if (len / 8 > BPF_MAX_INSNS)
        return sbx_error_set(err, SBX_E_LIMIT, 0,
                "seccomp: the filter has %zu instructions, the kernel takes %d; shorten "
                "policy.list",
                len / 8, BPF_MAX_INSNS);
    buf = malloc(len);
    if (!buf)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    got = pread(fd, buf, len, 0);
    if (got < 0 || (size_t)got != len)
        return sbx_error_set(
                err, SBX_E_IO, got < 0 ? errno : EIO, "seccomp: reading back the filter failed");
    *ret_bpf = steal_ptr(&buf);
    *ret_len = len;
    return 0;
}

static int add_rule(scmp_filter_ctx ctx, const struct seccomp_flat_rule *fr, struct sbx_error **err)
{
    struct scmp_arg_cmp cmp[SECCOMP_MAX_ARGS];
    uint32_t action;
    int nr, r;

    /* negative: unknown here, or a pseudo-number for another architecture */
    nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, fr->name);
    if (nr < 0)
        return 0;
    for (size_t i = 0; i < fr->n_atoms; i++) {
        cmp[i] = (struct scmp_arg_cmp){.arg = fr->atoms[i].arg,
                .op = SCMP_CMP_MASKED_EQ,
                .datum_a = fr->atoms[i].mask,
                .datum_b = fr->atoms[i].value};
    }
    action = fr->action == SECCOMP_RULE_ALLOW ? SCMP_ACT_ALLOW
                                              : SCMP_ACT_ERRNO((uint32_t)fr->errno_value);
    if (action == DEFAULT_ACTION) /* libseccomp refuses those with EACCES */
        return 0;
    r = seccomp_rule_add_exact_array(ctx, action, nr, (unsigned)fr->n_atoms, cmp);
    if (r < 0)
        return sbx_error_set(err, SBX_E_INTERNAL, -r,
                "policy.list:%u: libseccomp refused a rule for '%s': %s", fr->line, fr->name,
                strerror(-r));
    return 0;
}

/* libseccomp refuses KILL_PROCESS when its probe of the running kernel
 * fails (valgrind, for one, does not know seccomp(2)). The program is
 * exported for a sandbox to load, not loaded here, and a kernel before 4.14
 * reads that action as KILL_THREAD, so claim API level 3 ("kill process"). */
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void api_init(void)
{
    if (seccomp_api_get() < 3)
        seccomp_api_set(3);
}

int seccomp_policy_compile(
        const struct seccomp_policy *p, void **ret_bpf, size_t *ret_len, struct sbx_error **err)
{
    struct seccomp_flat *flat = NULL;
    scmp_filter_ctx ctx;
    int r;

    if (!p || !ret_bpf || !ret_len)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "seccomp_policy_compile: NULL argument");
    r = seccomp_policy_expand(p, &flat, err);
    if (r < 0)
        return r;
    pthread_once(&api_once, api_init);
    ctx = seccomp_init(DEFAULT_ACTION);
    if (!ctx) {
        seccomp_flat_free(flat);
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "seccomp: seccomp_init failed");
    }
    r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (r == 0) /* a binary search over syscall numbers instead of ~400 compares */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (r < 0)
        r = sbx_error_set(
                err, SBX_E_INTERNAL, -r, "seccomp: setting filter attributes: %s", strerror(-r));
    for (size_t i = 0; r == 0 && i < flat->n_rules; i++)
        r = add_rule(ctx, &flat->rules[i], err);
    if (r == 0)
        r = export_bpf(ctx, ret_bpf, ret_len, err);
    seccomp_release(ctx);
    seccomp_flat_free(flat);
    return r;
}

static pthread_once_t bpf_once = PTHREAD_ONCE_INIT;
static void *bpf_bytes;
static size_t bpf_len;
static int bpf_rc, bpf_errno;
static char bpf_msg[256];

#ifdef SBX_SECCOMP_PREBUILT
/* Compiled at build time by core/tools/seccomp_gen.c from the same list. */
extern const unsigned char seccomp_prebuilt_bpf[];
extern const size_t seccomp_prebuilt_len;
#endif

static void bpf_build(void)
{
    const char *text = seccomp_policy_text();
    struct seccomp_policy *p = NULL;
    struct sbx_error *e = NULL;

#ifdef SBX_SECCOMP_PREBUILT
    bpf_bytes = (void *)(uintptr_t)seccomp_prebuilt_bpf;
    bpf_len = seccomp_prebuilt_len;
    bpf_rc = 0;
    return;
#endif
    bpf_rc = seccomp_policy_parse(text, strlen(text), &p, &e);
    if (bpf_rc == 0)
        bpf_rc = seccomp_policy_compile(p, &bpf_bytes, &bpf_len, &e);
    if (bpf_rc < 0) {
        snprintf(bpf_msg, sizeof(bpf_msg), "%s", e ? e->msg : "failed without a message");
        bpf_errno = e ? e->sys_errno : 0;
    }
    seccomp_policy_free(p);
    sbx_error_free(e);
}

int seccomp_bpf_get(const void **ret_bpf, size_t *ret_len, struct sbx_error **err)
{
    if (!ret_bpf || !ret_len)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "seccomp_bpf_get: NULL argument");
    pthread_once(&bpf_once, bpf_build);
    if (bpf_rc < 0)
        return sbx_error_set(err, bpf_rc, bpf_errno, "built-in seccomp policy: %s", bpf_msg);
    *ret_bpf = bpf_bytes;
    *ret_len = bpf_len;
    return 0;
}

/* The zygote's box: only what giving a child its own namespaces takes. */
static const char *const zygote_allows[] = {"unshare", "mount", "umount2"};

int seccomp_policy_zygote(struct seccomp_policy *p, struct sbx_error **err)
{
    size_t found = 0;

    if (!p)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "seccomp_policy_zygote: NULL argument");
    for (size_t i = 0; i < p->n_rules; i++) {
        struct seccomp_rule *r = &p->rules[i];

        for (size_t k = 0; k < sizeof(zygote_allows) / sizeof(zygote_allows[0]); k++) {
            if (strcmp(r->name, zygote_allows[k]) != 0)
                continue;
            r->action = SECCOMP_RULE_ALLOW; /* the list denies each outright */
            r->n_conds = 0;
            found++;
        }
    }
    if (found != sizeof(zygote_allows) / sizeof(zygote_allows[0]))
        return sbx_error_set(err, SBX_E_INTERNAL, 0,
                "policy.list must deny unshare, mount and umount2 once each");
    return 0;
}

static pthread_once_t zyg_once = PTHREAD_ONCE_INIT;
static void *zyg_bytes;
static size_t zyg_len;
static int zyg_rc, zyg_errno;
static char zyg_msg[256];

static void zyg_build(void)
{
    const char *text = seccomp_policy_text();
    struct seccomp_policy *p = NULL;
    struct sbx_error *e = NULL;

    zyg_rc = seccomp_policy_parse(text, strlen(text), &p, &e);
    if (zyg_rc == 0)
        zyg_rc = seccomp_policy_zygote(p, &e);
    if (zyg_rc == 0)
        zyg_rc = seccomp_policy_compile(p, &zyg_bytes, &zyg_len, &e);
    if (zyg_rc < 0) {
        snprintf(zyg_msg, sizeof(zyg_msg), "%s", e ? e->msg : "failed without a message");
        zyg_errno = e ? e->sys_errno : 0;
    }
    seccomp_policy_free(p);
    sbx_error_free(e);
}

int seccomp_zygote_bpf_get(const void **ret_bpf, size_t *ret_len, struct sbx_error **err)
{
    if (!ret_bpf || !ret_len)
        return sbx_error_set(err, SBX_E_INVALID, EINVAL, "seccomp_zygote_bpf_get: NULL argument");
    pthread_once(&zyg_once, zyg_build);
    if (zyg_rc < 0)
        return sbx_error_set(err, zyg_rc, zyg_errno, "the zygote's seccomp policy: %s", zyg_msg);
    *ret_bpf = zyg_bytes;
    *ret_len = zyg_len;
    return 0;
}
