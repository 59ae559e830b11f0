/* SPDX-License-Identifier: MIT */
/*
 * proto.h: the agent protocol between the core (host side) and sbx-agent,
 * the small static program that runs as pid 1 inside every sandbox, on
 * every backend. Header-only and dependency-free: the agent links nothing
 * but libc statically.
 *
 * Transport: one byte stream each way (bwrap/nsjail: the agent's stdin and
 * stdout pipes; Docker: the attach stream). The agent's stderr carries only
 * its own diagnostics, never protocol.
 *
 * Frame: an 8-byte header, then `len` payload bytes.
 *   u32 len (little endian, <= AGENT_MAX_PAYLOAD), u8 type, u8 flags, u16 0
 * Integers in payloads are little endian. Strings are NUL-terminated.
 *
 * Session of frames (host H, agent A):
 *   A: READY        u32 proto_version, u32 agent_pid, u32 flags (AGENT_READY_PID1)
 *   H: PUT          u32 mode, u32 path_len, path bytes (no NUL), then data.
 *                   flags: AGENT_PUT_FIRST creates the file (O_EXCL, no
 *                   symlinks, parents created 0755 beneath the workspace,
 *                   file mode exactly mode & 0777), AGENT_PUT_LAST ends it;
 *                   chunks in between append. Every chunk repeats the path.
 *                   AGENT_PUT_REPLACE with FIRST (a session's upload):
 *                   an existing regular file is truncated instead (still
 *                   no symlinks; anything but a regular file is refused).
 *                   AGENT_PUT_TMP with FIRST: the path is taken beneath
 *                   the sandbox's /tmp instead (a language's support
 *                   files, kept out of the workspace).
 *                   Path: relative, <= 4096 bytes, no empty, "." or ".."
 *                   component.
 *   A: OK | ERROR   after each PUT with AGENT_PUT_LAST (or the first error;
 *                   the file's later chunks up to LAST are then dropped
 *                   without another reply)
 *   H: LIMITS       u32 count, then count x {u32 resource (enum agent_rlimit),
 *                   u32 0, u64 value}: the agent lowers its own soft and hard
 *                   limit to value (never raises), so every later exec
 *                   inherits it. Not while an exec runs.
 *   A: OK | ERROR
 *   H: EXEC         u32 exec_flags, u32 argc, u32 envc, then argc argv
 *                   strings, envc "K=V" strings, one cwd string ("" = the
 *                   workspace). argv[0] without '/' is searched in the
 *                   exec env's PATH.
 *   A: STARTED      u32 pid (as seen in the sandbox)  | ERROR
 *                   If the program cannot be started (execve or cwd fails)
 *                   there is no STARTED: a one-line "sbx-agent: cannot ..."
 *                   on STDERR, then EXITED code 127 (ENOENT) or 126 with
 *                   AGENT_EXIT_EXEC_FAILED. One exec at a time (else ERROR).
 *   H: STDIN        data for the program (only with AGENT_EXEC_STDIN_PIPE;
 *                   otherwise, or once the program closed its stdin, it is
 *                   dropped). The agent buffers up to 1 MiB, then stops
 *                   reading its input until the program drains it: the host
 *                   must keep reading, and a SIGNAL or QUIT queued behind
 *                   such STDIN waits too (kill the sandbox from outside).
 *   H: STDIN_EOF
 *   A: STDOUT/STDERR data as the program writes it
 *   H: SIGNAL       u32 signo: to every process of the current exec
 *                   (ignored when none runs; a bad signo is an ERROR)
 *   A: EXITED       u32 kind (0 exit, 1 signal), i32 code, u32 exit_flags,
 *                   u32 0, u64 utime_us, u64 stime_us, u64 maxrss_kb
 *                   Sent after the program exited, every other process the
 *                   exec started was killed, and all its output was sent.
 *   H: RELAY        u32 port, u32 0, then a socket path string: the agent
 *                   listens on 127.0.0.1:port and relays every connection
 *                   to the unix socket at path (the core's filtering proxy,
 *                   for dependency installs; see SBX_PROXY_SOCKET). Once
 *                   per box; the relay lives as long as the agent, in the
 *                   agent itself, so no exec's cleanup ends it.
 *   A: OK | ERROR
 *   H: GET          u32 max_len, then a path (as PUT's, no NUL): a regular
 *                   file beneath the workspace, no symlinks on the way
 *   A: DATA...      its bytes, in chunks of at most AGENT_CHUNK
 *   A: OK | ERROR   OK: u32 mode; ERROR when it is missing, not a regular
 *                   file, or longer than max_len (EFBIG)
 *   H: LIST         a path (as PUT's, no NUL, or "." for the workspace
 *                   itself, whose files then start with "./") naming a
 *                   directory beneath the workspace
 *   A: DATA...      one frame per regular file in it, recursively (no
 *                   symlink followed): its path relative to the workspace,
 *                   NUL-terminated; at most AGENT_LIST_MAX files. With the
 *                   flag AGENT_LIST_STAT each path's NUL is followed by
 *                   u64 size and u64 mtime (ns since the epoch), and
 *                   directories of other filesystems (mounts, such as a
 *                   dependency set's node_modules) are not entered.
 *   A: OK | ERROR   ERROR when it is no directory, or holds more
 *   H: FILTER       u32 0, u32 0, then a classic BPF program (struct sock_filter
 *                   array, 8 bytes an instruction, 1 to 4096 of them): the
 *                   core's seccomp policy for a backend that applies none
 *                   itself. Every later exec's child sets no_new_privs,
 *                   drops every capability and installs it just before
 *                   execve; where it cannot, the program does not run
 *                   ("sbx-agent: cannot apply the seccomp filter", EXITED
 *                   code 126 with AGENT_EXIT_EXEC_FAILED). Once per box
 *                   (a second is an ERROR EEXIST), before any EXEC.
 *   A: OK | ERROR   (READY's AGENT_READY_FILTER says the agent knows it)
 *   H: EXEC with AGENT_EXEC_ZYGOTE: start the box's zygote, a pre-loaded
 *                   interpreter that forks one child per run (see
 *                   docs/zygote-security.md). It gets no seccomp filter of
 *                   the agent's (the box's own, looser one holds), stdin
 *                   /dev/null, stdout and stderr on the agent's stderr, and
 *                   a SOCK_SEQPACKET control socket as fd 3, on which the
 *                   agent first sends the FILTER program (refused when none
 *                   was set: a child must never run without it) and waits
 *                   for one message "ready". Once per box; not an exec.
 *   A: OK | ERROR   OK: u32 the zygote's pid (as seen in the sandbox)
 *   H: PREP         u32 flags (AGENT_PREP_HOLD): the zygote forks the next
 *                   run's child now, before the run is known. It enters its
 *                   own mount, pid, ipc, network and cgroup namespaces, a
 *                   fresh /tmp (the box's support files copied in),
 *                   /dev/shm and /proc, brings loopback up, drops its
 *                   capabilities, applies the filter, forks the program's
 *                   process, and waits for its run (it is the init of
 *                   its pid namespace, and holds a status pipe of the
 *                   agent's, for the program's wait status). Its
 *                   workspace is the box's, which must have had no run
 *                   since the last FRESH (else ERROR EBUSY). One prepared
 *                   child at a time (else ERROR EEXIST). With
 *                   AGENT_PREP_HOLD it stops before its cgroup namespace,
 *                   capabilities and filter until GO: OK's pid is then
 *                   the host's to move into a cgroup of the run's own,
 *                   which becomes that namespace's root (the language's
 *                   zygote must hold: manifest language.zygote.holds).
 *   A: OK | ERROR   OK: u32 the child's pid (as seen in the sandbox), u32
 *                   held (1: it waits for GO). ERROR when there is no
 *                   zygote or the child could not be isolated (nothing of
 *                   a run started).
 *   H: GO           (after PREP's OK with held 1) the child takes its
 *                   cgroup namespace, drops its capabilities and applies
 *                   the filter.
 *   A: OK | ERROR   OK once it waits for its run; ERROR when no child
 *                   waits for GO, or a step failed (the child is gone).
 *   H: FORK         as EXEC's payload (flag STDIN_PIPE): the prepared
 *                   child runs argv in the loaded interpreter, its stdin,
 *                   stdout and stderr sent to it. The workspace is the
 *                   box's (staged before, read for artifacts after). The
 *                   child is then the current exec: STARTED,
 *                   STDOUT/STDERR, SIGNAL and EXITED as for EXEC (its
 *                   processes end with it: it is their pid namespace's
 *                   init; it runs the program in its child, keeps the
 *                   default signal actions, and writes the program's wait
 *                   status to the status pipe, which EXITED reports).
 *                   ERROR (no STARTED; nothing of the program ran, the
 *                   prepared child is gone) when an exec runs, no child
 *                   is prepared (ENOENT), a held one had no GO (EPERM),
 *                   or it could not take the run (the errno and stage it
 *                   reported).
 *   H: FRESH        (a zygote box, between runs) a new empty tmpfs replaces
 *                   the workspace, of the same size and mode: a run's
 *                   workspace is never the next one's
 *   A: OK | ERROR   (an ERROR of the mount itself ends the agent)
 *   H: QUIT         the agent kills everything and exits 0 (so does EOF
 *                   on its input between frames).
 * ERROR payload: i32 errno, then a message string.
 * Fatal, ERROR with EPROTO then exit status 2: a bad header (length,
 * reserved bytes, flags other than PUT's), an unknown or agent->host type,
 * a wrong size for the type, a truncated frame, a PUT path_len past the
 * frame, EXEC strings that do not match argc/envc exactly. Anything else
 * (a PUT outside the workspace, EXEC while busy, ...) is a plain ERROR.
 * Exit status 1: the control channel failed (the host went away).
 */
#ifndef SBX_AGENT_PROTO_H
#define SBX_AGENT_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define AGENT_PROTO_VERSION 1u
#define AGENT_HDR_SIZE      8u
#define AGENT_MAX_PAYLOAD   (1u << 20)
#define AGENT_CHUNK         (64u * 1024u) /* data frames carry at most this */

enum agent_type {
    /* host -> agent */
    AGENT_PUT = 1,
    AGENT_EXEC = 2,
    AGENT_STDIN = 3,
    AGENT_STDIN_EOF = 4,
    AGENT_SIGNAL = 5,
    AGENT_QUIT = 6,
    AGENT_LIMITS = 7,
    AGENT_RELAY = 8,
    AGENT_GET = 9,
    AGENT_LIST = 10,
    AGENT_FILTER = 11,
    AGENT_FORK = 12,
    AGENT_FRESH = 13,
    AGENT_GO = 14,
    AGENT_PREP = 15,
    /* agent -> host */
    AGENT_READY = 64,
    AGENT_STDOUT = 65,
    AGENT_STDERR = 66,
    AGENT_STARTED = 67,
    AGENT_EXITED = 68,
    AGENT_OK = 69,
    AGENT_ERROR = 70,
    AGENT_DATA = 71,
};

enum agent_ready_flags { AGENT_READY_PID1 = 1u << 0, AGENT_READY_FILTER = 1u << 1 };
#define AGENT_FILTER_MAX 4096 /* instructions: the kernel's BPF_MAXINSNS */
/* Resources for LIMITS, independent of any architecture's RLIMIT_ numbers. */
enum agent_rlimit {
    AGENT_RLIMIT_FSIZE = 1,
    AGENT_RLIMIT_NOFILE = 2,
    AGENT_RLIMIT_CORE = 3,
    AGENT_RLIMIT_AS = 4,
    AGENT_RLIMIT_NPROC = 5,
    AGENT_RLIMIT_MSGQUEUE = 6,
    AGENT_RLIMIT_MEMLOCK = 7,
    AGENT_RLIMIT_SIGPENDING = 8,
};
#define AGENT_LIMITS_MAX      12
#define AGENT_RELAY_CONNS     16 /* connections relayed at once; more wait in the backlog */
#define AGENT_LIST_MAX        4096
#define AGENT_RLIMIT_INFINITY UINT64_MAX
enum agent_put_flags {
    AGENT_PUT_FIRST = 1u << 0,
    AGENT_PUT_LAST = 1u << 1,
    AGENT_PUT_REPLACE = 1u << 2, /* with FIRST: an existing regular file is truncated */
    AGENT_PUT_TMP = 1u << 3,     /* with FIRST: beneath the sandbox's /tmp, not the workspace */
};
enum agent_exec_flags {
    AGENT_EXEC_STDIN_PIPE = 1u << 0,
    AGENT_EXEC_ZYGOTE = 1u << 1, /* EXEC: start the box's zygote (see PREP) */
    AGENT_PREP_HOLD = 1u << 2,   /* PREP: the child waits for GO (a cgroup first) */
};
enum agent_list_flags { AGENT_LIST_STAT = 1u << 0 };
enum agent_exit_kind { AGENT_EXIT_CODE = 0, AGENT_EXIT_SIGNAL = 1 };
enum agent_exit_flags {
    AGENT_EXIT_WORKSPACE_FULL = 1u << 0, /* /workspace or /tmp had no space or inodes left */
    AGENT_EXIT_FILE_SIZE = 1u << 1,      /* a file reached RLIMIT_FSIZE, or SIGXFSZ */
    AGENT_EXIT_EXEC_FAILED = 1u << 2,    /* execve failed; code is 126 or 127 */
};

#define AGENT_EXITED_SIZE 40u

struct agent_hdr {
    uint32_t len;
    uint8_t type;
    uint8_t flags;
};

static inline void agent_put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v & 0xFFu);
    p[1] = (unsigned char)((v >> 8) & 0xFFu);
    p[2] = (unsigned char)((v >> 16) & 0xFFu);
    p[3] = (unsigned char)((v >> 24) & 0xFFu);
}

static inline uint32_t agent_get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline void agent_put_u64(unsigned char *p, uint64_t v)
{
    agent_put_u32(p, (uint32_t)(v & 0xFFFFFFFFu));
    agent_put_u32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t agent_get_u64(const unsigned char *p)
{
    return (uint64_t)agent_get_u32(p) | ((uint64_t)agent_get_u32(p + 4) << 32);
}

static inline void agent_hdr_encode(
        unsigned char out[AGENT_HDR_SIZE], uint32_t len, uint8_t type, uint8_t flags)
{
    agent_put_u32(out, len);
    out[4] = type;
    out[5] = flags;
    out[6] = 0;
    out[7] = 0;
}

/* 0 when the header is well-formed, -1 otherwise. */
static inline int agent_hdr_decode(const unsigned char in[AGENT_HDR_SIZE], struct agent_hdr *h)
{
    h->len = agent_get_u32(in);
    h->type = in[4];
    h->flags = in[5];
    if (h->len > AGENT_MAX_PAYLOAD || in[6] != 0 || in[7] != 0)
        return -1;
    return 0;
}

#endif
