# SPDX-License-Identifier: MIT
"""The environment bench/run compares in: the reference implementation (the
PyPI package llm-sandbox, pinned) in a private virtual environment outside
the repository, and a private dockerd with the local test image.

The dockerd is the bench's own (socket, data root and exec root under
/run/llm-sandbox-bench and /var/lib/llm-sandbox-bench), not the one of
tests/integration/containers.py: that helper's paths are fixed, and it stops
whatever daemon its pid file names, which may be a test suite another user
is running right now. This one is stopped by its PID at the end.

No registry is reachable, so nothing may be pulled: the reference pulls any
image it does not find, so every language it is asked to run must have its
default image name tagged here first (REF_IMAGES), and it is never asked to
run any other language on Docker.
"""
import json
import os
import signal
import subprocess
import time

REF_VERSION = "0.3.46"
REF_VENV = "/var/cache/llm-sandbox/bench-venv-" + REF_VERSION
REF_SERVER = REF_VENV + "/bin/llm-sandbox-mcp"

RUN = "/run/llm-sandbox-bench"
LIB = "/var/lib/llm-sandbox-bench"
SOCK = RUN + "/docker.sock"
PIDFILE = RUN + "/docker.pid"
TEST_IMAGE = "llm-sandbox-test/debian:bookworm"
DOCKER_LANGS = ("python", "javascript", "ruby")  # what the test image has
# The reference's DefaultImage names (llm_sandbox/const.py) for those
# languages; it has no image override in its MCP server.
REF_IMAGES = {
    "python": "ghcr.io/vndee/sandbox-python-311-bullseye:latest",
    "javascript": "ghcr.io/vndee/sandbox-node-22-bullseye:latest",
    "ruby": "ghcr.io/vndee/sandbox-ruby-302-bullseye:latest",
}


def ensure_ref_venv(log):
    """Create the reference's virtual environment when it is missing."""
    if os.access(REF_SERVER, os.X_OK):
        return
    log("installing llm-sandbox[mcp-docker]==%s into %s" % (REF_VERSION, REF_VENV))
    subprocess.run(["/usr/bin/python3", "-m", "venv", REF_VENV], check=True)
    subprocess.run([REF_VENV + "/bin/pip", "install", "-q",
                    "llm-sandbox[mcp-docker]==" + REF_VERSION], check=True)


def ref_versions():
    """The versions of the reference and of the packages it runs on."""
    code = ("import importlib.metadata as m, sys; print(' '.join(["
            "'llm-sandbox ' + m.version('llm-sandbox'), 'mcp ' + m.version('mcp'), "
            "'docker-py ' + m.version('docker'), 'Python ' + sys.version.split()[0]]))")
    r = subprocess.run([REF_VENV + "/bin/python", "-c", code], capture_output=True, text=True)
    return r.stdout.strip() or r.stderr.strip()


def docker(*args, check=True):
    return subprocess.run(["docker", "-H", "unix://" + SOCK] + list(args), check=check,
                          capture_output=True, text=True)


class Dockerd:
    """A private dockerd: no bridge, no iptables, so containers have no
    network; started and stopped by its PID."""

    def __init__(self, log):
        self.log = log
        self.proc = None

    def __enter__(self):
        os.makedirs(RUN, exist_ok=True)
        os.makedirs(LIB, exist_ok=True)
        self._stop_stale()
        self.logpath = os.path.join(RUN, "dockerd.log")
        out = open(self.logpath, "ab")
        self.logstart = out.tell()
        self.proc = subprocess.Popen(
            ["dockerd", "--host", "unix://" + SOCK, "--data-root", LIB + "/docker",
             "--exec-root", RUN + "/docker-exec", "--pidfile", PIDFILE,
             "--bridge", "none", "--iptables=false", "--ip-masq=false"],
            stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while docker("version", check=False).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("dockerd did not start; see %s/dockerd.log" % RUN)
            time.sleep(0.2)
        self.remove_containers()
        return self

    def _stop_stale(self):
        """A dockerd an interrupted bench left on our paths."""
        try:
            with open(PIDFILE) as f:
                pid = int(f.read().strip())
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() != "dockerd":
                    return
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            return
        for _ in range(300):
            if not os.path.exists("/proc/%d" % pid):
                return
            time.sleep(0.1)

    def __exit__(self, *exc):
        if self.proc is None:
            return
        self.remove_containers()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def version(self):
        return docker("version", "--format", "{{.Server.Version}}", check=False).stdout.strip()

    def stop_waits(self, since, until):
        """For each container stopped between the two Unix times: seconds
        from the SIGTERM of `docker stop` to the container's death."""
        r = docker("events", "--since", "%.3f" % since, "--until", "%.3f" % until,
                   "--filter", "type=container", "--format", "{{json .}}", check=False)
        term, waits = {}, []
        for line in r.stdout.splitlines():
            ev = json.loads(line)
            cid, t = ev.get("id"), ev.get("timeNano", 0) / 1e9
            if ev.get("Action") == "kill" and ev["Actor"]["Attributes"].get("signal") == "15":
                term[cid] = t
            elif ev.get("Action") == "die" and cid in term:
                waits.append(t - term.pop(cid))
        return waits

    def pull_attempts(self):
        """The daemon's log lines of image pulls since it started (none
        should happen: no registry is reachable and nothing may be pulled)."""
        with open(self.logpath, "rb") as f:
            f.seek(self.logstart)
            return [line.decode(errors="replace").strip() for line in f
                    if b"images/create" in line]

    def remove_containers(self):
        ids = docker("ps", "-aq", check=False).stdout.split()
        if ids:
            docker("rm", "-f", *ids, check=False)

    def ensure_test_image(self, source_dir):
        """Import the tests' image (built and cached by
        scripts/container-test-image.sh, its file named after its recipe's
        hash) when the data root lacks that very one: the bench's data root
        outlives a recipe change (pip, npm), so the name alone is not enough."""
        tar = subprocess.run([os.path.join(source_dir, "scripts", "container-test-image.sh")],
                             check=True, capture_output=True, text=True).stdout.strip()
        exact = TEST_IMAGE.split(":")[0] + ":" + os.path.basename(tar).rsplit(".", 1)[0]
        if docker("image", "inspect", exact, check=False).returncode != 0:
            self.log("importing %s into the bench's dockerd" % tar)
            docker("import", tar, exact)
        docker("tag", exact, TEST_IMAGE)

    def tag_reference_plain(self):
        """The test image itself under the reference's names."""
        for name in REF_IMAGES.values():
            docker("tag", TEST_IMAGE, name)

    def tag_reference_compat(self):
        """The test image plus the two things the reference needs to start at
        all: a default command (the images it pulls inherit CMD ["python3"]
        from python:3.11-bullseye; an imported root file system has none, and
        it creates its containers without a command) and the name `python`,
        which it calls to make its virtual environment. Made with run and
        commit, never a build: nothing is pulled."""
        name = "bench-ref-compat"
        docker("rm", "-f", name, check=False)
        docker("run", "--name", name, "--network", "none", TEST_IMAGE,
               "ln", "-sf", "python3", "/usr/bin/python")
        docker("commit", "--change", 'CMD ["python3"]', name, REF_IMAGES["python"])
        docker("rm", "-f", name, check=False)
        for lang, image in REF_IMAGES.items():
            if lang != "python":
                docker("tag", REF_IMAGES["python"], image)
