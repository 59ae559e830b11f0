/* SPDX-License-Identifier: MIT */
/*
 * session_libs.c: libraries into a live session. A call that names
 * libraries the session does not have gets the set of the union (the
 * session's libraries and the call's, resolved together), installed or
 * taken from the cache exactly as a one-shot run with that list would
 * (install/install.c, in a box of its own behind the filtering proxy).
 *
 * A running box cannot take a new mount on any backend, so the set is
 * copied into it through the agent instead: every regular file beneath
 * /tmp/.sbx/libs/N (N counts the session's copies), with the agent's own
 * checks (PUT with AGENT_PUT_TMP: relative paths without "." or "..",
 * created O_EXCL beneath /tmp without following a link, the agent's file
 * size limit). The host walks the set with openat(O_NOFOLLOW) and never
 * follows a link of it; links are not copied (a warning counts them). The
 * files are read-only (0444, 0555 when executable); the directories the
 * agent makes are the sandbox user's, so a program could add files there,
 * which only ever affects its own session.
 *
 * Then the environment (for builds, runs and a restarted interpreter)
 * gets the recipe's run_env with /deps replaced by that directory, and a
 * running interpreter runs the manifest's language.session.libraries with
 * {libs} replaced by it (Python: sys.path; JavaScript: NODE_PATH; R:
 * .libPaths; Ruby: GEM_PATH), so that its variables stay. Union semantics:
 * the newest set comes first on the search path; a module the interpreter
 * imported from an earlier one stays loaded as it was; a union that does
 * not resolve (conflicting versions) fails as an install and leaves the
 * session as it was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/dynbuf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "cache/deps.h"
#include "channel/agentc.h"
#include "engine/engine.h"
#include "host/uidrange.h"
#include "install/install.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "policy/settings.h"
#include "runtime_state.h"
#include "sessions/session.h"

#define LIBS_DIR   "/tmp/.sbx/libs"
#define LIBS_FILES 200000 /* files one set may stage */
#define LIBS_DEPTH 64

struct stager {
    struct run *r;
    char path[PATH_MAX]; /* beneath /tmp: ".sbx/libs/N/..." */
    uint64_t bytes, files, links;
    int64_t deadline;
    int end;    /* 0, an enum agentc_end, or SBX_E_IO (the agent refused) */
    int errno_; /* the host could not read the set */
};

/* A whole regular file, read through its descriptor. */
static int read_all(int fd, size_t size, char **ret)
{
    char *buf = malloc(size ? size : 1);
    size_t off = 0;

    if (!buf)
        return -ENOMEM;
    while (off < size) {
        ssize_t n = read(fd, buf + off, size - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* it changed under us: the set is sealed, so never */
            free(buf);
            return n < 0 ? -errno : -EIO;
        }
        off += (size_t)n;
    }
    *ret = buf;
    return 0;
}

static void stage_tree(struct stager *st, int dfd, size_t plen, int depth);

static void stage_entry(struct stager *st, int dfd, const char *name, size_t plen, int depth)
{
    size_t nlen = strlen(name);
    struct stat sb;
    int fd;

    if (plen + 1 + nlen >= sizeof(st->path)) {
        st->errno_ = ENAMETOOLONG;
        return;
    }
    st->path[plen] = '/';
    memcpy(st->path + plen + 1, name, nlen + 1);
    if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        st->errno_ = errno;
        return;
    }
    if (S_ISLNK(sb.st_mode) || (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))) {
        st->links++;
        return;
    }
    fd = openat(dfd, name,
            O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
                    (S_ISDIR(sb.st_mode) ? O_DIRECTORY : 0));
    if (fd < 0 || fstat(fd, &sb) < 0) {
        st->errno_ = errno;
        if (fd >= 0)
            close(fd);
        return;
    }
    if (S_ISDIR(sb.st_mode)) {
        stage_tree(st, fd, plen + 1 + nlen, depth + 1);
    } else if (S_ISREG(sb.st_mode)) {
        char *data = NULL;
        int rc = ++st->files > LIBS_FILES ? -EFBIG : read_all(fd, (size_t)sb.st_size, &data);

        if (rc < 0) {
            st->errno_ = -rc;
        } else {
            st->bytes += (uint64_t)sb.st_size;
            st->end = agentc_put_file(st->r->ac, st->path + 5, (sb.st_mode & 0111) ? 0555 : 0444,
                    data, (size_t)sb.st_size, AGENTC_PUT_TMP, st->deadline);
        }
        free(data);
    }
    close(fd);
    if (st->end == 0 && st->errno_ == 0) /* else it names what failed */
        st->path[plen] = '\0';
}

/* Every regular file beneath dfd (which it closes), st->path its place. */
static void stage_tree(struct stager *st, int dfd, size_t plen, int depth)
{
    DIR *d = depth > LIBS_DEPTH ? NULL : fdopendir(dfd);
    struct dirent *de;

    if (!d) {
        st->errno_ = depth > LIBS_DEPTH ? ELOOP : errno;
        close(dfd);
        return;
    }
    while (st->end == 0 && st->errno_ == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (depth == 0 && strncmp(de->d_name, ".sbx", 4) == 0)
            continue; /* the cache's record of the set (cache/deps.c) */
        stage_entry(st, dirfd(d), de->d_name, plen, depth);
    }
    closedir(d);
}

/* "/deps" at the start of a path in v (at its start, or after ':' or ' ')
 * replaced by root. (transfer full) */
static char *rebase(const char *v, const char *root)
{
    struct dynbuf b;
    char *out;

    dynbuf_init(&b, 1u << 16);
    for (const char *p = v; *p;) {
        bool start = p == v || p[-1] == ':' || p[-1] == ' ' || p[-1] == '=';

        if (start && strncmp(p, "/deps", 5) == 0 && strchr("/: ", p[5]) != NULL) {
            if (dynbuf_append(&b, root, strlen(root)) < 0)
                break;
            p += 5;
        } else {
            if (dynbuf_append(&b, p, 1) < 0)
                break;
            p++;
        }
    }
    if (dynbuf_append(&b, "", 1) < 0) {
        dynbuf_done(&b);
        return NULL;
    }
    out = dynbuf_take(&b, NULL);
    dynbuf_done(&b);
    return out;
}

/* The recipe's run_env, pointed at root, into env. 0 or SBX_E_NOMEM. */
static int env_point(char ***env, char *const *run_env, const char *root)
{
    for (; run_env && *run_env; run_env++) {
        char *kv = rebase(*run_env, root);
        int rc = kv ? strv_setenv(env, kv) : SBX_E_NOMEM;

        free(kv);
        if (rc < 0)
            return SBX_E_NOMEM;
    }
    return 0;
}

/* The interpreter's code with {libs} replaced. (transfer full) */
static char *snippet(const char *tmpl, const char *root)
{
    struct dynbuf b;
    char *out;

    dynbuf_init(&b, 1u << 16);
    for (const char *p = tmpl; *p;) {
        if (strncmp(p, "{libs}", 6) == 0) {
            (void)dynbuf_append(&b, root, strlen(root));
            p += 6;
        } else {
            (void)dynbuf_append(&b, p++, 1);
        }
    }
    if (dynbuf_append(&b, "", 1) < 0) {
        dynbuf_done(&b);
        return NULL;
    }
    out = dynbuf_take(&b, NULL);
    dynbuf_done(&b);
    return out;
}

/* Run the language's code in the live interpreter: 0, or 1 when decided. */
static int tell_interpreter(
        struct sbx_session *s, struct run *r, const char *root, struct sbx_error **err)
{
    struct agentc_sink sink = {0};
    struct agentc_exit ex = {0};
    cleanup_free char *code = snippet(r->lang->m->lang->session->libraries, root);
    cleanup_free char *buf = NULL;
    int status = 0, end;

    if (!code || asprintf(&buf, "%zu 0\n%s", strlen(code), code) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    capture_init(&sink.out, 4096);
    capture_init(&sink.err, 4096);
    end = agentc_converse(
            r->ac, s->head, buf, strlen(buf), now_ms() + SETUP_TIMEOUT_MS, &sink, &status, &ex);
    if (end == AGENTC_MARKED && status == 0) {
        capture_done(&sink.out);
        capture_done(&sink.err);
        return 0;
    }
    if (end == AGENTC_TIMEOUT || end == AGENTC_CANCELLED) {
        struct agentc_exit kx;

        if (agentc_kill(r->ac, now_ms() + KILL_WAIT_MS, &sink, &kx) != AGENTC_EXITED)
            s->dead = true;
    }
    if (end != AGENTC_MARKED)
        s->repl_alive = false; /* the next call starts one, with the set */
    if (end == AGENTC_LOST)
        s->dead = true;
    r->ex->status = end == AGENTC_CANCELLED ? SBX_STATUS_CANCELLED : SBX_STATUS_ERROR;
    (void)dynbuf_append(&sink.err.buf, "", 1);
    (void)!asprintf(&r->ex->message,
            "the libraries are in the sandbox, but the %s interpreter could not put them on its "
            "search path (%s)%s%.300s",
            s->language,
            end == AGENTC_MARKED ? "its code failed"
            : end < 0            ? "error"
                                 : agentc_last_error(r->ac),
            sink.err.buf.len > 1 ? ": " : "", sink.err.buf.buf ? sink.err.buf.buf : "");
    if (!s->repl_alive)
        strv_push(&r->ex->warnings, "the interpreter was stopped: the session's variables are "
                                    "gone (its files remain); the next call starts a new one "
                                    "with the libraries");
    capture_done(&sink.out);
    capture_done(&sink.err);
    return 1;
}

/* The union of the session's libraries and the call's, the session's
 * first; NULL when the call adds none. *ret_n: its length. */
static int lib_union(
        const struct sbx_session *s, const struct sbx_request *q, char ***ret, size_t *ret_n)
{
    char **u = NULL;
    bool adds = false;

    for (char **l = s->libs; l && *l; l++)
        if (strv_push(&u, *l) < 0)
            goto oom;
    for (size_t i = 0; i < q->n_libraries; i++) {
        if (strv_contains(u, q->libraries[i]))
            continue;
        adds = true;
        if (strv_push(&u, q->libraries[i]) < 0)
            goto oom;
    }
    if (!adds)
        u = strv_free(u);
    *ret = u;
    *ret_n = strv_len(u);
    return 0;
oom:
    strv_free(u);
    return SBX_E_NOMEM;
}

/* Which languages can take a set while their session runs: those whose
 * recipe points them at it through run_env (not a build command that
 * names /deps), and, with an interpreter, that say how it adds a path. */
static int live_check(struct sbx_session *s, struct run *r)
{
    const struct manifest_lang *l = r->lang->m->lang;

    if (!l->install->run_env || !*l->install->run_env)
        return engine_refuse(r,
                "a running %s session cannot take new libraries (its build reads them from "
                "/deps, which only a new sandbox can mount): create a new session with all of "
                "them in create_session's libraries",
                s->language);
    if (s->repl_argv && (!l->session || !l->session->libraries))
        return engine_refuse(r,
                "the %s interpreter of a running session cannot take new libraries (its "
                "manifest has no language.session.libraries): create a new session with all "
                "of them in create_session's libraries",
                s->language);
    return 0;
}

int session_add_libraries(struct sbx_session *s, struct run *r, struct sbx_error **err)
{
    struct sessions *ss = r->rt->sessions;
    struct sbx_request ireq;
    struct run ir;
    struct stager st = {.r = r};
    char root[64], **libs = NULL, **env = NULL, **repl_env = NULL, **old;
    size_t n = 0;
    uint64_t size;
    int rc, fd;

    if (lib_union(s, r->req, &libs, &n) < 0)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    if (!libs)
        return 0;
    if (live_check(s, r)) {
        strv_free(libs);
        return 1;
    }
    /* the union's set, as a one-shot run with that list gets it */
    ireq = (struct sbx_request){.language = s->language,
            .backend = s->backend,
            .code = "",
            .libraries = (const char *const *)libs,
            .n_libraries = n,
            .on_phase = r->req->on_phase,
            .userdata = r->req->userdata,
            .cancel = r->req->cancel};
    ir = (struct run){.rt = r->rt,
            .req = &ireq,
            .ex = r->ex,
            .backend = r->backend,
            .lang = r->lang,
            .policy = r->policy,
            .explicit_mask = r->explicit_mask,
            .env = r->env,
            .t0 = r->t0,
            /* the staging belongs to the session box's ids: its lease,
             * lent (the session releases it when it closes) */
            .ids = s->base.ids};
    rc = prepare_libraries(&ir, err);
    if (ir.ids != s->base.ids) /* none to lend: it took its own */
        uid_lease_free(ir.ids);
    ir.ids = NULL;
    free(ir.ws_mount_src);
    free(ir.ws_mount_dst);
    if (rc != 0) {
        if (rc > 0 && s->libs && r->ex->status != SBX_STATUS_REFUSED)
            (void)!strv_push(&r->ex->warnings,
                    "the call's libraries were installed together with the session's, as one "
                    "set, and that failed (see the install log): the session keeps the "
                    "libraries and variables it had");
        ir.deps = deps_close(ir.deps);
        strv_free(libs);
        return rc;
    }
    size = deps_tree_bytes(ir.deps->dir, r->policy.tmpfs_bytes + 1);
    if (size > r->policy.tmpfs_bytes) {
        ir.deps = deps_close(ir.deps);
        strv_free(libs);
        return engine_refuse(r,
                "the libraries take more than the sandbox's /tmp holds (%" PRIu64
                " MiB), where a running session keeps them: create a new session with them in "
                "create_session's libraries (mounted there, not copied)",
                r->policy.tmpfs_bytes >> 20);
    }
    /* copy it in */
    engine_phase(r, "installing");
    /* a fresh directory for every copy, even after one that failed half-way */
    snprintf(root, sizeof(root), LIBS_DIR "/%u", ++s->libs_gen);
    snprintf(st.path, sizeof(st.path), "%s", root);
    st.deadline = now_ms() + (int64_t)r->rt->settings->install_timeout_ms;
    fd = open(ir.deps->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        st.errno_ = errno;
    else
        stage_tree(&st, fd, strlen(root), 0);
    if (st.end != 0 || st.errno_ != 0) {
        ir.deps = deps_close(ir.deps);
        strv_free(libs);
        if (st.end == AGENTC_LOST)
            s->dead = true;
        r->ex->status = st.end == AGENTC_CANCELLED ? SBX_STATUS_CANCELLED : SBX_STATUS_ERROR;
        (void)!asprintf(&r->ex->message,
                "copying the libraries into the session's sandbox failed at %s: %s; the session "
                "keeps its earlier libraries (or create a new session with them in "
                "create_session's libraries)",
                st.path,
                st.errno_                    ? strerror(st.errno_)
                : st.end == AGENTC_TIMEOUT   ? "timed out"
                : st.end == AGENTC_CANCELLED ? "cancelled"
                                             : agentc_last_error(r->ac));
        return 1;
    }
    log_msg(SBX_LOG_INFO, s->language,
            "session %s: %zu libraries at %s (%" PRIu64 " files, %" PRIu64 " bytes)", s->id, n,
            root, st.files, st.bytes);
    if (st.links)
        (void)!strv_pushf(&r->ex->warnings,
                "%" PRIu64 " symbolic links or special files of the dependency set were not "
                "copied into the running session",
                st.links);
    /* point the environment at it, then the live interpreter */
    if (strv_dup(s->base.env, &env) < 0 ||
            env_point(&env, r->lang->m->lang->install->run_env, root) < 0 ||
            (s->repl_env &&
                    (strv_dup(s->repl_env, &repl_env) < 0 ||
                            env_point(&repl_env, r->lang->m->lang->install->run_env, root) < 0))) {
        strv_free(env);
        strv_free(repl_env);
        strv_free(libs);
        ir.deps = deps_close(ir.deps);
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    }
    strv_free(s->base.env);
    s->base.env = r->env = env;
    if (repl_env) {
        strv_free(s->repl_env);
        s->repl_env = repl_env;
    }
    deps_close(s->live);
    s->live = ir.deps;
    r->deps = s->live;
    pthread_mutex_lock(&ss->lock); /* sbx_sessions_json reads the list */
    old = s->libs;
    s->libs = libs;
    s->req.libraries = (const char *const *)libs;
    s->req.n_libraries = n;
    pthread_mutex_unlock(&ss->lock);
    strv_free(old);
    if (s->repl_argv && s->repl_alive)
        return tell_interpreter(s, r, root, err);
    return 0;
}
