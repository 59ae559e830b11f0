# SPDX-License-Identifier: MIT
"""The kubernetes backend on this machine's real cluster (cluster.py): what a
cluster adds to the contract suite. The pod as the API server holds it (every
hardening field), the network closed from inside and proven by the probe, a
timeout that leaves no pod, SIGKILL of the server (the agent ends with its
stream; the next start sweeps), an API server that stops answering, and, on a
cluster started without its NetworkPolicy enforcer (SBX_K8S_NO_NETPOL=1),
`network: off` refused unless the operator accepts an unproven policy."""
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

import cluster
from conftest import (CLUSTER, ROOT, SANDBOX_UID, SBX_BIN, clean_env, code, find_marked, new_mark,
                      plugin_entry, plugins_json, run_cli)

pytestmark = [pytest.mark.contract,
              pytest.mark.skipif(not (CLUSTER and ROOT),
                                 reason="the kubernetes backend on the test cluster (root)")]
enforcer = pytest.mark.skipif(cluster.NO_NETPOL, reason="needs the NetworkPolicy enforcer")
no_enforcer = pytest.mark.skipif(not cluster.NO_NETPOL,
                                 reason="only on a cluster without its enforcer (SBX_K8S_NO_NETPOL)")
ACCEPT = "LLM_SANDBOX_KUBERNETES_ALLOW_UNENFORCED_NETWORK"


def node_ip():
    node = cluster.api().get("/api/v1/nodes")["items"][0]
    return next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")


def pods_of(owner=None):
    return [p for p in cluster.api().get(
        "/api/v1/namespaces/%s/pods?labelSelector=%s" % (
            cluster.NAMESPACE, cluster.MANAGED.replace("=", "%3D")))["items"]
        if owner is None or p["metadata"]["labels"].get("llm-sandbox.org/owner") == owner]


def wait_for(what, fn, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("no %s within %s s" % (what, timeout))


def background_run(src, *args, mark=None, extra=None):
    env = clean_env(mark_value=mark or new_mark(), extra=extra)
    return subprocess.Popen([SBX_BIN, "run", "--json"] + list(args) + ["--code", src], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd="/")


@enforcer
def test_print_42_text_mode():
    """The issue's first line: a plain run prints 42."""
    r = run_cli(["run", "--language", "python", "--code", "print(6*7)"])
    assert r.rc == 0, r
    assert r.out == b"42\n", r


@enforcer
def test_probe_proves_network_policy():
    ctl = plugin_entry(plugins_json(), "kubernetes")["controls"]
    assert ctl["network_off"]["level"] == "full", ctl["network_off"]
    assert "proven" in ctl["network_off"]["note"], ctl["network_off"]
    for c in ("network_registries", "network_allowlist", "network_on", "network_host",
              "host_mounts"):
        assert ctl[c]["level"] == "none", (c, ctl[c])
    assert ctl["seccomp"]["level"] == "full" and "agent" in ctl["seccomp"]["note"], ctl["seccomp"]


@enforcer
def test_the_pod_as_the_api_server_holds_it():
    """Every hardening field of the running pod, and its deny-all policy."""
    mark = new_mark()
    p = background_run("import time\nprint(open('/proc/self/status').read())\ntime.sleep(4)",
                       "--memory", "200M", "--cpus", "0.5", "--timeout", "20", mark=mark)
    try:
        pod = wait_for("a running pod", lambda: next(
            (x for x in pods_of() if x["metadata"]["labels"].get("llm-sandbox.org/network") ==
             "off" and x["status"].get("phase") == "Running"), None), 30)
    finally:
        out, err = p.communicate(timeout=60)
    res = json.loads(out)
    assert res["status"] == "ok", res
    spec, meta = pod["spec"], pod["metadata"]
    owner = meta["labels"]["llm-sandbox.org/owner"]
    assert meta["labels"]["app.kubernetes.io/managed-by"] == "llm-sandbox"
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    assert spec["enableServiceLinks"] is False
    assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC")
    assert 20 < spec["activeDeadlineSeconds"] <= 20 + 60 + 60, spec["activeDeadlineSeconds"]
    psc = spec["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] == SANDBOX_UID, psc
    assert psc["seccompProfile"]["type"] == "RuntimeDefault", psc
    (c,) = spec["containers"]
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["privileged"] is False, sc
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"], sc
    assert sc["readOnlyRootFilesystem"] is True, sc
    assert c["resources"]["limits"] == {"memory": str(200 * 1024 * 1024), "cpu": "500m"}, c
    assert c["stdin"] is True and c["stdinOnce"] is True, c
    vols = {v["name"]: v for v in spec["volumes"]}
    for name in ("workspace", "tmp", "shm"):
        assert vols[name]["emptyDir"]["medium"] == "Memory", vols[name]
        # the workspace size, at most 3/4 of the memory limit
        assert int(vols[name]["emptyDir"]["sizeLimit"]) == 150 * 1024 * 1024, vols[name]
    assert not any("hostPath" in v for v in spec["volumes"]), spec["volumes"]
    # what the program saw
    status = dict(line.split(":", 1) for line in res["stdout"].splitlines() if ":" in line)
    assert status["Uid"].split()[0] == str(SANDBOX_UID), status["Uid"]
    assert status["CapEff"].strip() == "0000000000000000", status["CapEff"]
    assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2", status


@enforcer
def test_inside_the_pod():
    """No service-account token, no Kubernetes variables, a read-only root,
    the sized workspace, and nothing reachable: not the node, not the API
    server, not a listener the test opens on the node's address."""
    ip = node_ip()
    srv = socket.socket()
    srv.bind((ip, 0))
    srv.listen(8)
    srv.setblocking(False)
    port = srv.getsockname()[1]
    src = r"""
import os, socket
print("token", os.path.exists("/var/run/secrets/kubernetes.io"))
print("kubevars", sorted(k for k in os.environ if k.startswith("KUBERNETES")))
try:
    open("/usr/x", "w")
except OSError as e:
    print("rootfs", e.errno)
st = os.statvfs("/workspace")
print("workspace", st.f_blocks * st.f_frsize)
for port in (%d, 16443, 10250, 11250):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("%s", port))
        print("port", port, "open")
    except OSError as e:
        print("port", port, "blocked", type(e).__name__)
""" % (port, ip)
    try:
        res = code(src, "--timeout", "30")
        try:
            conn, _ = srv.accept()
            conn.close()
            reached = True
        except BlockingIOError:
            reached = False
    finally:
        srv.close()
    assert res["status"] == "ok", res
    out = res["stdout"]
    assert "token False\n" in out and "kubevars []\n" in out, out
    assert "rootfs 30\n" in out, out  # EROFS
    assert "workspace %d\n" % (384 * 1024 * 1024) in out, out  # 3/4 of 512 MiB
    for port in (port, 16443, 10250, 11250):
        assert "port %d blocked" % port in out, out
    assert not reached, "the node's listener saw a connection from the sandbox"


@enforcer
def test_timeout_leaves_no_pod():
    res = code("import time\ntime.sleep(100)", "--timeout", "2")
    assert res["status"] == "timeout" and res["limit"] == "wall_time", res
    assert res["exit_code"] == 137, res
    # deleted with grace 0 before the CLI returned (the autouse fixture
    # checks the processes on the node)
    assert pods_of() == [], [p["metadata"]["name"] for p in pods_of()]


@enforcer
def test_sigkill_of_the_server_leaves_no_pod():
    """The agent ends with its attach stream: the pod stops running at once;
    the next start's sweep deletes what the dead owner left."""
    mark = new_mark()
    p = background_run("import time\ntime.sleep(120)", "--timeout", "120", mark=mark)
    owner = None
    try:
        wait_for("the program", lambda: find_marked(mark, "python3"), 60)
        pod = wait_for("its pod", lambda: next(iter(pods_of()), None), 10)
        owner = pod["metadata"]["labels"]["llm-sandbox.org/owner"]
        assert owner.startswith("p%dt" % p.pid), owner
    finally:
        p.kill()
        p.communicate()
    # the agent saw its stdin end: nothing of the run keeps running
    wait_for("the program's end", lambda: not find_marked(mark), 15)
    wait_for("the pod's end", lambda: all(
        x["status"].get("phase") in ("Succeeded", "Failed") for x in pods_of(owner)), 30)
    assert cluster.leftover(), "the dead owner's pod and policy wait for the next start"
    # the next start sweeps them
    r = run_cli(["plugins", "--json"], mark=False)
    assert r.rc == 0, r
    assert cluster.leftover() == []


def _stopped(name):
    pid = cluster.daemon_pid(name)
    os.kill(pid, signal.SIGSTOP)
    return pid


@enforcer
@pytest.mark.parametrize("daemon", ["kube-apiserver", "kubelet"])
def test_a_daemon_that_stops_answering_ends_the_call(daemon):
    """SIGSTOP of the API server (or the kubelet, which carries the stream)
    while the program runs: the call ends at its timeout, nothing hangs, and
    once the daemon answers again no pod is left."""
    mark = new_mark()
    p = background_run("import time\ntime.sleep(60)", "--timeout", "4", mark=mark)
    pid = None
    try:
        wait_for("the program", lambda: find_marked(mark, "python3"), 60)
        t0 = time.monotonic()
        pid = _stopped(daemon)
        out, err = p.communicate(timeout=40)
        took = time.monotonic() - t0
    finally:
        if pid:
            os.kill(pid, signal.SIGCONT)
        if p.poll() is None:
            p.kill()
            p.communicate()
    res = json.loads(out)
    assert res["status"] in ("timeout", "error"), res
    assert took < 4 + 25, "the call took %.1f s after the %s stopped" % (took, daemon)
    # the stream's end reached the agent once the daemon ran again
    wait_for("the program's end", lambda: not find_marked(mark), 30)
    run_cli(["plugins", "--json"], mark=False)  # a start sweeps what is left
    wait_for("no pod", lambda: cluster.leftover() == [], 30)


@no_enforcer
def test_network_off_refused_without_an_enforcer():
    ctl = plugin_entry(plugins_json(), "kubernetes")["controls"]
    assert ctl["network_off"]["level"] == "none", ctl["network_off"]
    assert "not enforced" in ctl["network_off"]["note"], ctl["network_off"]
    res = code("print('ran')")
    assert res["status"] == "refused", res
    assert "network_off" in res["message"] and "not enforced" in res["message"], res
    assert res["stdout"] == ""


@no_enforcer
def test_an_unproven_policy_accepted_runs_with_a_warning():
    res = code("print('ran')", extra_env={ACCEPT: "true"})
    assert res["status"] == "ok" and res["stdout"] == "ran\n", res
    assert any(w.startswith("network_off enforced by a fallback: deny-all NetworkPolicy, NOT "
                            "proven") for w in res["warnings"]), res["warnings"]
