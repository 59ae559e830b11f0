# SPDX-License-Identifier: MIT
"""The container daemons of the docker and podman integration tests.

The tests start their own daemon on a private socket, data root and exec
root under /run/llm-sandbox-test and /var/lib/llm-sandbox-test, import the
test image (built by scripts/container-test-image.sh with debootstrap and
cached by recipe: no registry is reachable) when the data root lacks it, and
stop the daemon by its PID at the end. The data root is kept between
sessions, so a warm machine imports nothing.

The docker CLI (part of Debian's docker.io) is used here only to look at
the daemon from outside; the plugin itself speaks the Engine API.
"""
import os
import signal
import socket
import subprocess
import time

import tlscerts

RUN = "/run/llm-sandbox-test"
LIB = "/var/lib/llm-sandbox-test"
# The tag names the recipe (the tarball's name carries its hash), so daemons
# that hold an older image import the new one instead of reusing the tag.
IMAGE = "llm-sandbox-test/debian:bookworm"
IMAGE_LANGS = ("python", "javascript", "ruby")
MISSING_LANGS = ("go", "cpp", "java", "r")

DOCKER_SOCK = RUN + "/docker.sock"
DOCKER_PID = RUN + "/docker.pid"
# The docker daemon's second listener: TLS with client certificates on
# loopback (test_docker_tls.py); TLS_DIRS names the certificate directories.
DOCKER_TLS = RUN + "/tls"
DOCKER_TLS_PORT = None
TLS_DIRS = {}
PODMAN_SOCK = RUN + "/podman.sock"
PODMAN_PID = RUN + "/podman.pid"
PODMAN_ROOT = LIB + "/podman"
PODMAN_RUNROOT = RUN + "/podman-run"
PODMAN_HOST_CGROUPNS = "LLM_SANDBOX_PODMAN_ALLOW_HOST_CGROUPNS"

_proc = None


def client_env(backend):
    """What a CLI run needs to find the daemon and the test image."""
    env = {"SANDBOX_IMAGE_%s" % l.upper(): IMAGE for l in IMAGE_LANGS}
    if backend == "docker":
        env["DOCKER_HOST"] = "unix://" + DOCKER_SOCK
    else:
        env["CONTAINER_HOST"] = "unix://" + PODMAN_SOCK
        # Podman 4.3 on this cgroup v1 host keeps the host's cgroup
        # namespace whatever the compatible API asks, which the plugin
        # refuses unless told otherwise (test_containers.py tests the refusal)
        env[PODMAN_HOST_CGROUPNS] = "true"
    return env


def cli(backend):
    if backend == "docker":
        return ["docker", "-H", "unix://" + DOCKER_SOCK]
    return ["podman", "--root", PODMAN_ROOT, "--runroot", PODMAN_RUNROOT]


def _kill_pidfile(path):
    """A daemon a crashed session left: stop it by its PID."""
    try:
        with open(path) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return
    try:  # a reused pid is someone else's process: leave it alone
        with open("/proc/%d/comm" % pid) as f:
            if f.read().strip() not in ("dockerd", "podman"):
                return
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def _wait_ready(backend, deadline):
    while time.monotonic() < deadline:
        if _proc.poll() is not None:
            raise RuntimeError("%s daemon exited with %s; see %s/%s.log"
                               % (backend, _proc.returncode, RUN, backend))
        r = subprocess.run(cli(backend) + ["version"], capture_output=True)
        if r.returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("%s daemon did not answer within 60 s" % backend)


def _ensure_image(backend, source_dir):
    global IMAGE
    tar = subprocess.run([os.path.join(source_dir, "scripts", "container-test-image.sh")],
                         check=True, capture_output=True, text=True).stdout.strip()
    IMAGE = "llm-sandbox-test/debian:" + os.path.basename(tar)[:-len(".tar")]
    if subprocess.run(cli(backend) + ["image", "inspect", IMAGE],
                      capture_output=True).returncode == 0:
        return
    subprocess.run(cli(backend) + ["import", tar, IMAGE], check=True, capture_output=True)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tls_args():
    """A TLS listener on a free loopback port (the unix socket stays plain)."""
    global DOCKER_TLS_PORT, TLS_DIRS
    TLS_DIRS = tlscerts.make(DOCKER_TLS)
    DOCKER_TLS_PORT = _free_port()
    srv = TLS_DIRS["server"]
    return ["--host", "tcp://127.0.0.1:%d" % DOCKER_TLS_PORT, "--tlsverify",
            "--tlscacert", srv + "/ca.pem", "--tlscert", srv + "/cert.pem",
            "--tlskey", srv + "/key.pem"]


def start(backend, source_dir):
    global _proc
    os.makedirs(RUN, exist_ok=True)
    os.makedirs(LIB, exist_ok=True)
    log = open(os.path.join(RUN, backend + ".log"), "ab")
    if backend == "docker":
        _kill_pidfile(DOCKER_PID)
        argv = ["dockerd", "--host", "unix://" + DOCKER_SOCK, "--data-root", LIB + "/docker",
                "--exec-root", RUN + "/docker-exec", "--pidfile", DOCKER_PID,
                "--bridge", "none", "--iptables=false", "--ip-masq=false"] + _tls_args()
    else:
        _kill_pidfile(PODMAN_PID)
        argv = cli(backend) + ["system", "service", "--time=0", "unix://" + PODMAN_SOCK]
    _proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                             start_new_session=True, cwd=RUN)
    if backend == "podman":
        with open(PODMAN_PID, "w") as f:
            f.write(str(_proc.pid))
    _wait_ready(backend, time.monotonic() + 60)
    remove_all(backend)
    _ensure_image(backend, source_dir)


def stop(backend):
    global _proc
    if _proc is None:
        return
    _proc.send_signal(signal.SIGTERM)
    try:
        _proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        _proc.kill()
        _proc.wait()
    _proc = None


def leftover(backend):
    """Every container on our private daemon, as 'id name (status)'."""
    r = subprocess.run(cli(backend) + ["ps", "-a", "--format", "{{.ID}} {{.Names}} ({{.Status}})"],
                       capture_output=True, text=True)
    return [line for line in r.stdout.splitlines() if line.strip()]


def remove_all(backend):
    r = subprocess.run(cli(backend) + ["ps", "-aq"], capture_output=True, text=True)
    ids = r.stdout.split()
    if ids:
        subprocess.run(cli(backend) + ["rm", "-f"] + ids, capture_output=True)
