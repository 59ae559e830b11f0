/* SPDX-License-Identifier: MIT */
/*
 * netcheck.c: kubernetes-netcheck, the small static program the boot
 * script runs in a pod before the agent is even sent (translate.c): it
 * proves that the pod's deny-all NetworkPolicy is in force. A policy is
 * programmed only some time after the pod has its address (0.5-1.2 s
 * measured with kube-router), and no code of the user's may run before.
 *
 *   kubernetes-netcheck NODE_IP PORT WAIT_MS
 *
 * 1. The node must answer a TCP connection from this pod, not yet selected
 *    by the policy: accepted, or reset by a closed port. Otherwise nothing
 *    can be proven: "sbx-k8s: ..." and exit 3.
 * 2. "sbx-k8s: reach ok" on stdout; the host labels the pod, so the
 *    deny-all selects it.
 * 3. Until WAIT_MS pass: the connection must fail by the path's verdict,
 *    an ICMP error (REJECT: IP_RECVERR tells it from a closed port's
 *    reset) or silence twice in a row (DROP). Then "sbx-k8s: blocked ok"
 *    and exit 0; else "sbx-k8s: ..." and exit 4.
 * libc only, linked -static (the image's libc is not ours to rely on);
 * writes nothing but those lines.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum verdict { OPEN, RESET, ICMP, SILENT, FAILED };

static const char *const verdict_names[] = {
        "accepted", "reset", "refused by ICMP", "no answer", "local error"};

static struct sockaddr_storage addr;
static socklen_t addr_len;

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDOUT_FILENO, line, (size_t)n) < 0)
        return;
}

/* Was the refusal an ICMP error (the error queue holds it) or a reset? */
static enum verdict refused(int fd)
{
    char buf[64], ctl[512];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
    struct msghdr m = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};

    if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
        return RESET;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        struct sock_extended_err ee;

        if (c->cmsg_len < CMSG_LEN(sizeof(ee)))
            continue;
        memcpy(&ee, CMSG_DATA(c), sizeof(ee));
        if (ee.ee_origin == SO_EE_ORIGIN_ICMP || ee.ee_origin == SO_EE_ORIGIN_ICMP6)
            return ICMP;
    }
    return RESET;
}

static enum verdict try_connect(int timeout_ms)
{
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    enum verdict v = FAILED;
    struct pollfd p;
    int e = 0;
    socklen_t el = sizeof(e);

    if (fd < 0)
        return FAILED;
    if (addr.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one));
    else
        setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&addr, addr_len) == 0) {
        close(fd);
        return OPEN;
    }
    if (errno != EINPROGRESS) {
        e = errno;
    } else {
        p = (struct pollfd){.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, timeout_ms) == 0) {
            close(fd);
            return SILENT;
        }
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
    }
    if (e == 0)
        v = OPEN;
    else if (e == ECONNREFUSED)
        v = refused(fd);
    else if (e == EHOSTUNREACH || e == ENETUNREACH || e == EACCES || e == EPERM)
        v = ICMP;
    else if (e == ETIMEDOUT)
        v = SILENT;
    close(fd);
    return v;
}

int main(int argc, char **argv)
{
    struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
    long port, wait_ms;
    enum verdict v = FAILED;
    int64_t t0;
    int silent = 0;

    if (argc != 4 || (port = strtol(argv[2], NULL, 10)) <= 0 || port > 65535 ||
            (wait_ms = strtol(argv[3], NULL, 10)) <= 0) {
        say("sbx-k8s: usage: kubernetes-netcheck NODE_IP PORT WAIT_MS");
        return 2;
    }
    if (inet_pton(AF_INET, argv[1], &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        addr_len = sizeof(*a4);
    } else if (inet_pton(AF_INET6, argv[1], &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        addr_len = sizeof(*a6);
    } else {
        say("sbx-k8s: cannot prove the network is closed: no node address ('%s')", argv[1]);
        return 3;
    }
    for (int i = 0; i < 5 && v != OPEN && v != RESET; i++) {
        if (i > 0)
            pause_ms(200);
        v = try_connect(1000);
    }
    if (v != OPEN && v != RESET) {
        say("sbx-k8s: cannot prove the network is closed: the node %s port %ld is %s even to a "
            "pod no policy selects",
                argv[1], port, verdict_names[v]);
        return 3;
    }
    say("sbx-k8s: reach ok (%s)", verdict_names[v]);
    t0 = now_ms();
    while (now_ms() - t0 < wait_ms) {
        v = try_connect(500);
        silent = v == SILENT ? silent + 1 : 0;
        if (v == ICMP || silent >= 2) {
            say("sbx-k8s: blocked ok after %lld ms (%s)", (long long)(now_ms() - t0),
                    verdict_names[v]);
            return 0;
        }
        if (v != SILENT)
            pause_ms(25);
    }
    say("sbx-k8s: NetworkPolicy is not enforced here: the node %s port %ld still answers %ld "
        "ms after the deny-all selected the pod",
            argv[1], port, wait_ms);
    return 4;
}
