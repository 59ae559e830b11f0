/* SPDX-License-Identifier: MIT */
/*
 * spawn_cgroup.c: what putting a new process into its cgroup costs, the
 * two ways core/src/host/exec.c does it: fork, then the child writes its
 * pid into cgroup.procs (cgroup v1, and v2 where clone3 is refused), or
 * clone3(CLONE_INTO_CGROUP), where the child starts in the group (v2).
 * Plain fork with no cgroup is the baseline. Each sample is one child,
 * from the fork to its reaping (it exits at once); prints the median and
 * p90 in milliseconds. A benchmark, never a test.
 *
 * usage: spawn_cgroup DIR [N]   DIR: a cgroup directory we may create
 * groups in (v2: delegated to us); a group "bench-<pid>" is made there and
 * removed. Build: cmake --build build --target spawn_cgroup.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

#define CGROUP2_MAGIC 0x63677270

enum way { PLAIN, WRITE_PROCS, CLONE_INTO };

/* One child placed `way`; its time in ms, or < 0 on failure. */
static double one(enum way way, int procs_fd, int dir_fd)
{
    double t0 = bench_now_ms();
    pid_t pid;
    int status;

    if (way == CLONE_INTO) {
        struct clone_args args = {.flags = CLONE_INTO_CGROUP,
                .exit_signal = (__u64)SIGCHLD,
                .cgroup = (__u64)(unsigned)dir_fd};

        pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
    } else {
        pid = fork();
    }
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (way == WRITE_PROCS) {
            char buf[16];
            int n = snprintf(buf, sizeof(buf), "%d", (int)getpid());

            if (write(procs_fd, buf, (size_t)n) != n)
                _exit(1);
        }
        _exit(0);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return bench_now_ms() - t0;
}

static void report(const char *name, enum way way, int n, int procs_fd, int dir_fd)
{
    double *t = calloc((size_t)n, sizeof(*t));

    if (!t)
        return;
    for (int i = 0; i < n; i++) {
        t[i] = one(way, procs_fd, dir_fd);
        if (t[i] < 0) {
            printf("%-34s failed: %s\n", name, strerror(errno));
            free(t);
            return;
        }
    }
    qsort(t, (size_t)n, sizeof(*t), bench_cmp_double);
    printf("%-34s median %7.3f ms  p90 %7.3f ms  (n=%d)\n", name, t[n / 2], t[n * 9 / 10], n);
    free(t);
}

int main(int argc, char **argv)
{
    char group[4096], procs[4200];
    struct statfs fs;
    int n = argc > 2 ? atoi(argv[2]) : 200, procs_fd, dir_fd;
    int v2;

    if (argc < 2 || n < 10) {
        fprintf(stderr, "usage: spawn_cgroup DIR [N>=10]\n");
        return 2;
    }
    if (statfs(argv[1], &fs) < 0) {
        perror(argv[1]);
        return 1;
    }
    v2 = fs.f_type == CGROUP2_MAGIC;
    snprintf(group, sizeof(group), "%s/bench-%d", argv[1], (int)getpid());
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", group);
    if (mkdir(group, 0755) < 0) {
        perror(group);
        return 1;
    }
    procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
    dir_fd = open(group, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (procs_fd < 0 || dir_fd < 0) {
        perror(procs);
        rmdir(group);
        return 1;
    }
    printf("cgroup %s (%s)\n", group, v2 ? "v2" : "v1");
    report("fork, no cgroup (baseline)", PLAIN, n, procs_fd, dir_fd);
    report("fork + write cgroup.procs", WRITE_PROCS, n, procs_fd, dir_fd);
    if (v2)
        report("clone3(CLONE_INTO_CGROUP)", CLONE_INTO, n, procs_fd, dir_fd);
    close(procs_fd);
    close(dir_fd);
    if (rmdir(group) < 0)
        perror(group);
    return 0;
}
