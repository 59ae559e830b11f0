/* SPDX-License-Identifier: MIT */
/*
 * translate.c: the one policy -> a Pod (core/v1) and the deny-all
 * NetworkPolicy (networking.k8s.io/v1), as JSON. Pure: no I/O;
 * golden-tested (tests/golden/k8s/).
 *
 * Mapping (policy field -> JSON path):
 *   identity           spec.securityContext runAsNonRoot, runAsUser/runAsGroup (a
 *                      fixed uid, never 0), seccompProfile RuntimeDefault; the
 *                      container's allowPrivilegeEscalation false, capabilities
 *                      drop [ALL], privileged false
 *   seccomp            not here: the pod gets the runtime's default profile, and
 *                      the agent installs the core's policy in every program
 *                      (ABI 1.4's FILTER): a run never gets less than our filter
 *   read_only_system   containers[0].securityContext.readOnlyRootFilesystem
 *   tmpfs_bytes        emptyDir medium Memory, sizeLimit: /workspace, /tmp, /dev/shm
 *                      (the workspace size, at most 3/4 of memory: plugin.h says why)
 *   memory_bytes       resources.limits.memory (RAM; pods get no swap);
 *                      requests.memory = request_percent of it
 *   cpu_millicores     resources.limits.cpu "<n>m" (0: none); requests likewise
 *   pids_max           not here: no pod field; RLIMIT_NPROC from the agent (a fallback)
 *   wall_time          not here: the core's deadline, then the pod is deleted;
 *                      spec.activeDeadlineSeconds is the backstop (life_s)
 *   network off        a deny-all NetworkPolicy (ingress and egress) selects the
 *                      owner's pods labelled network=off; a pod gets the label only
 *                      after its check reached the node, then waits until the
 *                      node is refused (boot script below), before the agent is
 *                      even sent. Other modes are refused (SBX_E_UNSUPPORTED).
 *   namespaces         hostNetwork, hostPID, hostIPC false; shareProcessNamespace false
 *   environment        env: exactly the agent's (each program gets the core's env from
 *                      the agent's EXEC), plus SBX_NODE_IP for the check, unset before
 *                      the agent runs
 *   credentials        automountServiceAccountToken false, enableServiceLinks false
 *   identity files     /etc/passwd and /etc/group: the pod's annotations through a
 *                      downward-API volume (root, sandbox, nobody only)
 *   lifetime           the agent is pid 1 (the boot script execs it from /tmp/.sbx); stdin +
 *                      stdinOnce: stdin closes with our attach stream, so the agent
 *                      exits when the server goes; restartPolicy Never,
 *                      terminationGracePeriodSeconds 0
 *   ownership          labels K8S_LABEL_OWNER (instance id), K8S_LABEL_MANAGED
 */
#include "translate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "k8s.h"

#define ANN_PASSWD "llm-sandbox.org/passwd"
#define ANN_GROUP  "llm-sandbox.org/group"

/*
 * The container's command: receive the network check (when asked), run it
 * (it prints K8S_BOOT_REACH once the node answers, the host then labels
 * the pod, and K8S_BOOT_BLOCKED once the node is refused), then receive
 * the agent, check its SHA-256 and exec it as pid 1. Nothing is read
 * before the host sends it and nothing of the user's exists in the pod
 * until the agent runs. Both land beneath /tmp/.sbx, the pod's own tmpfs
 * (where the core stages a language's support files too; the root is
 * read-only). A host that never sends (it died before attaching) ends the
 * pod after BOOT_WAIT_S: stdin stays open until the first attach.
 * Needs sh, head, chmod, timeout and sha256sum (coreutils or busybox).
 * $1 check size, $2 agent size, $3 agent SHA-256, $4 port, $5 wait (ms).
 */
#define BOOT_WAIT_S "20"
static const char boot_script[] =
        "set -eu\n"
        "umask 077\n"
        "fail() { echo \"sbx-k8s: $*\"; exit 3; }\n"
        "mkdir -p /tmp/.sbx\n"
        "if [ \"$1\" -gt 0 ]; then\n"
        "  timeout " BOOT_WAIT_S " head -c \"$1\" >/tmp/.sbx/netcheck ||"
        " fail 'no network check arrived'\n"
        "  chmod 0500 /tmp/.sbx/netcheck\n"
        "  /tmp/.sbx/netcheck \"$SBX_NODE_IP\" \"$4\" \"$5\"\n"
        "  rm -f /tmp/.sbx/netcheck\n"
        "fi\n"
        "[ \"$2\" -gt 0 ] || exit 0\n"
        "timeout " BOOT_WAIT_S " head -c \"$2\" >/tmp/.sbx/agent || fail 'no agent arrived'\n"
        "echo \"$3  /tmp/.sbx/agent\" | sha256sum -c --status - ||"
        " fail 'the agent arrived damaged (SHA-256 differs)'\n"
        "chmod 0500 /tmp/.sbx/agent\n"
        "unset SBX_NODE_IP\n"
        "exec /tmp/.sbx/agent\n";

static void add_str(struct json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v));
}

static void add_bool(struct json_object *o, const char *k, bool v)
{
    json_object_object_add(o, k, json_object_new_boolean(v));
}

static struct json_object *labels(const struct k8s_pod_input *in)
{
    struct json_object *l = json_object_new_object();

    add_str(l, K8S_LABEL_MANAGED, K8S_MANAGER);
    add_str(l, K8S_LABEL_OWNER, in->owner);
    if (in->labelled_off)
        add_str(l, K8S_LABEL_NET, "off");
    return l;
}

static struct json_object *command(const struct k8s_pod_input *in)
{
    struct json_object *a = json_object_new_array();
    char n[4][32];

    snprintf(n[0], sizeof(n[0]), "%zu", in->netcheck_len);
    snprintf(n[1], sizeof(n[1]), "%zu", in->agent_len);
    snprintf(n[2], sizeof(n[2]), "%" PRId64, in->witness_port);
    snprintf(n[3], sizeof(n[3]), "%" PRId64, in->netpol_ms);
    const char *argv[] = {"/bin/sh", "-c", boot_script, "sbx-boot", n[0], n[1],
            in->agent_sha ? in->agent_sha : "-", n[2], n[3]};
    for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
        json_object_array_add(a, json_object_new_string(argv[i]));
    return a;
}

static struct json_object *env(const struct k8s_pod_input *in)
{
    struct json_object *a = json_object_new_array();

    for (const char *const *e = in->envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        struct json_object *v;

        if (!eq)
            continue;
        v = json_object_new_object();
        json_object_object_add(v, "name", json_object_new_string_len(*e, (int)(eq - *e)));
        add_str(v, "value", eq + 1);
        json_object_array_add(a, v);
    }
    if (in->netcheck_len) {
        struct json_object *v = json_object_new_object(), *from = json_object_new_object(),
                           *ref = json_object_new_object();

        add_str(v, "name", "SBX_NODE_IP");
        add_str(ref, "fieldPath", "status.hostIP");
        json_object_object_add(from, "fieldRef", ref);
        json_object_object_add(v, "valueFrom", from);
        json_object_array_add(a, v);
    }
    return a;
}

static void quantity(struct json_object *o, const char *k, uint64_t v, bool milli)
{
    char q[32];

    snprintf(q, sizeof(q), milli ? "%" PRIu64 "m" : "%" PRIu64, v ? v : 1);
    add_str(o, k, q);
}

static struct json_object *resources(const struct k8s_pod_input *in)
{
    const struct sbx_policy *p = in->policy;
    struct json_object *r = json_object_new_object(), *lim = json_object_new_object(),
                       *req = json_object_new_object();
    unsigned pct = in->request_percent ? in->request_percent : 100;

    quantity(lim, "memory", p->memory_bytes, false);
    quantity(req, "memory", p->memory_bytes / 100 * pct, false);
    if (p->cpu_millicores) {
        quantity(lim, "cpu", p->cpu_millicores, true);
        quantity(req, "cpu", p->cpu_millicores * pct / 100, true);
    }
    json_object_object_add(r, "limits", lim);
    json_object_object_add(r, "requests", req);
    return r;
}

static struct json_object *mount(const char *name, const char *path)
{
    struct json_object *m = json_object_new_object();

    add_str(m, "name", name);
    add_str(m, "mountPath", path);
    return m;
}

/* One file of a volume over a file of the image (read-only). */
static struct json_object *file_mount(const char *name, const char *path, const char *file)
{
    struct json_object *m = mount(name, path);

    add_str(m, "subPath", file);
    add_bool(m, "readOnly", true);
    return m;
}

/* /etc/passwd and /etc/group naming the sandbox uid "sandbox" (replacing the
 * image's, as the Docker backend does): the pod's own annotations, as files
 * of a downward-API volume (no ConfigMap to make, own or clean up). */
static struct json_object *ids_item(const char *file, const char *annotation)
{
    struct json_object *i = json_object_new_object(), *ref = json_object_new_object();
    char path[96];

    add_str(i, "path", file);
    snprintf(path, sizeof(path), "metadata.annotations['%s']", annotation);
    add_str(ref, "fieldPath", path);
    json_object_object_add(i, "fieldRef", ref);
    return i;
}

static struct json_object *ids_volume(void)
{
    struct json_object *v = json_object_new_object(), *d = json_object_new_object(),
                       *items = json_object_new_array();

    add_str(v, "name", "ids");
    json_object_array_add(items, ids_item("passwd", ANN_PASSWD));
    json_object_array_add(items, ids_item("group", ANN_GROUP));
    json_object_object_add(d, "items", items);
    json_object_object_add(d, "defaultMode", json_object_new_int(0444));
    json_object_object_add(v, "downwardAPI", d);
    return v;
}

static struct json_object *annotations(const struct k8s_pod_input *in)
{
    struct json_object *a = json_object_new_object();
    char passwd[256], group[160];

    snprintf(passwd, sizeof(passwd),
            "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%u:%u:sandbox:/tmp:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
            in->uid, in->gid);
    snprintf(group, sizeof(group), "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n", in->gid);
    add_str(a, ANN_PASSWD, passwd);
    add_str(a, ANN_GROUP, group);
    return a;
}

static struct json_object *tmpfs(const char *name, uint64_t bytes)
{
    struct json_object *v = json_object_new_object(), *e = json_object_new_object();

    add_str(v, "name", name);
    add_str(e, "medium", "Memory");
    quantity(e, "sizeLimit", bytes, false);
    json_object_object_add(v, "emptyDir", e);
    return v;
}

static uint64_t tmpfs_bytes(const struct sbx_policy *p)
{
    uint64_t t = p->workspace_bytes, cap = p->memory_bytes / 4 * 3;

    if (SBX_HAS_FIELD(struct sbx_policy, p, tmpfs_bytes) && p->tmpfs_bytes)
        return p->tmpfs_bytes;
    return cap && cap < t ? cap : t;
}

static struct json_object *container(const struct k8s_pod_input *in)
{
    struct json_object *c = json_object_new_object(), *sc = json_object_new_object(),
                       *caps = json_object_new_object(), *drop = json_object_new_array(),
                       *mounts = json_object_new_array();

    add_str(c, "name", K8S_CONTAINER);
    add_str(c, "image", in->image);
    add_str(c, "imagePullPolicy", in->pull_policy);
    json_object_object_add(c, "command", command(in));
    add_str(c, "workingDir", "/workspace");
    json_object_object_add(c, "env", env(in));
    add_bool(c, "stdin", true);
    add_bool(c, "stdinOnce", true);
    add_bool(c, "tty", false);
    json_object_object_add(c, "resources", resources(in));
    add_bool(sc, "allowPrivilegeEscalation", false);
    add_bool(sc, "privileged", false);
    add_bool(sc, "readOnlyRootFilesystem", in->policy->read_only_system != 0);
    add_bool(sc, "runAsNonRoot", true);
    json_object_array_add(drop, json_object_new_string("ALL"));
    json_object_object_add(caps, "drop", drop);
    json_object_object_add(sc, "capabilities", caps);
    json_object_object_add(c, "securityContext", sc);
    json_object_array_add(mounts, mount("workspace", "/workspace"));
    json_object_array_add(mounts, mount("tmp", "/tmp"));
    json_object_array_add(mounts, mount("shm", "/dev/shm"));
    json_object_array_add(mounts, file_mount("ids", "/etc/passwd", "passwd"));
    json_object_array_add(mounts, file_mount("ids", "/etc/group", "group"));
    json_object_object_add(c, "volumeMounts", mounts);
    add_str(c, "terminationMessagePolicy", "File");
    return c;
}

static struct json_object *pod_security(const struct k8s_pod_input *in)
{
    struct json_object *sc = json_object_new_object(), *prof = json_object_new_object();

    add_bool(sc, "runAsNonRoot", true);
    json_object_object_add(sc, "runAsUser", json_object_new_int64(in->uid));
    json_object_object_add(sc, "runAsGroup", json_object_new_int64(in->gid));
    add_str(prof, "type", "RuntimeDefault");
    json_object_object_add(sc, "seccompProfile", prof);
    return sc;
}

struct json_object *k8s_pod_json(const struct k8s_pod_input *in, struct sbx_err *err)
{
    const struct sbx_policy *p = in->policy;
    struct json_object *o, *meta, *spec, *cs, *vols;
    uint64_t t = tmpfs_bytes(p);

    if (p->network != SBX_NET_OFF) {
        k8s_fail(err, SBX_E_UNSUPPORTED, 0,
                "network mode %u is not offered on Kubernetes (only 'off', a deny-all "
                "NetworkPolicy)",
                p->network);
        snprintf(err->field, sizeof(err->field), "network");
        return NULL;
    }
    if (in->uid == 0) {
        k8s_fail(err, SBX_E_INVALID, 0, "pods never run as uid 0");
        return NULL;
    }
    o = json_object_new_object();
    add_str(o, "apiVersion", "v1");
    add_str(o, "kind", "Pod");
    meta = json_object_new_object();
    add_str(meta, "name", in->name);
    json_object_object_add(meta, "labels", labels(in));
    json_object_object_add(meta, "annotations", annotations(in));
    json_object_object_add(o, "metadata", meta);
    spec = json_object_new_object();
    add_str(spec, "restartPolicy", "Never");
    json_object_object_add(spec, "activeDeadlineSeconds", json_object_new_int64(in->life_s));
    json_object_object_add(spec, "terminationGracePeriodSeconds", json_object_new_int(0));
    add_bool(spec, "automountServiceAccountToken", false);
    add_bool(spec, "enableServiceLinks", false);
    add_bool(spec, "hostNetwork", false);
    add_bool(spec, "hostPID", false);
    add_bool(spec, "hostIPC", false);
    add_bool(spec, "shareProcessNamespace", false);
    add_str(spec, "hostname", "sandbox");
    json_object_object_add(spec, "securityContext", pod_security(in));
    cs = json_object_new_array();
    json_object_array_add(cs, container(in));
    json_object_object_add(spec, "containers", cs);
    vols = json_object_new_array();
    json_object_array_add(vols, tmpfs("workspace", t));
    json_object_array_add(vols, tmpfs("tmp", t));
    json_object_array_add(vols, tmpfs("shm", t));
    json_object_array_add(vols, ids_volume());
    json_object_object_add(spec, "volumes", vols);
    json_object_object_add(o, "spec", spec);
    return o;
}

struct json_object *k8s_netpol_json(const char *name, const char *owner)
{
    struct json_object *o = json_object_new_object(), *meta = json_object_new_object(),
                       *l = json_object_new_object(), *spec = json_object_new_object(),
                       *sel = json_object_new_object(), *match = json_object_new_object(),
                       *types = json_object_new_array();

    add_str(o, "apiVersion", "networking.k8s.io/v1");
    add_str(o, "kind", "NetworkPolicy");
    add_str(meta, "name", name);
    add_str(l, K8S_LABEL_MANAGED, K8S_MANAGER);
    add_str(l, K8S_LABEL_OWNER, owner);
    json_object_object_add(meta, "labels", l);
    json_object_object_add(o, "metadata", meta);
    add_str(match, K8S_LABEL_OWNER, owner);
    add_str(match, K8S_LABEL_NET, "off");
    json_object_object_add(sel, "matchLabels", match);
    json_object_object_add(spec, "podSelector", sel);
    /* both types and no rule: nothing in, nothing out */
    json_object_array_add(types, json_object_new_string("Ingress"));
    json_object_array_add(types, json_object_new_string("Egress"));
    json_object_object_add(spec, "policyTypes", types);
    json_object_object_add(o, "spec", spec);
    return o;
}

struct json_object *k8s_label_off_json(void)
{
    struct json_object *o = json_object_new_object(), *meta = json_object_new_object(),
                       *l = json_object_new_object();

    add_str(l, K8S_LABEL_NET, "off");
    json_object_object_add(meta, "labels", l);
    json_object_object_add(o, "metadata", meta);
    return o;
}
