/* SPDX-License-Identifier: MIT */
/*
 * probe.c: the plugin's state (settings; the cluster from kubeconfig.c,
 * loaded at the first probe), the probe and the start-up sweep. The probe
 * reaches the API server (a list of our pods: the address, the
 * credentials and the permission at once), makes this instance's deny-all
 * NetworkPolicy, sweeps what dead owners left, and finds out whether the
 * cluster enforces NetworkPolicy: a pod of the probe image checks that it
 * reaches its node, is put under the deny-all, and must then be refused
 * (boot.c, the same steps every box takes). Without that proof `network:
 * off` is refused, naming the reason, unless the operator accepted an
 * unproven policy (a fallback: every result says so in its warnings).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

#define DEFAULT_IMAGE  "python:3.11-slim" /* langs/python/python.yaml's */
#define PROBE_MEMORY   (64u << 20)
#define PROBE_WALL_MS  60000
#define SETTING_ACCEPT "LLM_SANDBOX_KUBERNETES_ALLOW_UNENFORCED_NETWORK"

static void cap(struct sbx_caps *c, enum sbx_control ctl, enum sbx_enforce lvl, const char *note)
{
    c->level[ctl] = (uint8_t)lvl;
    snprintf(c->note[ctl], sizeof(c->note[ctl]), "%.119s", note);
}

static int64_t setting_i64(
        struct k8s_state *st, const char *key, int64_t dflt, int64_t lo, int64_t hi)
{
    const char *v = st->h->setting(st->h, key);
    char *end = NULL;
    long long n;

    if (!v || !*v)
        return dflt;
    errno = 0;
    n = strtoll(v, &end, 10);
    if (errno || !end || *end || n < lo || n > hi) {
        st->h->log(st->h, SBX_LOG_WARN, "setting %s='%s' is not a number in %lld..%lld; using %lld",
                key, v, (long long)lo, (long long)hi, (long long)dflt);
        return dflt;
    }
    return n;
}

static bool dns_label(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && n <= 63 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n &&
           s[0] != '-' && s[n - 1] != '-';
}

int k8s_init(const struct sbx_host *h, const char *name, void **ret_state, struct sbx_err *err)
{
    struct k8s_state *st = calloc(1, sizeof(*st));
    const char *v;

    (void)name;
    if (!st)
        return k8s_fail(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    st->h = h;
    pthread_mutex_init(&st->lock, NULL);
    snprintf(st->owner, sizeof(st->owner), "%s", h->instance_id(h));
    snprintf(st->policy, sizeof(st->policy), "llm-sandbox-%s", st->owner);
    h->sandbox_ids(h, &st->uid, &st->gid);
    if (st->uid == 0) /* never root in a pod */
        st->uid = st->gid = 65532;
    v = h->setting(h, "pull_policy");
    snprintf(st->pull_policy, sizeof(st->pull_policy), "%s", v && *v ? v : "IfNotPresent");
    st->request_percent = (unsigned)setting_i64(st, "request_percent", 10, 1, 100);
    st->witness_port = setting_i64(st, "witness_port", 10250, 1, 65535);
    st->netpol_ms = setting_i64(st, "netpol_timeout_ms", 10000, 100, 600000);
    st->start_ms = setting_i64(st, "start_timeout_ms", 60000, 1000, 3600000);
    st->proof_ttl_s = setting_i64(st, "proof_ttl_s", 300, 0, 86400);
    v = h->setting(h, "probe_image");
    if (!v || !*v)
        v = h->setting(h, "image_python");
    snprintf(st->probe_image, sizeof(st->probe_image), "%s", v && *v ? v : DEFAULT_IMAGE);
    *ret_state = st;
    return 0;
}

static int load_cluster(struct k8s_state *st, struct sbx_err *err)
{
    const struct sbx_host *h = st->h;
    const char *ns;
    struct k8s_config_opts o = {.kubeconfig = h->setting(h, "kubeconfig"),
            .home_kubeconfig = h->setting(h, "home_kubeconfig"),
            .context = h->setting(h, "context"),
            .service_host = h->setting(h, "service_host"),
            .service_port = h->setting(h, "service_port"),
            .sa_dir = h->setting(h, "service_account_dir"),
            .ignore_insecure = k8s_setting_true(st, "ignore_insecure", false)};
    int r;

    if (st->cl.endpoint)
        return 0;
    if (!o.sa_dir)
        o.sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
    r = k8s_config_load(&o, &st->cl, err);
    if (r < 0)
        return r;
    ns = h->setting(h, "namespace");
    if (!ns || !*ns)
        ns = st->cl.ns && *st->cl.ns ? st->cl.ns : "default";
    if (!dns_label(ns))
        return k8s_fail(err, SBX_E_INVALID, 0, "namespace '%s' is not a valid name", ns);
    snprintf(st->ns, sizeof(st->ns), "%s", ns);
    return 0;
}

void k8s_fini(void *state)
{
    struct k8s_state *st = state;
    struct sbx_err err = {.size = sizeof(err)};
    int64_t deadline = k8s_now_ms() + 2 * K8S_DELETE_MS;

    k8s_retry_flush(st, deadline - K8S_DELETE_MS);
    if (st->ns[0] &&
            k8s_delete(st, "networkpolicies", st->policy, deadline - k8s_now_ms(), &err) < 0)
        st->h->log(st->h, SBX_LOG_WARN,
                "NetworkPolicy %s is left (%s); the next start-up's sweep removes it", st->policy,
                err.msg);
    st->h->log(st->h, SBX_LOG_DEBUG, "unloaded in %lld ms",
            (long long)(k8s_now_ms() - deadline + 2 * K8S_DELETE_MS));
    k8s_cluster_done(&st->cl);
    free(st->agent);
    free(st->netcheck);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

/* Our objects of kind (pods, networkpolicies) in the namespace. */
static struct json_object *list_ours(struct k8s_state *st, const char *api, const char *kind)
{
    struct sbx_err err = {.size = sizeof(err)};
    struct json_object *j = NULL, *items = NULL;
    char path[400];

    snprintf(path, sizeof(path),
            "%s/namespaces/%s/%s?labelSelector=" K8S_LABEL_MANAGED "%%3D" K8S_MANAGER, api, st->ns,
            kind);
    struct k8s_call c = {.method = "GET", .path = path, .cancel_fd = -1};
    if (k8s_api(st, &c, NULL, &j, &err) == 0 && json_object_object_get_ex(j, "items", &items))
        json_object_get(items);
    json_object_put(j);
    return items;
}

/* (obj's name, its owner label, its phase) */
static void meta_of(
        struct json_object *o, const char **name, const char **owner, const char **phase)
{
    struct json_object *m, *l, *v, *s;

    *name = *owner = *phase = NULL;
    if (json_object_object_get_ex(o, "metadata", &m)) {
        if (json_object_object_get_ex(m, "name", &v))
            *name = json_object_get_string(v);
        if (json_object_object_get_ex(m, "labels", &l) &&
                json_object_object_get_ex(l, K8S_LABEL_OWNER, &v))
            *owner = json_object_get_string(v);
    }
    if (json_object_object_get_ex(o, "status", &s) && json_object_object_get_ex(s, "phase", &v))
        *phase = json_object_get_string(v);
}

void k8s_sweep(struct k8s_state *st)
{
    struct json_object *pods = list_ours(st, "/api/v1", "pods"),
                       *pols = list_ours(st, "/apis/networking.k8s.io/v1", "networkpolicies");
    struct sbx_err err = {.size = sizeof(err)};

    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        const char *name, *owner, *phase;
        bool ended;

        meta_of(json_object_array_get_idx(pods, i), &name, &owner, &phase);
        ended = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
        if (!name || !owner || strcmp(owner, st->owner) == 0 ||
                !(st->h->instance_dead(st->h, owner) == 1 || ended))
            continue;
        st->h->log(st->h, SBX_LOG_INFO, "deleting pod %s of %s instance %s", name,
                ended ? "an ended run of" : "dead", owner);
        k8s_delete_pod(st, name, K8S_DELETE_MS, &err);
    }
    for (size_t i = 0; pols && i < json_object_array_length(pols); i++) {
        const char *name, *owner, *phase;

        meta_of(json_object_array_get_idx(pols, i), &name, &owner, &phase);
        if (name && owner && st->h->instance_dead(st->h, owner) == 1)
            k8s_delete(st, "networkpolicies", name, K8S_DELETE_MS, &err);
    }
    json_object_put(pods);
    json_object_put(pols);
}

enum net_finding { NET_PROVEN, NET_NOT_ENFORCED, NET_NO_WITNESS, NET_PROBE_FAILED };

/* Is NetworkPolicy enforced here? The probe pod's own words go to the
 * log (why); the finding decides the note. */
static enum net_finding prove_netpol(struct k8s_state *st, char *why, size_t len)
{
    struct sbx_policy p = {.size = sizeof(p),
            .network = SBX_NET_OFF,
            .wall_time_ms = PROBE_WALL_MS,
            .memory_bytes = PROBE_MEMORY,
            .cpu_millicores = 500,
            .workspace_bytes = 1u << 20,
            .tmpfs_bytes = 1u << 20,
            .read_only_system = 1};
    struct sbx_err err = {.size = sizeof(err)};
    struct k8s_pod_input in;
    char name[96];
    struct k8s_box *b;
    int r;

    snprintf(name, sizeof(name), "%s-netpol-probe", st->owner);
    b = k8s_box_new(st, name, -1);
    if (!b) {
        snprintf(why, len, "out of memory");
        return NET_PROBE_FAILED;
    }
    k8s_pod_input_init(st, &in, &p, b->name, st->probe_image);
    in.labelled_off = false;
    in.netcheck_len = st->netcheck_len;
    in.agent_len = 0;
    r = k8s_pod_start(b, &in, k8s_now_ms() + st->start_ms, &err);
    if (r == 0)
        r = k8s_pod_prove(b, k8s_now_ms() + st->netpol_ms + 15000, &err);
    k8s_box_free(b);
    snprintf(why, len, "%s", r == 0 ? "proven" : err.msg);
    if (r == 0)
        return NET_PROVEN;
    if (r == SBX_E_UNSUPPORTED && strstr(err.msg, "not enforced"))
        return NET_NOT_ENFORCED;
    if (r == SBX_E_UNSUPPORTED && strstr(err.msg, "cannot prove"))
        return NET_NO_WITNESS;
    return NET_PROBE_FAILED;
}

/* The note says the finding in its 120 bytes; the log has the details. */
static void net_caps(
        struct k8s_state *st, struct sbx_caps *caps, enum net_finding f, const char *why)
{
    static const char *const notes[] = {
            [NET_PROVEN] = "deny-all NetworkPolicy, proven by the probe and in every pod before "
                           "its agent starts",
            [NET_NOT_ENFORCED] = "NetworkPolicy is not enforced: a pod under a deny-all still "
                                 "reached its node",
            [NET_NO_WITNESS] = "cannot prove NetworkPolicy: a pod gets no answer from its node "
                               "even unselected (witness_port)",
            [NET_PROBE_FAILED] = "cannot prove NetworkPolicy: the probe's pod failed (see the log)",
    };
    char note[160];

    st->prove = f == NET_PROVEN;
    st->accepted = !st->prove && k8s_setting_true(st, "allow_unenforced_network", false);
    if (st->accepted)
        snprintf(
                note, sizeof(note), "deny-all NetworkPolicy, NOT proven (%s=true)", SETTING_ACCEPT);
    else
        snprintf(note, sizeof(note), "%s%s", notes[f], st->prove ? "" : "; see ALLOW_UNENFORCED");
    cap(caps, SBX_CTL_NET_OFF,
            st->prove      ? SBX_ENF_FULL
            : st->accepted ? SBX_ENF_FALLBACK
                           : SBX_ENF_NONE,
            note);
    st->h->log(st->h, st->prove ? SBX_LOG_INFO : SBX_LOG_WARN, "network off: %s (%s)", note, why);
}

static void fill_caps(struct k8s_state *st, struct sbx_caps *caps)
{
    char note[120];

    cap(caps, SBX_CTL_WALL_TIME, SBX_ENF_FULL,
            "core deadline; the stream closes (the agent kills all) and the pod is deleted");
    cap(caps, SBX_CTL_MEMORY, SBX_ENF_FULL, "resources.limits.memory (the pod's cgroup)");
    cap(caps, SBX_CTL_CPU, SBX_ENF_FULL, "resources.limits.cpu (CFS quota)");
    cap(caps, SBX_CTL_PIDS, SBX_ENF_FALLBACK,
            "RLIMIT_NPROC set by the agent (per uid on the node): a pod has no pids limit field");
    cap(caps, SBX_CTL_OUTPUT, SBX_ENF_FULL, "capped by the core while streaming");
    cap(caps, SBX_CTL_FILE_SIZE, SBX_ENF_FULL, "RLIMIT_FSIZE set by the agent");
    cap(caps, SBX_CTL_WORKSPACE, SBX_ENF_FULL,
            "memory-backed emptyDir /workspace, /tmp, /dev/shm with sizeLimit");
    cap(caps, SBX_CTL_NET_REGISTRIES, SBX_ENF_NONE,
            "libraries are not installed on Kubernetes: the core's proxy and dependency sets "
            "cannot reach a pod");
    cap(caps, SBX_CTL_NET_ALLOWLIST, SBX_ENF_NONE, "the core's filtering proxy cannot reach a pod");
    cap(caps, SBX_CTL_NET_ON, SBX_ENF_NONE,
            "a pod's own network reaches the cluster's services: not offered");
    cap(caps, SBX_CTL_NET_HOST, SBX_ENF_NONE, "hostNetwork is never used");
    cap(caps, SBX_CTL_READ_ONLY_SYSTEM, SBX_ENF_FULL, "readOnlyRootFilesystem");
    cap(caps, SBX_CTL_ENV, SBX_ENF_FULL, "each program gets exactly the core's environment");
    cap(caps, SBX_CTL_SECCOMP, SBX_ENF_NONE,
            "the pod has RuntimeDefault; the core's policy needs the agent");
    cap(caps, SBX_CTL_NO_NEW_PRIVS, SBX_ENF_FULL,
            "allowPrivilegeEscalation false, capabilities drop ALL");
    snprintf(note, sizeof(note), "runAsNonRoot, uid %u", st->uid);
    cap(caps, SBX_CTL_UNPRIVILEGED, SBX_ENF_FULL, note);
    cap(caps, SBX_CTL_HOST_MOUNTS, SBX_ENF_NONE,
            "a pod cannot mount the core's directories (no dependency sets)");
}

int k8s_probe(void *state, struct sbx_caps *caps, struct sbx_err *err)
{
    struct k8s_state *st = state;
    struct json_object *pol;
    char path[300], why[256] = "";
    enum net_finding found = NET_PROBE_FAILED;
    int r;

    if (load_cluster(st, err) < 0 || k8s_binaries(st, err) < 0)
        return err->rc;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?limit=1", st->ns);
    struct k8s_call ping = {.method = "GET", .path = path, .timeout_ms = 15000, .cancel_fd = -1};
    r = k8s_api(st, &ping, NULL, NULL, err);
    if (r < 0) {
        char detail[sizeof(err->msg)];

        snprintf(detail, sizeof(detail), "%s", err->msg);
        return k8s_fail(err, SBX_E_UNAVAILABLE, err->sys_errno,
                "no Kubernetes API server answers at %s (%s): %.150s", st->cl.endpoint,
                st->cl.source ? st->cl.source : "?", detail);
    }
    k8s_sweep(st);
    snprintf(
            path, sizeof(path), "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies", st->ns);
    pol = k8s_netpol_json(st->policy, st->owner);
    struct k8s_call mk = {
            .method = "POST", .path = path, .body = pol, .cancel_fd = -1, .exists_ok = true};
    struct sbx_err perr = {.size = sizeof(perr)};
    if (k8s_api(st, &mk, NULL, NULL, &perr) < 0)
        snprintf(why, sizeof(why), "cannot make the deny-all NetworkPolicy: %.200s", perr.msg);
    else if (k8s_proof_fresh(st))
        found = NET_PROVEN, snprintf(why, sizeof(why), "remembered");
    else if ((found = prove_netpol(st, why, sizeof(why))) == NET_PROVEN)
        k8s_proof_keep(st);
    json_object_put(pol);
    fill_caps(st, caps);
    net_caps(st, caps, found, why);
    return 0;
}
