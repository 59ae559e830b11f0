/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jail_diag.c: libFuzzer target for what a local jail's launcher left
 * on its stderr (plugins/common/jailbox.c, jail_read_diag_stats), read as
 * a box's close reads it: through a pipe, with the WSL2 opener's stats
 * lines taken out. The agent's and bwrap's diagnostics go there, and a
 * box's processes may reach them. Checked: the kept text is a terminated
 * string within its buffer, without newlines; stats are -1, 0 or 1, and
 * change only when the input holds a stats line. A crash, a sanitizer
 * report or an abort() is a bug. Build with clang -fsanitize=fuzzer, or
 * link with replay.c to replay a corpus.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jailbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sbx_box_stats stats = {.oom_killed = 7, .pids_limited = 7};
    char out[240];
    int p[2];

    if (size > 60000 || pipe(p) < 0) /* within a pipe's buffer: written whole */
        return 0;
    check(write(p[1], data, size) == (ssize_t)size);
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    memset(out, 'Z', sizeof(out));
    jail_read_diag_stats(p[0], "noise", jail_wsl_stats_line, &stats, out, sizeof(out));
    close(p[0]);
    check(memchr(out, '\0', sizeof(out)) != NULL);
    check(strchr(out, '\n') == NULL);
    if (stats.oom_killed != 7 || stats.pids_limited != 7) {
        check(stats.oom_killed >= -1 && stats.oom_killed <= 1);
        check(stats.pids_limited >= -1 && stats.pids_limited <= 1);
        check(memmem(data, size, "sbx-wsl2-stats ", 15) != NULL);
    }
    return 0;
}
