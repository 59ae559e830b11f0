# SPDX-License-Identifier: MIT
"""The docker backend over tcp:// with TLS (DOCKER_HOST, DOCKER_TLS_VERIFY,
DOCKER_CERT_PATH): the private daemon (containers.py) also listens on a
loopback port with --tlsverify and throwaway certificates (tlscerts.py).
A run works with the right client directory; every wrong one fails before
anything runs, with an error that says why."""
import os

import pytest

import containers
from conftest import BACKEND, code

pytestmark = [pytest.mark.contract,
              pytest.mark.skipif(BACKEND != "docker", reason="the docker backend's TLS client")]


def tls_env(cert_dir, verify="1"):
    return {"DOCKER_HOST": "tcp://127.0.0.1:%d" % containers.DOCKER_TLS_PORT,
            "DOCKER_TLS_VERIFY": verify,
            "DOCKER_CERT_PATH": containers.TLS_DIRS.get(cert_dir, cert_dir)}


@pytest.mark.parametrize("verify", ["1", "0"])  # any value turns it on, as for the docker CLI
def test_a_run_over_tls(verify):
    res = code("print(6*7)", extra_env=tls_env("client", verify))
    assert res["status"] == "ok" and res["stdout"] == "42\n", res
    assert res["backend"] == "docker", res


def test_the_certificates_default_to_home_docker(tmp_path):
    os.symlink(containers.TLS_DIRS["client"], str(tmp_path / ".docker"))
    env = tls_env("client")
    del env["DOCKER_CERT_PATH"]
    env["HOME"] = str(tmp_path)
    res = code("print(6*7)", extra_env=env)
    assert res["status"] == "ok" and res["stdout"] == "42\n", res


def refused(env):
    res = code("print(6*7)", extra_env=env)
    # refused: the backend's probe cannot reach the daemon
    assert res["status"] == "refused" and res["exit_code"] is None, res
    assert res["stdout"] == "" and "42" not in res["stderr"], res
    assert containers.leftover(BACKEND) == []
    return res["message"]


@pytest.mark.parametrize("cert_dir, why", [
    ("wrong-ca", "SSL certificate problem"),  # the server's certificate does not verify
    ("other-cert", "over TLS"),  # the daemon refuses a client of another CA (curl says
    # "alert bad certificate" or, when the daemon hung up first, "not connected")
])
def test_a_certificate_that_does_not_verify_fails_closed(cert_dir, why):
    msg = refused(tls_env(cert_dir))
    assert why in msg and "127.0.0.1:%d" % containers.DOCKER_TLS_PORT in msg, msg
    assert containers.TLS_DIRS[cert_dir] in msg, msg


@pytest.mark.parametrize("cert_dir, missing", [
    ("no-cert", "cert.pem"),  # no client certificate to show
    ("/nonexistent", "ca.pem"),  # no certificate directory at all
])
def test_a_missing_certificate_file_is_named(cert_dir, missing):
    msg = refused(tls_env(cert_dir))
    path = "%s/%s" % (containers.TLS_DIRS.get(cert_dir, cert_dir), missing)
    assert "TLS verification is on" in msg and path + " is not readable" in msg, msg


def test_plain_http_to_the_tls_port_fails_closed():
    """DOCKER_TLS_VERIFY unset: tcp:// is plain HTTP, which the TLS
    listener answers with an error, never a run."""
    msg = refused(tls_env("client", verify=None))
    assert "HTTP request to an HTTPS server" in msg, msg
