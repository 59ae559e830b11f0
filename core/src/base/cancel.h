/* SPDX-License-Identifier: MIT */
/*
 * cancel.h: what a cancellation flag (sbx_cancel_new, sbx.h) is inside the
 * core: an eventfd (on Windows a pipe), readable once fired. Poll
 * cancel->fd beside what a run waits for.
 */
#ifndef SBX_BASE_CANCEL_H
#define SBX_BASE_CANCEL_H

#include <llm-sandbox/sbx.h>

struct sbx_cancel {
#ifdef _WIN32
    volatile long fired; /* platform/win_base.c: fired once */
    int fd, wfd;         /* a pipe's ends: fd readable once fired */
#else
    int fd; /* an eventfd */
#endif
};

#endif
