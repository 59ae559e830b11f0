# SPDX-License-Identifier: MIT
"""What only container backends have: images that may be missing, and
containers that must not outlive a killed server. Part of the contract
suite so integration.docker and integration.podman run it; skipped on the
local jails."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import conftest
import containers
from conftest import BACKEND, CONTAINER, FORK_UNTIL_REFUSED, SBX_BIN, clean_env, code

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "mcp"))
import mcptest  # noqa: E402  (tests/mcp: the JSON-RPC client)

pytestmark = [pytest.mark.contract,
              pytest.mark.skipif(not CONTAINER, reason="container backends only")]

# A registry on this machine's loopback, port 1: a pull of it is refused at
# once, and nothing leaves the machine (no name lookup, no registry).
MISSING = "127.0.0.1:1/llm-sandbox-test/missing:1"


def test_missing_image_is_a_clear_error():
    """The pull fails, and the run says which image and why, without
    running anything."""
    res = code("print(1)", extra_env={"SANDBOX_IMAGE_PYTHON": MISSING})
    assert res["status"] == "error" and res["exit_code"] is None, res
    assert "image '%s' is not present" % MISSING in res["message"], res
    assert "pulling it failed" in res["message"], res
    assert res["stdout"] == "", res


def test_a_probe_pulls_nothing_and_the_first_run_pulls():
    """A server probes every language's version at start-up, in a sandbox.
    For a language whose image is missing that probe pulls nothing: the
    server starts and answers (the version is unknown), and the first run
    of the language pulls, failing here with the clear error."""
    s = mcptest.Server(env=clean_env({"SANDBOX_IMAGE_RUBY": MISSING,
                                      "LLM_SANDBOX_LOG_LEVEL": "info"}))
    try:
        s.initialize()
        # answered once ruby's probe is done (describe.c waits for it)
        d = s.call_tool("get_language_details", {"language": "ruby"}, timeout=120)
        assert "result" in d and not d["result"].get("isError"), d
        r = s.call_tool("execute_code", {"language": "ruby", "code": "puts 1"}, timeout=120)
        res = r["result"]["structuredContent"]
        assert res["status"] == "error" and res["exit_code"] is None, res
        assert "image '%s' is not present" % MISSING in res["message"], res
        assert "pulling it failed" in res["message"], res
        ok = s.call_tool("execute_code", {"language": "python", "code": "print(2)"}, timeout=120)
        assert ok["result"]["structuredContent"]["stdout"] == "2\n", ok
    finally:
        assert s.finish(timeout=60) == 0
    log = bytes(s.stderr).decode(errors="replace")
    # one pull (the run's); the probe's would have been logged the same way
    pulls = [ln for ln in log.splitlines() if MISSING in ln and "is not here; pulling it" in ln]
    assert len(pulls) == 1, log


def test_network_registries_for_a_program_is_refused_by_the_policy():
    """Only library installs get the filtering proxy: a program asking for
    network 'registries' is refused before any container exists, naming
    the control, even when the network ceiling would allow it."""
    for mode in ("registries", "allowlist"):
        res = code("print(1)", "--network", mode, extra_env={"LLM_SANDBOX_NETWORK": "on"})
        assert res["status"] == "refused", res
        assert "network '%s' (control network_%s)" % (mode, mode) in res["message"], res
        assert res["stdout"] == "", res


def test_outcomes_are_decided_before_the_removal():
    """A result returns once the program's exit is known; its container is
    stopped and removed afterwards (plugins/docker/close.c, reaper.c). The
    outcome still comes out exact (OOM and pids from the cgroup counters
    sampled while the program ran), on warm runs too, and when the server
    has exited no container is left."""
    s = mcptest.Server(env=clean_env({"LLM_SANDBOX_POOL": "2", "LLM_SANDBOX_PIDS": "32"}))

    def run(src):
        r = s.call_tool("execute_code", {"language": "python", "code": src}, timeout=120)
        return r["result"]["structuredContent"]
    try:
        s.initialize()
        for i in range(3):
            res = run("print(%d)" % i)
            assert res["status"] == "ok" and res["stdout"] == "%d\n" % i, res
        res = run("raise SystemExit(3)")
        assert res["status"] == "error" and res["exit_code"] == 3 and res["limit"] is None, res
        res = run("x = bytearray(2 * 1024**3)\nprint('survived', len(x))")
        assert res["status"] == "oom" and res["limit"] == "memory", res
        assert res["exit_code"] == 137, res
        res = run(FORK_UNTIL_REFUSED)
        assert res["status"] == "error" and res["exit_code"] == 1, res
        assert res["limit"] == "pids", res
        res = run("print(4)")
        assert res["status"] == "ok" and res["limit"] is None, res
    finally:
        assert s.finish(timeout=120) == 0
    assert containers.leftover(BACKEND) == []


def test_container_dies_with_a_killed_server_and_is_swept():
    """SIGKILL the CLI mid-run: the attach stream closes, the agent gets the
    end of its input and exits (the container stops by itself), and the
    next start-up removes the container of the dead instance."""
    p = subprocess.Popen([SBX_BIN, "run", "--json", "--code", "import time; time.sleep(60)"],
                         env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    deadline = time.monotonic() + 30
    while not containers.leftover(BACKEND) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert containers.leftover(BACKEND), "the run's container never appeared"
    time.sleep(1.0)  # the program is running now
    p.send_signal(signal.SIGKILL)
    p.communicate()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        left = containers.leftover(BACKEND)
        if all("Exited" in c or "exited" in c for c in left):
            break
        time.sleep(0.1)
    assert all("Exited" in c or "exited" in c for c in left), \
        "the container outlived its server: %s" % left
    res = code("print(6*7)")  # its probe sweeps the dead instance's container
    assert res["status"] == "ok" and res["stdout"] == "42\n", res
    assert containers.leftover(BACKEND) == []


def test_the_sweep_leaves_other_scopes_alone():
    """A start-up sweep judges only owners of its own scope (kernel boot and
    pid namespace, core/src/host/owner.h): a stopped container whose owner's pid
    is gone is removed when the owner was of our scope, and kept when it
    was of another (a server in another container, another host on a
    shared daemon), whose pids we cannot see."""
    ours = conftest.owner_scope(os.getpid())
    theirs = "0123456789abcdef" if ours != "0123456789abcdef" else "fedcba9876543210"
    made = {}
    for who, scope in (("ours", ours), ("theirs", theirs)):
        r = subprocess.run(containers.cli(BACKEND) + [
            "create", "--label", "org.llm-sandbox.owner=p999999999t1h" + scope,
            "--name", "sbx-scope-test-" + who, containers.IMAGE, "true"],
            capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        made[who] = r.stdout.strip()
    try:
        res = code("print(6*7)")  # its probe sweeps
        assert res["status"] == "ok" and res["stdout"] == "42\n", res
        left = " ".join(containers.leftover(BACKEND))
        assert "sbx-scope-test-ours" not in left, left
        assert "sbx-scope-test-theirs" in left, left
    finally:  # one by one: Podman's rm stops at the first that is gone
        for cid in made.values():
            subprocess.run(containers.cli(BACKEND) + ["rm", "-f", cid], capture_output=True,
                           timeout=60)
    assert containers.leftover(BACKEND) == []


def volumes():
    r = subprocess.run(containers.cli(BACKEND) + ["volume", "ls", "-q"], capture_output=True,
                       text=True, check=True)
    return sorted(r.stdout.split())


def test_libraries_arrive_as_a_volume_and_leave_with_their_set():
    """The set is built inside a container of the language's image (its
    network: the core's proxy socket only), read back into the host cache,
    and delivered to runs as a read-only named volume made once; the
    install's writable volume is gone afterwards, and the set's copy goes
    when its directory leaves the cache (the next probe sweeps it)."""
    d = tempfile.mkdtemp(prefix="llm-sandbox-test-cache-", dir="/var/tmp")
    os.chmod(d, 0o755)
    before = volumes()
    try:
        env = {"LLM_SANDBOX_CACHE_DIR": d}
        src = "import six, os\nprint(six.__file__)\nprint(os.access('/deps', os.W_OK))\n"
        first = code(src, "--libraries", "six", extra_env=env)
        assert first["status"] == "ok", first
        assert first["stdout"] == "/deps/python/six.py\nFalse\n", first
        assert first["install"]["cached"] is False, first
        made = [v for v in volumes() if v not in before]
        assert len(made) == 2 and made[1] == made[0] + "-ok", made
        assert made[0].startswith("sbx-set-"), made
        second = code(src, "--libraries", "six", extra_env=env)
        assert second["status"] == "ok" and second["install"]["cached"] is True, second
        assert [v for v in volumes() if v not in before] == made, "the copy was made again"
        insp = subprocess.run(containers.cli(BACKEND) + ["volume", "inspect", made[0]],
                              capture_output=True, text=True, check=True).stdout
        assert os.path.join(d, "deps") in insp, insp
    finally:
        shutil.rmtree(d, ignore_errors=True)
    res = code("print(1)")  # its probe sweeps copies of sets that are gone
    assert res["status"] == "ok", res
    assert volumes() == before


def test_a_set_is_keyed_by_the_image_id_not_its_name():
    """A set is built with its image's own toolchain, so its key holds the
    image's ID (the backend's image_id, by inspect), not the name: the same
    image under the same name reuses its set; the name re-tagged to another
    image installs a set of its own."""
    d = tempfile.mkdtemp(prefix="llm-sandbox-test-cache-", dir="/var/tmp")
    os.chmod(d, 0o755)
    tag, vols = "llm-sandbox-test/retag:1", volumes()
    env = {"LLM_SANDBOX_CACHE_DIR": d, "SANDBOX_IMAGE_PYTHON": tag}
    src = "import six\nprint(six.__name__)\n"
    made = []
    try:
        subprocess.run(containers.cli(BACKEND) + ["tag", containers.IMAGE, tag], check=True,
                       capture_output=True)
        first = code(src, "--libraries", "six", extra_env=env)
        assert first["status"] == "ok" and first["install"]["cached"] is False, first
        again = code(src, "--libraries", "six", extra_env=env)
        assert again["status"] == "ok" and again["install"]["cached"] is True, again
        # the same name, another image: the test image with one label more
        cid = subprocess.run(containers.cli(BACKEND) + ["create", containers.IMAGE, "true"],
                             capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(containers.cli(BACKEND) + ["commit", "--change",
                                                   "LABEL org.llm-sandbox.test=retag", cid, tag],
                       check=True, capture_output=True)
        subprocess.run(containers.cli(BACKEND) + ["rm", "-f", cid], capture_output=True)
        made.append(image_id(tag))
        assert made[0] != image_id(containers.IMAGE)
        other = code(src, "--libraries", "six", extra_env=env)
        assert other["status"] == "ok" and other["stdout"] == "six\n", other
        assert other["install"]["cached"] is False, "a set of another image was reused: %r" % (
            other,)
    finally:
        shutil.rmtree(d, ignore_errors=True)
        subprocess.run(containers.cli(BACKEND) + ["rmi", tag], capture_output=True)
        for i in made:  # and the agent image derived from it
            hexid = i.split(":")[-1][:16]
            for ref in subprocess.run(containers.cli(BACKEND) + [
                    "images", "--format", "{{.Repository}}:{{.Tag}}", "llm-sandbox-agent"],
                    capture_output=True, text=True).stdout.split():
                if ref.split(":")[-1].startswith(hexid):
                    subprocess.run(containers.cli(BACKEND) + ["rmi", ref], capture_output=True)
            subprocess.run(containers.cli(BACKEND) + ["rmi", i], capture_output=True)
    res = code("print(1)")  # its probe sweeps copies of sets that are gone
    assert res["status"] == "ok", res
    assert volumes() == vols


def images(repo):
    r = subprocess.run(containers.cli(BACKEND) + ["images", "-q", "--no-trunc", repo],
                       capture_output=True, text=True, check=True)
    return sorted(set(r.stdout.split()))


def image_id(ref):
    return subprocess.run(containers.cli(BACKEND) + ["image", "inspect", "-f", "{{.Id}}", ref],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_commit_container_makes_one_labelled_image_per_set():
    """COMMIT_CONTAINER=true: the installed set goes into a new image with a
    tag of its own (never the base image's), labelled, made once and reused
    for the same language and libraries; no volume copy is made."""
    d = tempfile.mkdtemp(prefix="llm-sandbox-test-cache-", dir="/var/tmp")
    os.chmod(d, 0o755)
    base = image_id(containers.IMAGE)
    before, vols = images("llm-sandbox-commit"), volumes()
    try:
        env = {"LLM_SANDBOX_CACHE_DIR": d, "COMMIT_CONTAINER": "true"}
        src = "import six\nprint(six.__file__)\n"
        first = code(src, "--libraries", "six", extra_env=env)
        assert first["status"] == "ok" and first["stdout"] == "/deps/python/six.py\n", first
        made = [i for i in images("llm-sandbox-commit") if i not in before]
        assert len(made) == 1, made
        labels = subprocess.run(
            containers.cli(BACKEND) + ["image", "inspect", "-f", "{{json .Config.Labels}}",
                                       made[0]], capture_output=True, text=True, check=True).stdout
        assert '"org.llm-sandbox.run":"commit"' in labels, labels
        assert '"org.llm-sandbox.language":"python"' in labels, labels
        second = code(src, "--libraries", "six", extra_env=env)
        assert second["status"] == "ok" and second["install"]["cached"] is True, second
        assert [i for i in images("llm-sandbox-commit") if i not in before] == made
        assert not [v for v in volumes() if v not in vols and v.startswith("sbx-set-")]
        assert image_id(containers.IMAGE) == base
    finally:
        shutil.rmtree(d, ignore_errors=True)
        for i in images("llm-sandbox-commit"):
            if i not in before:
                subprocess.run(containers.cli(BACKEND) + ["rmi", "-f", i], capture_output=True)


def test_keep_template_false_removes_the_images_made_for_the_run():
    """KEEP_TEMPLATE=false: the agent image made for the run goes when the
    run ends; the base image (not pulled by the run) stays."""
    res = code("print(6*7)")  # the agent image of this build exists
    assert res["status"] == "ok", res
    kept = images("llm-sandbox-agent")
    res = code("print(6*7)", extra_env={"KEEP_TEMPLATE": "false"})
    assert res["status"] == "ok" and res["stdout"] == "42\n", res
    left = images("llm-sandbox-agent")
    assert len(left) == len(kept) - 1 and set(left) < set(kept), (kept, left)
    assert image_id(containers.IMAGE)


CGROUP_SELF = "print(open('/proc/self/cgroup').read(), end='')"


@pytest.mark.skipif(BACKEND != "podman", reason="Docker honours CgroupnsMode (the next test)")
def test_host_cgroup_namespace_is_refused_unless_accepted():
    """Podman 4.3 keeps the host's cgroup namespace on cgroup v1 whatever
    the compatible API asks: the plugin reads its own inspect and refuses
    to run there unless the operator accepted it (the fixture does, for
    the other tests). Where Podman does give the container its own
    namespace, the run is fine without the setting."""
    res = code(CGROUP_SELF, extra_env={containers.PODMAN_HOST_CGROUPNS: None})
    if res["status"] == "ok":
        assert all(line.endswith(":/") for line in res["stdout"].splitlines()), res
        return
    assert res["status"] == "error" and res["exit_code"] is None, res
    assert "did not give the container its own cgroup namespace (it has 'host')" \
        in res["message"], res
    assert containers.PODMAN_HOST_CGROUPNS in res["message"], res
    assert res["stdout"] == "", res
    assert containers.leftover(BACKEND) == []


@pytest.mark.skipif(BACKEND != "docker", reason="Podman 4.3 ignores CgroupnsMode (above)")
def test_own_cgroup_namespace_on_docker():
    res = code(CGROUP_SELF)
    assert res["status"] == "ok", res
    lines = res["stdout"].splitlines()
    assert lines and all(line.endswith(":/") for line in lines), res
