# SPDX-License-Identifier: MIT
"""The Kubernetes cluster of the kubernetes backend's integration tests.

scripts/k8s-cluster.sh starts a real single-node cluster on this machine (a
cache keeps the built binaries; a warm start takes 10-20 s): the session
brings it up and takes it down at its end, unless it was up already when
the session started (a caller running several suites keeps one cluster).
SBX_K8S_NO_NETPOL=1 starts it without its NetworkPolicy enforcer, for the
suite that checks that `network: off` is then refused.

Leftovers are looked for with the API (tests/k8s/kube.py): every pod and
NetworkPolicy in the namespace with the plugin's label is one, since the
plugin deletes its pods (grace 0) when a run ends and its policy when the
server or CLI exits.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "k8s"))

import kube  # noqa: E402  (tests/k8s)

STATE = os.environ.get("LLM_SANDBOX_K8S_STATE", "/var/lib/llm-sandbox-k8s")
NAMESPACE = "default"
MANAGED = "app.kubernetes.io/managed-by=llm-sandbox"
IMAGE_LANGS = ("python", "javascript", "ruby")
NO_NETPOL = os.environ.get("SBX_K8S_NO_NETPOL") == "1"

# The contract suite's share of the Kubernetes suites' CI budget (5 minutes
# warm for all four): a pod starts in 1-3 s on the 2-core test machine, so
# the whole suite (about 140 runs, 14 minutes) does not fit. These cover
# each area once (outcomes, identity and files, limits, network, the other
# image languages, sessions, the refusal of libraries); test_kubernetes.py
# always runs whole. SBX_K8S_FULL=1 runs every contract test.
CI_TESTS = {
    "test_outcomes.py": ["test_hello_42", "test_json_contract_every_status",
                         "test_concurrent_runs_all_succeed",
                         "test_stdin_file_large_is_delivered_whole"],
    "test_isolation.py": ["test_identity_inside", "test_etc_is_minimal_and_generated",
                          "test_only_own_processes_visible",
                          "test_workspace_writable_system_read_only",
                          "test_seccomp_blocks_dangerous_calls"],
    "test_limits.py": ["test_limits_seen_from_outside", "test_pids_limit",
                       "test_no_process_survives_the_return", "test_file_size_limit",
                       "test_output_flood_is_truncated_and_counted"],
    "test_network.py": ["test_network_off_by_default"],
    "test_languages.py": ["test_hello_stdin_unicode[javascript]", "test_hello_stdin_unicode[ruby]"],
    "test_installs.py": ["test_backend_without_installs_refuses_libraries"],
    "test_sessions.py": ["test_variables_persist_and_nothing_is_replayed[python]"],
    "test_kubernetes.py": None,  # all of it
}
FULL = os.environ.get("SBX_K8S_FULL") == "1"


def in_ci_budget(module, name):
    """Is the test `name` (with its parameters) of `module` one the CI runs?"""
    if module not in CI_TESTS:
        return False
    chosen = CI_TESTS[module]
    return chosen is None or name in chosen or name.split("[")[0] in chosen


KUBECONFIG = None
IMAGE = None
_started = False
_api = None


def _script(source_dir):
    return os.path.join(source_dir, "scripts", "k8s-cluster.sh")


def _netpol_now():
    try:
        with open(os.path.join(STATE, "netpol")) as f:
            return f.read().strip()
    except OSError:
        return None


def start(source_dir):
    """Bring the cluster up (with or without its NetworkPolicy enforcer, as
    SBX_K8S_NO_NETPOL says); remember whether we did."""
    global KUBECONFIG, IMAGE, _started, _api
    want = "0" if NO_NETPOL else "1"
    status = subprocess.run([_script(source_dir), "status"], capture_output=True)
    _started = not (status.returncode == 0 and _netpol_now() == want)
    argv = [_script(source_dir), "up"] + (["--no-netpol"] if NO_NETPOL else [])
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("scripts/k8s-cluster.sh up failed:\n%s" % r.stderr[-3000:])
    KUBECONFIG = r.stdout.strip().splitlines()[-1]
    with open(os.path.join(STATE, "test-image")) as f:
        IMAGE = f.read().strip()
    _api = kube.Cluster(KUBECONFIG)
    remove_all()


def stop(source_dir):
    if _started:
        subprocess.run([_script(source_dir), "down"], capture_output=True)


def api():
    return _api


def client_env():
    """What a CLI run needs to find the cluster and the test image."""
    env = {"SANDBOX_IMAGE_%s" % l.upper(): IMAGE for l in IMAGE_LANGS}
    env["KUBECONFIG"] = KUBECONFIG
    if NO_NETPOL:  # nothing enforces: a pod's check need not wait 10 s to say so
        env["LLM_SANDBOX_KUBERNETES_NETPOL_TIMEOUT_MS"] = "3000"
    return env


def ours(kind):
    """[(name, phase)] of our objects of kind (pods, networkpolicies)."""
    base = "/api/v1" if kind == "pods" else "/apis/networking.k8s.io/v1"
    items = _api.get("%s/namespaces/%s/%s?labelSelector=%s"
                     % (base, NAMESPACE, kind, MANAGED.replace("=", "%3D")))["items"]
    return [(i["metadata"]["name"], i.get("status", {}).get("phase")) for i in items]


def leftover():
    """Every pod and NetworkPolicy of ours, as 'kind/name (phase)'."""
    return ["pod/%s (%s)" % p for p in ours("pods")] + \
        ["networkpolicy/%s" % n for n, _ in ours("networkpolicies")]


def remove_all():
    for name, _ in ours("pods"):
        _api.delete("/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name), grace=0)
    for name, _ in ours("networkpolicies"):
        _api.delete("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/%s"
                    % (NAMESPACE, name))


def daemon_pid(name):
    """The pid of one of the cluster's daemons (kube-apiserver, kubelet, ...)."""
    with open(os.path.join(STATE, "run", name + ".pid")) as f:
        return int(f.read().strip())
