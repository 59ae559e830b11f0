/* SPDX-License-Identifier: MIT */
/*
 * test_cgroup.c: cmocka tests for cgroup.c. Fake v1 and v2 trees in a
 * mkdtemp directory check detection, the control files a group gets (and
 * the v1 memory order), event parsing, CG_NONE reasons, capability notes,
 * the sweep and removal. As root on a host with writable v1 hierarchies, a
 * real group is also joined, killed, hit by its pids and memory limits and
 * removed; elsewhere those tests are skipped. Takes no arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* cmocka needs these four before it */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "base/util.h"
#include "host/cgroup.h"
#include "host/owner.h"
#include "host/scope.h"

#define MIB (1024ull * 1024ull)

/*
 * The v1 memory limits must be written in order (memsw after limit), which
 * a plain directory tree cannot show. This definition of open() takes the
 * place of libc's for the whole test binary, cgroup.c included, and records
 * the names of files opened for writing while `recording` is set.
 */
static bool recording;
static char written[32][64];
static size_t n_written;

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;

    if (flags & O_CREAT) {
        va_list ap;

        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (recording && (flags & O_ACCMODE) == O_WRONLY && n_written < 32) {
        const char *base = strrchr(path, '/');

        snprintf(written[n_written++], sizeof(written[0]), "%s", base ? base + 1 : path);
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static ssize_t written_at(const char *name)
{
    for (size_t i = 0; i < n_written; i++)
        if (strcmp(written[i], name) == 0)
            return (ssize_t)i;
    return -1;
}

struct fixture {
    char root[64];
    char path[4096]; /* scratch for paths */
};

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path) < 0 ? -1 : 0;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    snprintf(f->root, sizeof(f->root), "/tmp/test_cgroup.XXXXXX");
    if (!mkdtemp(f->root)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* f->root + "/" + rel, in the scratch buffer. */
static const char *at(struct fixture *f, const char *rel)
{
    snprintf(f->path, sizeof(f->path), "%s/%s", f->root, rel);
    return f->path;
}

static void mkdirs(struct fixture *f, const char *rel)
{
    char buf[4096];

    snprintf(buf, sizeof(buf), "%s/%s", f->root, rel);
    for (char *p = buf + strlen(f->root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    }
    assert_true(mkdir(buf, 0755) == 0 || errno == EEXIST);
}

static void put(struct fixture *f, const char *rel, const char *content)
{
    FILE *fp = fopen(at(f, rel), "we");

    assert_non_null(fp);
    fputs(content, fp);
    fclose(fp);
}

/* Contents of f->root/rel ("" when missing), in a static buffer. */
static const char *get(struct fixture *f, const char *rel)
{
    static char buf[4096];
    FILE *fp = fopen(at(f, rel), "re");
    size_t n;

    if (!fp)
        return "";
    n = fread(buf, 1, sizeof(buf) - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static bool exists(struct fixture *f, const char *rel)
{
    return access(at(f, rel), F_OK) == 0;
}

static struct cg_options fake_opts(struct fixture *f, char *mount, char *self)
{
    struct cg_options o = {.fake_tree = true, .allow_v2 = true, .allow_v1 = true};

    snprintf(mount, 4096, "%s/cg", f->root);
    snprintf(self, 4096, "%s/self_cgroup", f->root);
    o.mount_root = mount;
    o.self_cgroup = self;
    return o;
}

static struct cg_service *service_or_fail(const struct cg_options *o)
{
    struct cg_service *s = NULL;
    struct sbx_error *err = NULL;

    assert_int_equal(cg_service_new(o, &s, &err), 0);
    assert_null(err);
    assert_non_null(s);
    return s;
}

static struct sbx_policy policy(uint64_t mem, uint64_t mc, uint64_t pids)
{
    struct sbx_policy p = {
            .size = sizeof(p), .memory_bytes = mem, .cpu_millicores = mc, .pids_max = pids};

    return p;
}

/* A delegated v2 tree: /srv holds memory, pids and cpu for its children. */
static void v2_tree(struct fixture *f, const char *self_line, bool swap)
{
    mkdirs(f, "cg/srv/llm-sandbox");
    put(f, "cg/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    put(f, "cg/srv/cgroup.controllers", "cpu memory pids\n");
    put(f, "self_cgroup", self_line);
    if (swap)
        put(f, "cg/srv/llm-sandbox/memory.swap.max", "max\n");
}

/* v1: memory in a non-root group, pids at the root, cpu co-mounted. */
static void v1_tree(struct fixture *f, bool memsw)
{
    mkdirs(f, "cg/memory/api/x1/llm-sandbox");
    mkdirs(f, "cg/pids");
    mkdirs(f, "cg/cpu");
    put(f, "self_cgroup", "9:name=systemd:/\n8:pids:/\n4:memory:/api/x1\n1:cpu,cpuacct:/\n0::/\n");
    if (memsw)
        put(f, "cg/memory/api/x1/llm-sandbox/memory.memsw.limit_in_bytes", "");
}

static void test_v2_group(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct cg_group *g = NULL, *g0 = NULL;
    struct sbx_error *err = NULL;
    struct sbx_policy p = policy(256 * MIB, 1500, 64), p0 = policy(64 * MIB, 0, 8);

    v2_tree(f, "0::/srv\n", true);
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    assert_true(cg_service_swap_accounted(s));
    assert_non_null(strstr(cg_service_describe(s), "cgroup v2"));
    assert_string_equal(get(f, "cg/srv/cgroup.subtree_control"), "+memory +pids +cpu");
    assert_string_equal(get(f, "cg/srv/llm-sandbox/cgroup.subtree_control"), "+memory +pids +cpu");
    assert_false(exists(f, "cg/srv/llm-sandbox-server"));

    assert_int_equal(cg_group_new(s, "p1t2-3", &p, &g, &err), 0);
    assert_string_equal(get(f, "cg/srv/llm-sandbox/p1t2-3/memory.max"), "268435456");
    assert_string_equal(get(f, "cg/srv/llm-sandbox/p1t2-3/memory.swap.max"), "0");
    assert_string_equal(get(f, "cg/srv/llm-sandbox/p1t2-3/pids.max"), "64");
    assert_string_equal(get(f, "cg/srv/llm-sandbox/p1t2-3/cpu.max"), "150000 100000");
    assert_int_equal(cg_group_new(s, "p1t2-4", &p0, &g0, &err), 0);
    assert_string_equal(get(f, "cg/srv/llm-sandbox/p1t2-4/cpu.max"), "max 100000");

    assert_int_equal(cg_group_oom_killed(g), -1); /* no memory.events yet */
    put(f, "cg/srv/llm-sandbox/p1t2-3/memory.events",
            "low 0\nhigh 0\nmax 7\noom 2\noom_kill 0\noom_group_kill 0\n");
    assert_int_equal(cg_group_oom_killed(g), 0);
    put(f, "cg/srv/llm-sandbox/p1t2-3/memory.events", "low 0\nmax 7\noom 2\noom_kill 1\n");
    assert_int_equal(cg_group_oom_killed(g), 1);
    put(f, "cg/srv/llm-sandbox/p1t2-3/pids.events", "max 0\n");
    assert_int_equal(cg_group_pids_limited(g), 0);
    put(f, "cg/srv/llm-sandbox/p1t2-3/pids.events", "max 12\n");
    assert_int_equal(cg_group_pids_limited(g), 1);
    assert_true(cg_group_is_empty(g));

    assert_null(cg_group_free(g));
    assert_null(cg_group_free(g0));
    assert_false(exists(f, "cg/srv/llm-sandbox/p1t2-3"));
    assert_false(exists(f, "cg/srv/llm-sandbox/p1t2-4"));
    assert_null(cg_service_free(s));
    assert_false(exists(f, "cg/srv/llm-sandbox"));
    assert_null(err);
}

/* A process started in the leaf (by one the first server moved there)
 * keeps using its parent. */
static void test_v2_from_supervisor(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;

    v2_tree(f, "0::/srv/supervisor\n", false);
    mkdirs(f, "cg/srv/supervisor");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    assert_false(cg_service_swap_accounted(s));
    assert_string_equal(get(f, "cg/srv/llm-sandbox/cgroup.subtree_control"), "+memory +pids +cpu");
    assert_false(exists(f, "cg/srv/supervisor/llm-sandbox"));
    cg_service_free(s);
}

/* Every process of our cgroup (a wrapper, a harness) moves to the leaf
 * before the controllers are enabled; none is left in the cgroup. */
static void test_v2_moves_every_process(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct cg_info info;

    v2_tree(f, "0::/srv\n", false);
    put(f, "cg/srv/cgroup.procs", "11\n22\n33\n");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    assert_string_equal(get(f, "cg/srv/supervisor/cgroup.procs"), "11\n22\n33\n");
    assert_string_equal(get(f, "cg/srv/cgroup.procs"), "");
    assert_string_equal(get(f, "cg/srv/cgroup.subtree_control"), "+memory +pids +cpu");
    cg_service_info(s, &info);
    assert_int_equal(info.how, CG_HOW_UNMANAGED); /* no systemd_dir: no systemd */
    assert_string_equal(info.controllers, "memory pids cpu");
    assert_non_null(strstr(info.parent, "/cg/srv/llm-sandbox"));
    cg_service_free(s);
    /* a second server finds the controllers on and moves nobody */
    put(f, "cg/srv/cgroup.procs", "44\n");
    s = service_or_fail(&o);
    assert_string_equal(get(f, "cg/srv/cgroup.procs"), "44\n");
    cg_service_free(s);
    /* the root cgroup (a host without systemd, or a container's root
     * without a namespace) is exempt: nobody is moved */
    put(f, "cg/cgroup.controllers", "cpu memory pids\n");
    put(f, "cg/cgroup.procs", "1\n2\n");
    put(f, "self_cgroup", "0::/\n");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    assert_string_equal(get(f, "cg/cgroup.procs"), "1\n2\n");
    assert_false(exists(f, "cg/supervisor"));
    assert_string_equal(get(f, "cg/cgroup.subtree_control"), "+memory +pids +cpu");
    cg_service_free(s);
}

/* Another server's cg_service_free() removed the parent: it comes back,
 * controllers enabled. */
static void test_v2_parent_remade(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct cg_group *g = NULL;
    struct sbx_error *err = NULL;
    struct sbx_policy p = policy(MIB, 0, 2);

    v2_tree(f, "0::/srv\n", false);
    s = service_or_fail(&o);
    assert_int_equal(unlink(at(f, "cg/srv/llm-sandbox/cgroup.subtree_control")), 0);
    assert_int_equal(rmdir(at(f, "cg/srv/llm-sandbox")), 0);
    assert_int_equal(cg_group_new(s, "p1t1-1", &p, &g, &err), 0);
    assert_string_equal(get(f, "cg/srv/llm-sandbox/cgroup.subtree_control"), "+memory +pids +cpu");
    assert_string_equal(get(f, "cg/srv/llm-sandbox/p1t1-1/pids.max"), "2");
    cg_group_free(g);
    cg_service_free(s);
    assert_false(exists(f, "cg/srv/llm-sandbox"));
}

static void test_v2_not_delegated(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;

    v2_tree(f, "0::/srv\n", false);
    put(f, "cg/srv/cgroup.controllers", "cpu memory\n");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_NONE);
    assert_non_null(strstr(cg_service_describe(s), "no writable cgroup: "));
    assert_non_null(strstr(cg_service_describe(s), "'pids'"));
    assert_non_null(strstr(cg_service_describe(s), "srv/cgroup.controllers"));
    cg_service_free(s);
}

/* ---- v2 under systemd ------------------------------------------------------ */

/* A fake systemd: records what it was asked; start_scope makes the scope's
 * directory and moves "us" there (rewrites self_cgroup). */
struct fake_systemd {
    struct fixture *f;
    const char *scope_parent; /* where the manager puts scopes, under cg/ */
    int start_rc;             /* < 0: the start fails */
    int delegated;            /* unit_delegated's answer */
    int n_starts, n_asks;
    struct scope_request req;
    char asked_unit[128];
};

static int fake_start_scope(const struct scope_request *req, void *ud, struct sbx_error **err)
{
    struct fake_systemd *sd = ud;
    char rel[512], line[600];

    sd->n_starts++;
    sd->req = *req;
    if (sd->start_rc < 0)
        return sbx_error_set(err, sd->start_rc, 0, "fake: the bus said no");
    snprintf(rel, sizeof(rel), "%s/%s", sd->scope_parent, req->unit);
    mkdirs(sd->f, rel);
    snprintf(line, sizeof(line), "%s/cgroup.controllers", rel);
    put(sd->f, line, "cpu memory pids\n");
    snprintf(line, sizeof(line), "0::%s\n", rel + strlen("cg"));
    put(sd->f, "self_cgroup", line);
    return 0;
}

static int fake_unit_delegated(
        const struct scope_request *req, const char *unit, void *ud, struct sbx_error **err)
{
    struct fake_systemd *sd = ud;

    sd->n_asks++;
    sd->req = *req;
    snprintf(sd->asked_unit, sizeof(sd->asked_unit), "%s", unit);
    if (sd->delegated < 0)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "fake: no bus");
    return sd->delegated;
}

/* A systemd host: its marker directory, a root with the controllers, and a
 * unit's cgroup at rel (under cg/) holding controllers. */
static void systemd_tree(struct fixture *f, struct cg_options *o, struct cg_systemd *hooks,
        struct fake_systemd *sd, const char *rel)
{
    char path[512];

    mkdirs(f, "run/systemd/system");
    snprintf(path, sizeof(path), "%s/run/systemd/system", f->root);
    o->systemd_dir = strdup(path);
    mkdirs(f, rel);
    put(f, "cg/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    snprintf(path, sizeof(path), "%s/cgroup.controllers", rel);
    put(f, path, "cpu memory pids\n");
    snprintf(path, sizeof(path), "0::%s\n", rel + strlen("cg"));
    put(f, "self_cgroup", path);
    memset(sd, 0, sizeof(*sd));
    sd->f = f;
    hooks->start_scope = fake_start_scope;
    hooks->unit_delegated = fake_unit_delegated;
    hooks->userdata = sd;
    o->systemd = hooks;
    o->owner = "p1t2h0123456789abcdef";
}

static void mark_delegated(struct fixture *f, const char *rel)
{
    assert_int_equal(setxattr(at(f, rel), "user.delegate", "1", 1, 0), 0);
}

/* Nothing of ours in a unit's cgroup systemd manages. */
static void assert_untouched(struct fixture *f, const char *rel)
{
    char p[512];

    snprintf(p, sizeof(p),
            "%s/"
            "supervisor",
            rel);
    assert_false(exists(f, p));
    snprintf(p, sizeof(p), "%s/llm-sandbox", rel);
    assert_false(exists(f, p));
    snprintf(p, sizeof(p), "%s/cgroup.subtree_control", rel);
    assert_false(exists(f, p));
}

static void test_v2_systemd_delegated(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_systemd hooks;
    struct fake_systemd sd;
    struct cg_service *s;
    struct cg_info info;
    uint64_t kills;

    systemd_tree(f, &o, &hooks, &sd, "cg/system.slice/a.service");
    mark_delegated(f, "cg/system.slice/a.service");
    put(f, "cg/system.slice/a.service/cgroup.procs", "5\n6\n");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    cg_service_info(s, &info);
    assert_int_equal(info.how, CG_HOW_DELEGATED);
    assert_string_equal(info.unit, "a.service");
    assert_string_equal(info.basis, "marked user.delegate=1");
    assert_string_equal(get(f, "cg/system.slice/a.service/supervisor/cgroup.procs"), "5\n6\n");
    assert_true(exists(f, "cg/system.slice/a.service/llm-sandbox"));
    assert_non_null(strstr(cg_service_describe(s), "delegated to us (unit a.service"));
    assert_int_equal(sd.n_starts + sd.n_asks, 0);
    put(f, "cg/system.slice/a.service/memory.events", "oom_kill 1\n");
    assert_int_equal(cg_service_unit_oom_kills(s, &kills), -1); /* groups count their own */
    cg_service_free(s);

    /* inside the delegated unit, in a cgroup its processes made: ours */
    mkdirs(f, "cg/system.slice/a.service/inner");
    put(f, "cg/system.slice/a.service/inner/cgroup.controllers", "cpu memory pids\n");
    put(f, "self_cgroup", "0::/system.slice/a.service/inner\n");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    cg_service_info(s, &info);
    assert_string_equal(info.unit, "a.service");
    assert_true(exists(f, "cg/system.slice/a.service/inner/llm-sandbox"));
    cg_service_free(s);
    free((char *)o.systemd_dir);
}

/* A service without Delegate=yes: refused, nothing written, doctor's facts. */
static void test_v2_systemd_service_refused(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_systemd hooks;
    struct fake_systemd sd;
    struct cg_service *s;
    struct cg_info info;
    uint64_t kills;

    systemd_tree(f, &o, &hooks, &sd, "cg/system.slice/b.service");
    s = service_or_fail(&o);
    kills = 99;
    assert_int_equal(cg_service_mode(s), CG_NONE);
    cg_service_info(s, &info);
    assert_int_equal(info.how, CG_HOW_NOT_DELEGATED);
    assert_string_equal(info.unit, "b.service");
    assert_non_null(strstr(cg_service_describe(s), "b.service"));
    assert_non_null(strstr(cg_service_describe(s), "Delegate=yes"));
    assert_untouched(f, "cg/system.slice/b.service");
    assert_int_equal(sd.n_starts, 0); /* a service is not escaped */
    /* the unit's OOM kills are what a run without a group can watch */
    assert_int_equal(cg_service_unit_oom_kills(s, &kills), -1); /* no memory.events */
    assert_int_equal(kills, 99);                                /* and untouched */
    put(f, "cg/system.slice/b.service/memory.events", "low 0\nmax 2\noom 1\noom_kill 3\n");
    assert_int_equal(cg_service_unit_oom_kills(s, &kills), 0);
    assert_int_equal(kills, 3);
    cg_service_free(s);

    /* the root cgroup is systemd's too */
    put(f, "self_cgroup", "0::/\n");
    s = service_or_fail(&o);
    cg_service_info(s, &info);
    assert_int_equal(cg_service_mode(s), CG_NONE);
    assert_string_equal(info.unit, "-.slice");
    assert_false(exists(f, "cg/supervisor"));
    cg_service_free(s);

    /* without systemd on the host, the same cgroup is taken as found */
    free((char *)o.systemd_dir);
    o.systemd_dir = "/nonexistent/systemd/system";
    put(f, "self_cgroup", "0::/system.slice/b.service\n");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    cg_service_info(s, &info);
    assert_int_equal(info.how, CG_HOW_UNMANAGED);
    cg_service_free(s);
}

/* A login shell's scope: a transient scope with Delegate=yes is asked for
 * (of the system manager as root, in the session's slice), and used. */
static void test_v2_systemd_scope(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096], rel[512];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_systemd hooks;
    struct fake_systemd sd;
    struct cg_service *s;
    struct cg_info info;
    uid_t root = 0;

    systemd_tree(f, &o, &hooks, &sd, "cg/user.slice/user-0.slice/session-2.scope");
    put(f, "cg/user.slice/user-0.slice/session-2.scope/cgroup.procs", "77\n");
    sd.scope_parent = "cg/user.slice/user-0.slice";
    o.as_uid = &root;
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    assert_int_equal(sd.n_starts, 1);
    assert_string_equal(sd.req.unit, "llm-sandbox-p1t2h0123456789abcdef.scope");
    assert_string_equal(sd.req.slice, "user-0.slice");
    assert_false(sd.req.user_manager);
    assert_int_equal(sd.req.pid, (uint32_t)getpid());
    cg_service_info(s, &info);
    assert_int_equal(info.how, CG_HOW_SCOPE);
    assert_string_equal(info.unit, "session-2.scope");
    assert_string_equal(info.scope, sd.req.unit);
    snprintf(rel, sizeof(rel), "cg/user.slice/user-0.slice/%s/llm-sandbox", sd.req.unit);
    assert_true(exists(f, rel));
    assert_non_null(strstr(info.parent, rel));
    assert_untouched(f, "cg/user.slice/user-0.slice/session-2.scope");
    assert_string_equal(get(f, "cg/user.slice/user-0.slice/session-2.scope/cgroup.procs"), "77\n");
    assert_non_null(strstr(cg_service_describe(s), "session-2.scope, where it started"));
    cg_service_free(s);

    /* asking fails: nothing written, and the reason kept */
    put(f, "self_cgroup", "0::/user.slice/user-0.slice/session-2.scope\n");
    sd.start_rc = SBX_E_UNAVAILABLE;
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_NONE);
    cg_service_info(s, &info);
    assert_int_equal(info.how, CG_HOW_SCOPE_FAILED);
    assert_non_null(strstr(cg_service_describe(s), "fake: the bus said no"));
    assert_untouched(f, "cg/user.slice/user-0.slice/session-2.scope");
    cg_service_free(s);
    free((char *)o.systemd_dir);
}

/* An unprivileged user: the user manager's units carry no mark, so it is
 * asked whether its unit is delegated; a login session's scope (root's
 * directory) is left for a scope of the user's manager. */
static void test_v2_systemd_user(void **state)
{
    static const char *const app = "cg/user.slice/user-1000.slice/user@1000.service/app.slice";
    struct fixture *f = *state;
    char mount[4096], self[4096], unit[512];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_systemd hooks;
    struct fake_systemd sd;
    struct cg_service *s;
    struct cg_info info;
    uid_t me = geteuid() == 0 ? 1000 : geteuid();

    snprintf(unit, sizeof(unit), "%s/run-r1.scope", app);
    systemd_tree(f, &o, &hooks, &sd, unit);
    o.as_uid = &me;
    o.runtime_dir = "/run/user/1000";
    if (geteuid() == 0) { /* the user's manager's tree is the user's */
        assert_int_equal(
                chown(at(f, "cg/user.slice/user-1000.slice/user@1000.service"), me, me), 0);
        assert_int_equal(chown(at(f, app), me, me), 0);
        assert_int_equal(chown(at(f, unit), me, me), 0);
    }
    sd.scope_parent = app;
    sd.delegated = 1;
    s = service_or_fail(&o);
    cg_service_info(s, &info);
    assert_int_equal(cg_service_mode(s), CG_V2);
    assert_int_equal(info.how, CG_HOW_DELEGATED);
    assert_string_equal(info.basis, "its manager says Delegate=yes");
    assert_string_equal(sd.asked_unit, "run-r1.scope");
    assert_true(sd.req.user_manager);
    assert_string_equal(sd.req.address, "unix:path=/run/user/1000/bus");
    assert_int_equal(sd.n_starts, 0);
    cg_service_free(s);

    /* not delegated: a scope of the user's manager instead */
    put(f, "self_cgroup",
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n");
    snprintf(unit, sizeof(unit), "%s/run-r1.scope/llm-sandbox", app);
    rmdir(at(f, unit));
    snprintf(unit, sizeof(unit), "%s/run-r1.scope/supervisor", app);
    rmdir(at(f, unit));
    snprintf(unit, sizeof(unit), "%s/run-r1.scope/cgroup.subtree_control", app);
    unlink(at(f, unit));
    sd.delegated = 0;
    s = service_or_fail(&o);
    cg_service_info(s, &info);
    assert_int_equal(info.how, CG_HOW_SCOPE);
    assert_true(info.user_manager);
    assert_int_equal(sd.n_starts, 1);
    assert_string_equal(sd.req.slice, "");
    snprintf(unit, sizeof(unit), "%s/run-r1.scope", app);
    assert_untouched(f, unit);
    cg_service_free(s);

    /* the manager cannot be asked: its cgroup being ours is taken as delegation */
    put(f, "self_cgroup",
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n");
    sd.delegated = -1;
    s = service_or_fail(&o);
    cg_service_info(s, &info);
    assert_int_equal(info.how, CG_HOW_DELEGATED);
    assert_non_null(strstr(info.basis, "assumed"));
    cg_service_free(s);

    /* a login session's scope belongs to root: the user's manager makes one */
    mkdirs(f, "cg/user.slice/user-1000.slice/session-1.scope");
    put(f, "cg/user.slice/user-1000.slice/session-1.scope/cgroup.controllers", "cpu memory pids\n");
    put(f, "self_cgroup", "0::/user.slice/user-1000.slice/session-1.scope\n");
    if (geteuid() != 0) {
        print_message("(the session scope case needs root to give a directory to root)\n");
    } else {
        int starts = sd.n_starts, asks = sd.n_asks;

        s = service_or_fail(&o);
        cg_service_info(s, &info);
        assert_int_equal(info.how, CG_HOW_SCOPE);
        assert_int_equal(sd.n_starts, starts + 1);
        assert_int_equal(sd.n_asks, asks); /* not the user manager's unit: not asked */
        assert_untouched(f, "cg/user.slice/user-1000.slice/session-1.scope");
        cg_service_free(s);

        /* a system service given to the user (Delegate=yes, User=): its
         * directory was handed over */
        mkdirs(f, "cg/system.slice/u.service");
        put(f, "cg/system.slice/u.service/cgroup.controllers", "cpu memory pids\n");
        assert_int_equal(chown(at(f, "cg/system.slice/u.service"), me, me), 0);
        put(f, "self_cgroup", "0::/system.slice/u.service\n");
        s = service_or_fail(&o);
        cg_service_info(s, &info);
        assert_int_equal(info.how, CG_HOW_DELEGATED);
        assert_string_equal(info.basis, "handed over to us");
        cg_service_free(s);
    }
    free((char *)o.systemd_dir);
}

static void test_v1_group(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct cg_group *g = NULL;
    struct sbx_error *err = NULL;
    struct sbx_policy p = policy(64 * MIB, 250, 8);

    v1_tree(f, true);
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V1);
    assert_true(cg_service_swap_accounted(s));
    assert_non_null(strstr(cg_service_describe(s), "cgroup v1"));

    n_written = 0;
    recording = true;
    assert_int_equal(cg_group_new(s, "p5t6-7", &p, &g, &err), 0);
    recording = false;
    assert_string_equal(
            get(f, "cg/memory/api/x1/llm-sandbox/p5t6-7/memory.limit_in_bytes"), "67108864");
    assert_string_equal(
            get(f, "cg/memory/api/x1/llm-sandbox/p5t6-7/memory.memsw.limit_in_bytes"), "67108864");
    assert_true(written_at("memory.limit_in_bytes") >= 0);
    assert_true(written_at("memory.memsw.limit_in_bytes") > written_at("memory.limit_in_bytes"));
    assert_false(exists(f, "cg/memory/api/x1/llm-sandbox/p5t6-7/memory.swappiness"));
    assert_string_equal(get(f, "cg/pids/llm-sandbox/p5t6-7/pids.max"), "8");
    assert_string_equal(get(f, "cg/cpu/llm-sandbox/p5t6-7/cpu.cfs_period_us"), "100000");
    assert_string_equal(get(f, "cg/cpu/llm-sandbox/p5t6-7/cpu.cfs_quota_us"), "25000");

    put(f, "cg/memory/api/x1/llm-sandbox/p5t6-7/memory.oom_control",
            "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    assert_int_equal(cg_group_oom_killed(g), 0);
    put(f, "cg/memory/api/x1/llm-sandbox/p5t6-7/memory.oom_control",
            "oom_kill_disable 0\nunder_oom 1\noom_kill 3\n");
    assert_int_equal(cg_group_oom_killed(g), 1);
    assert_int_equal(cg_group_pids_limited(g), -1);
    put(f, "cg/pids/llm-sandbox/p5t6-7/pids.events", "max 1\n");
    assert_int_equal(cg_group_pids_limited(g), 1);
    put(f, "cg/pids/llm-sandbox/p5t6-7/pids.events", "max x\n");
    assert_int_equal(cg_group_pids_limited(g), -1);

    cg_group_free(g);
    assert_false(exists(f, "cg/memory/api/x1/llm-sandbox/p5t6-7"));
    assert_false(exists(f, "cg/pids/llm-sandbox/p5t6-7"));
    assert_false(exists(f, "cg/cpu/llm-sandbox/p5t6-7"));
    cg_service_free(s);
    assert_null(err);
}

static void test_v1_no_memsw_no_quota(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct cg_group *g = NULL;
    struct sbx_error *err = NULL;
    struct sbx_policy p = policy(32 * MIB, 0, 4);
    int fds[4];

    v1_tree(f, false);
    o.allow_v2 = false;
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V1);
    assert_false(cg_service_swap_accounted(s));
    assert_int_equal(cg_group_new(s, "run.1", &p, &g, &err), 0);
    assert_false(exists(f, "cg/memory/api/x1/llm-sandbox/run.1/memory.memsw.limit_in_bytes"));
    assert_false(exists(f, "cg/cpu/llm-sandbox/run.1/cpu.cfs_quota_us"));
    assert_string_equal(get(f, "cg/cpu/llm-sandbox/run.1/cpu.cfs_period_us"), "100000");

    assert_int_equal(cg_group_procs_fds(g, fds, 2), SBX_E_LIMIT);
    assert_int_equal(cg_group_procs_fds(g, fds, 4), 3);
    for (int i = 0; i < 3; i++) {
        assert_true(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
        close(fds[i]);
    }
    assert_true(exists(f, "cg/pids/llm-sandbox/run.1/cgroup.procs"));
    cg_group_free(g);
    assert_false(exists(f, "cg/pids/llm-sandbox/run.1"));
    cg_service_free(s);
}

static void test_invalid_requests(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct cg_group *g = NULL;
    struct sbx_error *err = NULL;
    struct sbx_policy ok = policy(MIB, 0, 1), nomem = policy(0, 0, 1), nopids = policy(MIB, 0, 0),
                      tinycpu = policy(MIB, 5, 1);

    v1_tree(f, false);
    s = service_or_fail(&o);
    assert_int_equal(cg_group_new(s, "p1t1-1", &nomem, &g, &err), SBX_E_INVALID);
    assert_string_equal(err->field, "memory_bytes");
    err = sbx_error_free(err);
    assert_int_equal(cg_group_new(s, "p1t1-1", &nopids, &g, &err), SBX_E_INVALID);
    err = sbx_error_free(err);
    assert_int_equal(cg_group_new(s, "p1t1-1", &tinycpu, &g, &err), SBX_E_INVALID);
    err = sbx_error_free(err);
    assert_int_equal(cg_group_new(s, "../escape", &ok, &g, &err), SBX_E_INVALID);
    err = sbx_error_free(err);
    assert_int_equal(cg_group_new(s, "", &ok, &g, &err), SBX_E_INVALID);
    err = sbx_error_free(err);
    assert_null(g);
    assert_false(exists(f, "cg/pids/llm-sandbox/p1t1-1"));

    /* A clash removes what was made and nothing that was there. */
    mkdirs(f, "cg/cpu/llm-sandbox/p1t1-2");
    assert_int_equal(cg_group_new(s, "p1t1-2", &ok, &g, &err), SBX_E_BACKEND);
    assert_non_null(strstr(err->msg, "File exists"));
    err = sbx_error_free(err);
    assert_false(exists(f, "cg/memory/api/x1/llm-sandbox/p1t1-2"));
    assert_false(exists(f, "cg/pids/llm-sandbox/p1t1-2"));
    assert_true(exists(f, "cg/cpu/llm-sandbox/p1t1-2"));
    cg_service_free(s);
}

static void test_none(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct cg_group *g = NULL;
    struct sbx_error *err = NULL;
    struct sbx_policy p = policy(MIB, 0, 1);

    put(f, "self_cgroup", "4:memory:/\n0::/\n");
    s = service_or_fail(&o); /* mount_root does not exist */
    assert_int_equal(cg_service_mode(s), CG_NONE);
    assert_false(cg_service_swap_accounted(s));
    assert_non_null(strstr(cg_service_describe(s), "no writable cgroup: "));
    assert_non_null(strstr(cg_service_describe(s), "/cg/memory: No such file or directory"));
    assert_int_equal(cg_group_new(s, "p1t1-1", &p, &g, &err), SBX_E_UNAVAILABLE);
    assert_non_null(strstr(err->msg, "no writable cgroup"));
    err = sbx_error_free(err);
    assert_int_equal(cg_service_sweep(s), 0);
    cg_service_free(s);

    o.allow_v1 = false;
    o.allow_v2 = false;
    v1_tree(f, false);
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_NONE);
    assert_non_null(strstr(cg_service_describe(s), "disabled"));
    cg_service_free(s);

    /* v1 without a pids line in /proc/self/cgroup */
    o.allow_v1 = true;
    put(f, "self_cgroup", "4:memory:/api/x1\n1:cpu:/\n");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_NONE);
    assert_non_null(strstr(cg_service_describe(s), "no pids line"));
    cg_service_free(s);
    assert_null(cg_service_free(NULL));
    assert_null(cg_group_free(NULL));
}

static void caps_init(struct sbx_caps *c)
{
    memset(c, 0, sizeof(*c));
    c->size = sizeof(*c);
    memset(c->level, 7, sizeof(c->level));
}

static void assert_others_untouched(const struct sbx_caps *c)
{
    for (int i = 0; i < SBX_CTL_MAX; i++) {
        if (i == SBX_CTL_MEMORY || i == SBX_CTL_CPU || i == SBX_CTL_PIDS)
            continue;
        assert_int_equal(c->level[i], 7);
        assert_string_equal(c->note[i], "");
    }
}

static void test_caps(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct sbx_caps c;

    v1_tree(f, true);
    s = service_or_fail(&o);
    caps_init(&c);
    cg_service_caps(s, &c);
    assert_int_equal(c.level[SBX_CTL_MEMORY], SBX_ENF_FULL);
    assert_int_equal(c.level[SBX_CTL_CPU], SBX_ENF_FULL);
    assert_int_equal(c.level[SBX_CTL_PIDS], SBX_ENF_FULL);
    assert_string_equal(c.note[SBX_CTL_MEMORY], "cgroup v1 memory.limit_in_bytes+memsw");
    assert_string_equal(c.note[SBX_CTL_CPU], "cgroup v1 cpu.cfs_quota_us");
    assert_string_equal(c.note[SBX_CTL_PIDS], "cgroup v1 pids.max");
    assert_others_untouched(&c);
    cg_service_free(s);

    v2_tree(f, "0::/srv\n", true);
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_V2);
    caps_init(&c);
    cg_service_caps(s, &c);
    assert_int_equal(c.level[SBX_CTL_MEMORY], SBX_ENF_FULL);
    assert_string_equal(c.note[SBX_CTL_MEMORY], "cgroup v2 memory.max, memory.swap.max=0");
    assert_string_equal(c.note[SBX_CTL_CPU], "cgroup v2 cpu.max");
    assert_string_equal(c.note[SBX_CTL_PIDS], "cgroup v2 pids.max");
    assert_others_untouched(&c);
    cg_service_free(s);
}

/* CG_NONE with a reason long enough, and multibyte, to need cutting. */
static void test_caps_none_truncated(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096];
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    struct sbx_caps c;

    snprintf(mount, sizeof(mount), "%s/%s", f->root,
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    put(f, "self_cgroup", "4:memory:/\n");
    s = service_or_fail(&o);
    assert_int_equal(cg_service_mode(s), CG_NONE);
    caps_init(&c);
    cg_service_caps(s, &c);
    assert_int_equal(c.level[SBX_CTL_MEMORY], SBX_ENF_FALLBACK);
    assert_int_equal(c.level[SBX_CTL_PIDS], SBX_ENF_FALLBACK);
    assert_int_equal(c.level[SBX_CTL_CPU], SBX_ENF_NONE);
    assert_true(strncmp(c.note[SBX_CTL_MEMORY],
                        "RLIMIT_AS per process (no writable cgroup: ", 43) == 0);
    assert_true(
            strncmp(c.note[SBX_CTL_PIDS], "RLIMIT_NPROC per uid (no writable cgroup: ", 42) == 0);
    assert_true(strncmp(c.note[SBX_CTL_CPU], "no writable cgroup: ", 20) == 0);
    for (int i = SBX_CTL_MEMORY; i <= SBX_CTL_PIDS; i++) {
        size_t n = strlen(c.note[i]);

        assert_true(n < sizeof(c.note[i]));
        assert_true(utf8_is_valid(c.note[i], n));
        assert_string_equal(c.note[i] + n - 3, "...");
    }
    assert_others_untouched(&c);
    cg_service_free(s);
}

/* Field 22 of /proc/self/stat. */
static uint64_t self_starttime(void)
{
    char buf[1024];
    FILE *fp = fopen("/proc/self/stat", "re");
    size_t n;
    char *p;
    uint64_t v = 0;

    assert_non_null(fp);
    n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    assert_non_null(p);
    for (int field = 2; field < 22; field++) {
        p = strchr(p, ' ');
        assert_non_null(p);
        p++;
    }
    assert_int_equal(sscanf(p, "%" SCNu64, &v), 1);
    return v;
}

static void test_sweep(void **state)
{
    struct fixture *f = *state;
    char mount[4096], self[4096], live[64], stale[64], rel[128], mine[OWNER_SCOPE_LEN + 1],
            ours_dead[80], ours_live[80], theirs_dead[80];
    static const char *const parents[] = {
            "cg/memory/api/x1/llm-sandbox/", "cg/pids/llm-sandbox/", "cg/cpu/llm-sandbox/"};
    struct cg_options o = fake_opts(f, mount, self);
    struct cg_service *s;
    uint64_t start = self_starttime();

    /* names without a scope (older instances) are judged by their pid;
     * with one, only those of our scope (boot and pid namespace) are */
    snprintf(live, sizeof(live), "p%dt%" PRIu64 "-1", (int)getpid(), start);
    snprintf(stale, sizeof(stale), "p%dt%" PRIu64 "-2", (int)getpid(), start + 1);
    owner_scope(mine);
    snprintf(ours_live, sizeof(ours_live), "p%dt%" PRIu64 "h%s-5", (int)getpid(), start, mine);
    snprintf(ours_dead, sizeof(ours_dead), "p999999999t1h%s-6", mine);
    snprintf(theirs_dead, sizeof(theirs_dead), "p999999999t1h%s-7",
            strcmp(mine, "0123456789abcdef") ? "0123456789abcdef" : "fedcba9876543210");
    v1_tree(f, false);
    s = service_or_fail(&o);
    for (int i = 0; i < 3; i++) {
        const char *names[] = {live, stale, "p999999999t1-3", "foreign", "p12t3", "p1t2-3.x",
                ours_live, ours_dead, theirs_dead, "p999999999t1hxyz-8"};

        for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
            snprintf(rel, sizeof(rel), "%s%s", parents[i], names[j]);
            mkdirs(f, rel);
        }
        snprintf(rel, sizeof(rel), "%sp999999999t1-3/cgroup.procs", parents[i]);
        put(f, rel, ""); /* a control file, as the kernel would have */
    }
    assert_int_equal(cg_service_sweep(s), 3);
    for (int i = 0; i < 3; i++) {
        const char *kept[] = {
                live, "foreign", "p12t3", "p1t2-3.x", ours_live, theirs_dead, "p999999999t1hxyz-8"};
        const char *gone[] = {stale, "p999999999t1-3", ours_dead};

        for (size_t j = 0; j < sizeof(kept) / sizeof(kept[0]); j++) {
            snprintf(rel, sizeof(rel), "%s%s", parents[i], kept[j]);
            assert_true(exists(f, rel));
        }
        for (size_t j = 0; j < sizeof(gone) / sizeof(gone[0]); j++) {
            snprintf(rel, sizeof(rel), "%s%s", parents[i], gone[j]);
            assert_false(exists(f, rel));
        }
    }
    assert_int_equal(cg_service_sweep(s), 0);
    cg_service_free(s);
}

/* An instance's name (owner.h): made, read back, and judged. */
/* /proc/PID/status's NSpid line, each level of it. */
static void test_nspid(void **state)
{
    pid_t pid = 0;

    (void)state;
    assert_int_equal(cg_nspid("Name:\tx\nNSpid:\t4711\t12\t1\nNSpgid:\t9\n", 0, &pid), 0);
    assert_int_equal(pid, 4711);
    assert_int_equal(cg_nspid("Name:\tx\nNSpid:\t4711\t12\t1\nNSpgid:\t9\n", 1, &pid), 0);
    assert_int_equal(pid, 12);
    assert_int_equal(cg_nspid("NSpid:\t4711\t12\t1", 2, &pid), 0);
    assert_int_equal(pid, 1);
    pid = 0;
    assert_int_equal(cg_nspid("NSpid:\t4711\nNSpgid:\t12\n", 1, &pid), -1); /* not NSpgid's */
    assert_int_equal(cg_nspid("Name:\tx\n", 0, &pid), -1);
    assert_int_equal(cg_nspid("NSpid:\t47x11\t2\n", 1, &pid), -1);
    assert_int_equal(cg_nspid("NSpid:\t-3\t2\n", 0, &pid), -1);
    assert_int_equal(cg_nspid("NSpid:\t99999999999\t2\n", 0, &pid), -1);
    assert_int_equal(cg_nspid("XNSpid:\t5\t2\n", 0, &pid), -1);
    assert_int_equal(pid, 0);
}

static void test_owner_names(void **state)
{
    char name[64], mine[OWNER_SCOPE_LEN + 1], again[OWNER_SCOPE_LEN + 1], other[80];
    struct owner o;

    (void)state;
    owner_make(name, sizeof(name));
    owner_scope(mine);
    owner_scope(again);
    assert_string_equal(mine, again);
    assert_int_equal(strlen(mine), OWNER_SCOPE_LEN);
    assert_int_equal(owner_parse(name, &o), strlen(name));
    assert_int_equal(o.pid, (uint64_t)getpid());
    assert_int_equal(o.start, self_starttime());
    assert_string_equal(o.scope, mine);
    assert_false(owner_dead(&o, mine)); /* we are alive */
    o.start++;
    assert_true(owner_dead(&o, mine));         /* our pid, another start: reused */
    if (strcmp(mine, "0000000000000000") != 0) /* ... but only to an instance of its scope */
        assert_false(owner_dead(&o, "0000000000000000"));

    /* another scope's owner is never dead to us, whatever its pid */
    snprintf(other, sizeof(other), "p999999999t1h%s",
            strcmp(mine, "0123456789abcdef") ? "0123456789abcdef" : "fedcba9876543210");
    assert_int_equal(owner_parse(other, &o), strlen(other));
    assert_false(owner_dead(&o, mine));
    /* without a scope (an older instance's name): judged by the pid */
    assert_int_equal(owner_parse("p999999999t1-3", &o), strlen("p999999999t1"));
    assert_string_equal(o.scope, "");
    assert_true(owner_dead(&o, mine));

    /* what is not an owner's name */
    const char *bad[] = {"p-1t2", "p 1t2", "p01t2", "p1t+2", "p1", "x1t2", "p1t2hxyz",
            "p1t2h0123456789abcde", "p1t2h0123456789ABCDEF", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(owner_parse(bad[i], &o), 0);
}

/* ------------------------------------------------------------------------ */
/* Real cgroups: root on a host with writable v1 hierarchies only.           */
/* ------------------------------------------------------------------------ */

/* The real tests keep what they make here, so that teardown removes it
 * (killing any child) even after a failed assertion. */
struct real {
    struct cg_service *s;
    struct cg_group *g;
};

static int setup_real(void **state)
{
    struct cg_options o = {.mount_root = "/sys/fs/cgroup",
            .self_cgroup = "/proc/self/cgroup",
            .allow_v2 = true,
            .allow_v1 = true};
    struct real *r = calloc(1, sizeof(*r));
    struct sbx_error *err = NULL;

    if (!r)
        return -1;
    *state = r;
    if (geteuid() == 0 && cg_service_new(&o, &r->s, &err) < 0)
        return -1;
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* grandchildren come back to us to be reaped */
    return 0;
}

static int teardown_real(void **state)
{
    struct real *r = *state;

    r->g = cg_group_free(r->g);
    while (waitpid(-1, NULL, 0) > 0)
        continue;
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    cg_service_free(r->s);
    free(r);
    return 0;
}

/* The service, or a cmocka skip saying why not. */
static struct cg_service *real_service(void **state)
{
    struct real *r = *state;

    if (geteuid() != 0) {
        print_message("skipped: the real cgroup tests need root\n");
        skip();
    }
    if (cg_service_mode(r->s) != CG_V1) {
        print_message(
                "skipped: the real cgroup tests need v1; here: %s\n", cg_service_describe(r->s));
        skip();
    }
    return r->s;
}

/* /sys/fs/cgroup/<ctrl>/<our path>/llm-sandbox/<id>, from /proc/self/cgroup. */
static void real_dir(const char *ctrl, const char *id, char *out, size_t len)
{
    char line[4096], list[256], want[64];
    FILE *fp = fopen("/proc/self/cgroup", "re");

    assert_non_null(fp);
    out[0] = '\0';
    snprintf(want, sizeof(want), ",%s,", ctrl);
    while (fgets(line, sizeof(line), fp)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

        if (!c2)
            continue;
        *c2++ = '\0';
        c2[strcspn(c2, "\n")] = '\0';
        snprintf(list, sizeof(list), ",%s,", c1 + 1);
        if (strstr(list, want))
            snprintf(out, len, "/sys/fs/cgroup/%s%s/llm-sandbox/%s", ctrl,
                    strcmp(c2, "/") == 0 ? "" : c2, id);
    }
    fclose(fp);
    assert_true(out[0] != '\0');
}

/* A child joins g through cg_group_procs_fds, runs body, then signals
 * ready on the pipe and waits to be killed. */
static pid_t real_child(struct cg_group *g, void (*body)(void), int *ret_ready)
{
    int fds[4], pipefd[2];
    int n = cg_group_procs_fds(g, fds, 4);
    pid_t pid;

    assert_int_equal(n, 3);
    assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char buf[24];
        int len = snprintf(buf, sizeof(buf), "%d", (int)getpid());

        for (int i = 0; i < n; i++)
            if (write(fds[i], buf, (size_t)len) != len)
                _exit(1);
        if (body)
            body();
        if (write(pipefd[1], "x", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    close(pipefd[1]);
    *ret_ready = pipefd[0];
    return pid;
}

static bool procs_has(const char *dir, pid_t pid)
{
    char path[4200], line[64];
    FILE *fp;
    bool found = false;

    assert_true(snprintf(path, sizeof(path), "%s/cgroup.procs", dir) < (int)sizeof(path));
    fp = fopen(path, "re");
    assert_non_null(fp);
    while (fgets(line, sizeof(line), fp))
        if (strtol(line, NULL, 10) == pid)
            found = true;
    fclose(fp);
    return found;
}

static void test_real_join_kill_free(void **state)
{
    struct real *r = *state;
    struct cg_service *s = real_service(state);
    struct sbx_error *err = NULL;
    struct sbx_policy p = policy(64 * MIB, 500, 8);
    char id[64], dirs[3][4096], c;
    static const char *const ctrls[] = {"memory", "pids", "cpu"};
    int ready, status;
    pid_t pid;

    snprintf(id, sizeof(id), "p%dt%" PRIu64 "-9001", (int)getpid(), self_starttime());
    assert_int_equal(cg_group_new(s, id, &p, &r->g, &err), 0);
    for (int i = 0; i < 3; i++)
        real_dir(ctrls[i], id, dirs[i], sizeof(dirs[i]));
    pid = real_child(r->g, NULL, &ready);
    assert_int_equal(read(ready, &c, 1), 1);
    close(ready);
    for (int i = 0; i < 3; i++)
        assert_true(procs_has(dirs[i], pid));
    assert_false(cg_group_is_empty(r->g));
    assert_int_equal(cg_group_oom_killed(r->g), 0);
    assert_int_equal(cg_group_pids_limited(r->g), 0);

    assert_int_equal(cg_group_kill(r->g), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(cg_group_is_empty(r->g));
    r->g = cg_group_free(r->g);
    for (int i = 0; i < 3; i++)
        assert_int_equal(access(dirs[i], F_OK), -1);
}

/* The child unshares a pid namespace and forks its init, which waits. */
static void ns_init_child(void)
{
    pid_t pid;

    if (unshare(CLONE_NEWPID) < 0)
        _exit(1);
    pid = fork();
    if (pid < 0)
        _exit(1);
    if (pid == 0)
        for (;;)
            pause();
}

/* A zygote's run (pool_zygote.c): a process of a pid namespace below
 * ours, found in its group by its pid there, then moved into another. */
static void test_real_find_attach(void **state)
{
    struct real *r = *state;
    struct cg_service *s = real_service(state);
    struct cg_group *other = NULL;
    struct sbx_error *err = NULL;
    struct sbx_policy p = policy(64 * MIB, 500, 8);
    char id[64], id2[64], dir[4096], c;
    pid_t child, init = 0, again = 0;
    int ready;

    snprintf(id, sizeof(id), "p%dt%" PRIu64 "-9002", (int)getpid(), self_starttime());
    snprintf(id2, sizeof(id2), "p%dt%" PRIu64 "-9003", (int)getpid(), self_starttime());
    assert_int_equal(cg_group_new(s, id, &p, &r->g, &err), 0);
    assert_int_equal(cg_group_new(s, id2, &p, &other, &err), 0);
    child = real_child(r->g, ns_init_child, &ready);
    assert_int_equal(read(ready, &c, 1), 1);
    close(ready);

    /* the child is pid 1 of nothing below us: only its init matches */
    assert_int_equal(cg_service_find_pid(s, id, 1, &init, &err), 0);
    assert_true(init > 1 && init != child);
    assert_int_equal(cg_service_find_pid(s, id, 2, &again, &err), SBX_E_BACKEND);
    assert_int_equal(err->sys_errno, ESRCH);
    err = sbx_error_free(err);
    assert_int_equal(cg_group_find_pid(other, 1, &again, &err), SBX_E_BACKEND);
    err = sbx_error_free(err);

    assert_int_equal(cg_group_attach(other, init, &err), 0);
    real_dir("memory", id2, dir, sizeof(dir));
    assert_true(procs_has(dir, init));
    assert_int_equal(cg_group_find_pid(other, 1, &again, &err), 0);
    assert_int_equal(again, init);
    assert_int_equal(cg_service_attach(s, id, init, &err), 0); /* and back by the group's id */
    real_dir("memory", id, dir, sizeof(dir));
    assert_true(procs_has(dir, init));
    assert_int_equal(cg_group_attach(other, 1, &err), SBX_E_INVALID);
    err = sbx_error_free(err);
    other = cg_group_free(other);
}

/* Forks until the pids limit stops it; the children stay to be killed. */
static void fork_past_limit(void)
{
    for (int i = 0; i < 12; i++) {
        pid_t pid = fork();

        if (pid == 0) {
            for (;;)
                pause();
        }
    }
}

/* volatile: the compiler must not drop an allocation nobody reads. */
static void touch_128_mib(void)
{
    size_t len = 128 * MIB;
    volatile char *p = malloc(len);

    for (size_t i = 0; p && i < len; i += 4096)
        p[i] = 1;
    free((void *)p);
}

/* pids.max and memory.limit_in_bytes hold, and their events are read. */
static void test_real_limits(void **state)
{
    struct real *r = *state;
    struct cg_service *s = real_service(state);
    struct sbx_error *err = NULL;
    struct sbx_policy p = policy(64 * MIB, 0, 8);
    char id[64], c;
    int ready, status;
    pid_t pid;

    snprintf(id, sizeof(id), "p%dt%" PRIu64 "-9002", (int)getpid(), self_starttime());
    assert_int_equal(cg_group_new(s, id, &p, &r->g, &err), 0);
    real_child(r->g, fork_past_limit, &ready);
    assert_int_equal(read(ready, &c, 1), 1);
    close(ready);
    assert_int_equal(cg_group_pids_limited(r->g), 1);
    assert_int_equal(cg_group_oom_killed(r->g), 0);
    assert_int_equal(cg_group_kill(r->g), 0);
    while (waitpid(-1, &status, 0) > 0)
        continue;

    pid = real_child(r->g, touch_128_mib, &ready);
    assert_int_equal(read(ready, &c, 1), 0); /* killed before it got there */
    close(ready);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(cg_group_oom_killed(r->g), 1);
}

/* Whatever this host offers, the report is consistent. */
static void test_real_detect(void **state)
{
    struct cg_options o = {.mount_root = "/sys/fs/cgroup",
            .self_cgroup = "/proc/self/cgroup",
            .allow_v2 = true,
            .allow_v1 = true};
    struct cg_service *s = NULL;
    struct sbx_error *err = NULL;
    struct sbx_caps c;

    (void)state;
    assert_int_equal(cg_service_new(&o, &s, &err), 0);
    print_message("host cgroups: %s\n", cg_service_describe(s));
    caps_init(&c);
    cg_service_caps(s, &c);
    if (cg_service_mode(s) == CG_NONE) {
        assert_true(strncmp(cg_service_describe(s), "no writable cgroup: ", 20) == 0);
        assert_int_equal(c.level[SBX_CTL_MEMORY], SBX_ENF_FALLBACK);
        assert_int_equal(c.level[SBX_CTL_CPU], SBX_ENF_NONE);
    } else {
        assert_int_equal(c.level[SBX_CTL_MEMORY], SBX_ENF_FULL);
    }
    if (geteuid() != 0)
        assert_int_equal(cg_service_mode(s), CG_NONE);
    cg_service_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_v2_group, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v2_from_supervisor, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v2_moves_every_process, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v2_systemd_delegated, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v2_systemd_service_refused, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v2_systemd_scope, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v2_systemd_user, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v2_parent_remade, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v2_not_delegated, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v1_group, setup, teardown),
            cmocka_unit_test_setup_teardown(test_v1_no_memsw_no_quota, setup, teardown),
            cmocka_unit_test_setup_teardown(test_invalid_requests, setup, teardown),
            cmocka_unit_test_setup_teardown(test_none, setup, teardown),
            cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
            cmocka_unit_test_setup_teardown(test_caps_none_truncated, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
            cmocka_unit_test(test_owner_names),
            cmocka_unit_test(test_nspid),
            cmocka_unit_test(test_real_detect),
            cmocka_unit_test_setup_teardown(test_real_join_kill_free, setup_real, teardown_real),
            cmocka_unit_test_setup_teardown(test_real_find_attach, setup_real, teardown_real),
            cmocka_unit_test_setup_teardown(test_real_limits, setup_real, teardown_real),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
