# SPDX-License-Identifier: MIT
"""Smoke test of the real test cluster that scripts/k8s-cluster.sh starts:
a pod from the project's test image runs non-root with every capability
dropped, a command runs in it over a raw v5.channel.k8s.io WebSocket exec
(Python's standard library only, tests/k8s/kube.py), and the NetworkPolicy
firewall really blocks a pod that a deny-all policy selects.

Run it (as root, the cluster is the machine's):

    KUBECONFIG=$(scripts/k8s-cluster.sh up | tail -n 1) \\
        /usr/bin/python3 -m pytest -v tests/k8s/test_cluster.py
    scripts/k8s-cluster.sh down

Without KUBECONFIG in the environment every test is skipped. The test image's
name is read from LLM_SANDBOX_K8S_IMAGE or, by default, from the file
`test-image` that `up` writes next to the kubeconfig; the NetworkPolicy test
is skipped when the file `netpol` there says the cluster was started with
`up --no-netpol`. Each run works in its own namespace and deletes it.
"""
import os
import socket
import threading
import time
import uuid

import pytest

import kube

KUBECONFIG = os.environ.get("KUBECONFIG", "")
if not KUBECONFIG:
    pytest.skip("KUBECONFIG is not set: start the cluster with scripts/k8s-cluster.sh up "
                "and set KUBECONFIG to the path it prints last", allow_module_level=True)
if not os.path.isfile(KUBECONFIG):
    pytest.skip("KUBECONFIG=%s does not exist (is the cluster up?)" % KUBECONFIG,
                allow_module_level=True)
STATE = os.path.dirname(os.path.abspath(KUBECONFIG))

# A listener every pod runs as its main process: answers "pong" on 8080.
LISTENER = """
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080))
s.listen(16)
while True:
    c, _ = s.accept()
    c.sendall(b"pong")
    c.close()
"""
# Run in a pod: connect to argv[1]:argv[2] with a short timeout and say how it went.
CONNECT = """
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
    print("connected", c.recv(16).decode())
except OSError as e:
    print("blocked", type(e).__name__, e)
"""


def _read_state(name):
    try:
        with open(os.path.join(STATE, name)) as f:
            return f.read().strip()
    except OSError:
        return None


@pytest.fixture(scope="module")
def api():
    return kube.Cluster(KUBECONFIG)


@pytest.fixture(scope="module")
def image():
    name = os.environ.get("LLM_SANDBOX_K8S_IMAGE") or _read_state("test-image")
    if not name:
        pytest.skip("no test image: set LLM_SANDBOX_K8S_IMAGE or use the cluster "
                    "scripts/k8s-cluster.sh starts")
    return name


@pytest.fixture()
def ns(api):
    """A namespace of this test's own, deleted with everything in it."""
    name = "llmsbk8s-test-" + uuid.uuid4().hex[:8]
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": name}})
    # the namespace's default ServiceAccount must exist before a pod is admitted
    api.wait("default ServiceAccount in " + name,
             lambda: _exists(api, "/api/v1/namespaces/%s/serviceaccounts/default" % name), 30)
    yield name
    pods = api.get("/api/v1/namespaces/%s/pods" % name)["items"]
    for p in pods:
        api.delete("/api/v1/namespaces/%s/pods/%s" % (name, p["metadata"]["name"]), grace=0)
    api.wait("pods of %s deleted" % name,
             lambda: not api.get("/api/v1/namespaces/%s/pods" % name)["items"], 60)
    api.delete("/api/v1/namespaces/" + name)


def _exists(api, path):
    try:
        api.get(path)
        return True
    except kube.ApiError as e:
        if e.status == 404:
            return False
        raise


def _pod(name, image, labels=None):
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": 1,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "main", "image": image, "imagePullPolicy": "Never",
                "command": ["python3", "-c", LISTENER],
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]},
                                    "readOnlyRootFilesystem": True},
                "resources": {"limits": {"memory": "64Mi", "cpu": "250m"}},
            }],
        },
    }


def _run_pods(api, ns, pods):
    for p in pods:
        api.create("/api/v1/namespaces/%s/pods" % ns, p)

    def ready(name):
        st = api.get("/api/v1/namespaces/%s/pods/%s" % (ns, name))["status"]
        if st.get("phase") in ("Failed", "Succeeded"):
            raise AssertionError("pod %s ended: %r" % (name, st))
        cs = st.get("containerStatuses") or [{}]
        return st.get("podIP") if st.get("phase") == "Running" and cs[0].get("ready") else None

    return {p["metadata"]["name"]: api.wait("pod %s running" % p["metadata"]["name"],
                                            lambda n=p["metadata"]["name"]: ready(n), 120)
            for p in pods}


def _node_ip(api):
    node = api.get("/api/v1/nodes")["items"][0]
    return next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")


def _connect(api, ns, pod, host, port):
    code, out, err, _ = api.exec(ns, pod, ["python3", "-c", CONNECT, host, str(port)])
    assert code == 0, (code, out, err)
    return out.decode().strip()


def test_exec_non_root_no_caps(api, ns, image):
    _run_pods(api, ns, [_pod("sbx", image)])
    script = "id -u; id -g; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status; cat"
    code, out, err, status = api.exec(ns, "sbx", ["sh", "-c", script], stdin=b"hello over stdin\n")
    assert code == 0, (status, err)
    lines = out.decode().splitlines()
    assert lines[0] == "1000" and lines[1] == "1000", lines
    assert lines[2].split() == ["CapEff:", "0000000000000000"], lines
    assert lines[3].split() == ["NoNewPrivs:", "1"], lines
    # stdin arrived and was closed (v5): cat ended on its own
    assert lines[4] == "hello over stdin", lines
    assert err == b""

    # an exit status and stderr come back through the status channel
    code, out, err, status = api.exec(ns, "sbx", ["sh", "-c", "echo oops >&2; exit 7"])
    assert code == 7, status
    assert err == b"oops\n" and out == b""
    assert status.get("reason") == "NonZeroExitCode", status

    # the root filesystem is read-only, even where the user may write
    code, _, err, _ = api.exec(ns, "sbx", ["sh", "-c", "touch /tmp/x"])
    assert code != 0 and b"Read-only file system" in err, err


def test_network_policy_deny_all(api, ns, image):
    if _read_state("netpol") == "0":
        pytest.skip("the cluster was started with `up --no-netpol`")
    # a listener on the node's IP, where a pod's traffic leaves the pod network
    node_ip = _node_ip(api)
    srv = socket.socket()
    srv.bind((node_ip, 0))
    srv.listen(16)
    port = srv.getsockname()[1]
    stop = threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except socket.timeout:
                continue
            c.sendall(b"node")
            c.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        # the policy first, so that it selects the pod from its start
        api.create("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % ns, {
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "deny-all"},
            "spec": {"podSelector": {"matchLabels": {"sandbox": "locked"}},
                     "policyTypes": ["Ingress", "Egress"]},
        })
        ips = _run_pods(api, ns, [_pod("open", image, {"sandbox": "open"}),
                                  _pod("locked", image, {"sandbox": "locked"})])
        t_ready = time.monotonic()

        # without a policy: the node's listener answers
        assert _connect(api, ns, "open", node_ip, port) == "connected node"
        # the firewall applies its rules shortly after the pod has an IP
        # (kube-router syncs on the pod's update): wait for the first block,
        # bounded, then it must hold
        leaks = []

        def blocked():
            out = _connect(api, ns, "locked", node_ip, port)
            if out.startswith("blocked"):
                return time.monotonic()
            leaks.append(out)
            return None

        try:
            first = api.wait("deny-all to block the locked pod", blocked, 30)
        except TimeoutError:
            pytest.fail("deny-all never blocked the pod in 30 s: %d connections got through, "
                        "the last: %r" % (len(leaks), leaks[-1:]))
        print("deny-all effective %.1f s after the pod was Running; %d connection(s) got "
              "through before" % (first - t_ready, len(leaks)))
        for _ in range(2):
            out = _connect(api, ns, "locked", node_ip, port)
            assert out.startswith("blocked"), out
        # ingress is denied too: its listener runs (it answers on its own
        # loopback) but the other pod cannot reach it; egress to a pod neither
        assert _connect(api, ns, "locked", "127.0.0.1", 8080) == "connected pong"
        assert _connect(api, ns, "open", ips["locked"], 8080).startswith("blocked")
        assert _connect(api, ns, "locked", ips["open"], 8080).startswith("blocked")
        # the open pod still reaches the node after all that
        assert _connect(api, ns, "open", node_ip, port) == "connected node"
    finally:
        stop.set()
        server.join()
        srv.close()
