/* SPDX-License-Identifier: MIT */
/*
 * The pod sandbox's "pause" process of the test cluster (scripts/k8s-cluster.sh):
 * holds the pod's namespaces, reaps the orphans that end up with it as their
 * parent (PID 1 of a shared PID namespace) and exits on SIGTERM or SIGINT.
 * Built statically and imported as a one-file image: no registry here.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
    (void)sig;
    _exit(0);
}

static void on_child(int sig)
{
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void)
{
    struct sigaction sa = {0};

    sa.sa_handler = on_stop;
    if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
        return 1;
    sa.sa_handler = on_child;
    sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    if (sigaction(SIGCHLD, &sa, NULL) < 0)
        return 1;
    for (;;)
        pause();
}
