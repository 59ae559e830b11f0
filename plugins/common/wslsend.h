/* SPDX-License-Identifier: MIT */
/*
 * wslsend.h: the host's side of the stream to the WSL2 opener (wslframe.h
 * says what the stream is), for plugins/bwrap/run.c in WSL2 mode and
 * plugins/wsl2/run_win.c.
 */
#ifndef WSL2_WSLSEND_H
#define WSL2_WSLSEND_H

#include <llm-sandbox/plugin.h>

/* The whole stream down wfd: the magic, a blob record for each fd[i] >= 0
 * (the whole file behind it, for the opener's descriptor child[i]), the
 * limits record when lim is set (the opener then makes the box's cgroup),
 * the end record. 0, or -1 with err set; an opener that died is an error
 * here, never a SIGPIPE. */
int wsl_stream_send(int wfd, const int *fd, const int *child, int n_fds,
        const struct sbx_policy *lim, struct sbx_err *err);

#endif
