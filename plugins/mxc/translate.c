/* SPDX-License-Identifier: MIT */
/*
 * translate.c: the one policy -> MXC one-shot configuration (contract
 * 1.0.0, the fields of dist/generated/v1_0_0/wire.d.ts in @microsoft/mxc-sdk
 * 1.0.1; lxc-exec rejects any other key). Pure: no I/O; golden-tested
 * (tests/golden/mxc/), and every golden file is checked by the real
 * executor's --dry-run in tests/integration/test_mxc.py.
 *
 * Mapping (policy field -> JSON path):
 *   isolation              containment "process": bubblewrap on Linux (new user, pid,
 *                          ipc, uts and net namespaces), ProcessContainer on Windows
 *   the box                process.commandLine, run by MXC's `sh -c` (Windows: the quoted
 *                          agent, as CreateProcess reads it): the steps below, then exec
 *                          of the agent, so the workload's stdin/stdout are the channel
 *   workspace              Linux: `mkdir /workspace` in MXC's private root tmpfs, the
 *                          agent's cwd (fresh in every box, the same path everywhere;
 *                          nothing sizes it: workspace_bytes is not enforced, the probe
 *                          says so). Windows: process.cwd and filesystem.readwritePaths,
 *                          the box's host directory
 *   the config's fd        Linux: the command line closes it (MXC passes it on) first
 *   identity files         Linux: /etc is denied (an empty tmpfs), so the command line
 *                          writes /etc/passwd, group and hosts naming the box's uid
 *                          "sandbox", as the other local jails generate them
 *   environment            process.env: exactly the agent's (inheritDefaultEnv absent:
 *                          MXC's bwrap runs --clearenv and sets only these)
 *   wall_time_ms           process.timeout = wall time + MXC_TIMEOUT_SLACK_MS: a backstop;
 *                          the core's deadline fires first and kills the box
 *   read_only_system       filesystem.readonlyPaths: the agent, /usr, the /etc files
 *                          runtimes need and the language's paths; MXC's own system binds
 *                          are read-only too. Its root, /etc, /dev and /tmp are the box's
 *                          private tmpfs.
 *   host secrets           filesystem.deniedPaths: /etc (MXC would bind all of the host's
 *                          /etc), /root, /home
 *   network off            network.egress.default, ingress.default, ingress.hostLoopback
 *                          "deny": MXC's bwrap --unshare-net, loopback only
 *   network on/host/proxy  refused (SBX_E_UNSUPPORTED): MXC's egress needs slirp4netns and
 *                          filters by CIDR, and the core's proxy socket would have to appear
 *                          at SBX_PROXY_SOCKET, a path MXC cannot bind a socket to
 *   telemetry              telemetry.enabled false: nothing leaves the machine
 *   seccomp, no_new_privs  not here: MXC applies no filter, so the core has the agent
 *                          install its policy before each program (ABI 1.4)
 *   memory, cpu, pids      not here: the core's cgroup around lxc-exec (rlimits as the
 *                          fallback); file size, open files: the agent's LIMITS
 */
#include "translate.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CMD_MAX   6000 /* the command line */
#define AGENT_MAX 1000 /* the agent's path in it */

static const char *const linux_denied[] = {MXC_LINUX_DENIED};

struct builder {
    bool failed;
};

static struct json_object *checked(struct builder *b, struct json_object *o)
{
    if (!o)
        b->failed = true;
    return o;
}

static void put(struct builder *b, struct json_object *obj, const char *key, struct json_object *v)
{
    if (!v || !obj || json_object_object_add(obj, key, v) < 0) {
        json_object_put(v);
        b->failed = true;
    }
}

static void push(struct builder *b, struct json_object *arr, const char *s)
{
    struct json_object *v = json_object_new_string(s);

    if (!v || !arr || json_object_array_add(arr, v) < 0) {
        json_object_put(v);
        b->failed = true;
    }
}

/* "X:\..." on Windows, "/..." on Linux. */
static bool path_ok(enum mxc_target t, const char *p)
{
    if (!p)
        return false;
    if (t == MXC_TARGET_WINDOWS)
        return isalpha((unsigned char)p[0]) && p[1] == ':' && p[2] == '\\' && !strchr(p, '"');
    return p[0] == '/';
}

static int fail(struct sbx_err *err, int rc, const char *field, const char *what, const char *arg)
{
    err->rc = rc;
    snprintf(err->field, sizeof(err->field), "%s", field);
    snprintf(err->msg, sizeof(err->msg), "%s%s%.200s%s%s", what, arg ? " '" : "", arg ? arg : "",
            arg ? "'" : "",
            rc == SBX_E_UNSUPPORTED ? " is not offered by MXC here; use network 'off'" : "");
    return rc;
}

/* Append text to the command line; false when it does not fit. */
static bool cat(char *out, size_t len, size_t *o, const char *text)
{
    size_t n = strlen(text);

    if (*o + n >= len)
        return false;
    memcpy(out + *o, text, n + 1);
    *o += n;
    return true;
}

/* Linux: sh -c "<prepare the box> && exec '<agent>'", each ' of the path
 * written as '\''. Windows: the quoted path, as CreateProcess reads it. */
static bool command_line(const struct mxc_input *in, char *out, size_t len)
{
    char ids[560], closing[32] = "";
    size_t o = 0;

    if (in->target == MXC_TARGET_WINDOWS)
        return (size_t)snprintf(out, len, "\"%s\"", in->agent) < len;
    if (in->config_fd > 2)
        snprintf(closing, sizeof(closing), "exec %d<&- && ", in->config_fd);
    snprintf(ids, sizeof(ids),
            "%sumask 022 && mkdir " MXC_LINUX_WORKSPACE " && printf %%s '"
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            "sandbox:x:%u:%u:sandbox:/tmp:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            "' >/etc/passwd && printf %%s 'root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n' "
            ">/etc/group && printf %%s '" JAIL_HOSTS "' >/etc/hosts && cd " MXC_LINUX_WORKSPACE
            " && exec '",
            closing, (unsigned)in->uid, (unsigned)in->gid, (unsigned)in->gid);
    if (!cat(out, len, &o, ids))
        return false;
    for (const char *c = in->agent; *c; c++) {
        char one[2] = {*c, '\0'};

        if (!cat(out, len, &o, *c == '\'' ? "'\\''" : one))
            return false;
    }
    return cat(out, len, &o, "'");
}

static struct json_object *process(struct builder *b, const struct mxc_input *in)
{
    const struct sbx_policy *p = in->policy;
    uint64_t timeout = p->wall_time_ms + MXC_TIMEOUT_SLACK_MS;
    struct json_object *o = checked(b, json_object_new_object());
    struct json_object *env = checked(b, json_object_new_array());
    char cmd[CMD_MAX];

    if (timeout > UINT32_MAX) /* the contract's u32 */
        timeout = UINT32_MAX;
    if (!command_line(in, cmd, sizeof(cmd)))
        b->failed = true;
    put(b, o, "commandLine", json_object_new_string(cmd));
    put(b, o, "cwd", json_object_new_string(in->workspace ? in->workspace : "/"));
    for (const char *const *e = in->envp; e && *e; e++)
        push(b, env, *e);
    put(b, o, "env", env);
    put(b, o, "timeout", json_object_new_int64((int64_t)timeout));
    return o;
}

static struct json_object *filesystem(struct builder *b, const struct mxc_input *in)
{
    struct json_object *o = checked(b, json_object_new_object());
    struct json_object *ro = checked(b, json_object_new_array());
    struct json_object *rw = checked(b, json_object_new_array());
    struct json_object *denied = checked(b, json_object_new_array());

    push(b, ro, in->agent);
    for (const char *const *r = in->ro; r && *r; r++)
        push(b, ro, *r);
    if (in->target == MXC_TARGET_LINUX)
        for (size_t i = 0; i < sizeof(linux_denied) / sizeof(linux_denied[0]); i++)
            push(b, denied, linux_denied[i]);
    for (const char *const *d = in->denied; d && *d; d++)
        push(b, denied, *d);
    put(b, o, "readonlyPaths", ro);
    if (in->workspace) {
        push(b, rw, in->workspace);
        put(b, o, "readwritePaths", rw);
    } else {
        json_object_put(rw);
    }
    put(b, o, "deniedPaths", denied);
    return o;
}

static struct json_object *network_off(struct builder *b)
{
    struct json_object *o = checked(b, json_object_new_object());
    struct json_object *egress = checked(b, json_object_new_object());
    struct json_object *ingress = checked(b, json_object_new_object());

    put(b, egress, "default", json_object_new_string("deny"));
    put(b, ingress, "default", json_object_new_string("deny"));
    put(b, ingress, "hostLoopback", json_object_new_string("deny"));
    put(b, o, "egress", egress);
    put(b, o, "ingress", ingress);
    return o;
}

static int check_input(const struct mxc_input *in, struct sbx_err *err)
{
    static const char *const nets[] = {"off", "registries", "allowlist", "on", "host"};
    const char *const *lists[] = {in->ro, in->denied};
    uint32_t net = in->policy->network;

    if (!path_ok(in->target, in->agent) || strlen(in->agent) > AGENT_MAX)
        return fail(err, SBX_E_INVALID, "", "mxc translation: unusable agent path", in->agent);
    /* Windows has no shell to make one in the box: it binds a host directory */
    if ((in->target == MXC_TARGET_WINDOWS) != (in->workspace != NULL) ||
            (in->workspace && !path_ok(in->target, in->workspace)))
        return fail(err, SBX_E_INVALID, "", "mxc translation: workspace not usable here",
                in->workspace);
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        for (const char *const *pp = lists[i]; pp && *pp; pp++)
            if (!path_ok(in->target, *pp))
                return fail(err, SBX_E_INVALID, "", "mxc translation: path not absolute", *pp);
    if (net != SBX_NET_OFF)
        return fail(err, SBX_E_UNSUPPORTED, "network", "network",
                net < sizeof(nets) / sizeof(nets[0]) ? nets[net] : "?");
    return 0;
}

struct json_object *mxc_translate(const struct mxc_input *in, struct sbx_err *err)
{
    struct builder b = {.failed = false};
    struct json_object *root, *telemetry;

    if (check_input(in, err) < 0)
        return NULL;
    root = checked(&b, json_object_new_object());
    put(&b, root, "version", json_object_new_string(MXC_CONTRACT_VERSION));
    put(&b, root, "containment", json_object_new_string("process"));
    put(&b, root, "process", process(&b, in));
    put(&b, root, "filesystem", filesystem(&b, in));
    put(&b, root, "network", network_off(&b));
    telemetry = checked(&b, json_object_new_object());
    put(&b, telemetry, "enabled", json_object_new_boolean(0));
    put(&b, root, "telemetry", telemetry);
    if (b.failed) {
        json_object_put(root);
        fail(err, SBX_E_NOMEM, "", "mxc translation: out of memory", NULL);
        return NULL;
    }
    return root;
}
