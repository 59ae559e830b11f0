/* SPDX-License-Identifier: MIT */
/*
 * wslframe.h: what the host (plugins/bwrap/run.c, under WSL2) sends the
 * WSL2 opener (plugins/wsl2/open.c) on its stdin before the agent's
 * channel begins, since wsl.exe carries only stdin, stdout and stderr into
 * the distribution. The stream:
 *
 *   "SBXWSL2\n"                       magic and version, 8 bytes
 *   records, each a 6-byte header     type (1), fd (1), length (4, little-endian)
 *     'F' FD LEN  then LEN bytes      a blob bwrap expects at descriptor FD
 *     'L' 0   24  then 24 bytes       the limits for the distribution's cgroup:
 *                                     memory bytes, CPU millicores (0: no
 *                                     quota), pids, each 8 bytes little-endian
 *     'E' 0   0                       the end: the agent's channel follows
 *
 * 'L' at most once, and only when the host counts on a cgroup there (the
 * probe found one, wsl2-open --caps): the opener then makes it or refuses
 * the box. Without it the agent's rlimits are the limits (the fallback).
 * FD is 3..WSL_FRAME_FD_MAX, each at most once; a blob is at most
 * WSL_FRAME_BLOB_MAX bytes and all of them at most WSL_FRAME_TOTAL_MAX.
 * The reader is told only headers (it reads each payload itself, exactly
 * LEN bytes, so not one byte of the channel is taken); pure functions over
 * untrusted bytes, unit-tested (tests/unit/test_wsl2_frame.c) and fuzzed
 * (tests/fuzz/fuzz_wsl2_frame.c).
 */
#ifndef WSL2_WSLFRAME_H
#define WSL2_WSLFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WSL_FRAME_MAGIC      "SBXWSL2\n"
#define WSL_FRAME_MAGIC_LEN  8
#define WSL_FRAME_HDR        6
#define WSL_FRAME_FD_MAX     15
#define WSL_FRAME_BLOB_MAX   (64u << 20)
#define WSL_FRAME_TOTAL_MAX  (128u << 20)
#define WSL_FRAME_FD         'F'
#define WSL_FRAME_END        'E'
#define WSL_FRAME_LIMITS     'L'
#define WSL_FRAME_LIMITS_LEN 24

/* The reader's state: which fds were given, how many bytes so far. */
struct wsl_frame {
    bool magic, ended, limits;
    uint32_t fds; /* bit n: fd n was given */
    uint64_t total;
};

/* One record's header, checked. */
struct wsl_frame_rec {
    int type; /* WSL_FRAME_FD, WSL_FRAME_LIMITS or WSL_FRAME_END */
    int fd;   /* for WSL_FRAME_FD, else -1 */
    uint32_t len;
};

/* The payload of WSL_FRAME_LIMITS. */
struct wsl_frame_limits {
    uint64_t memory_bytes, cpu_millicores, pids_max;
};

void wsl_frame_init(struct wsl_frame *f);

/* The 8 bytes of magic: 0, or -1 with *why set. */
int wsl_frame_magic(struct wsl_frame *f, const unsigned char *b, const char **why);

/* The next 6-byte header: 0 and rec filled, or -1 with *why set (a static
 * string). After WSL_FRAME_END nothing more is read. */
int wsl_frame_header(
        struct wsl_frame *f, const unsigned char *hdr, struct wsl_frame_rec *rec, const char **why);

/* Write the header of a record (the sender's side). */
void wsl_frame_put(unsigned char *hdr, int type, int fd, uint32_t len);

/* The WSL_FRAME_LIMITS_LEN bytes of a limits record: 0 and l filled, or -1
 * with *why set (no memory or no pids limit: 0 is not "unlimited"). */
int wsl_frame_limits_get(const unsigned char *b, struct wsl_frame_limits *l, const char **why);
void wsl_frame_limits_put(unsigned char *b, const struct wsl_frame_limits *l);

#endif
