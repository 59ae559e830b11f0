/* SPDX-License-Identifier: MIT */
/*
 * test_seccomp.c: the seccomp policy list, its parser, the expansion into
 * masked-equality rules (checked by sampling, without libseccomp) and the
 * compiled filter enforced by the kernel. Enforcement checks run in forked
 * children that install the filter and _exit with a code the parent asserts;
 * every probe uses invalid pointers, fds or flags, so a filter that failed
 * to refuse it still does no harm (bubblewrap's try-syscall style).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "host/seccomp_policy.h"

#define LOW32   UINT64_C(0xFFFFFFFF)
#define HIGHBIT (UINT64_C(1) << 32)

/* ------------------------------------------------------------------ */
/* helpers                                                              */
/* ------------------------------------------------------------------ */

static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static struct seccomp_policy *parse_ok(const char *text)
{
    struct seccomp_policy *p = NULL;
    struct sbx_error *e = NULL;
    int r = seccomp_policy_parse(text, strlen(text), &p, &e);

    if (r < 0)
        fail_msg("parse failed: %s", e->msg);
    assert_non_null(p);
    return p;
}

static struct seccomp_flat *expand_ok(const struct seccomp_policy *p)
{
    struct seccomp_flat *f = NULL;
    struct sbx_error *e = NULL;

    if (seccomp_policy_expand(p, &f, &e) < 0)
        fail_msg("expand failed: %s", e->msg);
    return f;
}

static bool flat_rule_matches(const struct seccomp_flat_rule *r, const uint64_t args[6])
{
    for (size_t i = 0; i < r->n_atoms; i++) {
        if ((args[r->atoms[i].arg] & r->atoms[i].mask) != r->atoms[i].value)
            return false;
    }
    return true;
}

/* How many allow and errno rules of name match args. */
static void classify(const struct seccomp_flat *f, const char *name, const uint64_t args[6],
        size_t *ret_allow, size_t *ret_deny)
{
    *ret_allow = 0;
    *ret_deny = 0;
    for (size_t i = 0; i < f->n_rules; i++) {
        if (strcmp(f->rules[i].name, name) != 0 || !flat_rule_matches(&f->rules[i], args))
            continue;
        if (f->rules[i].action == SECCOMP_RULE_ALLOW)
            (*ret_allow)++;
        else
            (*ret_deny)++;
    }
}

static const struct seccomp_rule *find_rule(
        const struct seccomp_policy *p, const char *name, enum seccomp_action action)
{
    for (size_t i = 0; i < p->n_rules; i++) {
        if (strcmp(p->rules[i].name, name) == 0 && p->rules[i].action == action)
            return &p->rules[i];
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* the embedded list                                                    */
/* ------------------------------------------------------------------ */

struct want_deny {
    const char *name;
    int errno_value;
};

static const struct want_deny required_denials[] = {
        {"io_uring_setup", EPERM},
        {"io_uring_enter", EPERM},
        {"io_uring_register", EPERM},
        {"userfaultfd", EPERM},
        {"perf_event_open", EPERM},
        {"bpf", EPERM},
        {"keyctl", EPERM},
        {"add_key", EPERM},
        {"request_key", EPERM},
        {"ptrace", EPERM},
        {"process_vm_readv", EPERM},
        {"process_vm_writev", EPERM},
        {"mount", EPERM},
        {"umount2", EPERM},
        {"mount_setattr", EPERM},
        {"move_mount", EPERM},
        {"open_tree", EPERM},
        {"fsopen", EPERM},
        {"fsconfig", EPERM},
        {"fsmount", EPERM},
        {"fspick", EPERM},
        {"pivot_root", EPERM},
        {"chroot", EPERM},
        {"unshare", EPERM},
        {"setns", EPERM},
        {"kexec_load", EPERM},
        {"kexec_file_load", EPERM},
        {"init_module", EPERM},
        {"finit_module", EPERM},
        {"delete_module", EPERM},
        {"acct", EPERM},
        {"swapon", EPERM},
        {"swapoff", EPERM},
        {"reboot", EPERM},
        {"syslog", EPERM},
        {"quotactl", EPERM},
        {"quotactl_fd", EPERM},
        {"lookup_dcookie", EPERM},
        {"name_to_handle_at", EPERM},
        {"open_by_handle_at", EPERM},
        {"settimeofday", EPERM},
        {"clock_settime", EPERM},
        {"clock_adjtime", EPERM},
        {"adjtimex", EPERM},
        {"vhangup", EPERM},
        {"iopl", EPERM},
        {"ioperm", EPERM},
        {"personality", EPERM},
        {"kcmp", EPERM},
        {"pidfd_getfd", EPERM},
        {"process_madvise", EPERM},
        {"mbind", EPERM},
        {"set_mempolicy", EPERM},
        {"move_pages", EPERM},
        {"migrate_pages", EPERM},
        {"memfd_secret", EPERM},
        {"fanotify_init", EPERM},
        {"nfsservctl", EPERM},
        {"uselib", EPERM},
        {"ustat", EPERM},
        {"sysfs", EPERM},
        {"_sysctl", EPERM},
        {"clone3", ENOSYS},
        {"clone", EPERM},
        {"landlock_create_ruleset", ENOSYS},
        {"landlock_add_rule", ENOSYS},
        {"landlock_restrict_self", ENOSYS},
};

/* A few that normal runtimes need. */
static const char *const needed[] = {"rseq", "statx", "faccessat2", "close_range", "epoll_pwait2",
        "pidfd_open", "pidfd_send_signal", "getrandom", "memfd_create", "copy_file_range",
        "membarrier", "sched_getaffinity", "prctl", "arch_prctl", "seccomp", "execve", "futex",
        "mmap", "wait4", "clone", "pipe2", "vfork"};

static void test_real_list_parses(void **state)
{
    struct seccomp_policy *p = NULL;
    const struct seccomp_rule *r;

    (void)state;
    p = parse_ok(seccomp_policy_text());
    assert_true(p->n_rules > 300);
    for (size_t i = 0; i < sizeof(required_denials) / sizeof(required_denials[0]); i++) {
        const struct seccomp_rule *d = find_rule(p, required_denials[i].name, SECCOMP_RULE_ERRNO);

        if (!d)
            fail_msg("'%s' is not denied", required_denials[i].name);
        else
            assert_int_equal(d->errno_value, required_denials[i].errno_value);
    }
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        if (!find_rule(p, needed[i], SECCOMP_RULE_ALLOW))
            fail_msg("'%s' is not allowed", needed[i]);
    }
    /* cmocka's failures are not noreturn: -O2 -Wnull-dereference wants the if */
    r = find_rule(p, "ioctl", SECCOMP_RULE_ALLOW);
    assert_non_null(r);
    if (r) {
        assert_int_equal(r->n_conds, 1);
        assert_int_equal(r->conds[0].op, SECCOMP_OP_NOT_IN);
        assert_int_equal(r->conds[0].arg, 1);
    }
    r = find_rule(p, "clone", SECCOMP_RULE_ALLOW);
    assert_non_null(r);
    if (r) {
        assert_int_equal(r->conds[0].op, SECCOMP_OP_MASK_EQ);
        assert_int_equal(r->conds[0].mask, 0x7E020080);
    }
    seccomp_policy_free(p);
}

/* A misspelt name would be skipped silently by the compiler, so every name
 * must be known to libseccomp (for some architecture) or be newer than the
 * oldest libseccomp we build with (2.5.4). */
static void test_real_list_names_known(void **state)
{
    static const char *const newer[] = {"mseal"};
    struct seccomp_policy *p = parse_ok(seccomp_policy_text());

    (void)state;
    for (size_t i = 0; i < p->n_rules; i++) {
        bool is_newer = false;

        for (size_t k = 0; k < sizeof(newer) / sizeof(newer[0]); k++)
            is_newer = is_newer || strcmp(newer[k], p->rules[i].name) == 0;
        if (!is_newer && seccomp_syscall_resolve_name(p->rules[i].name) == __NR_SCMP_ERROR)
            fail_msg("policy.list:%u: libseccomp does not know '%s'", p->rules[i].line,
                    p->rules[i].name);
    }
    seccomp_policy_free(p);
}

/* ------------------------------------------------------------------ */
/* parser                                                               */
/* ------------------------------------------------------------------ */

struct bad_case {
    const char *text;
    size_t len; /* 0: strlen */
    unsigned line;
    const char *needle;
};

static void test_parse_rejects(void **state)
{
    static const char long_line[] = "allow "
                                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                    "aaaa\n";
    static const struct bad_case cases[] = {
            {"allow read\nbogus read\n", 0, 2, "expected 'allow' or 'deny'"},
            {"\n\n# c\nallow read junk\n", 0, 4, "expected arg0..arg5"},
            {"allow ioctl arg1 notin TIOCSTI,NOPE\n", 0, 1, "unknown value 'NOPE'"},
            {"allow ioctl arg6 == 1\n", 0, 1, "expected arg0..arg5"},
            {"allow ioctl arg10 == 1\n", 0, 1, "expected arg0..arg5"},
            {"allow x arg0 in 1,2,3,4,5,6,7,8,9\n", 0, 1, "more than 8 values"},
            {"allow x arg0 == 1 arg1 == 2 arg2 == 3 arg3 == 4\n", 0, 1, "more than 3 conditions"},
            {"allow x arg0 == 1 arg0 == 2\n", 0, 1, "two conditions on arg0"},
            {"allow x arg2 in 1 arg2 notin 3\n", 0, 1, "two conditions on arg2"},
            {"allow x arg0 in 1,,2\n", 0, 1, "empty value"},
            {"allow x arg0 in 1,\n", 0, 1, "empty value"},
            {"allow x arg0 in 1,1\n", 0, 1, "listed twice"},
            {"allow x arg0 == 0x1ffffffff\n", 0, 1, "32 bits"},
            {"allow x arg0 notin 4294967296\n", 0, 1, "32 bits"},
            {"allow x arg0 & 0 == 0\n", 0, 1, "mask 0"},
            {"allow x arg0 & 0xf == 0x10\n", 0, 1, "bits outside the mask"},
            {"allow x arg0 == 12abc\n", 0, 1, "bad number '12abc'"},
            {"allow x arg0 == -1\n", 0, 1, "bad number"},
            {"allow x arg0 == 0xzz\n", 0, 1, "bad hex number"},
            {"allow x arg0 == 0x\n", 0, 1, "bad hex number"},
            {"allow x arg0 == 99999999999999999999999\n", 0, 1, "bad number"},
            {"allow x arg0 ==\n", 0, 1, "expected '== VALUE'"},
            {"allow x arg0 > 1\n", 0, 1, "expected '== VALUE'"},
            {"allow x arg0 & 0xff 1\n", 0, 1, "expected '== VALUE'"},
            {"deny x EWHAT\n", 0, 1, "unknown errno 'EWHAT'"},
            {"deny x EPERM extra\n", 0, 1, "unexpected 'extra'"},
            {"deny x arg0 == 1\n", 0, 1, "unknown errno"},
            {"allow X\n", 0, 1, "syscall name"},
            {"allow\n", 0, 1, "syscall name"},
            {"allow 9p\n", 0, 1, "syscall name"},
            {"allow a_name_that_is_far_too_long_for_a_syscall\n", 0, 1, "syscall name"},
            {"ALLOW read\n", 0, 1, "expected 'allow' or 'deny'"},
            {"allow read\r\n", 0, 1, "unexpected byte 0x0d"},
            {"allow read\nallow w\xc3\xa9\n", 0, 2, "unexpected byte 0xc3"},
            {"allow read\nallow write\0\n", 23, 2, "NUL byte"},
            {"deny read\ndeny read ENOSYS\n", 0, 2, "denied twice (line 1)"},
            {"allow read\ndeny read\n", 0, 2, "both allowed and denied (line 1)"},
            {"deny read\n\nallow read\n", 0, 3, "both allowed and denied (line 1)"},
            {"allow read\nallow read\n", 0, 2, "allowed twice (line 1)"},
            {"allow ioctl arg1 == 1\nallow ioctl\n", 0, 2, "with and without conditions (line 1)"},
            {"allow ioctl\nallow ioctl arg1 == 1\n", 0, 2, "with and without conditions (line 1)"},
            {long_line, 0, 1, "line longer than"},
            {"allow x a b c d e f g h i j k l m n o p q r s t u v w x y z\n", 0, 1,
                    "too many words"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct seccomp_policy *p = NULL;
        struct sbx_error *e = NULL;
        char prefix[64];
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
        int r = seccomp_policy_parse(cases[i].text, len, &p, &e);

        if (r != SBX_E_INVALID || !e)
            fail_msg("case %zu: accepted or wrong rc %d", i, r);
        assert_null(p);
        snprintf(prefix, sizeof(prefix), "policy.list:%u: ", cases[i].line);
        if (strncmp(e->msg, prefix, strlen(prefix)) != 0 || !strstr(e->msg, cases[i].needle))
            fail_msg("case %zu: got '%s', want '%s...%s'", i, e->msg, prefix, cases[i].needle);
        sbx_error_free(e);
    }
}

static void test_parse_accepts(void **state)
{
    struct seccomp_policy *p;

    (void)state;
    p = parse_ok("# only a comment\n\n   \n\t# indented comment, caf\xc3\xa9\n"
                 "allow read # trailing comment\n"
                 "allow\tx\targ0\t==\t1\n"
                 "allow y arg0 & 0x7E020000 == 0x20000 arg2 in AF_UNIX,2,0xa arg5 notin 7\n"
                 "allow socket arg0 == AF_UNIX\n"
                 "allow socket arg0 == AF_INET\n"
                 "deny socket EAFNOSUPPORT\n"
                 "deny z\n"
                 "allow last_line_without_newline");
    assert_int_equal(p->n_rules, 8);
    assert_string_equal(p->rules[0].name, "read");
    assert_int_equal(p->rules[0].line, 5);
    assert_int_equal(p->rules[1].conds[0].op, SECCOMP_OP_EQ);
    assert_int_equal(p->rules[1].conds[0].values[0], 1);
    assert_int_equal(p->rules[2].n_conds, 3);
    assert_int_equal(p->rules[2].conds[0].mask, 0x7E020000);
    assert_int_equal(p->rules[2].conds[0].values[0], 0x20000);
    assert_int_equal(p->rules[2].conds[1].arg, 2);
    assert_int_equal(p->rules[2].conds[1].n_values, 3);
    assert_int_equal(p->rules[2].conds[1].values[2], 10);
    assert_int_equal(p->rules[2].conds[2].op, SECCOMP_OP_NOT_IN);
    assert_int_equal(p->rules[5].errno_value, EAFNOSUPPORT);
    assert_int_equal(p->rules[6].errno_value, EPERM);
    assert_int_equal(p->rules[7].line, 12);
    seccomp_policy_free(p);
    p = parse_ok("");
    assert_int_equal(p->n_rules, 0);
    seccomp_policy_free(p);
}

/* ------------------------------------------------------------------ */
/* expansion: the partition, checked by sampling (no libseccomp)        */
/* ------------------------------------------------------------------ */

static bool in_set(uint64_t v, const uint64_t *set, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((v & LOW32) == set[i])
            return true;
    }
    return false;
}

/* `allow ioctl arg1 notin SET`: exactly the excluded low-32-bit values,
 * whatever the high half, are matched by no rule; everything else by one. */
static void check_notin(const uint64_t *set, size_t n)
{
    char text[256];
    size_t off = (size_t)snprintf(text, sizeof(text), "allow ioctl arg1 notin ");
    struct seccomp_policy *p;
    struct seccomp_flat *f;
    uint64_t args[6] = {0};

    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(
                text + off, sizeof(text) - off, "%s%#" PRIx64, i ? "," : "", set[i]);
    p = parse_ok(text);
    f = expand_ok(p);
    assert_true(f->n_rules >= 1 && f->n_rules <= 32 * n);
    for (size_t i = 0; i < f->n_rules; i++) {
        assert_int_equal(f->rules[i].n_atoms, 1);
        assert_int_equal(f->rules[i].atoms[0].arg, 1);
        assert_int_equal(f->rules[i].atoms[0].mask & ~LOW32, 0);
        assert_int_equal(f->rules[i].atoms[0].value & ~f->rules[i].atoms[0].mask, 0);
    }
    for (size_t s = 0; s < 20000; s++) {
        uint64_t v, base = set[rnd() % n];
        size_t allow, deny;

        switch (s % 5) {
        case 0: v = base; break;                                 /* excluded */
        case 1: v = base ^ (UINT64_C(1) << (rnd() % 64)); break; /* a neighbour */
        case 2: v = base + (rnd() % 5) - 2; break;               /* close by */
        case 3: v = base | (rnd() << 32); break;                 /* high bits */
        default: v = rnd(); break;
        }
        args[1] = v;
        classify(f, "ioctl", args, &allow, &deny);
        assert_int_equal(deny, 0);
        if (in_set(v, set, n) ? allow != 0 : allow != 1)
            fail_msg("value %#" PRIx64 " matched %zu rules (notin %s)", v, allow, text);
        args[0] = rnd(); /* other arguments never matter */
    }
    seccomp_flat_free(f);
    seccomp_policy_free(p);
}

static void test_partition_notin(void **state)
{
    static const uint64_t tiocsti[] = {0x5412, 0x541C};
    static const uint64_t zero[] = {0};
    static const uint64_t ones[] = {0xFFFFFFFF};
    static const uint64_t ends[] = {0, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF};
    static const uint64_t run[] = {16, 17, 18, 19, 20, 21, 22, 23};
    uint64_t set[SECCOMP_MAX_VALUES];

    (void)state;
    check_notin(tiocsti, 2);
    check_notin(zero, 1);
    check_notin(ones, 1);
    check_notin(ends, 4);
    check_notin(run, 8);
    for (int round = 0; round < 40; round++) {
        size_t n = 1 + (size_t)(rnd() % SECCOMP_MAX_VALUES);

        for (size_t i = 0; i < n; i++) {
            uint64_t v;

            do {
                v = round % 2 ? rnd() & LOW32 : 0x5400 + (rnd() % 64);
            } while (in_set(v, set, i));
            set[i] = v;
        }
        check_notin(set, n);
    }
}

static void test_expand_in_and_mask(void **state)
{
    struct seccomp_policy *p = parse_ok("allow socket arg0 in 1,2,10\n"
                                        "allow clone arg0 & 0x7E020080 == 0\n"
                                        "allow read\n"
                                        "deny bpf\n");
    struct seccomp_flat *f = expand_ok(p);

    (void)state;
    assert_int_equal(f->n_rules, 6);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(f->rules[i].name, "socket");
        assert_int_equal(f->rules[i].n_atoms, 1);
        assert_int_equal(f->rules[i].atoms[0].mask, LOW32);
    }
    assert_int_equal(f->rules[2].atoms[0].value, 10);
    assert_int_equal(f->rules[3].atoms[0].mask, 0x7E020080);
    assert_int_equal(f->rules[3].atoms[0].value, 0);
    assert_int_equal(f->rules[4].n_atoms, 0);
    assert_int_equal(f->rules[5].action, SECCOMP_RULE_ERRNO);
    assert_int_equal(f->rules[5].n_atoms, 0);
    assert_int_equal(f->rules[5].errno_value, EPERM);
    seccomp_flat_free(f);
    seccomp_policy_free(p);
}

typedef bool (*allowed_fn)(const uint64_t args[6]);

static bool socket_allowed(const uint64_t a[6])
{
    uint64_t fam = a[0] & LOW32;

    return fam == 1 || fam == 2 || fam == 10 || (fam == 16 && (a[2] & LOW32) == 0);
}

static bool ioctl_allowed(const uint64_t a[6])
{
    return (a[1] & LOW32) != 0x5412 && (a[1] & LOW32) != 0x541C;
}

static bool personality_allowed(const uint64_t a[6])
{
    uint64_t v = a[0] & LOW32;

    return v == 0 || v == 8 || v == 0x20000 || v == 0x20008 || v == 0xFFFFFFFF;
}

static bool clone_allowed(const uint64_t a[6])
{
    return (a[0] & UINT64_C(0x7E020080)) == 0;
}

static bool socketpair_allowed(const uint64_t a[6])
{
    return (a[0] & LOW32) == 1;
}

/* Each sample matches allow rules iff want() says so (several allow lines
 * may overlap), else exactly one rule of the deny fallback. */
static void check_fallback(const struct seccomp_flat *f, const char *name, allowed_fn want,
        const uint64_t *interesting, size_t n_interesting)
{
    for (size_t s = 0; s < 50000; s++) {
        uint64_t args[6];
        size_t allow, deny;

        for (size_t a = 0; a < 6; a++) {
            uint64_t v = interesting[rnd() % n_interesting];

            switch (rnd() % 4) {
            case 0: break;
            case 1: v |= rnd() << 32; break;
            case 2: v ^= UINT64_C(1) << (rnd() % 64); break;
            default: v = rnd() % 3 ? rnd() % 64 : rnd(); break;
            }
            args[a] = v;
        }
        classify(f, name, args, &allow, &deny);
        if (deny > 1 || (allow > 0) == (deny > 0) || (allow > 0) != want(args))
            fail_msg("%s(%#" PRIx64 ", %#" PRIx64 ", %#" PRIx64 "): %zu allow and %zu deny rules",
                    name, args[0], args[1], args[2], allow, deny);
    }
}

static void test_fallback_real_list(void **state)
{
    static const uint64_t socket_vals[] = {0, 1, 2, 10, 16, 38, 40, 17, 9, 3};
    static const uint64_t ioctl_vals[] = {0x5412, 0x541C, 0x541B, 0, 0xFFFFFFFF};
    static const uint64_t pers_vals[] = {0, 8, 0x20000, 0x20008, 0xFFFFFFFF, 0x400000};
    static const uint64_t clone_vals[] = {
            0x11, 0x3D0F00, 0x40000000, 0x10000000, 0x80, 0x20000, 0x7E020080};
    struct seccomp_policy *p = parse_ok(seccomp_policy_text());
    struct seccomp_flat *f = expand_ok(p);

    (void)state;
    check_fallback(f, "socket", socket_allowed, socket_vals, 10);
    check_fallback(f, "ioctl", ioctl_allowed, ioctl_vals, 5);
    check_fallback(f, "personality", personality_allowed, pers_vals, 6);
    check_fallback(f, "clone", clone_allowed, clone_vals, 7);
    check_fallback(f, "socketpair", socketpair_allowed, socket_vals, 10);
    seccomp_flat_free(f);
    seccomp_policy_free(p);
}

static bool multi_allowed(const uint64_t a[6])
{
    bool line1 = ((a[0] & LOW32) == 1 || (a[0] & LOW32) == 2) && (a[3] & LOW32) != 5;
    bool line2 = (a[1] & 0xF0) == 0x10;
    bool line3 = (a[0] & LOW32) == 3 && (a[5] & 0xFF00000000) == 0x100000000;

    return line1 || line2 || line3;
}

/* The fallback of lines that test different arguments. */
static void test_fallback_multi_arg(void **state)
{
    static const uint64_t vals[] = {0, 1, 2, 3, 5, 0x10, 0x1F, 0x20, 0x100000000};
    struct seccomp_policy *p = parse_ok("allow x arg0 in 1,2 arg3 notin 5\n"
                                        "allow x arg1 & 0xf0 == 0x10\n"
                                        "allow x arg0 == 3 arg5 & 0xff00000000 == 0x100000000\n"
                                        "deny x EACCES\n");
    struct seccomp_flat *f = expand_ok(p);

    (void)state;
    for (size_t i = 0; i < f->n_rules; i++) {
        if (f->rules[i].action == SECCOMP_RULE_ERRNO)
            assert_int_equal(f->rules[i].errno_value, EACCES);
    }
    check_fallback(f, "x", multi_allowed, vals, 9);
    seccomp_flat_free(f);
    seccomp_policy_free(p);
}

/* ------------------------------------------------------------------ */
/* the compiled program                                                 */
/* ------------------------------------------------------------------ */

static void *get_bpf_thread(void *arg)
{
    const void **out = arg;
    size_t len = 0;
    struct sbx_error *e = NULL;

    if (seccomp_bpf_get(out, &len, &e) < 0)
        *out = NULL;
    sbx_error_free(e);
    return NULL;
}

/* Runs first, so that the threads race to build the program. */
static void test_bpf_get_threads(void **state)
{
    pthread_t t[4];
    const void *got[4] = {NULL};
    const void *bpf = NULL;
    size_t len = 0;
    struct sbx_error *e = NULL;

    (void)state;
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, get_bpf_thread, &got[i]), 0);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(seccomp_bpf_get(&bpf, &len, &e), 0);
    assert_non_null(bpf);
    assert_int_equal(len % sizeof(struct sock_filter), 0);
    assert_true(len / sizeof(struct sock_filter) <= BPF_MAXINSNS);
    for (size_t i = 0; i < 4; i++)
        assert_ptr_equal(got[i], bpf);
    assert_int_equal(seccomp_bpf_get(NULL, &len, &e), SBX_E_INVALID);
    sbx_error_free(e);
}

static int compile_text(const char *text, size_t *ret_insns, struct sbx_error **err)
{
    struct seccomp_policy *p = parse_ok(text);
    void *bpf = NULL;
    size_t len = 0;
    int r = seccomp_policy_compile(p, &bpf, &len, err);

    *ret_insns = len / sizeof(struct sock_filter);
    free(bpf);
    seccomp_policy_free(p);
    return r;
}

static void test_compile_edge_cases(void **state)
{
    struct sbx_error *e = NULL;
    size_t insns = 0;
    void *bpf = NULL;
    size_t len = 0;

    (void)state;
    /* unknown and foreign names are skipped; an ENOSYS deny is the default
     * action, which libseccomp would refuse to add */
    assert_int_equal(compile_text("allow read\nallow no_such_syscall_here\n"
                                  "deny chown32 ENOSYS\ndeny clone3 ENOSYS\n",
                             &insns, &e),
            0);
    assert_true(insns > 0);
    /* overlapping allow lines, and lines on different arguments */
    assert_int_equal(compile_text("allow socket arg0 in 1,2\nallow socket arg0 == 1\n"
                                  "allow socket arg0 & 1 == 1 arg2 == 0\ndeny socket\n",
                             &insns, &e),
            0);
    assert_int_equal(compile_text("allow clone arg0 & 0xffffffff00000000 == 0x100000000\n"
                                  "deny clone\n",
                             &insns, &e),
            0);
    /* bounded: three `notin` of 8 values multiply past the rule cap */
    assert_int_equal(compile_text("allow ioctl arg1 notin 1,2,3,4,5,6,7,8 "
                                  "arg2 notin 1,2,3,4,5,6,7,8 arg3 notin 1,2,3,4,5,6,7,8\n",
                             &insns, &e),
            SBX_E_LIMIT);
    assert_non_null(strstr(e->msg, "policy.list:1: 'ioctl' expands to more than"));
    e = sbx_error_free(e);
    assert_int_equal(seccomp_policy_compile(NULL, &bpf, &len, &e), SBX_E_INVALID);
    sbx_error_free(e);
}

/* ------------------------------------------------------------------ */
/* enforcement in filtered children                                     */
/* ------------------------------------------------------------------ */

/* In a filtered child: report and count, and go on with the next check. */
static int child_failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (errno %d: %s)\n", __FILE__, __LINE__, #cond, \
                    errno, strerror(errno));                                                       \
            child_failures++;                                                                      \
        }                                                                                          \
    } while (0)

static const void *filter_bpf;
static size_t filter_len;
static bool inet6_works;
static bool under_valgrind;

static bool fails_with(long r, int e)
{
    return r == -1 && errno == e;
}

/* Refused by the filter with e. Valgrind answers ENOSYS itself, without
 * asking the kernel, for the syscalls it does not emulate. */
static bool denied(long r, int e)
{
    return fails_with(r, e) || (under_valgrind && fails_with(r, ENOSYS));
}

static void install_filter_or_exit(void)
{
    struct sock_fprog prog = {
            .len = (unsigned short)(filter_len / sizeof(struct sock_filter)),
            .filter = (struct sock_filter *)filter_bpf,
    };

    if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) < 0)
        _exit(101);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
        _exit(102);
}

static int setup_group(void **state)
{
    int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    FILE *maps = fopen("/proc/self/maps", "re");
    char line[512];

    (void)state;
    inet6_works = fd >= 0;
    if (fd >= 0)
        close(fd);
    while (maps && fgets(line, sizeof(line), maps))
        under_valgrind = under_valgrind || strstr(line, "/vgpreload_") != NULL;
    if (maps)
        fclose(maps);
    return 0;
}

/* In the parent, before forking. */
static void ensure_filter(void)
{
    struct sbx_error *e = NULL;

    if (!filter_bpf && seccomp_bpf_get(&filter_bpf, &filter_len, &e) < 0)
        fail_msg("seccomp_bpf_get: %s", e->msg);
}

/* Fork, install the filter, run fn; the wait status. */
static int run_filtered(int (*fn)(void))
{
    int status = 0;
    pid_t pid;

    ensure_filter();
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        install_filter_or_exit();
        _exit(fn());
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void assert_child_ok(int status)
{
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("filtered child: %s %d", WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

static int child_denied(void)
{
    long r;

    CHECK(denied(syscall(SYS_ptrace, 1L /* PTRACE_PEEKTEXT */, 0L, 0L, 0L), EPERM));
    CHECK(denied(syscall(SYS_process_vm_readv, 0L, NULL, 0L, NULL, 0L, 0L), EPERM));
    CHECK(denied(syscall(SYS_bpf, -1L, NULL, 0L), EPERM));
    CHECK(denied(syscall(SYS_io_uring_setup, 0L, NULL), EPERM));
    CHECK(denied(syscall(SYS_userfaultfd, -1L), EPERM));
    CHECK(denied(syscall(SYS_perf_event_open, NULL, 0L, -1L, -1L, 0L), EPERM));
    CHECK(denied(syscall(SYS_keyctl, -1L, 0L, 0L, 0L, 0L), EPERM));
    CHECK(denied(syscall(SYS_add_key, NULL, NULL, NULL, 0L, 0L), EPERM));
    CHECK(denied(syscall(SYS_mount, NULL, NULL, NULL, 0L, NULL), EPERM));
    CHECK(denied(syscall(SYS_umount2, NULL, 0L), EPERM));
    CHECK(denied(syscall(SYS_pivot_root, NULL, NULL), EPERM));
    CHECK(denied(syscall(SYS_chroot, "/nonexistent-sbx"), EPERM));
    CHECK(denied(syscall(SYS_setns, -1L, 0L), EPERM));
    CHECK(denied(syscall(SYS_name_to_handle_at, -1L, NULL, NULL, NULL, 0L), EPERM));
    CHECK(denied(syscall(SYS_reboot, 0L, 0L, 0L, NULL), EPERM));
    CHECK(denied(syscall(SYS_init_module, NULL, 0L, NULL), EPERM));
    CHECK(denied(syscall(SYS_clock_settime, (long)CLOCK_REALTIME, NULL), EPERM));
    CHECK(denied(syscall(SYS_iopl, 99L), EPERM));
    CHECK(denied(syscall(SYS_kcmp, 0L, 0L, -1L, 0L, 0L), EPERM));
    CHECK(denied(syscall(SYS_pidfd_getfd, -1L, -1L, 0L), EPERM));
    CHECK(denied(syscall(SYS_mbind, NULL, 0L, 0L, NULL, 0L, 0L), EPERM));
    CHECK(denied(syscall(SYS_landlock_create_ruleset, NULL, 0L, 1L), ENOSYS));
    r = syscall(SYS_unshare, (long)CLONE_NEWUSER);
    CHECK(r == -1 && (errno == EPERM || errno == ENOSYS));
    CHECK(denied(syscall(SYS_clone3, NULL, 0L), ENOSYS));
#if defined(__x86_64__)
    /* never listed (lsm_list_modules, 6.8): the default ENOSYS, not EFAULT */
    CHECK(denied(syscall(461L, NULL, NULL, 0L), ENOSYS));
#endif
    /* personality: Docker's values only, on the low 32 bits */
    CHECK(denied(syscall(SYS_personality, 0x0400000L /* READ_IMPLIES_EXEC */), EPERM));
    CHECK(denied(syscall(SYS_personality, 0x0040000L /* ADDR_NO_RANDOMIZE */), EPERM));
    CHECK(denied(syscall(SYS_personality, (long)(HIGHBIT | 0x0400000)), EPERM));
    CHECK(syscall(SYS_personality, 0xFFFFFFFFL) >= 0);
    CHECK(syscall(SYS_personality, 0L) >= 0);
    return child_failures != 0;
}

/* Valgrind emulates syscalls: it reads pointer arguments itself (and
 * crashes on the deliberately invalid ones), answers ENOSYS for calls it
 * does not know and cannot enter int 0x80. The native and ASan runs test
 * these against the kernel. */
static void skip_under_valgrind(void)
{
    if (under_valgrind) {
        fprintf(stderr, "skipped under valgrind: it emulates the syscalls probed here\n");
        skip();
    }
}

static void test_enforce_denied(void **state)
{
    (void)state;
    skip_under_valgrind();
    assert_child_ok(run_filtered(child_denied));
}

/* clone with a namespace flag: refused. If it were not, the new child just
 * exits. */
static long try_clone(unsigned long flags)
{
    long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
    int saved;

    if (r == 0)
        _exit(0);
    saved = errno;
    if (r > 0)
        waitpid((pid_t)r, NULL, 0);
    errno = saved;
    return r;
}

static int child_clone(void)
{
    static const unsigned long ns[] = {CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID,
            CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP, CLONE_NEWUSER | CLONE_NEWNET};
    int status = 0;
    long r;

    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        CHECK(denied(try_clone(ns[i]), EPERM));
        CHECK(denied(try_clone(ns[i] | (unsigned long)HIGHBIT), EPERM));
    }
    /* a plain fork through clone still works */
    r = syscall(SYS_clone, (long)SIGCHLD, NULL, NULL, NULL, NULL);
    if (r == 0)
        _exit(3);
    CHECK(r > 0);
    if (r > 0) {
        CHECK(waitpid((pid_t)r, &status, 0) == (pid_t)r);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    }
    return child_failures != 0;
}

static void test_enforce_clone(void **state)
{
    (void)state;
    assert_child_ok(run_filtered(child_clone));
}

static int child_sockets(void)
{
    static const int refused[][3] = {{AF_ALG, SOCK_SEQPACKET, 0}, {AF_VSOCK, SOCK_STREAM, 0},
            {AF_PACKET, SOCK_RAW, 0}, {AF_NETLINK, SOCK_RAW, NETLINK_AUDIT},
            {AF_NETLINK, SOCK_RAW, NETLINK_XFRM}, {AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT},
            {AF_BLUETOOTH, SOCK_STREAM, 0}, {AF_KEY, SOCK_RAW, 2}};
    int sv[2];
    long fd;

    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        errno = 0;
        fd = socket(refused[i][0], refused[i][1] | SOCK_CLOEXEC, refused[i][2]);
        if (fd >= 0 || errno != EAFNOSUPPORT)
            fprintf(stderr, "socket(%d, %d, %d)\n", refused[i][0], refused[i][1], refused[i][2]);
        CHECK(fails_with(fd, EAFNOSUPPORT));
    }
    /* the kernel truncates family and protocol to int: so does the filter */
    CHECK(fails_with(
            syscall(SYS_socket, (long)(HIGHBIT | AF_ALG), (long)SOCK_SEQPACKET, 0L), EAFNOSUPPORT));
    CHECK(fails_with(
            syscall(SYS_socket, (long)AF_NETLINK, (long)SOCK_RAW, (long)(HIGHBIT | NETLINK_AUDIT)),
            EAFNOSUPPORT));
    fd = syscall(SYS_socket, (long)(HIGHBIT | AF_UNIX), (long)(SOCK_STREAM | SOCK_CLOEXEC), 0L);
    CHECK(fd >= 0);
    close((int)fd);

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    close((int)fd);
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    close((int)fd);
    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    CHECK(fd >= 0);
    close((int)fd);
    if (inet6_works) {
        fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        close((int)fd);
    }
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    close(sv[0]);
    close(sv[1]);
    CHECK(fails_with(socketpair(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), EAFNOSUPPORT));
    return child_failures != 0;
}

static void test_enforce_sockets(void **state)
{
    (void)state;
    assert_child_ok(run_filtered(child_sockets));
}

/* On a pipe every terminal ioctl fails with ENOTTY and the others seen here
 * with NULL fail with EFAULT; only the filter answers EPERM. */
static void ioctl_neighbours(int fd, unsigned long cmd)
{
    for (unsigned bit = 0; bit < 64; bit++) {
        unsigned long c = cmd ^ (1UL << bit);
        long r = syscall(SYS_ioctl, (long)fd, c, NULL);

        if (bit >= 32)
            CHECK(fails_with(r, EPERM));
        else
            CHECK(!fails_with(r, EPERM));
    }
}

static int child_ioctl(void)
{
    int p[2] = {-1, -1}, n = -1;
    char c = 'x';

    CHECK(pipe2(p, O_CLOEXEC) == 0);
    CHECK(write(p[1], "abc", 3) == 3);
    CHECK(ioctl(p[0], FIONREAD, &n) == 0 && n == 3);
    CHECK(syscall(SYS_ioctl, (long)p[0], (unsigned long)(HIGHBIT | FIONREAD), &n) == 0);
    CHECK(fails_with(ioctl(p[0], TIOCSTI, &c), EPERM));
    CHECK(fails_with(ioctl(p[0], TIOCLINUX, &c), EPERM));
    CHECK(fails_with(
            syscall(SYS_ioctl, (long)p[0], (unsigned long)(HIGHBIT | TIOCSTI), &c), EPERM));
    CHECK(fails_with(syscall(SYS_ioctl, (long)p[0], ~0UL << 32 | TIOCSTI, &c), EPERM));
    CHECK(fails_with(
            syscall(SYS_ioctl, (long)p[0], (unsigned long)(HIGHBIT | TIOCLINUX), &c), EPERM));
    ioctl_neighbours(p[0], TIOCSTI);
    ioctl_neighbours(p[0], TIOCLINUX);
    return child_failures != 0;
}

static void test_enforce_ioctl(void **state)
{
    (void)state;
    skip_under_valgrind();
    assert_child_ok(run_filtered(child_ioctl));
}

static int child_x32(void)
{
#ifdef __X32_SYSCALL_BIT
    syscall((long)(__X32_SYSCALL_BIT | SYS_getpid));
#endif
    return 0; /* reached only if the call came back */
}

#if defined(__x86_64__)
static int child_i386(void)
{
    long ret = 20; /* getpid in the i386 table */

    /* Inline assembly is the only way to enter the compat table: the one
     * non-attribute extension in the tree, confined to this test. */
    __asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
    return ret > 0 ? 0 : 1;
}
#endif

static void test_enforce_foreign_abi(void **state)
{
    int status;

    (void)state;
    skip_under_valgrind();
#ifndef __X32_SYSCALL_BIT
    skip();
#else
    status = run_filtered(child_x32);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSYS)
        fail_msg("x32 getpid: want SIGSYS, got status %#x", (unsigned)status);
#endif
#if defined(__x86_64__)
    status = run_filtered(child_i386);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSYS)
        fail_msg("i386 getpid: want SIGSYS, got status %#x", (unsigned)status);
#endif
}

static volatile int thread_ran;

static void *thread_main(void *arg)
{
    (void)arg;
    thread_ran = 1;
    return NULL;
}

static int child_normal(void)
{
    char buf[256];
    int p[2] = {-1, -1}, fd, status = 0;
    pthread_t t;
    pid_t pid;
    int r;

    CHECK(getpid() > 0);
    fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    CHECK(read(fd, buf, sizeof(buf)) > 0);
    close(fd);
    CHECK(pipe2(p, O_CLOEXEC) == 0);
    CHECK(write(p[1], "hi", 2) == 2);
    CHECK(read(p[0], buf, sizeof(buf)) == 2);
    close(p[0]);
    close(p[1]);

    pid = fork();
    if (pid == 0)
        _exit(7);
    CHECK(pid > 0);
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 7);

    /* glibc tries clone3 first (ENOSYS here) and falls back to clone */
    r = pthread_create(&t, NULL, thread_main, NULL);
    CHECK(r == 0);
    if (r == 0)
        CHECK(pthread_join(t, NULL) == 0 && thread_ran == 1);

    pid = fork();
    if (pid == 0) {
        char *const argv[] = {(char *)"true", NULL};
        char *const envp[] = {NULL};

        execve("/bin/true", argv, envp);
        _exit(127);
    }
    CHECK(pid > 0);
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return child_failures != 0;
}

static void test_enforce_normal(void **state)
{
    (void)state;
    assert_child_ok(run_filtered(child_normal));
}

/* A real runtime under the filter: threads, subprocess (fork/exec or
 * posix_spawn via vfork-style clone), sockets, JSON. */
static void test_enforce_python(void **state)
{
    static const char want[] = "b'hi\\n'\n";
    char out[256];
    size_t got = 0;
    int p[2], status = 0;
    pid_t pid;

    (void)state;
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    ensure_filter();
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *const argv[] = {(char *)"python3", (char *)"-c",
                (char *)"import json, subprocess, threading, socket; "
                        "print(subprocess.run(['/bin/echo','hi'],capture_output=True).stdout)",
                NULL};
        char *const envp[] = {(char *)"PATH=/usr/bin:/bin", NULL};

        if (dup2(p[1], 1) < 0)
            _exit(126);
        install_filter_or_exit();
        execve("/usr/bin/python3", argv, envp);
        _exit(127);
    }
    close(p[1]);
    for (;;) {
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        ssize_t n;

        if (poll(&pfd, 1, 60000) <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        n = read(p[0], out + got, sizeof(out) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    out[got] = '\0';
    close(p[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_child_ok(status);
    assert_string_equal(out, want);
}

/* The Kafel translation of a small list, pinned: numbers resolved for
 * x86-64, conditions from the expansion, unknown names skipped. */
static void test_kafel_small(void **state)
{
    static const char list[] = "allow read\n"
                               "allow write\n"
                               "allow no_such_syscall_anywhere\n"
                               "allow socket arg0 in AF_UNIX,AF_INET\n"
                               "deny socket EAFNOSUPPORT\n"
                               "deny clone3 ENOSYS\n"
                               "allow ioctl arg1 == 0x5401\n";
    static const char want[] =
            "POLICY llm_sandbox {\n"
            "  ALLOW {\n"
            "    SYSCALL[0],\n"
            "    SYSCALL[1],\n"
            "    SYSCALL[41](a0, a1, a2, a3, a4, a5) { (a0 & 0xffffffff) == 0x1, "
            "(a0 & 0xffffffff) == 0x2 },\n"
            "    SYSCALL[16](a0, a1, a2, a3, a4, a5) { (a1 & 0xffffffff) == 0x5401 }\n"
            "  },\n"
            "  ERRNO(97) {\n"
            "    SYSCALL[41](a0, a1, a2, a3, a4, a5) { %s }\n"
            "  },\n"
            "  ERRNO(38) {\n"
            "    SYSCALL[435]\n"
            "  }\n"
            "}\n"
            "USE llm_sandbox DEFAULT ERRNO(38)\n";
    struct seccomp_policy *p = parse_ok(list);
    struct sbx_error *e = NULL;
    char rest[2048], expect[4096], *text = NULL;
    size_t o;

    (void)state;
#if !defined(__x86_64__)
    skip();
#endif
    /* the complement of {1, 2} in the low 32 bits: 0, 3, then every
     * value with a higher bit set, one prefix per bit */
    o = (size_t)snprintf(rest, sizeof(rest), "(a0 & 0xffffffff) == 0x0, (a0 & 0xffffffff) == 0x3");
    for (unsigned k = 2; k < 32; k++)
        o += (size_t)snprintf(rest + o, sizeof(rest) - o, ", (a0 & 0x%x) == 0x%x",
                (unsigned)(0xffffffffu << k), 1u << k);
    snprintf(expect, sizeof(expect), want, rest);
    assert_int_equal(seccomp_policy_kafel(p, &text, &e), 0);
    assert_string_equal(text, expect);
    free(text);
    seccomp_policy_free(p);
}

/* The embedded list: every syscall this libseccomp knows is in the Kafel
 * program, in the block of its action, and nothing else is. */
static void test_kafel_real_list(void **state)
{
    const char *text = NULL, *t = NULL;
    struct sbx_error *e = NULL;
    struct seccomp_policy *p = parse_ok(seccomp_policy_text());
    struct seccomp_flat *f = expand_ok(p);
    size_t entries = 0, names = 0;
    char needle[64];

    (void)state;
    assert_int_equal(seccomp_kafel_get(&text, &e), 0);
    assert_non_null(strstr(text, "\nUSE llm_sandbox DEFAULT ERRNO(38)\n"));
    for (size_t i = 0; i < f->n_rules; i++) {
        int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, f->rules[i].name);
        bool seen_before = false;

        for (size_t j = 0; j < i; j++)
            seen_before =
                    seen_before || (strcmp(f->rules[j].name, f->rules[i].name) == 0 &&
                                           f->rules[j].action == f->rules[i].action &&
                                           f->rules[j].errno_value == f->rules[i].errno_value);
        if (nr < 0 || seen_before)
            continue;
        names++;
        snprintf(needle, sizeof(needle), "SYSCALL[%d]%c", nr, f->rules[i].n_atoms ? '(' : ',');
        if (!strstr(text, needle)) {
            needle[strlen(needle) - 1] = '\n';
            if (!strstr(text, needle))
                fail_msg("%s (%d) missing from the Kafel policy", f->rules[i].name, nr);
        }
    }
    for (t = text; (t = strstr(t, "SYSCALL[")); t++)
        entries++;
    assert_int_equal(entries, names);
    assert_int_equal(seccomp_kafel_get(&t, &e), 0);
    assert_ptr_equal(t, text); /* built once */
    seccomp_flat_free(f);
    seccomp_policy_free(p);
}

/* The zygote box's policy (plugin.h, SBX_BOX_ZYGOTE): the list with
 * unshare, mount and umount2 allowed outright and nothing else changed,
 * as Kafel for nsjail too; a list that does not deny each once is refused. */
static void test_zygote_policy(void **state)
{
    static const char small[] = "allow read\n"
                                "deny unshare\n"
                                "deny mount\n"
                                "deny umount2 EPERM\n"
                                "deny setns\n";
    struct seccomp_policy *strict = parse_ok(seccomp_policy_text());
    struct seccomp_policy *zyg = parse_ok(seccomp_policy_text()), *p;
    struct seccomp_flat *fs, *fz;
    struct sbx_error *e = NULL;
    const char *got = NULL, *strict_text = NULL;
    char *text = NULL;

    (void)state;
    assert_int_equal(seccomp_policy_zygote(zyg, &e), 0);
    fs = expand_ok(strict);
    fz = expand_ok(zyg);
    assert_int_equal(fs->n_rules, fz->n_rules);
    for (size_t i = 0; i < fs->n_rules; i++) {
        const struct seccomp_flat_rule *a = &fs->rules[i], *b = &fz->rules[i];
        bool opened = strcmp(a->name, "unshare") == 0 || strcmp(a->name, "mount") == 0 ||
                      strcmp(a->name, "umount2") == 0;

        assert_string_equal(a->name, b->name);
        if (opened) {
            assert_int_equal(a->action, SECCOMP_RULE_ERRNO);
            assert_int_equal(b->action, SECCOMP_RULE_ALLOW);
            assert_int_equal(b->n_atoms, 0);
            continue;
        }
        assert_int_equal(a->action, b->action);
        assert_int_equal(a->errno_value, b->errno_value);
        assert_int_equal(a->n_atoms, b->n_atoms);
        assert_memory_equal(a->atoms, b->atoms, a->n_atoms * sizeof(a->atoms[0]));
    }
    /* the host's Kafel form is that list's, built once */
    assert_int_equal(seccomp_policy_kafel(zyg, &text, &e), 0);
    assert_int_equal(seccomp_zygote_kafel_get(&got, &e), 0);
    assert_string_equal(got, text);
    free(text);
    text = NULL;
    assert_int_equal(seccomp_zygote_kafel_get(&strict_text, &e), 0);
    assert_ptr_equal(strict_text, got);
    assert_int_equal(seccomp_kafel_get(&strict_text, &e), 0);
    assert_string_not_equal(strict_text, got);
#if defined(__x86_64__)
    p = parse_ok(small);
    assert_int_equal(seccomp_policy_zygote(p, &e), 0);
    assert_int_equal(seccomp_policy_kafel(p, &text, &e), 0);
    assert_string_equal(text, "POLICY llm_sandbox {\n"
                              "  ALLOW {\n"
                              "    SYSCALL[0],\n"
                              "    SYSCALL[272],\n"
                              "    SYSCALL[165],\n"
                              "    SYSCALL[166]\n"
                              "  },\n"
                              "  ERRNO(1) {\n"
                              "    SYSCALL[308]\n"
                              "  }\n"
                              "}\n"
                              "USE llm_sandbox DEFAULT ERRNO(38)\n");
    free(text);
    seccomp_policy_free(p);
#endif
    p = parse_ok("allow read\ndeny unshare\ndeny mount\n");
    assert_int_equal(seccomp_policy_zygote(p, &e), SBX_E_INTERNAL);
    sbx_error_free(e);
    seccomp_policy_free(p);
    seccomp_flat_free(fs);
    seccomp_flat_free(fz);
    seccomp_policy_free(strict);
    seccomp_policy_free(zyg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_bpf_get_threads),
            cmocka_unit_test(test_real_list_parses),
            cmocka_unit_test(test_real_list_names_known),
            cmocka_unit_test(test_parse_rejects),
            cmocka_unit_test(test_parse_accepts),
            cmocka_unit_test(test_partition_notin),
            cmocka_unit_test(test_expand_in_and_mask),
            cmocka_unit_test(test_fallback_real_list),
            cmocka_unit_test(test_fallback_multi_arg),
            cmocka_unit_test(test_compile_edge_cases),
            cmocka_unit_test(test_enforce_denied),
            cmocka_unit_test(test_enforce_clone),
            cmocka_unit_test(test_enforce_sockets),
            cmocka_unit_test(test_enforce_ioctl),
            cmocka_unit_test(test_enforce_foreign_abi),
            cmocka_unit_test(test_enforce_normal),
            cmocka_unit_test(test_enforce_python),
            cmocka_unit_test(test_kafel_small),
            cmocka_unit_test(test_kafel_real_list),
            cmocka_unit_test(test_zygote_policy),
    };

    return cmocka_run_group_tests(tests, setup_group, NULL);
}
