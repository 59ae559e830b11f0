# SPDX-License-Identifier: MIT
"""What only container backends have: images that may be missing, and
containers that must not outlive a killed server. Part of the contract
suite so integration.docker and integration.podman run it; skipped on the
local jails."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import conftest
import containers
from conftest import BACKEND, CONTAINER, SBX_BIN, clean_env, code

pytestmark = [pytest.mark.contract,
              pytest.mark.skipif(not CONTAINER, reason="container backends only")]


def test_missing_image_is_a_clear_error():
    """No registry is reachable here: the pull fails, and the run says which
    image and why, without running anything."""
    res = code("print(1)", extra_env={"SANDBOX_IMAGE_PYTHON": "llm-sandbox-test/missing:1"})
    assert res["status"] == "error" and res["exit_code"] is None, res
    assert "image 'llm-sandbox-test/missing:1' is not present" in res["message"], res
    assert "pulling it failed" in res["message"], res
    assert res["stdout"] == "", res


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
