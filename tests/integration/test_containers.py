# SPDX-License-Identifier: MIT
"""What only container backends have: images that may be missing, and
containers that must not outlive a killed server. Part of the contract
suite so integration.docker and integration.podman run it; skipped on the
local jails."""
import os
import signal
import subprocess
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
