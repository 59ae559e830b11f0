/* SPDX-License-Identifier: MIT */
/*
 * test_wsl2_frame.c: the stream the WSL2 opener reads on stdin before it
 * execs bwrap (plugins/common/wslframe.c): what the host writes reads back;
 * every refusal (bad magic, a record before it or after the end, a
 * descriptor out of range or given twice, a blob or a total too large, an
 * unknown type, an end with a payload, a limits record of the wrong size,
 * given twice, or without a memory or pids limit) says why.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <string.h>

#include "wslframe.h"

static void started(struct wsl_frame *f)
{
    const char *why = NULL;

    wsl_frame_init(f);
    assert_int_equal(wsl_frame_magic(f, (const unsigned char *)WSL_FRAME_MAGIC, &why), 0);
}

/* The header of (type, fd, len) read back by f: 0 or -1, why as said. */
static int header(struct wsl_frame *f, int type, int fd, uint32_t len, struct wsl_frame_rec *rec,
        const char **why)
{
    unsigned char hdr[WSL_FRAME_HDR];

    wsl_frame_put(hdr, type, fd, len);
    return wsl_frame_header(f, hdr, rec, why);
}

static void test_round_trip(void **state)
{
    struct wsl_frame f;
    struct wsl_frame_rec rec;
    unsigned char hdr[WSL_FRAME_HDR];
    const char *why = "x";

    (void)state;
    started(&f);
    wsl_frame_put(hdr, WSL_FRAME_FD, 4, 0x01020304u);
    assert_memory_equal(hdr, "F\4\4\3\2\1", WSL_FRAME_HDR); /* little-endian length */
    assert_int_equal(wsl_frame_header(&f, hdr, &rec, &why), 0);
    assert_null(why);
    assert_int_equal(rec.type, WSL_FRAME_FD);
    assert_int_equal(rec.fd, 4);
    assert_int_equal(rec.len, 0x01020304u);
    assert_int_equal(header(&f, WSL_FRAME_FD, 3, 0, &rec, &why), 0); /* an empty blob is one */
    assert_int_equal(header(&f, WSL_FRAME_FD, 15, 12, &rec, &why), 0);
    assert_int_equal(header(&f, WSL_FRAME_END, -1, 0, &rec, &why), 0);
    assert_int_equal(rec.type, WSL_FRAME_END);
    assert_int_equal(rec.fd, -1);
    assert_true(f.ended);
    assert_int_equal(f.fds, (1u << 3) | (1u << 4) | (1u << 15));
    assert_int_equal(f.total, 0x01020304u + 12);
}

static void test_magic(void **state)
{
    struct wsl_frame f;
    struct wsl_frame_rec rec;
    const char *why = NULL;

    (void)state;
    wsl_frame_init(&f);
    assert_int_equal(header(&f, WSL_FRAME_END, -1, 0, &rec, &why), -1);
    assert_string_equal(why, "record before the magic");
    assert_int_equal(wsl_frame_magic(&f, (const unsigned char *)"SBXWSL1\n", &why), -1);
    assert_string_equal(why, "not the llm-sandbox WSL2 stream (bad magic)");
    assert_int_equal(wsl_frame_magic(&f, (const unsigned char *)WSL_FRAME_MAGIC, &why), 0);
    assert_int_equal(wsl_frame_magic(&f, (const unsigned char *)WSL_FRAME_MAGIC, &why), -1);
    assert_string_equal(why, "magic given twice");
}

static void test_refusals(void **state)
{
    static const struct {
        int type, fd;
        uint32_t len;
        const char *why;
    } bad[] = {
            {WSL_FRAME_FD, 0, 1, "descriptor outside 3..15"},
            {WSL_FRAME_FD, 2, 1, "descriptor outside 3..15"},
            {WSL_FRAME_FD, 16, 1, "descriptor outside 3..15"},
            {WSL_FRAME_FD, 255, 1, "descriptor outside 3..15"},
            {WSL_FRAME_FD, 5, WSL_FRAME_BLOB_MAX + 1, "blob larger than 64 MiB"},
            {WSL_FRAME_END, 3, 0, "end record with a payload"},
            {WSL_FRAME_END, 0, 1, "end record with a payload"},
            {WSL_FRAME_LIMITS, 0, 23, "limits record not of 24 bytes"},
            {WSL_FRAME_LIMITS, 0, 25, "limits record not of 24 bytes"},
            {WSL_FRAME_LIMITS, 3, 24, "limits record not of 24 bytes"},
            {'f', 3, 1, "unknown record type"},
            {0, 0, 0, "unknown record type"},
    };
    struct wsl_frame f;
    struct wsl_frame_rec rec;
    const char *why = NULL;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        started(&f);
        assert_int_equal(header(&f, bad[i].type, bad[i].fd, bad[i].len, &rec, &why), -1);
        assert_string_equal(why, bad[i].why);
        assert_false(f.ended);
        assert_int_equal(f.fds, 0);
    }
}

static void test_twice_total_and_after_end(void **state)
{
    struct wsl_frame f;
    struct wsl_frame_rec rec;
    const char *why = NULL;

    (void)state;
    started(&f);
    assert_int_equal(header(&f, WSL_FRAME_FD, 3, 1, &rec, &why), 0);
    assert_int_equal(header(&f, WSL_FRAME_FD, 3, 1, &rec, &why), -1);
    assert_string_equal(why, "descriptor given twice");
    /* 64 MiB twice is the most there may be; one byte more is refused */
    started(&f);
    assert_int_equal(header(&f, WSL_FRAME_FD, 4, WSL_FRAME_BLOB_MAX, &rec, &why), 0);
    assert_int_equal(header(&f, WSL_FRAME_FD, 5, WSL_FRAME_BLOB_MAX, &rec, &why), 0);
    assert_int_equal(header(&f, WSL_FRAME_FD, 6, 1, &rec, &why), -1);
    assert_string_equal(why, "blobs larger than 128 MiB in all");
    started(&f);
    assert_int_equal(header(&f, WSL_FRAME_END, -1, 0, &rec, &why), 0);
    assert_int_equal(header(&f, WSL_FRAME_FD, 3, 1, &rec, &why), -1);
    assert_string_equal(why, "record after the end");
}

static void test_limits(void **state)
{
    static const struct wsl_frame_limits want = {
            .memory_bytes = 0x0102030405060708u, .cpu_millicores = 1500, .pids_max = 64};
    struct wsl_frame f;
    struct wsl_frame_rec rec;
    struct wsl_frame_limits got;
    unsigned char hdr[WSL_FRAME_HDR], b[WSL_FRAME_LIMITS_LEN];
    const char *why = "x";

    (void)state;
    started(&f);
    wsl_frame_put(hdr, WSL_FRAME_LIMITS, -1, WSL_FRAME_LIMITS_LEN);
    assert_memory_equal(hdr, "L\0\x18\0\0\0", WSL_FRAME_HDR);
    assert_int_equal(wsl_frame_header(&f, hdr, &rec, &why), 0);
    assert_int_equal(rec.type, WSL_FRAME_LIMITS);
    assert_int_equal(rec.fd, -1);
    assert_int_equal(rec.len, WSL_FRAME_LIMITS_LEN);
    assert_true(f.limits);
    assert_int_equal(f.fds, 0);
    assert_int_equal(f.total, 0); /* not a blob: counts against no blob budget */
    wsl_frame_limits_put(b, &want);
    assert_int_equal(b[0], 0x08); /* little-endian */
    assert_int_equal(b[7], 0x01);
    assert_int_equal(wsl_frame_limits_get(b, &got, &why), 0);
    assert_null(why);
    assert_true(got.memory_bytes == want.memory_bytes && got.cpu_millicores == 1500 &&
                got.pids_max == 64);
    /* once only, and 0 is not "unlimited" for memory or pids (CPU: no quota) */
    assert_int_equal(wsl_frame_header(&f, hdr, &rec, &why), -1);
    assert_string_equal(why, "limits given twice");
    wsl_frame_limits_put(b, &(struct wsl_frame_limits){.memory_bytes = 0, .pids_max = 1});
    assert_int_equal(wsl_frame_limits_get(b, &got, &why), -1);
    assert_string_equal(why, "limits without a memory limit");
    wsl_frame_limits_put(b, &(struct wsl_frame_limits){.memory_bytes = 1, .pids_max = 0});
    assert_int_equal(wsl_frame_limits_get(b, &got, &why), -1);
    assert_string_equal(why, "limits without a pids limit");
    wsl_frame_limits_put(b, &(struct wsl_frame_limits){.memory_bytes = 1, .pids_max = 1});
    assert_int_equal(wsl_frame_limits_get(b, &got, &why), 0);
    assert_int_equal(got.cpu_millicores, 0);
    assert_int_equal(header(&f, WSL_FRAME_END, -1, 0, &rec, &why), 0);
    started(&f);
    assert_int_equal(header(&f, WSL_FRAME_END, -1, 0, &rec, &why), 0);
    assert_int_equal(wsl_frame_header(&f, hdr, &rec, &why), -1);
    assert_string_equal(why, "record after the end");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_round_trip),
            cmocka_unit_test(test_magic),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_twice_total_and_after_end),
            cmocka_unit_test(test_limits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
