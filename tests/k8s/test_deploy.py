# SPDX-License-Identifier: MIT
"""The MCP server deployed into the test cluster (deploy/kubernetes/): its
image built from this build tree (deploy/kubernetes/server-image.sh) and
imported without a registry, the manifests applied with an overlay for this
cluster, then `execute_code` over Streamable HTTP from this host through the
Service: there is no kube-proxy here, so the Service is resolved to its
endpoint (its EndpointSlice: the server pod's address and port) the way
kube-proxy would. The sandbox pods are made by the server with its
in-cluster credentials (the service account's token; the Role allows its
namespace only); 20 calls from 4 concurrent clients all succeed and leave
no pod behind.

Run by ctest as integration.kubernetes_deploy (root: the cluster is the
machine's); the cluster is brought up as the integration suites do
(tests/integration/cluster.py) and down again unless it was up before.
"""
import concurrent.futures
import fcntl
import json
import os
import secrets
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import cluster  # noqa: E402

BUILD = os.environ.get("SBX_BUILD_DIR", os.path.join(SRC, "build"))
NS = "llm-sandbox"
CLIENTS, CALLS = 4, 20

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the test cluster needs root")


def kubectl(*args, check=True, timeout=120):
    r = subprocess.run([os.path.join(SRC, "scripts", "k8s-cluster.sh"), "kubectl"] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("kubectl %s: %s %s" % (" ".join(args), r.stdout, r.stderr))
    return r


def node():
    return cluster.api().get("/api/v1/nodes")["items"][0]


def node_ip():
    return next(a["address"] for a in node()["status"]["addresses"] if a["type"] == "InternalIP")


def server_image():
    """Build (or find) the server's image and import it unless the node has it."""
    out = subprocess.run([os.path.join(SRC, "deploy", "kubernetes", "server-image.sh"), BUILD],
                         capture_output=True, text=True, check=True).stdout.split()
    tar, ref = out[-2], out[-1]
    have = {n for i in node()["status"].get("images", []) for n in i.get("names", [])}
    if ref not in have:
        subprocess.run([os.path.join(SRC, "scripts", "k8s-cluster.sh"), "import", tar],
                       check=True, capture_output=True)
    return ref


class _Pipe(socketserver.BaseRequestHandler):
    def handle(self):
        up = socket.create_connection(("127.0.0.1", API_PORT))
        done = threading.Event()

        def pump(a, b):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b.sendall(data)
            except OSError:
                pass
            finally:
                done.set()

        threading.Thread(target=pump, args=(up, self.request), daemon=True).start()
        pump(self.request, up)
        done.wait()
        up.close()


class ApiRelay(socketserver.ThreadingTCPServer):
    """What the `kubernetes` Service gives pods elsewhere: a way to the API
    server. This cluster has no kube-proxy and its API server listens on
    loopback, so the test relays the node's address (a port of its own,
    named in the API server's certificate) to it, for as long as it runs.
    TLS passes through untouched: the server is verified as usual."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, ip):
        super().__init__((ip, 0), _Pipe)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


API_PORT = 16443


def overlay(d, image, token, relay_port):
    """This cluster's changes to deploy/kubernetes: the local image, the API
    server's address (the relay above), the test image for the sandboxes,
    the token."""
    repo, _, tag = image.rpartition(":")
    base = os.path.relpath(os.path.join(SRC, "deploy", "kubernetes"), d)
    env = [{"name": "KUBERNETES_SERVICE_HOST", "value": node_ip()},
           {"name": "KUBERNETES_SERVICE_PORT", "value": str(relay_port)},
           {"name": "SANDBOX_IMAGE_PYTHON", "value": cluster.IMAGE}]
    patch = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm-sandbox"},
             "spec": {"template": {"spec": {"containers": [
                 {"name": "server", "imagePullPolicy": "Never", "env": env}]}}}}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "llm-sandbox-token"},
              "stringData": {"token": token}}
    with open(os.path.join(d, "kustomization.yaml"), "w") as f:
        json.dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                   "resources": [base],
                   "images": [{"name": "llm-sandbox-server", "newName": repo, "newTag": tag}],
                   "patches": [{"patch": json.dumps(patch)}, {"patch": json.dumps(secret)}]}, f)


def endpoint():
    """The Service's endpoint: its EndpointSlice's ready address and port."""
    slices = cluster.api().get(
        "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices?labelSelector="
        "kubernetes.io%%2Fservice-name%%3Dllm-sandbox" % NS)["items"]
    for s in slices:
        port = next(p["port"] for p in s["ports"] if p.get("name") == "mcp")
        for e in s.get("endpoints") or []:
            if e.get("conditions", {}).get("ready"):
                return "http://%s:%d/mcp" % (e["addresses"][0], port)
    return None


class Client:
    """Streamable HTTP, one MCP session: JSON or an SSE stream in answer."""

    def __init__(self, url, token):
        self.url, self.token, self.session, self.id = url, token, None, 0

    def post(self, msg, timeout=120):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "Authorization": "Bearer " + self.token,
                   "MCP-Protocol-Version": "2025-06-18"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        req = urllib.request.Request(self.url, data=json.dumps(msg).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=timeout) as r:
            self.session = r.headers.get("Mcp-Session-Id") or self.session
            body = r.read().decode()
            if r.headers.get("Content-Type", "").startswith("text/event-stream"):
                msgs = [json.loads(l[5:]) for l in body.splitlines() if l.startswith("data:")]
            else:
                msgs = [json.loads(body)] if body.strip() else []
        return next((m for m in msgs if m.get("id") == msg.get("id")), None)

    def request(self, method, params):
        self.id += 1
        r = self.post({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        assert r and "result" in r, r
        return r["result"]

    def open(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "test_deploy", "version": "1"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def execute(self, code):
        return self.request("tools/call", {"name": "execute_code",
                                           "arguments": {"code": code, "language": "python"}})


def sandbox_pods():
    return cluster.api().get("/api/v1/namespaces/%s/pods?labelSelector=app.kubernetes.io"
                             "%%2Fmanaged-by%%3Dllm-sandbox" % NS)["items"]


@pytest.fixture(scope="module")
def session_lock():
    """The integration suites' machine-wide lock (tests/integration/
    conftest.py): the cluster is one per machine."""
    fd = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.stderr.write("waiting for another integration test session on this machine\n")
        fcntl.flock(fd, fcntl.LOCK_EX)
    yield
    os.close(fd)


@pytest.fixture(scope="module")
def deployed(session_lock):
    cluster.start(SRC)
    d = tempfile.mkdtemp(prefix="llm-sandbox-deploy-")
    token = secrets.token_hex(24)
    relay = ApiRelay(node_ip())
    try:
        image = server_image()
        overlay(d, image, token, relay.port)
        kubectl("apply", "-k", d)
        kubectl("-n", NS, "rollout", "status", "deployment/llm-sandbox", "--timeout=120s",
                timeout=150)
        url = None
        end = time.monotonic() + 60
        while not url and time.monotonic() < end:
            url = endpoint()
            time.sleep(0.5)
        assert url, "the Service has no ready endpoint"
        yield url, token
    finally:
        logs = kubectl("-n", NS, "logs", "deployment/llm-sandbox", "--tail=40", check=False)
        sys.stderr.write("server log (last lines):\n%s\n" % logs.stdout)
        kubectl("delete", "-k", d, "--wait=true", "--timeout=120s", check=False, timeout=150)
        relay.shutdown()
        relay.server_close()
        shutil.rmtree(d, ignore_errors=True)
        cluster.stop(SRC)


def test_token_required(deployed):
    url, _ = deployed
    c = Client(url, "not-the-token-0123456789")
    with pytest.raises(urllib.error.HTTPError) as e:
        c.open()
    assert e.value.code == 401


def test_execute_code_through_the_service(deployed):
    url, token = deployed
    c = Client(url, token).open()
    seen = []
    done = False

    def watch():
        while not done:
            seen.extend(p for p in sandbox_pods() if p not in seen)
            time.sleep(0.1)

    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        f = ex.submit(watch)
        res = c.execute("import time\nprint(6*7)\ntime.sleep(1)")
        done = True
        f.result()
    out = res["structuredContent"]
    assert out["status"] == "ok" and out["stdout"] == "42\n", res
    assert out["backend"] == "kubernetes", out
    # made by the server in its namespace, with what the Role allows
    assert seen, "no sandbox pod was seen in namespace %s during the call" % NS
    pod = seen[0]
    assert pod["metadata"]["namespace"] == NS
    assert pod["spec"]["automountServiceAccountToken"] is False
    managers = {m.get("manager") for m in pod["metadata"].get("managedFields", [])}
    sys.stderr.write("sandbox pod %s managed by %s\n" % (pod["metadata"]["name"], managers))


def test_twenty_calls_from_four_clients(deployed):
    url, token = deployed
    clients = [Client(url, token).open() for _ in range(CLIENTS)]

    def one(i):
        c = clients[i % CLIENTS]
        t0 = time.monotonic()
        out = c.execute("print(%d * 3)" % i)["structuredContent"]
        return i, out, time.monotonic() - t0

    t0 = time.monotonic()
    results = []
    # each client makes its calls one after another, the clients at once
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as ex:
        futs = [ex.submit(lambda k: [one(k + CLIENTS * j) for j in range(CALLS // CLIENTS)], k)
                for k in range(CLIENTS)]
        for f in futs:
            results.extend(f.result())
    wall = time.monotonic() - t0
    assert len(results) == CALLS
    for i, out, _ in results:
        assert out["status"] == "ok" and out["stdout"] == "%d\n" % (i * 3), (i, out)
    lat = sorted(t for _, _, t in results)
    sys.stderr.write("%d calls from %d clients in %.1f s; latency median %.2f s, max %.2f s\n"
                     % (CALLS, CLIENTS, wall, lat[len(lat) // 2], lat[-1]))
    # the server keeps ready sandboxes (the core's pool) while it runs: stop
    # it (SIGTERM, as a rollout would) and nothing of it may remain
    kubectl("-n", NS, "scale", "deployment/llm-sandbox", "--replicas=0")
    end = time.monotonic() + 60
    while (sandbox_pods() or server_pods()) and time.monotonic() < end:
        time.sleep(0.5)
    left = [p["metadata"]["name"] for p in sandbox_pods()]
    assert left == [], "pods left over: %s" % left
    pols = cluster.api().get("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % NS)
    assert sorted(p["metadata"]["name"] for p in pols["items"]) == [
        "llm-sandbox-sandboxes", "llm-sandbox-server"], pols


def server_pods():
    return cluster.api().get("/api/v1/namespaces/%s/pods?labelSelector=app.kubernetes.io"
                             "%%2Fname%%3Dllm-sandbox-server" % NS)["items"]
