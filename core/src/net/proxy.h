/* SPDX-License-Identifier: MIT */
/*
 * proxy.h: the filtering proxy dependency installs reach the network
 * through. It listens on a unix socket the backend binds into the install
 * sandbox (whose own network namespace has only loopback; the agent relays
 * a loopback port to the socket) and serves HTTP CONNECT to port 443 of the
 * allowed registry hosts and nothing else: no plain HTTP, no other port, no
 * other name, and no address on the host's loopback, link-local, multicast
 * or unspecified ranges whatever a name resolves to. TLS stays end to end;
 * the proxy sees only the host name. It makes no request of its own.
 */
#ifndef SBX_PROXY_H
#define SBX_PROXY_H

#include <stdint.h>

#include <llm-sandbox/sbx.h>

struct proxy;

/* Start serving on a new socket at sock_path (which must not exist),
 * allowing hosts (NULL-terminated patterns, see host_matches()). The
 * socket is chowned to uid/gid when those are not -1. (transfer full) */
int proxy_start(const char *sock_path, char *const *hosts, int64_t uid, int64_t gid,
        struct proxy **ret, struct sbx_error **err);
/* What the proxy refused so far, one line each ("refused CONNECT x:443:
 * why"), or NULL when nothing was refused. (transfer full) */
char *proxy_refusals(struct proxy *p);
/* The decision on one request head (NUL-terminated, through its blank
 * line; cut in place): 0 with *ret_host (lower-case, inside head) and
 * *ret_port for "CONNECT host:443 HTTP/1.x" to a host matching one of
 * hosts; else the HTTP status to answer, 405 (not such a CONNECT: head is
 * then its first line) or 403 (another port, or a host not allowed), with
 * *ret_why. No I/O: serving a connection calls it, so do the fuzzer and
 * the unit tests. */
int proxy_parse_request(
        char *head, char *const *hosts, char **ret_host, unsigned *ret_port, const char **ret_why);
/* Close every connection, stop, remove the socket. Returns NULL. */
struct proxy *proxy_stop(struct proxy *p);

#endif
