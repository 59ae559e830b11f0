/* SPDX-License-Identifier: MIT */
/*
 * stdio_win.c: the MCP stdio transport of the Windows build, in place of
 * stdio.c (whose wait on stdin and a signalfd has no Windows counterpart).
 * The same framing (stream.c) and the same rule that nothing but protocol
 * messages reaches the real stdout (STYLE G1): the protocol gets a private
 * copy of it and descriptor 1 becomes stderr. Both ends are binary, so no
 * CR is added or taken. It reads standard input until its end, which ends
 * the server as on Linux: calls in flight are cancelled before it returns
 * 0. Ctrl+C and Ctrl+Break end the process at once (Windows' default):
 * this build starts no sandbox that could outlive it.
 */
#include <fcntl.h>
#include <io.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "mcp.h"
#include "serve.h"
#include "stream.h"

int mcp_serve_stdio(struct sbx_runtime *rt, const struct mcp_options *opt)
{
    struct stream_out o;
    struct mcp_sink sink = {stream_out_send, stream_out_sink_done, &o};
    struct mcp_server *s = NULL;
    struct mcp_conn *c;
    struct stream_in in;
    pthread_t prober;
    int rc, out_fd;

    fflush(stdout);
    if (_setmode(STDIN_FILENO, _O_BINARY) < 0 || _setmode(STDOUT_FILENO, _O_BINARY) < 0)
        return -1;
    out_fd = _dup(STDOUT_FILENO);
    if (out_fd < 0 || _dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        return -1;
    stream_out_init(&o, out_fd);
    if (mcp_server_new(rt, opt, &s, NULL) < 0 || !(c = mcp_conn_new(s))) {
        mcp_server_free(s);
        return -1;
    }
    rc = pthread_create(&prober, NULL, stream_probe_versions, rt);
    if (stream_in_init(&in) == 0) {
        while (stream_in_read(&in, STDIN_FILENO, c, &sink) > 0)
            ;
        stream_in_end(&in, c, &sink);
        stream_in_done(&in);
    }
    if (rc == 0) /* first: a call may wait for the probe that runs */
        stream_end_prober(rt, prober);
    mcp_conn_free(c); /* cancels what still runs and waits for it */
    mcp_server_free(s);
    _close(out_fd);
    stream_out_done(&o);
    return 0;
}
