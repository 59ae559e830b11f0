/* SPDX-License-Identifier: MIT */
/*
 * win_proc.c: spawn, wait for and kill a process tree on Windows
 * (win_proc.h). The order matters: the job exists and has its limits
 * before the child does; the child is created suspended and assigned to
 * the job before its first instruction, so nothing it starts can escape
 * the job; a failed assignment kills it unrun (fail closed). Handles: the
 * child inherits only the standard handles, named in a
 * PROC_THREAD_ATTRIBUTE_HANDLE_LIST (STYLE O5's rule, Windows' way).
 * Makes no policy decision; error convention: base/error.h.
 */
/* clang-format off */
#include <windows.h>
/* clang-format on */
#include "platform/win_proc.h"

#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "platform/cmdline.h"

struct win_proc {
    HANDLE job, process;
    uint32_t pid;
    HANDLE parent_end[3]; /* our ends of SBX_FD_PIPE streams, or NULL */
};

/* UTF-8 to a new UTF-16 string, or NULL (invalid UTF-8, out of memory). */
static wchar_t *utf16_new(const char *s, size_t len)
{
    int n;
    wchar_t *w;

    if (len > INT32_MAX / 2)
        return NULL;
    n = len ? MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, (int)len, NULL, 0) : 0;
    if (len && n <= 0)
        return NULL;
    w = calloc((size_t)n + 1, sizeof(*w));
    if (w && n)
        MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, (int)len, w, n);
    return w;
}

/* "K=V\0K=V\0\0" in UTF-16, as CREATE_UNICODE_ENVIRONMENT wants. */
static wchar_t *env_block_new(const char *const *envp)
{
    struct dynbuf b;
    wchar_t *w;
    size_t len = 0;

    dynbuf_init(&b, WIN_CMDLINE_MAX * 4);
    for (size_t i = 0; envp && envp[i]; i++)
        if (dynbuf_append(&b, envp[i], strlen(envp[i]) + 1) < 0) {
            dynbuf_done(&b);
            return NULL;
        }
    if (dynbuf_append(&b, "\0", 1) < 0) {
        dynbuf_done(&b);
        return NULL;
    }
    if (b.len == 1 && dynbuf_append(&b, "\0", 1) < 0) { /* empty: two NULs */
        dynbuf_done(&b);
        return NULL;
    }
    len = b.len;
    w = utf16_new(b.buf, len);
    dynbuf_done(&b);
    return w;
}

/* An inheritable handle for the child's stream `which` (0, 1, 2). */
static int child_stream(struct win_proc *p, int which, int fd, HANDLE *ret, struct sbx_error **err)
{
    SECURITY_ATTRIBUTES sa = {sizeof(sa), NULL, TRUE};
    HANDLE src, rd, wr;

    if (fd == SBX_FD_NULL) {
        *ret = CreateFileW(L"NUL", GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
                &sa, OPEN_EXISTING, 0, NULL);
        if (*ret == INVALID_HANDLE_VALUE)
            return sbx_error_set(err, SBX_E_IO, 0, "cannot open NUL (error %lu)", GetLastError());
        return 0;
    }
    if (fd == SBX_FD_PIPE) {
        if (!CreatePipe(&rd, &wr, &sa, 0))
            return sbx_error_set(err, SBX_E_IO, 0, "CreatePipe failed (error %lu)", GetLastError());
        *ret = which == 0 ? rd : wr;
        p->parent_end[which] = which == 0 ? wr : rd;
        SetHandleInformation(p->parent_end[which], HANDLE_FLAG_INHERIT, 0);
        return 0;
    }
    src = (HANDLE)_get_osfhandle(fd);
    if (src == INVALID_HANDLE_VALUE ||
            !DuplicateHandle(GetCurrentProcess(), src, GetCurrentProcess(), ret, 0, TRUE,
                    DUPLICATE_SAME_ACCESS))
        return sbx_error_set(
                err, SBX_E_INVALID, 0, "fd %d for the child's stream %d is not open", fd, which);
    return 0;
}

static int refuse_unsupported(const struct sbx_spawn *spec, struct sbx_error **err)
{
    if (spec->n_fds > 0)
        return sbx_error_set(err, SBX_E_UNSUPPORTED, 0,
                "passing extra fds to a child is not supported on Windows");
    if (spec->cgroup)
        return sbx_error_set(err, SBX_E_UNSUPPORTED, 0,
                "cgroups do not exist on Windows; limits go through the Job Object");
    if (spec->flags & SBX_SPAWN_DROP_PRIVS)
        return sbx_error_set(err, SBX_E_UNSUPPORTED, 0,
                "dropping to the sandbox uid is not supported on Windows");
    if (spec->flags & SBX_SPAWN_NO_NEW_PRIVS)
        return sbx_error_set(err, SBX_E_UNSUPPORTED, 0, "no_new_privs has no Windows equivalent");
    return 0;
}

static HANDLE job_new(const struct win_limits *lim, struct sbx_error **err)
{
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION li;
    HANDLE job = CreateJobObjectW(NULL, NULL);

    if (!job) {
        sbx_error_set(err, SBX_E_BACKEND, 0, "CreateJobObject failed (error %lu)", GetLastError());
        return NULL;
    }
    memset(&li, 0, sizeof(li));
    li.BasicLimitInformation.LimitFlags =
            JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
    if (lim && lim->memory_bytes) {
        li.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_JOB_MEMORY;
        li.JobMemoryLimit = (SIZE_T)lim->memory_bytes;
    }
    if (lim && lim->pids_max) {
        li.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_ACTIVE_PROCESS;
        li.BasicLimitInformation.ActiveProcessLimit = lim->pids_max;
    }
    if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &li, sizeof(li))) {
        sbx_error_set(err, SBX_E_BACKEND, 0, "cannot set the Job Object's limits (error %lu)",
                GetLastError());
        CloseHandle(job);
        return NULL;
    }
    return job;
}

/* CreateProcessW, suspended, inheriting exactly the handles in std[]. */
static int create_suspended(const wchar_t *path, wchar_t *line, wchar_t *env, HANDLE std[3],
        PROCESS_INFORMATION *pi, struct sbx_error **err)
{
    STARTUPINFOEXW si;
    HANDLE list[3];
    SIZE_T size = 0;
    DWORD n = 0;
    BOOL ok;

    memset(&si, 0, sizeof(si));
    si.StartupInfo.cb = sizeof(si);
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = std[0];
    si.StartupInfo.hStdOutput = std[1];
    si.StartupInfo.hStdError = std[2];
    for (int i = 0; i < 3; i++) /* the list must not name a handle twice */
        if (i == 0 || (std[i] != std[0] && (i < 2 || std[i] != std[1])))
            list[n++] = std[i];
    InitializeProcThreadAttributeList(NULL, 1, 0, &size);
    si.lpAttributeList = malloc(size);
    if (!si.lpAttributeList)
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    ok = InitializeProcThreadAttributeList(si.lpAttributeList, 1, 0, &size) &&
         UpdateProcThreadAttribute(si.lpAttributeList, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, list,
                 n * sizeof(HANDLE), NULL, NULL) &&
         CreateProcessW(path, line, NULL, NULL, TRUE,
                 CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT |
                         CREATE_NO_WINDOW,
                 env, NULL, &si.StartupInfo, pi);
    DeleteProcThreadAttributeList(si.lpAttributeList);
    free(si.lpAttributeList);
    if (ok)
        return 0;
    if (GetLastError() == ERROR_FILE_NOT_FOUND || GetLastError() == ERROR_PATH_NOT_FOUND)
        return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "program not found");
    return sbx_error_set(err, SBX_E_BACKEND, 0, "CreateProcess failed (error %lu)", GetLastError());
}

static int start(struct win_proc *p, const struct sbx_spawn *spec, const struct win_limits *lim,
        HANDLE std[3], struct sbx_error **err)
{
    PROCESS_INFORMATION pi;
    struct dynbuf line;
    wchar_t *wpath = NULL, *wline = NULL, *wenv = NULL;
    int rc;

    dynbuf_init(&line, WIN_CMDLINE_MAX);
    rc = win_cmdline_build(spec->argv, &line, err);
    if (rc < 0)
        goto out;
    wpath = utf16_new(spec->path, strlen(spec->path));
    wline = utf16_new(line.buf, line.len);
    wenv = env_block_new(spec->envp);
    if (!wpath || !wline || !wenv) {
        rc = sbx_error_set(err, SBX_E_INVALID, 0,
                "the path, arguments or environment for '%s' are not UTF-8", spec->path);
        goto out;
    }
    p->job = job_new(lim, err);
    if (!p->job) {
        rc = SBX_E_BACKEND;
        goto out;
    }
    rc = create_suspended(wpath, wline, wenv, std, &pi, err);
    if (rc < 0)
        goto out;
    if (!AssignProcessToJobObject(p->job, pi.hProcess)) {
        rc = sbx_error_set(err, SBX_E_BACKEND, 0,
                "cannot put '%s' in its Job Object (error %lu); not started", spec->path,
                GetLastError());
        TerminateProcess(pi.hProcess, 1);
        CloseHandle(pi.hProcess);
    } else {
        p->process = pi.hProcess;
        p->pid = pi.dwProcessId;
        ResumeThread(pi.hThread);
    }
    CloseHandle(pi.hThread);
out:
    dynbuf_done(&line);
    free(wpath);
    free(wline);
    free(wenv);
    return rc;
}

int win_proc_spawn(const struct sbx_spawn *spec, const struct win_limits *lim,
        struct win_proc **ret, struct sbx_error **err)
{
    const int fds[3] = {spec->stdin_fd, spec->stdout_fd, spec->stderr_fd};
    HANDLE std[3] = {NULL, NULL, NULL};
    struct win_proc *p;
    int rc = refuse_unsupported(spec, err);

    if (rc < 0)
        return rc;
    if (!spec->path || !spec->argv)
        return sbx_error_set(err, SBX_E_INVALID, 0, "no program to run");
    p = calloc(1, sizeof(*p));
    if (!p)
        return sbx_error_set(err, SBX_E_NOMEM, 0, "out of memory");
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = child_stream(p, i, fds[i], &std[i], err);
    if (rc == 0)
        rc = start(p, spec, lim, std, err);
    for (int i = 0; i < 3; i++) /* the child has its copies now */
        if (std[i])
            CloseHandle(std[i]);
    if (rc < 0) {
        win_proc_free(p);
        return rc;
    }
    *ret = p;
    return 0;
}

uint32_t win_proc_pid(const struct win_proc *p)
{
    return p->pid;
}

int win_proc_take_fd(struct win_proc *p, int child_fd)
{
    HANDLE h;
    int fd;

    if (child_fd < 0 || child_fd > 2 || !p->parent_end[child_fd])
        return -1;
    h = p->parent_end[child_fd];
    fd = _open_osfhandle((intptr_t)h, (child_fd == 0 ? _O_WRONLY : _O_RDONLY) | _O_BINARY);
    if (fd < 0)
        return -1;
    p->parent_end[child_fd] = NULL;
    return fd;
}

int win_proc_wait(struct win_proc *p, int64_t timeout_ms, uint32_t *ret_exit_code)
{
    DWORD ms = timeout_ms < 0                    ? INFINITE
               : timeout_ms >= (int64_t)INFINITE ? INFINITE - 1
                                                 : (DWORD)timeout_ms;
    DWORD code;

    switch (WaitForSingleObject(p->process, ms)) {
    case WAIT_OBJECT_0:
        if (!GetExitCodeProcess(p->process, &code))
            return SBX_E_BACKEND;
        *ret_exit_code = code;
        return 1;
    case WAIT_TIMEOUT: return 0;
    default: return SBX_E_BACKEND;
    }
}

int win_proc_kill(struct win_proc *p, uint32_t exit_code)
{
    return TerminateJobObject(p->job, exit_code) ? 0 : SBX_E_BACKEND;
}

int win_proc_alive(const struct win_proc *p)
{
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION ai;

    if (!QueryInformationJobObject(
                p->job, JobObjectBasicAccountingInformation, &ai, sizeof(ai), NULL))
        return SBX_E_BACKEND;
    return ai.ActiveProcesses > INT32_MAX ? INT32_MAX : (int)ai.ActiveProcesses;
}

struct win_proc *win_proc_free(struct win_proc *p)
{
    if (!p)
        return NULL;
    if (p->job) { /* KILL_ON_JOB_CLOSE would do it too; say so plainly */
        TerminateJobObject(p->job, 1);
        CloseHandle(p->job);
    }
    if (p->process)
        CloseHandle(p->process);
    for (int i = 0; i < 3; i++)
        if (p->parent_end[i])
            CloseHandle(p->parent_end[i]);
    free(p);
    return NULL;
}
