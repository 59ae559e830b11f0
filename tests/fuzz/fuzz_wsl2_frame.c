/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wsl2_frame.c: libFuzzer target for the stream the WSL2 opener reads
 * on stdin (plugins/common/wslframe.h), consumed as the opener does: the
 * magic, then header by header, each blob's payload skipped by its length
 * and a limits record's payload read, until the end record, a refusal or
 * the end of the input. Checked: a refusal always says why; an accepted
 * record is within the limits and never repeats a descriptor or the limits;
 * accepted limits hold a memory and a pids limit and write back to the
 * same bytes; the state only grows; nothing is accepted after the end. A crash, a sanitizer report
 * or an abort() is a bug. Build with clang -fsanitize=fuzzer, or link with replay.c to replay a
 * corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wslframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wsl_frame f;
    struct wsl_frame_rec rec;
    const char *why = NULL;
    size_t o = 0;

    wsl_frame_init(&f);
    if (size < WSL_FRAME_MAGIC_LEN)
        return 0;
    if (wsl_frame_magic(&f, data, &why) < 0) {
        check(why != NULL && !f.magic);
        return 0;
    }
    o = WSL_FRAME_MAGIC_LEN;
    while (o + WSL_FRAME_HDR <= size) {
        uint32_t fds = f.fds;
        uint64_t total = f.total;
        int was_ended = f.ended, had_limits = f.limits;

        if (wsl_frame_header(&f, data + o, &rec, &why) < 0) {
            check(why != NULL && f.fds == fds && f.total == total && f.limits == had_limits);
            return 0;
        }
        check(!was_ended && why == NULL);
        o += WSL_FRAME_HDR;
        if (rec.type == WSL_FRAME_END) {
            check(f.ended && rec.len == 0 && f.fds == fds);
            /* the agent's channel follows: nothing more is a record */
            if (o + WSL_FRAME_HDR <= size)
                check(wsl_frame_header(&f, data + o, &rec, &why) < 0 && why != NULL);
            return 0;
        }
        if (rec.type == WSL_FRAME_LIMITS) {
            struct wsl_frame_limits l;
            unsigned char back[WSL_FRAME_LIMITS_LEN];

            check(!had_limits && f.limits && rec.fd == -1 && rec.len == WSL_FRAME_LIMITS_LEN &&
                    f.fds == fds && f.total == total);
            if (size - o < WSL_FRAME_LIMITS_LEN)
                return 0; /* stdin ended inside the limits */
            why = NULL;
            if (wsl_frame_limits_get(data + o, &l, &why) < 0) {
                check(why != NULL && (l.memory_bytes == 0 || l.pids_max == 0));
                return 0;
            }
            check(why == NULL && l.memory_bytes > 0 && l.pids_max > 0);
            wsl_frame_limits_put(back, &l);
            check(memcmp(back, data + o, sizeof(back)) == 0);
            o += WSL_FRAME_LIMITS_LEN;
            continue;
        }
        check(rec.type == WSL_FRAME_FD && rec.fd >= 3 && rec.fd <= WSL_FRAME_FD_MAX);
        check(!(fds & (1u << rec.fd)) && (f.fds & (1u << rec.fd)));
        check(rec.len <= WSL_FRAME_BLOB_MAX && f.total == total + rec.len &&
                f.total <= WSL_FRAME_TOTAL_MAX);
        if (rec.len > size - o)
            return 0; /* the opener would find stdin ended inside the blob */
        o += rec.len;
    }
    return 0;
}
