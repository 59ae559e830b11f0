/* SPDX-License-Identifier: MIT */
/*
 * wsl_shim.c: wsl.exe's stand-in for the WSL2 backend's tests on Linux
 * (plugins/wsl2/README.md). It accepts exactly the command lines the
 * plugin may send and refuses anything else, as wsl.exe would receive them:
 *
 *   -l -q                      the distributions, one a line (UTF-16LE, CRLF;
 *                              UTF-8 under WSL_UTF8=1, as wsl.exe)
 *   -l -v                      the table "NAME STATE VERSION", '*' marking
 *                              the default, in the same encoding
 *   -d DISTRO -u USER --cd / --exec /ABS/PATH/bwrap --version
 *   -d DISTRO -u USER --cd / --exec /ABS/PATH/wsl2-open --version (or --caps)
 *   -d DISTRO -u USER --cd / --exec /ABS/PATH/wsl2-open /ABS/PATH/bwrap ARGS...
 *                              DISTRO one of the WSL2 distributions listed,
 *                              USER the one configured (SHIM_USER), the
 *                              program bwrap or the plugin's opener (no
 *                              shell, nothing else), run with the
 *                              environment a WSL session starts with (none
 *                              of the caller's: wsl.exe carries none) in "/"
 *
 * The distribution's cgroup: when this machine made one for it, a directory
 * /sys/fs/cgroup/HIERARCHY/DISTRO owned by the caller (the tests do, as
 * root: test_wsl2.py), the program starts in it in each hierarchy, as in a
 * WSL2 distribution whose USER has a delegated cgroup; otherwise where the
 * caller is, as in WSL without systemd (the opener then finds no cgroup it
 * may write, and says so).
 *
 * Like wsl.exe, it carries only stdin, stdout and stderr: it closes every
 * descriptor above 2 before it looks at its arguments, so a box that still
 * relied on inherited descriptors fails here as on Windows. It cannot
 * switch users or cross into a VM: the program runs as the caller, on this
 * kernel. Exit status 2 and one line on stderr for a refused command line.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SHIM_USER
#define SHIM_USER "sbx-wsl2"
#endif

struct distro {
    const char *name;
    const char *state;
    int version;
};

/* The first is the default; sbx-wsl2-test is the tests' distribution, the
 * WSL 1 one is there to be refused. */
static const struct distro distros[] = {
        {"Debian", "Stopped", 2},
        {"sbx-wsl2-test", "Running", 2},
        {"legacy-wsl1", "Stopped", 1},
};

#define N_DISTROS (sizeof(distros) / sizeof(distros[0]))

static int refuse(const char *why, const char *what)
{
    fprintf(stderr, "wsl-shim: refused: %s%s%s%s\n", why, what ? " '" : "", what ? what : "",
            what ? "'" : "");
    return 2;
}

/* Write text (ASCII) as wsl.exe does: UTF-16LE, or UTF-8 when asked. */
static void put(const char *text)
{
    const char *u8 = getenv("WSL_UTF8");

    if (u8 && strcmp(u8, "1") == 0) {
        fputs(text, stdout);
        return;
    }
    for (const char *p = text; *p; p++) {
        putchar((unsigned char)*p);
        putchar(0);
    }
}

static int list(int verbose)
{
    char line[128];

    if (verbose)
        put("  NAME             STATE           VERSION\r\n");
    for (size_t i = 0; i < N_DISTROS; i++) {
        if (verbose)
            snprintf(line, sizeof(line), "%c %-16s %-15s %d\r\n", i == 0 ? '*' : ' ',
                    distros[i].name, distros[i].state, distros[i].version);
        else
            snprintf(line, sizeof(line), "%s\r\n", distros[i].name);
        put(line);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Into /sys/fs/cgroup/H/DISTRO for each hierarchy H (v1's, or v2's one)
 * that has it and the caller owns: -1 when one cannot be entered. */
static int enter_cgroup(const char *distro)
{
    static const char *const hier[] = {"memory/", "pids/", "cpu/", ""};
    char path[256], pid[24];

    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    for (size_t i = 0; i < sizeof(hier) / sizeof(hier[0]); i++) {
        struct stat st;
        int fd;

        snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s", hier[i], distro);
        if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        strncat(path, "/cgroup.procs", sizeof(path) - strlen(path) - 1);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, pid, strlen(pid)) < 0) {
            perror(path);
            if (fd >= 0)
                close(fd);
            return -1;
        }
        close(fd);
    }
    return 0;
}

static int run(int argc, char **argv)
{
    const char *distro = argv[2], *user = argv[4], *prog = argv[8], *base;
    const struct distro *d = NULL;
    static char env_distro[96];
    char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:"
                    "/mnt/c/Windows/system32:/mnt/c/Windows",
            env_distro, "WSL_INTEROP=/run/WSL/1_interop", "WSLENV=", "HOME=/tmp", "USER=" SHIM_USER,
            "LANG=C.UTF-8", NULL};

    for (size_t i = 0; i < N_DISTROS; i++)
        if (strcmp(distros[i].name, distro) == 0)
            d = &distros[i];
    if (!d)
        return refuse("no distribution", distro);
    if (d->version != 2)
        return refuse("WSL 1 distribution (no kernel of its own)", distro);
    if (strcmp(user, SHIM_USER) != 0)
        return refuse("user other than " SHIM_USER, user);
    if (prog[0] != '/')
        return refuse("--exec of a relative path", prog);
    base = strrchr(prog, '/') + 1;
    if (strcmp(base, "bwrap") != 0 && strcmp(base, "wsl2-open") != 0)
        return refuse("--exec of something other than bwrap or wsl2-open", prog);
    if (strcmp(base, "bwrap") == 0 && (argc != 10 || strcmp(argv[9], "--version") != 0))
        return refuse("bwrap run directly for more than --version: its descriptors would "
                      "not cross",
                argv[9]);
    if (strcmp(base, "wsl2-open") == 0 && strcmp(argv[9], "--version") != 0 &&
            strcmp(argv[9], "--caps") != 0 &&
            (argv[9][0] != '/' || strcmp(strrchr(argv[9], '/'), "/bwrap") != 0))
        return refuse("wsl2-open given something other than bwrap's absolute path", argv[9]);
    snprintf(env_distro, sizeof(env_distro), "WSL_DISTRO_NAME=%s", distro);
    if (chdir("/") < 0)
        return refuse("chdir /", NULL);
    if (enter_cgroup(distro) < 0)
        return refuse("cannot start in the distribution's cgroup", distro);
    argv[8] = strrchr(argv[8], '/') + 1; /* base */
    execve(prog, argv + 8, envp);
    perror("wsl-shim: execve");
    return 1;
}

/* wsl.exe hands the Linux process nothing but stdin, stdout and stderr. */
static void close_above_stderr(void)
{
    if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
        return;
    for (int fd = 3; fd < 65536; fd++)
        close(fd);
}

int main(int argc, char **argv)
{
    close_above_stderr();
    if (argc == 3 && strcmp(argv[1], "-l") == 0 && strcmp(argv[2], "-q") == 0)
        return list(0);
    if (argc == 3 && strcmp(argv[1], "-l") == 0 && strcmp(argv[2], "-v") == 0)
        return list(1);
    if (argc < 10)
        return refuse("command line", argc > 1 ? argv[1] : "");
    if (strcmp(argv[1], "-d") != 0 || strcmp(argv[3], "-u") != 0)
        return refuse("expected -d DISTRO -u USER first, got", argv[1]);
    if (strcmp(argv[5], "--cd") != 0 || strcmp(argv[6], "/") != 0)
        return refuse("expected --cd /, got", argv[5]);
    if (strcmp(argv[7], "--exec") != 0)
        return refuse("expected --exec (never a shell), got", argv[7]);
    return run(argc, argv);
}
