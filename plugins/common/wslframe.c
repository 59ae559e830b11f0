/* SPDX-License-Identifier: MIT */
/*
 * wslframe.c: the opener's stream (wslframe.h). No I/O, no allocation.
 */
#include "wslframe.h"

#include <string.h>

void wsl_frame_init(struct wsl_frame *f)
{
    memset(f, 0, sizeof(*f));
}

int wsl_frame_magic(struct wsl_frame *f, const unsigned char *b, const char **why)
{
    if (f->magic || memcmp(b, WSL_FRAME_MAGIC, WSL_FRAME_MAGIC_LEN) != 0) {
        *why = f->magic ? "magic given twice" : "not the llm-sandbox WSL2 stream (bad magic)";
        return -1;
    }
    f->magic = true;
    return 0;
}

int wsl_frame_header(
        struct wsl_frame *f, const unsigned char *hdr, struct wsl_frame_rec *rec, const char **why)
{
    uint32_t len = (uint32_t)hdr[2] | (uint32_t)hdr[3] << 8 | (uint32_t)hdr[4] << 16 |
                   (uint32_t)hdr[5] << 24;

    *why = NULL;
    if (!f->magic)
        *why = "record before the magic";
    else if (f->ended)
        *why = "record after the end";
    else if (hdr[0] == WSL_FRAME_END && (hdr[1] != 0 || len != 0))
        *why = "end record with a payload";
    else if (hdr[0] == WSL_FRAME_FD && (hdr[1] < 3 || hdr[1] > WSL_FRAME_FD_MAX))
        *why = "descriptor outside 3..15";
    else if (hdr[0] == WSL_FRAME_FD && (f->fds & (1u << hdr[1])))
        *why = "descriptor given twice";
    else if (hdr[0] == WSL_FRAME_FD && len > WSL_FRAME_BLOB_MAX)
        *why = "blob larger than 64 MiB";
    else if (hdr[0] == WSL_FRAME_FD && f->total + len > WSL_FRAME_TOTAL_MAX)
        *why = "blobs larger than 128 MiB in all";
    else if (hdr[0] == WSL_FRAME_LIMITS && (hdr[1] != 0 || len != WSL_FRAME_LIMITS_LEN))
        *why = "limits record not of 24 bytes";
    else if (hdr[0] == WSL_FRAME_LIMITS && f->limits)
        *why = "limits given twice";
    else if (hdr[0] != WSL_FRAME_FD && hdr[0] != WSL_FRAME_END && hdr[0] != WSL_FRAME_LIMITS)
        *why = "unknown record type";
    if (*why)
        return -1;
    rec->type = hdr[0];
    rec->fd = hdr[0] == WSL_FRAME_FD ? hdr[1] : -1;
    rec->len = len;
    if (hdr[0] == WSL_FRAME_END) {
        f->ended = true;
    } else if (hdr[0] == WSL_FRAME_LIMITS) {
        f->limits = true;
    } else {
        f->fds |= 1u << hdr[1];
        f->total += len;
    }
    return 0;
}

void wsl_frame_put(unsigned char *hdr, int type, int fd, uint32_t len)
{
    hdr[0] = (unsigned char)type;
    hdr[1] = (unsigned char)(fd < 0 ? 0 : fd);
    hdr[2] = (unsigned char)(len & 0xFF);
    hdr[3] = (unsigned char)(len >> 8 & 0xFF);
    hdr[4] = (unsigned char)(len >> 16 & 0xFF);
    hdr[5] = (unsigned char)(len >> 24 & 0xFF);
}

static uint64_t get64(const unsigned char *b)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void put64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        b[i] = (unsigned char)(v & 0xFF);
}

int wsl_frame_limits_get(const unsigned char *b, struct wsl_frame_limits *l, const char **why)
{
    l->memory_bytes = get64(b);
    l->cpu_millicores = get64(b + 8);
    l->pids_max = get64(b + 16);
    *why = l->memory_bytes == 0 ? "limits without a memory limit"
           : l->pids_max == 0   ? "limits without a pids limit"
                                : NULL;
    return *why ? -1 : 0;
}

void wsl_frame_limits_put(unsigned char *b, const struct wsl_frame_limits *l)
{
    put64(b, l->memory_bytes);
    put64(b + 8, l->cpu_millicores);
    put64(b + 16, l->pids_max);
}
