/* SPDX-License-Identifier: MIT */
/*
 * cancel.c: the cancellation flag of sbx.h (STYLE C3): an eventfd that
 * becomes readable once fired, so every wait on a run (exec.c's and
 * http.c's polls, the agent channel) wakes up at once. Firing only
 * write(2)s: it is async-signal-safe.
 */
#include "base/cancel.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/error.h"

int sbx_cancel_new(struct sbx_cancel **ret, struct sbx_error **err)
{
    struct sbx_cancel *c = calloc(1, sizeof(*c));

    if (!c)
        return sbx_error_set(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->fd < 0) {
        free(c);
        return sbx_error_set(err, SBX_E_IO, errno, "eventfd: %s", strerror(errno));
    }
    *ret = c;
    return 0;
}

void sbx_cancel_fire(struct sbx_cancel *c)
{
    uint64_t one = 1;

    if (c)
        (void)!write(c->fd, &one, sizeof(one));
}

struct sbx_cancel *sbx_cancel_free(struct sbx_cancel *c)
{
    if (c) {
        close(c->fd);
        free(c);
    }
    return NULL;
}
