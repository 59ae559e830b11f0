# SPDX-License-Identifier: MIT
"""Network isolation (issue 2, section 7). Only addresses on this machine are
ever touched: canary listeners the test starts on the host's loopback, and
addresses inside the sandbox. No DNS lookups of real names, no outside IPs.
A pod keeps its interface and route: network off is a deny-all
NetworkPolicy there (test_kubernetes.py checks that nothing is reachable)."""
import json

import pytest

from conftest import BACKEND, CLUSTER, backend_controls, code

# what network off leaves: an empty namespace, or a pod's (policy-denied) one
OFF_DEVS = (["lo"], ["lo", "eth0"]) if CLUSTER else (["lo"],)

NET_ON_ENV = {"LLM_SANDBOX_NETWORK": "on"}

pytestmark = pytest.mark.contract

PROBE = r"""
import json, socket
out = {"dev": [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]}
routes = open("/proc/net/route").read().splitlines()[1:]
out["default_route"] = any(r.split()[1] == "00000000" for r in routes)
def attempt(family, addr, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect((addr, port))
        return "connected"
    except OSError as e:
        return e.errno if e.errno is not None else type(e).__name__
    finally:
        s.close()
out["v4"] = attempt(socket.AF_INET, "127.0.0.1", %d)
out["v6"] = attempt(socket.AF_INET6, "::1", %d) if %d else None
print(json.dumps(out))
"""


def run_probe(canary, canary6=None, *args, **kw):
    src = PROBE % (canary.port, canary6.port if canary6 else 0, 1 if canary6 else 0)
    res = code(src, "--timeout", "20", *args, **kw)
    assert res["status"] == "ok", res
    return json.loads(res["stdout"]), res


def test_network_off_by_default(canary, canary6):
    info, res = run_probe(canary, canary6)
    assert info["dev"] in OFF_DEVS, "only the loopback interface: %r" % info["dev"]
    assert info["default_route"] is CLUSTER
    assert info["v4"] == 111, info  # ECONNREFUSED: the sandbox's own loopback
    assert info["v6"] in (111, 99, 101), info
    assert canary.connections() == 0, "the host's 127.0.0.1 canary saw a connection"
    assert canary6.connections() == 0, "the host's ::1 canary saw a connection"


def test_network_off_explicit(canary):
    info, _ = run_probe(canary, None, "--network", "off")
    assert info["dev"] in OFF_DEVS and info["v4"] == 111, info
    assert canary.connections() == 0


def test_network_off_sandbox_loopback_works():
    """Loopback inside the sandbox is the sandbox's own and usable."""
    res = code(r"""
import socket, threading
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
def serve():
    c, _ = srv.accept(); c.sendall(b"pong"); c.close()
threading.Thread(target=serve).start()
c = socket.create_connection(("127.0.0.1", port), timeout=5)
print(c.recv(4).decode())
""")
    assert res["status"] == "ok", res
    assert res["stdout"] == "pong\n"


def test_network_off_no_resolution_of_names():
    # resolving a name needs no outside traffic to fail: there is no route
    res = code("import socket\ntry:\n    socket.getaddrinfo('example.invalid', 80)\n"
               "    print('resolved')\nexcept OSError as e:\n    print('failed')",
               "--timeout", "20")
    assert res["stdout"] == "failed\n", res


def _require_network_on():
    ctl = backend_controls()["network_on"]
    if ctl["level"] != "full":
        pytest.skip("%s reports network_on as %s here: %s" % (BACKEND, ctl["level"], ctl["note"]))


def test_network_on_has_interface_and_route_but_no_host_loopback(canary, canary6):
    _require_network_on()
    info, res = run_probe(canary, canary6, "--network", "on", extra_env=NET_ON_ENV)
    assert "lo" in info["dev"]
    assert [d for d in info["dev"] if d != "lo"], "a non-loopback interface: %r" % info["dev"]
    assert info["default_route"] is True, info
    assert info["v4"] != "connected", info
    assert info["v6"] != "connected", info
    assert canary.connections() == 0, "network on reached the host's 127.0.0.1"
    assert canary6.connections() == 0, "network on reached the host's ::1"


def test_network_on_from_configuration_default(canary):
    """LLM_SANDBOX_NETWORK=on makes on the default and the ceiling."""
    _require_network_on()
    info, _ = run_probe(canary, None, extra_env=NET_ON_ENV)
    assert info["default_route"] is True and info["v4"] != "connected", info
    assert canary.connections() == 0
    # and a request may still narrow it to off
    info, _ = run_probe(canary, None, "--network", "off", extra_env=NET_ON_ENV)
    assert info["dev"] == ["lo"] and info["default_route"] is False, info


def test_network_on_refused_without_configuration():
    res = code("print(1)", "--network", "on")
    assert res["status"] == "refused", res
    assert "network" in res["message"], res["message"]
    assert res["stdout"] == ""


def test_host_network_needs_operator_setting():
    res = code("print(1)", extra_env={"SANDBOX_NETWORK_MODE": "host"})
    assert res["status"] in ("error", "refused") and res["exit_code"] is None, res
    assert "LLM_SANDBOX_ALLOW_HOST_NETWORK" in res["message"], res["message"]
