/* SPDX-License-Identifier: MIT */
/*
 * limits.c: the narrowing controls a tool call gives (args.h lists them),
 * read by the core's one parser (sbx_req_limit_parse) in the CLI's units:
 * a JSON number is taken as the text JSON spelled it, so "timeout": 1.5
 * and "memory": "1.5G" mean what --timeout 1.5 and --memory 1.5G mean.
 * Whether a value is within the configured ceilings is sbx_run's to say.
 */
#include "limits.h"

#include <stdio.h>

#include "args.h"

const char *mcp_limits_parse(
        struct json_object *args, struct sbx_req_limits *l, char *why, size_t n)
{
    for (size_t i = 0; args && i < exec_n_controls; i++) {
        struct json_object *v;
        struct sbx_error *e = NULL;

        if (!json_object_object_get_ex(args, exec_controls[i].key, &v) || !v)
            continue;
        if (sbx_req_limit_parse(l, exec_controls[i].field, json_object_get_string(v), &e) < 0) {
            snprintf(why, n, "'%s': %s", exec_controls[i].key, e && e->msg ? e->msg : "invalid");
            sbx_error_free(e);
            return why;
        }
    }
    return NULL;
}
