/* SPDX-License-Identifier: MIT */
/*
 * catalog.c: what this server offers, put together: a server (server.c)
 * with the tools and resources of tools.c and session_tools.c, and the
 * conformance suite's fixtures (fixtures.c) when asked for. The one place
 * that knows every table; the tables know only the server.
 */
#include "mcp.h"
#include "server_priv.h"

int mcp_server_new(struct sbx_runtime *rt, const struct mcp_options *opt, struct mcp_server **ret,
        struct sbx_error **err)
{
    struct mcp_server *s = NULL;

    (void)err;
    if (server_new(rt, opt, &s) < 0)
        return -1;
    tools_register(s);
    session_tools_register(s);
    if (opt && opt->fixtures)
        fixtures_register(s);
    *ret = s;
    return 0;
}
