// SPDX-License-Identifier: MIT
// try_syscall.cpp: the syscall matrix of tests/security/test_syscalls.py,
// compiled and run inside the sandbox (language cpp). In the manner of
// bubblewrap's tests/try-syscall.c: each sensitive call gets an invalid
// pointer, descriptor or flag combination, so that if the kernel is reached
// it fails harmlessly with EFAULT, EBADF or EINVAL, while the seccomp filter
// answers EPERM, ENOSYS or EAFNOSUPPORT (or kills the caller with SIGSYS).
// Each call runs in its own child, so a kill or a changed process state
// affects that line only. Output: one line per call, "NAME RESULT CLASS",
// where RESULT is ok, an errno name or SIG<name>, and CLASS is reachable,
// blocked (EPERM, ENOSYS, EAFNOSUPPORT) or killed.
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <linux/netlink.h>
#include <sched.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <vector>

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

static void *const W = reinterpret_cast<void *>(8); // never mapped (mmap_min_addr)

static long sc(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0)
{
    return syscall(nr, a, b, c, d, e, f);
}

static long P(void *p)
{
    return reinterpret_cast<long>(p);
}

static long sock(int family, int type, int proto)
{
    long r = socket(family, type, proto);
    if (r >= 0)
        close(static_cast<int>(r));
    return r >= 0 ? 0 : -1;
}

#if defined(__x86_64__)
// The i386 ABI through int 0x80: a filter built for x86_64 numbers only
// must not let these through under their 32-bit numbers.
static long int80(long nr, long a = 0, long b = 0, long c = 0)
{
    long r;
    asm volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
    if (r < 0 && r > -4096) {
        errno = static_cast<int>(-r);
        return -1;
    }
    return r;
}
#endif

struct Case {
    const char *name;
    std::function<long()> call;
};

static std::string result_of(const Case &c)
{
    int fds[2];
    if (pipe(fds) < 0)
        return "harness-error";
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        errno = 0;
        long r = c.call();
        int e = r < 0 ? errno : 0;
        if (r == 0 && getpid() != syscall(SYS_getpid))
            _exit(0);
        (void)!write(fds[1], &e, sizeof e);
        _exit(0);
    }
    close(fds[1]);
    int st = 0, e = -1;
    waitpid(pid, &st, 0);
    ssize_t n = read(fds[0], &e, sizeof e);
    close(fds[0]);
    if (WIFSIGNALED(st))
        return std::string("SIG") + sigabbrev_np(WTERMSIG(st));
    if (n != static_cast<ssize_t>(sizeof e))
        return "no-report";
    if (e == 0)
        return "ok";
    const char *name = strerrorname_np(e);
    return name ? name : "E" + std::to_string(e);
}

// clone() with flags that are invalid together: EINVAL if the kernel sees it.
// A child of a successful clone (flags accepted) exits at once.
static long clone_flags(unsigned long flags)
{
    long r = sc(SYS_clone, static_cast<long>(flags), 0, 0, 0, 0);
    if (r == 0)
        syscall(SYS_exit, 0);
    return r < 0 ? -1 : 0;
}

int main()
{
    const std::vector<Case> cases = {
        // controls: reachable and harmless
        {"getpid", [] { return sc(SYS_getpid) > 0 ? 0L : -1L; }},
        {"write_badfd", [] { return sc(SYS_write, -1, P(W), 1); }},
        {"clone_fork", [] { return clone_flags(SIGCHLD); }},
        {"socket_unix", [] { return sock(AF_UNIX, SOCK_STREAM, 0); }},
        {"socket_inet_tcp", [] { return sock(AF_INET, SOCK_STREAM, 0); }},
        {"socket_netlink_route", [] { return sock(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE); }},
        {"seccomp", [] { return sc(SYS_seccomp, 1, 0, P(W)); }},
        {"personality_query", [] { return sc(SYS_personality, 0xffffffffL) >= 0 ? 0L : -1L; }},
        // mounts and the root
        {"mount", [] { return sc(SYS_mount, P(W), P(W), P(W), 0, P(W)); }},
        {"umount2", [] { return sc(SYS_umount2, P(W), 0); }},
        {"pivot_root", [] { return sc(SYS_pivot_root, P(W), P(W)); }},
        {"chroot", [] { return sc(SYS_chroot, P(W)); }},
        {"fsopen", [] { return sc(SYS_fsopen, P(W), 0); }},
        {"fspick", [] { return sc(SYS_fspick, -1, P(W), 0); }},
        {"open_tree", [] { return sc(SYS_open_tree, -1, P(W), 0); }},
        {"move_mount", [] { return sc(SYS_move_mount, -1, P(W), -1, P(W), 0); }},
        {"mount_setattr", [] { return sc(SYS_mount_setattr, -1, P(W), 0, P(W), 32); }},
        // namespaces
        {"unshare", [] { return sc(SYS_unshare, CLONE_NEWNS | 0x1); }},
        {"setns", [] { return sc(SYS_setns, -1, 0); }},
        {"clone_newuser", [] { return clone_flags(CLONE_NEWUSER | CLONE_FS); }},
        {"clone_newns", [] { return clone_flags(CLONE_NEWNS | CLONE_FS); }},
        {"clone_newpid", [] { return clone_flags(CLONE_NEWPID | CLONE_THREAD); }},
        {"clone_newnet", [] { return clone_flags(CLONE_NEWNET | CLONE_THREAD); }},
        {"clone3", [] { return sc(SYS_clone3, P(W), 88); }},
        // other processes
        {"ptrace", [] { return sc(SYS_ptrace, 16 /* PTRACE_ATTACH */, -1, 0, 0); }},
        {"process_vm_readv",
                [] { return sc(SYS_process_vm_readv, getpid(), P(W), 1, P(W), 1, 0); }},
        {"process_vm_writev",
                [] { return sc(SYS_process_vm_writev, getpid(), P(W), 1, P(W), 1, 0); }},
        {"kcmp", [] { return sc(SYS_kcmp, getpid(), getpid(), 99, 0, 0); }},
        {"pidfd_getfd", [] { return sc(SYS_pidfd_getfd, -1, 0, 0); }},
        // keyrings, bpf, perf, io_uring, userfaultfd
        {"keyctl", [] { return sc(SYS_keyctl, 0xffff, 0, 0, 0, 0); }},
        {"add_key", [] { return sc(SYS_add_key, P(W), P(W), P(W), 0, 0); }},
        {"request_key", [] { return sc(SYS_request_key, P(W), P(W), P(W), 0); }},
        {"bpf", [] { return sc(SYS_bpf, 0 /* BPF_MAP_CREATE */, P(W), 8); }},
        {"perf_event_open", [] { return sc(SYS_perf_event_open, P(W), 0, -1, -1, 0); }},
        {"io_uring_setup", [] { return sc(SYS_io_uring_setup, 1, P(W)); }},
        {"io_uring_enter", [] { return sc(SYS_io_uring_enter, -1, 0, 0, 0, 0, 0); }},
        {"io_uring_register", [] { return sc(SYS_io_uring_register, -1, 0, 0, 0); }},
        {"userfaultfd", [] { return sc(SYS_userfaultfd, 1 | 0x10); }},
        // the kernel and the machine
        {"kexec_load", [] { return sc(SYS_kexec_load, 0, 0, P(W), 0xffff0000L); }},
        {"kexec_file_load", [] { return sc(SYS_kexec_file_load, -1, -1, 0, P(W), 0); }},
        {"init_module", [] { return sc(SYS_init_module, P(W), 0, P(W)); }},
        {"finit_module", [] { return sc(SYS_finit_module, -1, P(W), 0); }},
        {"delete_module", [] { return sc(SYS_delete_module, P(W), 0); }},
        {"open_by_handle_at", [] { return sc(SYS_open_by_handle_at, -1, P(W), 0); }},
        {"name_to_handle_at", [] { return sc(SYS_name_to_handle_at, -1, P(W), P(W), P(W), 0); }},
        {"swapon", [] { return sc(SYS_swapon, P(W), 0); }},
        {"swapoff", [] { return sc(SYS_swapoff, P(W)); }},
        {"reboot", [] { return sc(SYS_reboot, 0, 0, 0, P(W)); }},
        {"acct", [] { return sc(SYS_acct, P(W)); }},
        {"quotactl", [] { return sc(SYS_quotactl, 0, P(W), 0, P(W)); }},
        {"syslog", [] { return sc(SYS_syslog, 3 /* READ_ALL */, P(W), 16); }},
        {"sethostname", [] { return sc(SYS_sethostname, P(W), 4); }},
        {"settimeofday", [] { return sc(SYS_settimeofday, P(W), P(W)); }},
        {"clock_settime", [] { return sc(SYS_clock_settime, 0, P(W)); }},
        {"adjtimex", [] { return sc(SYS_adjtimex, P(W)); }},
        {"iopl", [] { return sc(SYS_iopl, 3); }},
        {"ioperm", [] { return sc(SYS_ioperm, 0, 1, 1); }},
        {"modify_ldt", [] { return sc(SYS_modify_ldt, 0, P(W), 16); }},
        {"vhangup", [] { return sc(SYS_vhangup); }},
        {"fanotify_init", [] { return sc(SYS_fanotify_init, 0xffffffffL, 0); }},
        {"memfd_secret", [] { return sc(SYS_memfd_secret, 0xffff); }},
        {"mbind", [] { return sc(SYS_mbind, P(W), 4096, 0, P(W), 0, 0xffff); }},
        {"set_mempolicy", [] { return sc(SYS_set_mempolicy, 0xffff, P(W), 0); }},
        {"migrate_pages", [] { return sc(SYS_migrate_pages, -1, 0, P(W), P(W)); }},
        {"landlock_create_ruleset", [] { return sc(SYS_landlock_create_ruleset, P(W), 0, 0); }},
        {"personality_read_implies_exec", [] { return sc(SYS_personality, 0x0400000); }},
        // identity
        {"setuid_0", [] { return sc(SYS_setuid, 0); }},
        {"setgid_0", [] { return sc(SYS_setgid, 0); }},
        {"setresuid_0", [] { return sc(SYS_setresuid, 0, 0, 0); }},
        {"setgroups_0",
                [] {
                    static gid_t g = 0;
                    return sc(SYS_setgroups, 1, P(&g));
                }},
        {"capset", [] { return sc(SYS_capset, P(W), P(W)); }},
        // devices
        {"mknod_dev",
                [] { return sc(SYS_mknodat, AT_FDCWD, P(W), S_IFCHR | 0600, makedev(1, 3)); }},
        {"mknod_dev_tmp",
                [] {
                    long r = sc(SYS_mknodat, AT_FDCWD, P((void *)"/tmp/sbx-null"), S_IFCHR | 0666,
                            makedev(1, 3));
                    if (r == 0)
                        unlink("/tmp/sbx-null");
                    return r;
                }},
        // terminals: the refused ioctls are refused before the fd is looked at
        {"ioctl_tiocsti", [] { return sc(SYS_ioctl, -1, TIOCSTI, P(W)); }},
        {"ioctl_tiocsti_high_bits", [] { return sc(SYS_ioctl, -1, (1L << 32) | TIOCSTI, P(W)); }},
        {"ioctl_tioclinux", [] { return sc(SYS_ioctl, -1, TIOCLINUX, P(W)); }},
        // socket families
        {"socket_netlink_audit", [] { return sock(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT); }},
        {"socket_netlink_netfilter", [] { return sock(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER); }},
        {"socket_netlink_xfrm", [] { return sock(AF_NETLINK, SOCK_RAW, NETLINK_XFRM); }},
        {"socket_netlink_uevent",
                [] { return sock(AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT); }},
        {"socket_packet", [] { return sock(AF_PACKET, SOCK_RAW, 0x0300 /* htons(ETH_P_ALL) */); }},
        {"socket_inet_raw", [] { return sock(AF_INET, SOCK_RAW, 255 /* IPPROTO_RAW */); }},
        {"socket_inet6_raw", [] { return sock(AF_INET6, SOCK_RAW, 58 /* ICMPV6 */); }},
        {"socket_inet_ping", [] { return sock(AF_INET, SOCK_DGRAM, 1 /* IPPROTO_ICMP */); }},
        {"socket_alg", [] { return sock(AF_ALG, SOCK_SEQPACKET, 0); }},
        {"socket_vsock", [] { return sock(AF_VSOCK, SOCK_STREAM, 0); }},
        {"socket_key", [] { return sock(AF_KEY, SOCK_RAW, 2); }},
        {"socket_bluetooth", [] { return sock(AF_BLUETOOTH, SOCK_RAW, 0); }},
        {"socket_can", [] { return sock(AF_CAN, SOCK_RAW, 1); }},
        {"socket_tipc", [] { return sock(AF_TIPC, SOCK_RDM, 0); }},
        {"socket_xdp", [] { return sock(AF_XDP, SOCK_RAW, 0); }},
        {"socketpair_inet",
                [] {
                    int sv[2];
                    return sc(SYS_socketpair, AF_INET, SOCK_STREAM, 0, P(sv));
                }},
        // other ABIs
        {"x32_getpid", [] { return sc(__X32_SYSCALL_BIT | SYS_getpid) > 0 ? 0L : -1L; }},
#if defined(__x86_64__)
        {"i386_getpid", [] { return int80(20) > 0 ? 0L : -1L; }},
        {"i386_unshare", [] { return int80(310, CLONE_NEWNS | 0x1); }},
        {"i386_mount", [] { return int80(21, 8, 8, 8); }},
#endif
    };
    for (const Case &c : cases) {
        std::string r = result_of(c);
        const char *cls = r.rfind("SIG", 0) == 0                                   ? "killed"
                          : (r == "EPERM" || r == "ENOSYS" || r == "EAFNOSUPPORT") ? "blocked"
                                                                                   : "reachable";
        printf("%s %s %s\n", c.name, r.c_str(), cls);
    }
    return 0;
}
