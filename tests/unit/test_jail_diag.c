/* SPDX-License-Identifier: MIT */
/*
 * test_jail_diag.c: what a local jail's launcher left on its stderr
 * (plugins/common/jailbox.c, jail_read_diag_stats): the stats line the
 * WSL2 opener writes last is found however much was written before it
 * (a box that wrote more than 4 KB there once lost its OOM report), lines
 * longer than the buffer are cut, not split into false lines, and the
 * diagnostics kept are what fits.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jailbox.h"

/* A pipe's read end (non-blocking, as a box's is) holding text, its
 * write end closed. */
static int pipe_with(const char *text)
{
    int p[2];
    size_t len = strlen(text);

    assert_int_equal(pipe(p), 0);
    assert_true(len < 65536); /* a pipe's buffer: written whole */
    assert_int_equal(write(p[1], text, len), (ssize_t)len);
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    return p[0];
}

static void read_all(const char *text, struct sbx_box_stats *stats, char *out, size_t len)
{
    int fd = pipe_with(text);

    stats->oom_killed = stats->pids_limited = -1;
    jail_read_diag_stats(fd, "noise-to-drop", jail_wsl_stats_line, stats, out, len);
    close(fd);
}

static void test_stats_after_much_else(void **state)
{
    static char text[32768];
    struct sbx_box_stats stats;
    char out[240];
    size_t o = 0;

    (void)state;
    for (int i = 0; o < 20000; i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o, "sbx-agent: line %04d of chatter\n", i);
    snprintf(text + o, sizeof(text) - o, "sbx-wsl2-stats oom_killed=1 pids_limited=0\n");
    read_all(text, &stats, out, sizeof(out));
    assert_int_equal(stats.oom_killed, 1);
    assert_int_equal(stats.pids_limited, 0);
    assert_true(strncmp(out, "sbx-agent: line 0000 of chatter; sbx-agent: line 0001", 53) == 0);
    assert_true(strlen(out) < sizeof(out));
    assert_null(strstr(out, "sbx-wsl2-stats"));
}

static void test_long_line_then_stats_without_newline(void **state)
{
    static char text[16384];
    struct sbx_box_stats stats;
    char out[240];

    (void)state;
    memset(text, 'x', 10000);
    /* a stats line inside an overlong line is not a line of its own */
    memcpy(text + 6000, "sbx-wsl2-stats oom_killed=1 pids_limited=1", 42);
    snprintf(text + 10000, sizeof(text) - 10000,
            "\nbwrap: a real one\nsbx-wsl2-stats oom_killed=0 pids_limited=1");
    read_all(text, &stats, out, sizeof(out));
    assert_int_equal(stats.oom_killed, 0);
    assert_int_equal(stats.pids_limited, 1);
    assert_true(strncmp(out, "xxxx", 4) == 0);
    assert_true(strlen(out) < sizeof(out));
}

static void test_drop_blank_and_no_stats(void **state)
{
    struct sbx_box_stats stats;
    char out[240];

    (void)state;
    read_all(
            "\n\nbwrap: first\nsome noise-to-drop here\n\nbwrap: second", &stats, out, sizeof(out));
    assert_string_equal(out, "bwrap: first; bwrap: second");
    assert_int_equal(stats.oom_killed, -1); /* no stats line: left as they were */
    assert_int_equal(stats.pids_limited, -1);
}

static void test_without_stats_reader(void **state)
{
    int fd = pipe_with("bwrap: one\nsbx-wsl2-stats oom_killed=1 pids_limited=1\n");
    char out[240];

    (void)state;
    jail_read_diag(fd, NULL, out, sizeof(out));
    close(fd);
    assert_string_equal(out, "bwrap: one; sbx-wsl2-stats oom_killed=1 pids_limited=1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_stats_after_much_else),
            cmocka_unit_test(test_long_line_then_stats_without_newline),
            cmocka_unit_test(test_drop_blank_and_no_stats),
            cmocka_unit_test(test_without_stats_reader),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
