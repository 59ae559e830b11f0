/* SPDX-License-Identifier: MIT */
/*
 * cgroup_v2_place.c: where on a cgroup v2 host the sandboxes' groups may
 * go (cgroup_int.h), when systemd manages the tree. systemd owns every
 * unit's cgroup unless the unit delegates it (Delegate=yes): then it
 * marks the cgroup with the xattr user.delegate=1 (systemd 251 and later;
 * trusted.delegate=1 too, which only root can read), and for an
 * unprivileged user it also hands the directory over (chown) when the
 * system manager delegates. So:
 *
 *   - our unit (the nearest unit at or above our cgroup) is delegated
 *     (marked; handed over; or, for a unit of our own user manager,
 *     which marks nothing in systemd 252, it says so over D-Bus): the
 *     subtree is ours; every process in our cgroup moves into the leaf
 *     <own>/supervisor, as the no-internal-processes rule wants, before
 *     the controllers are enabled for <own>/llm-sandbox;
 *   - it is a scope without delegation (a login shell's session-N.scope,
 *     an application's scope): we ask systemd for a transient scope with
 *     Delegate=yes holding only this process (scope.h), then as above;
 *   - it is a service (or anything else) without delegation: we do not
 *     escape the unit the operator set up and write nothing; the caller
 *     falls back and doctor says which unit and how to fix it.
 *
 * Without systemd (no /run/systemd/system) our cgroup is taken as found.
 * Decides no policy beyond that; does no logging.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/util.h"
#include "host/cgroup_int.h"
#include "host/scope.h"

#define CG_MOVE_PASSES 8

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n > m && strcmp(s + n - m, suffix) == 0;
}

/* The unit types that own cgroups (systemd.unit(5)). */
static bool is_unit_name(const char *name)
{
    static const char *const kinds[] = {
            ".service", ".scope", ".slice", ".socket", ".mount", ".swap"};

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (has_suffix(name, kinds[i]))
            return true;
    return false;
}

/* systemd's delegate mark: user.delegate (readable by anyone), else
 * trusted.delegate (root only). Its value is a boolean. How we know, for
 * doctor, or NULL. */
static const char *delegate_mark(const char *dir)
{
    static const char *const names[] = {"user.delegate", "trusted.delegate"};
    static const char *const says[] = {"marked user.delegate=1", "marked trusted.delegate=1"};

    for (size_t i = 0; i < 2; i++) {
        char v[8];
        ssize_t n = getxattr(dir, names[i], v, sizeof(v) - 1);

        if (n <= 0)
            continue;
        v[n] = '\0';
        return strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 ? says[i]
                                                                                      : NULL;
    }
    return NULL;
}

/* For an unprivileged user, where systemd predates the mark: the system
 * manager delegates a unit to a user by handing its directory over, so a
 * directory of ours in a parent that is not ours was delegated to us. (A
 * user manager's units are all the user's: nothing to learn there.) */
static bool handed_over(const char *dir, uid_t me)
{
    cleanup_free char *parent = strdup(dir);
    char *slash = parent ? strrchr(parent, '/') : NULL;
    struct stat st, pst;

    if (me == 0 || !slash || slash == parent)
        return false;
    *slash = '\0';
    return stat(dir, &st) == 0 && stat(parent, &pst) == 0 && st.st_uid == me && pst.st_uid != me;
}

static uid_t euid_of(const struct cg_options *opt)
{
    return opt->as_uid ? *opt->as_uid : geteuid();
}

/* A unit of our own user manager (unprivileged, its directory ours):
 * systemd 252's user manager marks nothing, so ask it; when it cannot be
 * asked, the directory being ours is taken as delegation. */
static void ask_user_manager(
        struct cg_service *s, const struct cg_options *opt, const char *path, const char *unit)
{
    cleanup_error struct sbx_error *e = NULL;
    struct scope_request req;
    uid_t me = euid_of(opt);
    struct stat st;
    int r;

    if (me == 0 || stat(path, &st) < 0 || st.st_uid != me || !opt->systemd ||
            !opt->systemd->unit_delegated)
        return;
    if (scope_request_init(
                &req, "", opt->owner ? opt->owner : "x", getpid(), me, opt->runtime_dir, &e) < 0)
        return;
    r = opt->systemd->unit_delegated(&req, unit, opt->systemd->userdata, &e);
    if (r == 1) {
        s->how = CG_HOW_DELEGATED;
        s->basis = "its manager says Delegate=yes";
    } else if (r < 0) {
        s->how = CG_HOW_DELEGATED;
        s->basis = "assumed: its cgroup is ours and the user's manager could not be asked";
    }
}

int cg_v2_place(struct cg_service *s, const struct cg_options *opt, const char *base)
{
    cleanup_free char *path = strdup(base);
    size_t root_len = strlen(opt->mount_root);

    if (!path)
        return SBX_E_NOMEM;
    if (!opt->systemd_dir || access(opt->systemd_dir, F_OK) < 0) {
        s->how = CG_HOW_UNMANAGED;
        return 0;
    }
    while (root_len > 1 && opt->mount_root[root_len - 1] == '/')
        root_len--;
    for (;;) {
        char *slash = strrchr(path, '/');
        const char *name = slash ? slash + 1 : path;

        if (strlen(path) <= root_len || !slash) {
            /* the root cgroup, as systemd's "-.slice": never ours */
            s->how = CG_HOW_NOT_DELEGATED;
            s->unit = strdup("-.slice");
            return s->unit ? 0 : SBX_E_NOMEM;
        }
        if (is_unit_name(name) && !s->unit && !(s->unit = strdup(name)))
            return SBX_E_NOMEM;
        s->basis = delegate_mark(path);
        if (!s->basis && handed_over(path, euid_of(opt)))
            s->basis = "handed over to us";
        if (s->basis) {
            s->how = CG_HOW_DELEGATED;
            return 0;
        }
        if (is_unit_name(name)) {
            s->how = CG_HOW_NOT_DELEGATED;
            ask_user_manager(s, opt, path, name);
            return s->how == CG_HOW_NOT_DELEGATED && has_suffix(name, ".scope");
        }
        *slash = '\0'; /* a cgroup inside a unit, made by its processes: look above */
    }
}

int cg_v2_scope(struct cg_service *s, const struct cg_options *opt, const char *base,
        char **ret_base, struct sbx_error **err)
{
    cleanup_free char *now = NULL;
    struct scope_request req;
    const char *slash;
    int r;

    s->how = CG_HOW_SCOPE_FAILED;
    r = scope_request_init(&req, base + strlen(opt->mount_root), opt->owner ? opt->owner : "x",
            getpid(), euid_of(opt), opt->runtime_dir, err);
    if (r < 0)
        return r;
    s->user_manager = req.user_manager;
    s->scope = strdup(req.unit);
    if (!s->scope)
        return cg_oom(err);
    if (!opt->systemd || !opt->systemd->start_scope)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "asking systemd for a scope is off");
    r = opt->systemd->start_scope(&req, opt->systemd->userdata, err);
    if (r < 0)
        return r;
    r = cg_own_dir(opt->mount_root, opt->self_cgroup, NULL, &now, err);
    if (r < 0)
        return r;
    slash = strrchr(now, '/');
    if (!slash || strcmp(slash + 1, req.unit) != 0)
        return sbx_error_set(err, SBX_E_BACKEND, 0,
                "systemd started %s, but this process is in %s, not in it", req.unit, now);
    s->how = CG_HOW_SCOPE;
    *ret_base = steal_ptr(&now);
    return 0;
}

/* What /proc says a process is called, for a message. */
static void comm_of(long pid, char *out, size_t len)
{
    char path[64];
    cleanup_close int fd = -1;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    n = fd < 0 ? -1 : read(fd, out, len - 1);
    if (n <= 0) {
        snprintf(out, len, "?");
        return;
    }
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

/* Write each pid of base's cgroup.procs into leaf's (one write per pid, as
 * cgroupfs wants). A process that is gone meanwhile is no error. A fake
 * tree keeps the pids written and empties the source, as a kernel would. */
static int move_all(const char *base, const char *leaf, bool fake, struct sbx_error **err)
{
    cleanup_free char *src = cg_path_join(base, "cgroup.procs");
    cleanup_free char *dst = cg_path_join(leaf, "cgroup.procs");
    cleanup_free char *buf = NULL;
    cleanup_close int fd = -1;
    char *cur;
    int r;

    if (!src || !dst)
        return cg_oom(err);
    r = cg_read_all(src, &buf);
    if (r == -ENOENT && fake)
        return 0;
    if (r < 0)
        return sbx_error_set(
                err, r == -ENOMEM ? SBX_E_NOMEM : SBX_E_BACKEND, -r, "%s: %s", src, strerror(-r));
    fd = open(dst, O_WRONLY | O_CLOEXEC | (fake ? O_CREAT | O_APPEND : 0), 0644);
    if (fd < 0)
        return cg_sys_fail(err, "", dst);
    cur = buf;
    for (char *line = cg_next_line(&cur); line; line = cg_next_line(&cur)) {
        uint64_t pid;
        char num[24], comm[32];
        int n;

        if (parse_u64(line, &pid) < 0)
            continue;
        n = snprintf(num, sizeof(num), "%llu\n", (unsigned long long)pid);
        if (write(fd, num, (size_t)n) == n || errno == ESRCH)
            continue;
        comm_of((long)pid, comm, sizeof(comm));
        return sbx_error_set(err, SBX_E_BACKEND, errno,
                "cannot move process %llu (%s) from %s to %s: %s", (unsigned long long)pid, comm,
                base, leaf, strerror(errno));
    }
    if (fake && truncate(src, 0) < 0)
        return cg_sys_fail(err, "", src);
    return 0;
}

/* Are memory, pids and cpu all in dir's cgroup.subtree_control? */
static bool controllers_enabled(const char *dir)
{
    cleanup_free char *path = cg_path_join(dir, "cgroup.subtree_control");
    cleanup_free char *have = NULL;

    if (!path || cg_read_all(path, &have) < 0)
        return false;
    for (size_t i = 0; i < CG_DIRS; i++) {
        char plus[16];

        snprintf(plus, sizeof(plus), "+%s", cg_controllers[i]);
        /* the kernel lists "memory"; a fake tree keeps what was written */
        if (!cg_has_word(have, cg_controllers[i], " \n") && !cg_has_word(have, plus, " \n"))
            return false;
    }
    return true;
}

int cg_v2_take(const char *base, bool root, bool fake, struct sbx_error **err)
{
    cleanup_free char *leaf = NULL;

    if (controllers_enabled(base))
        return 0; /* then no process can be in base: someone did this before */
    if (root)     /* a host's every process, kernel threads included: not ours to move */
        return cg_write_ctl(base, "cgroup.subtree_control", CG_V2_CTRLS, fake, err);
    leaf = cg_path_join(base, CG_LEAF);
    if (!leaf)
        return cg_oom(err);
    if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
        return cg_sys_fail(err, "cannot create ", leaf);
    /* a process forked in base meanwhile makes the write fail with EBUSY:
     * move again */
    for (int pass = 0; pass < CG_MOVE_PASSES; pass++) {
        cleanup_error struct sbx_error *e = NULL;
        int r = move_all(base, leaf, fake, err);

        if (r < 0)
            return r;
        r = cg_write_ctl(base, "cgroup.subtree_control", CG_V2_CTRLS, fake, &e);
        if (r == 0)
            return 0;
        if (e->sys_errno != EBUSY)
            return sbx_error_set(err, e->rc, e->sys_errno, "%s", e->msg);
    }
    return sbx_error_set(err, SBX_E_BACKEND, EBUSY,
            "%s: processes kept arriving while moving them to %s", base, leaf);
}
