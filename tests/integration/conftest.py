# SPDX-License-Identifier: MIT
"""Integration tests: the real llm-sandbox binary under a real local jail.

Run by Debian's interpreter (python3-pytest, nothing else):

    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration

SBX_TEST_BACKEND picks the backend every run uses (bwrap, the default,
nsjail, docker, podman, mxc: Microsoft MXC's Linux executor, which
scripts/mxc-executor.sh fetches, or LLM_SANDBOX_MXC_EXECUTOR names, or
wsl2: bubblewrap through the WSL2 plugin, with wsl.exe's stand-in
tests/wsl2/wsl_shim.c, built as SBX_BUILD_DIR/tests/wsl-shim, as launcher). The
modules marked `contract` are the backend contract suite: ctest runs
them against every local backend from this one list, so the backends
cannot drift apart; the others (arguments, configuration, plugins, the
harness) test the front end and run once.

as root and again as an unprivileged user (run-unprivileged.sh). Where the
two legitimately differ (the sandbox's host uid, what only root may do),
tests branch on ROOT; whether cgroups enforce the limits is not a matter of
being root (cgroup v1 as root, a delegated cgroup v2 subtree for anyone),
so those tests branch on what the binary reports here (cgroup_facts(),
from doctor --json) and assert each behaviour precisely.

SBX_TEST_SLOWNESS (default 1) scales the wall-clock bounds that measure
how promptly something ends; only the VM guest under QEMU's software
emulation sets it (tests/vm/guest-run.sh says why and how much).

Environment (set by ctest): SBX_BIN (the binary), SBX_BUILD_DIR, SBX_SOURCE_DIR.

Every CLI run gets a clean environment plus a marker variable that the
sandbox passes through (LLM_SANDBOX_ENV_ALLOW), so the autouse fixture
`nothing_left_behind` can tell our processes from those of anything else on
the machine and check, after every test, that no process, cgroup or /tmp
entry of ours survived.
"""
import fcntl
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

import cluster
import containers

# ctest sets these; run by hand, the source tree's build/ is assumed.
SBX_SOURCE_DIR = os.environ.get("SBX_SOURCE_DIR",
                                os.path.dirname(os.path.dirname(os.path.dirname(
                                    os.path.abspath(__file__)))))
SBX_BIN = os.path.abspath(os.environ.get("SBX_BIN", os.path.join(SBX_SOURCE_DIR, "build", "bin",
                                                                 "llm-sandbox")))
SBX_BUILD_DIR = os.environ.get("SBX_BUILD_DIR", os.path.dirname(os.path.dirname(SBX_BIN)))

ROOT = os.geteuid() == 0
# The backend under test, and the name its launcher process has on the host.
BACKEND = os.environ.get("SBX_TEST_BACKEND", "bwrap")
# Container backends: the agent itself is pid 1 of the container (its comm
# is "agent", as in the local jails), the daemon is one the tests start.
# Kubernetes is one of them (a pod of this machine's own single-node cluster,
# tests/integration/cluster.py), with what a cluster changes: a pod takes
# seconds to start, there is no pids limit field, leftovers are API objects.
CLUSTER = BACKEND == "kubernetes"
CONTAINER = BACKEND in ("docker", "podman") or CLUSTER
LAUNCHER = {"bwrap": "bwrap", "nsjail": "nsjail", "docker": "agent", "podman": "agent",
            "kubernetes": "agent", "mxc": "lxc-exec", "wsl2": "wsl2-open"}[BACKEND]
# What starting a sandbox adds to a run's duration beyond a local container's.
START_SLACK_MS = 12000 if CLUSTER else 0
# MXC (plugins/mxc): bwrap, not the agent, is pid 1 of its box, the box's
# workspace is a host directory bound at its own path, and its root and
# /etc are MXC's (README.md there says what each control becomes).
MXC = BACKEND == "mxc"
# WSL2 (plugins/wsl2): bwrap's boxes, started through wsl.exe's stand-in
# (which execs bwrap); the distribution and user the stand-in accepts. On a
# Windows machine, LLM_SANDBOX_WSL2_LAUNCHER, _DISTRO and _USER in the
# environment name the real ones (plugins/wsl2/README.md).
WSL2 = BACKEND == "wsl2"
WSL2_SHIM = os.path.join(SBX_BUILD_DIR, "tests", "wsl-shim")
# The opener the plugin runs in the distribution (plugins/wsl2/open.c):
# here the build's, beside the plugin (its default); on Windows where it
# was installed there.
WSL2_OPENER = os.path.join(SBX_BUILD_DIR, "lib", "llm-sandbox", "plugins", "wsl2-open")
WSL2_ENV = {k: os.environ.get(k, v) for k, v in (
    ("LLM_SANDBOX_WSL2_LAUNCHER", WSL2_SHIM), ("LLM_SANDBOX_WSL2_DISTRO", "sbx-wsl2-test"),
    ("LLM_SANDBOX_WSL2_USER", "sbx-wsl2"), ("LLM_SANDBOX_WSL2_OPENER", WSL2_OPENER))}
# settings.c: the host uid sandboxed code runs as when the server is root.
SANDBOX_UID = 1879048192
SANDBOX_GID = 1879048192
# What a sandboxed process's uid looks like from outside: with the server
# unprivileged, its own; as root, see is_sandbox_host_uid.
HOST_UID_OF_SANDBOX = SANDBOX_UID if ROOT else os.geteuid()
# settings.c: as root, each box (a run's, a session's) runs as a host uid of
# its own, with the gid of the same number, from LLM_SANDBOX_UID_RANGE;
# probes and backends without ABI 1.5 (kubernetes, mxc) use SANDBOX_UID
# (wsl2 runs bubblewrap's runner, and so the box's own).
UID_RANGE = range(1879113728, 1879113728 + 65536)
# A warning that a limit is held by a fallback or not at all: where no
# cgroup is writable (an unprivileged user here) every run has them.
WEAK_LIMIT = re.compile(r"limit (enforced by a fallback|not enforced)")
OWN_UIDS = ("bwrap", "nsjail", "docker", "podman", "wsl2")
# Docker and Podman as root: a session on a daemon the tests start
# (containers.py), which may run beside a root session of the local
# backends (scripts/test.sh runs them so). Each kind takes a lock of its
# own (pytest_configure), and counts as left behind only what it can tell
# is its own: no process of the other's runs (beside_us()), and in a
# daemon session no group or root /tmp entry it did not make.
DAEMON = BACKEND in ("docker", "podman") and ROOT
# What a container's processes have in their cgroup path (cgroupfs, the
# only manager these daemons get here: the host has no systemd)
DAEMON_CGROUP = {"docker": "/docker/", "podman": "/libpod-"}


def host_account_ids():
    """Every uid and gid /etc/passwd or /etc/group names."""
    ids = set()
    for path, fields in (("/etc/passwd", (2, 3)), ("/etc/group", (2,))):
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split(":")
                ids.update(int(parts[i]) for i in fields
                           if len(parts) > i and parts[i].isdigit())
    return ids


def inside_ids(uid, gid):
    """Are these the ids a sandboxed program sees for itself? INSIDE_UID
    and INSIDE_GID, but in a container of a box with a host uid of its own
    (Docker, Podman: no user namespace), that uid: one of the range."""
    if CONTAINER and ROOT and BACKEND in OWN_UIDS:
        return uid == gid and uid in UID_RANGE
    return (uid, gid) == (INSIDE_UID, INSIDE_GID)


def is_sandbox_host_uid(uid):
    """Could uid be a sandbox's, seen from the host? Unprivileged: the
    server's own. As root: one of the range (or SANDBOX_UID), never 0."""
    if not ROOT:
        return uid == os.geteuid()
    return uid == SANDBOX_UID or uid in UID_RANGE


def assert_box_ids(uids, gids, where=""):
    """A sandbox process's four uids and four gids (/proc status fields,
    split) are one host id of the sandbox's own: as root on a backend of
    ABI 1.5, one of the range that no host account has (uid == gid);
    otherwise the shared ones. Returns the uid."""
    assert len(set(uids)) == 1 and len(uids) == 4, (where, uids)
    uid = int(uids[0])
    if not ROOT:
        assert uid == os.geteuid(), (where, uids)
        return uid
    assert len(set(gids)) == 1 and len(gids) == 4, (where, gids)
    if BACKEND in OWN_UIDS:
        assert uid in UID_RANGE and int(gids[0]) == uid, (where, uids, gids)
        assert uid not in host_account_ids(), (where, uid)
    else:
        assert uid == SANDBOX_UID and int(gids[0]) == SANDBOX_GID, (where, uids, gids)
    return uid
# ... and from inside: local jails map it to 1000 in a user namespace;
# containers have no user namespace, so the sandbox uid is the same inside;
# MXC's bwrap maps the host uid to itself.
if CONTAINER:
    # Docker and Podman (as root only): the box's own, see inside_ids
    INSIDE_UID, INSIDE_GID = SANDBOX_UID, SANDBOX_GID
elif MXC:
    INSIDE_UID, INSIDE_GID = (SANDBOX_UID, SANDBOX_GID) if ROOT else (os.geteuid(), os.getegid())
else:
    INSIDE_UID, INSIDE_GID = 1000, 1000

# How many times slower than real hardware sandboxes start and end here
# (see the module docstring); 1 everywhere but the emulated guest.
SLOW = float(os.environ.get("SBX_TEST_SLOWNESS", "1"))

MIB = 1024 * 1024
DEFAULT_OUTPUT_CAP = 1 * MIB
DEFAULT_MEMORY = 512 * MIB
DEFAULT_FILE_SIZE = 256 * MIB
DEFAULT_WORKSPACE = 512 * MIB
DEFAULT_PIDS = 256
EXIT_TIMEOUT = 124
EXIT_TOOL = 125

# Every key of the JSON result (issue 2, section 9).
RESULT_FIELDS = (
    "status", "exit_code", "limit", "stdout", "stderr", "stdout_truncated",
    "stderr_truncated", "stdout_bytes", "stderr_bytes", "duration_ms", "backend",
    "language", "message", "artifacts", "warnings",
)
STATUSES = {"ok", "error", "timeout", "oom", "killed", "cancelled", "refused"}
LIMITS = {None, "wall_time", "memory", "pids", "file_size", "workspace"}

# The sandbox's documented environment: run.c's fixed base plus the python
# manifest's env (langs/python/python.yaml).
BASE_ENV = {
    "PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
    "USER": "sandbox", "LOGNAME": "sandbox",
}
PYTHON_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg",
              "OPENBLAS_NUM_THREADS": "1",
              "PYTHONPATH": "/tmp/.sbx/python"}  # plot capture (langs/python/plots.py)

# Marker passed into every sandbox we start (see the module docstring).
MARK_KEY = "SBX_ITEST_MARK"
SESSION = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:12])

# Names of the processes a run consists of (outside view).
RUN_COMMS = {"llm-sandbox", "bwrap", "nsjail", "agent", "sbx-agent", "lxc-exec", "pasta",
             "pasta.avx2", "passt",
             "python3", "sleep", "sh"}

# Pids of every CLI process we started during the current test (for the
# cgroup check: groups are named p<PID>t<STARTTIME>-<SEQ> after their owner).
_cli_pids = []


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "contract: the backend contract suite, run against every local backend")
    config.addinivalue_line("markers", "mxc: the mxc backend's own checks (test_mxc.py)")
    config.addinivalue_line("markers", "wsl2: the wsl2 backend's own checks (test_wsl2.py)")
    # One integration session at a time per kind of user: the leftover
    # checks count the processes, cgroups and /tmp entries of any run of
    # the same user, so a second such session (another clone, a CI run)
    # would fail them. A root session and an unprivileged one see disjoint
    # things (their sandboxes run as other host uids, an unprivileged run
    # makes no cgroup, each counts only its own uid's /tmp entries), so
    # they may run side by side (scripts/test.sh does). So may a root
    # session on Docker or Podman and one on a local backend (DAEMON says
    # how they keep apart). A directory every user can open is the lock,
    # so no file needs creating: /tmp for root, /var/tmp for everyone
    # else, and the daemons' run directory for a root session on one.
    global _session_lock
    if DAEMON:
        os.makedirs(containers.RUN, exist_ok=True)
    _session_lock = os.open(containers.RUN if DAEMON else "/tmp" if ROOT else "/var/tmp",
                            os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(_session_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.stderr.write("waiting for another integration test session on this machine\n")
        fcntl.flock(_session_lock, fcntl.LOCK_EX)


_session_lock = -1


# What a host builds once per toolchain and cache (the Go standard library
# packages, the C++ precompiled header): about 40 s on the 2-core machine,
# longer beside other work. Built before the first test, with its own
# bound, so that no test's 90 s limit includes it.
WARM_UP = (("go", 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("warm") }\n', None),
           ("cpp", '#include <bits/stdc++.h>\nint main() { std::puts("warm"); }\n', None))
# With SBX_TEST_SEED_WARM=1 (test_installs.py's seed_warm_sets), in a
# session that runs test_go_module, also the set a Go run with modules uses
# (their environment is part of its key), which that test's fresh cache
# then starts with.
WARM_UP_SEED = (("go", 'package main\n\nimport (\n\t"fmt"\n\n\t_ "github.com/google/uuid"\n)\n\n'
                 'func main() { fmt.Println("warm") }\n', "github.com/google/uuid@v1.6.0"),)


def warm_caches(which=WARM_UP):
    for lang, src, libs in which:
        t0 = time.monotonic()
        try:
            p = subprocess.run([SBX_BIN, "run", "--json", "--language", lang, "--timeout", "300",
                                *(["--libraries", libs] if libs else []), "--code", src],
                               env=clean_env(mark=False), capture_output=True,
                               timeout=900, cwd="/")
            ok = p.returncode == 0 and b'"warm\\n"' in p.stdout
        except subprocess.TimeoutExpired:
            ok = False
        took = time.monotonic() - t0
        if took > 5 or not ok:
            sys.stderr.write("warm-up of %s on %s: %.0f s (%s: its cache %s)\n" % (
                lang, BACKEND, took, "ok" if ok else "failed, the tests will say why",
                "was cold" if took > 5 else "was warm"))


_mxc_executor = None


def mxc_executor():
    """MXC's lxc-exec: LLM_SANDBOX_MXC_EXECUTOR, or what
    scripts/mxc-executor.sh fetched (npm pack, integrity checked, cached
    outside the repository; its last line is the path)."""
    global _mxc_executor
    if _mxc_executor is None:
        _mxc_executor = os.environ.get("LLM_SANDBOX_MXC_EXECUTOR")
    if _mxc_executor is None:
        p = subprocess.run(["/bin/sh", os.path.join(SBX_SOURCE_DIR, "scripts", "mxc-executor.sh")],
                           capture_output=True, timeout=600)
        assert p.returncode == 0, "scripts/mxc-executor.sh failed: %r" % (p.stderr[-2000:],)
        _mxc_executor = p.stdout.decode().strip().splitlines()[-1]
    return _mxc_executor


def mxc_agent_dirs():
    """The mxc plugin's copies of the agent (plugins/mxc/agentdir.c) that
    this user's servers keep in /var/tmp, one per live server."""
    out = set()
    for path in glob.glob("/var/tmp/llm-sandbox-mxc-*"):
        try:
            if os.lstat(path).st_uid == os.geteuid():
                out.add(path)
        except OSError:
            pass
    return out


def pytest_sessionstart(session):
    if CLUSTER and ROOT:
        cluster.start(SBX_SOURCE_DIR)
    elif CONTAINER and ROOT:
        containers.start(BACKEND, SBX_SOURCE_DIR)
    # (MXC has no warm-up sets to build: every build there is cold.)
    # SBX_TEST_WARM=0: no warm-up, for a subset that runs no Go or C++ (the
    # VM guest's quick one, where a cold Go warm-up takes over 10 minutes)
    if not CONTAINER and not MXC and \
            os.environ.get("SBX_TEST_SUITE", "integration") == "integration" and \
            os.environ.get("SBX_TEST_WARM", "1") != "0":
        warm_caches()


def pytest_collection_finish(session):
    if os.environ.get("SBX_TEST_SEED_WARM") == "1" and not CONTAINER and not MXC and \
            os.environ.get("SBX_TEST_WARM", "1") != "0" and \
            any(i.nodeid.endswith("test_installs.py::test_go_module") for i in session.items):
        warm_caches(WARM_UP_SEED)


def pytest_sessionfinish(session, exitstatus):
    if CLUSTER and ROOT:
        cluster.stop(SBX_SOURCE_DIR)
    elif CONTAINER and ROOT:
        containers.stop(BACKEND)


def pytest_collection_modifyitems(config, items):
    """Container backends run the languages their test image carries
    (scripts/container-test-image.sh); the others would need images this
    machine cannot pull, so their cases are skipped, by name."""
    if not CONTAINER:
        return
    if CLUSTER and not cluster.FULL:  # the contract suite's share (other suites run whole)
        here = os.path.dirname(os.path.abspath(__file__))
        kept = [i for i in items if os.path.dirname(str(i.fspath)) != here or
                cluster.in_ci_budget(os.path.basename(str(i.fspath)), i.name)]
        dropped = [i for i in items if i not in kept]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    for item in items:
        if not ROOT:  # dockerd and a rootful podman service need root
            item.add_marker(pytest.mark.skip(reason="%s tests start their own daemon: root only"
                                             % BACKEND))
            continue
        module = os.path.basename(str(item.fspath))
        if CLUSTER and module in ("test_containers.py", "test_docker_tls.py"):
            item.add_marker(pytest.mark.skip(reason="Docker and Podman only"))
            continue
        lang = getattr(item, "callspec", None) and item.callspec.params.get("lang")
        named = [l for l in containers.MISSING_LANGS if "_%s_" % l in item.name + "_"]
        if lang in containers.MISSING_LANGS or (lang is None and named):
            item.add_marker(pytest.mark.skip(
                reason="the %s test image has no %s toolchain (it carries %s)"
                % (BACKEND, lang or named[0], ", ".join(containers.IMAGE_LANGS))))


# --------------------------------------------------------------------------
# Running the CLI


def new_mark():
    """A marker value unique to one run, attributable to this session."""
    return "%s:%s" % (SESSION, uuid.uuid4().hex[:8])


def clean_env(extra=None, mark=True, mark_value=None):
    """The environment a CLI run gets: minimal, so the outer environment
    (BACKEND, SANDBOX_MEMORY, ...) cannot change what is tested."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "BACKEND": BACKEND,
           # no ready sandboxes (pool.c) unless a test asks: a server's
           # pooled interpreter would count among a test's sandboxed
           # processes; test_pool.py tests them
           "LLM_SANDBOX_POOL": "0"}
    # sanitizer builds, and where this host keeps nsjail (not in Debian)
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "LLM_SANDBOX_NSJAIL_PATH"):
        if k in os.environ:
            env[k] = os.environ[k]
    if MXC:
        env["LLM_SANDBOX_MXC_EXECUTOR"] = mxc_executor()
        # MXC's box root is writable tmpfs: the backend refuses a read-only
        # system (test_mxc.py checks the refusal), so its runs accept that
        env["SANDBOX_READ_ONLY"] = "false"
    if WSL2:
        env.update(WSL2_ENV)
    if CLUSTER:
        env.update(cluster.client_env())
    elif CONTAINER:
        env.update(containers.client_env(BACKEND))
    if mark:
        env[MARK_KEY] = mark_value or new_mark()
        env["LLM_SANDBOX_ENV_ALLOW"] = MARK_KEY
    if extra:
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
    return env


class Run:
    """One finished CLI invocation."""

    def __init__(self, args, rc, out, err, wall):
        self.args = args
        self.rc = rc
        self.out = out      # bytes
        self.err = err      # bytes
        self.wall = wall    # seconds, measured from outside
        self._json = None

    @property
    def json(self):
        if self._json is None:
            self._json = parse_single_json(self.out, self)
        return self._json

    def __repr__(self):
        return "Run(args=%r, rc=%r, out=%r, err=%r)" % (
            self.args, self.rc, self.out[:2000], self.err[:2000])


def parse_single_json(out, run=None):
    """stdout must be exactly one JSON object on one line."""
    text = out.decode("utf-8")
    assert text.endswith("\n"), "JSON output must end with a newline: %r" % (run,)
    body = text[:-1]
    assert "\n" not in body, "expected exactly one line of JSON, got %r" % (run,)
    obj = json.loads(body)
    assert isinstance(obj, dict), "expected a JSON object, got %r" % (obj,)
    return obj


def run_cli(args, env=None, input=None, timeout=90, stdin=None, extra_env=None, mark=True):
    """Run the binary with args; return a Run. env replaces the default
    clean environment entirely; extra_env adds to it."""
    if env is None:
        env = clean_env(extra_env, mark=mark)
    argv = [SBX_BIN] + list(args)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdin=stdin if stdin is not None else
                         (subprocess.PIPE if input is not None else subprocess.DEVNULL),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")
    _cli_pids.append(p.pid)
    try:
        out, err = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail("llm-sandbox %r did not return within %ss (stdout %r, stderr %r)"
                    % (args, timeout, out[:500], err[:500]))
    return Run(args, p.returncode, out, err, time.monotonic() - t0)


def sbx(*args, **kw):
    """`llm-sandbox run --json ARGS`; returns the Run (result in .json),
    after checking the JSON contract."""
    r = run_cli(["run", "--json"] + list(args), **kw)
    check_contract(r)
    return r


class Result(dict):
    """A parsed result whose repr (in assertion messages) shows what matters
    first, with the output shortened."""

    def __repr__(self):
        short = {k: (v[:300] + "...[%d chars]" % len(v) if isinstance(v, str) and len(v) > 300
                     else v) for k, v in self.items() if k != "_run"}
        keys = ["status", "exit_code", "limit", "message", "stdout", "stderr"]
        head = ", ".join("%s=%r" % (k, short.get(k)) for k in keys)
        rest = ", ".join("%s=%r" % (k, v) for k, v in short.items() if k not in keys)
        return "Result(%s, %s)" % (head, rest)


def code(src, *args, **kw):
    """Run python source with --json; returns the parsed result dict (the
    Run is in result['_run'])."""
    r = sbx("--code", src, *args, **kw)
    res = Result(r.json)
    res["_run"] = r
    return res


def check_contract(r):
    """Every field present with the right type, whatever the outcome."""
    res = r.json
    missing = [k for k in RESULT_FIELDS if k not in res]
    assert not missing, "result lacks %s: %r" % (missing, res)
    assert res["status"] in STATUSES, res
    assert res["exit_code"] is None or isinstance(res["exit_code"], int), res
    assert res["limit"] in LIMITS, res
    assert isinstance(res["stdout"], str) and isinstance(res["stderr"], str), res
    assert isinstance(res["stdout_truncated"], bool), res
    assert isinstance(res["stderr_truncated"], bool), res
    for k in ("stdout_bytes", "stderr_bytes", "duration_ms"):
        assert isinstance(res[k], int) and not isinstance(res[k], bool) and res[k] >= 0, (k, res)
    assert res["backend"] is None or isinstance(res["backend"], str), res
    assert res["language"] is None or isinstance(res["language"], str), res
    assert res["message"] is None or isinstance(res["message"], str), res
    assert isinstance(res["artifacts"], list), res
    for a in res["artifacts"]:  # files the run wrote (tests/integration/test_artifacts.py)
        assert set(a) >= {"path", "size", "mime_type"} and not a["path"].startswith("/"), a
        assert isinstance(a["size"], int) and a["size"] >= 0, a
    assert isinstance(res["warnings"], list) and all(isinstance(w, str) for w in res["warnings"])
    if res["status"] == "refused":
        assert res["exit_code"] is None and res["message"], res
    if res["status"] == "ok":
        assert res["exit_code"] == 0 and res["limit"] is None, res
    if res["status"] == "timeout":
        assert res["limit"] == "wall_time", res
    for s in ("stdout", "stderr"):
        kept = len(res[s].encode("utf-8", "surrogatepass"))
        if not res[s + "_truncated"] and "\ufffd" not in res[s]:
            assert res[s + "_bytes"] == kept, (s, res)


# Warnings a backend gives on every result as root: Kubernetes has no pids
# limit for a pod, so the agent's RLIMIT_NPROC stands in (a fallback).
STANDING_WARNINGS = ("pids limit enforced by a fallback: RLIMIT_NPROC",) if CLUSTER else ()


def expected_cli_rc(res):
    """The CLI's own exit code for a result (run_cmd.c / cli.h)."""
    if res["status"] == "timeout":
        return EXIT_TIMEOUT
    if res["status"] == "cancelled":
        return 130
    if res["status"] == "refused" or res["exit_code"] is None:
        return EXIT_TOOL
    return res["exit_code"]


def plugins_json(extra_env=None):
    r = run_cli(["plugins", "--json"], extra_env=extra_env, mark=False)
    assert r.rc == 0, r
    data = json.loads(r.out)
    assert isinstance(data, list), data
    return data


def plugin_entry(plugins, name, manifest_dir=None):
    for p in plugins:
        if p["name"] == name and (manifest_dir is None or
                                  os.path.dirname(p["manifest"]) == manifest_dir):
            return p
    raise AssertionError("plugin %s (in %s) not listed: %r" % (name, manifest_dir, plugins))


_backend_controls = None


def backend_controls():
    """The capability report of the backend under test here, as plugins
    --json says."""
    global _backend_controls
    if _backend_controls is None:
        entry = plugin_entry(plugins_json(), BACKEND)
        assert entry["status"] == "ok" and entry["probe"] == "ok", entry
        _backend_controls = entry["controls"]
    return _backend_controls


def workspace_sized():
    """Does the backend under test size the workspace (and /tmp)? MXC's
    tmpfs have no size: there a request for one is refused, and every run
    carries the warning below."""
    return backend_controls()["workspace"]["level"] == "full"


def skip_unless_warm_sets():
    """Warm-up sets (a language's precompiled standard library at /warm) are
    host directories the core mounts into boxes: a backend that cannot
    (MXC) builds everything cold, which is slower but not wrong."""
    ctl = backend_controls()["host_mounts"]
    if ctl["level"] != "full":
        pytest.skip("%s has no warm-up sets: host_mounts is %s (%s)"
                    % (BACKEND, ctl["level"], ctl["note"]))


def other_warnings(res):
    """res's warnings without those every run carries on its backend (a
    backend that cannot size the workspace; a pod's pids fallback): the
    tests that count warnings count these."""
    ctl = backend_controls()["workspace"]
    standing = "workspace limit not enforced: %s" % ctl["note"]
    return [w for w in res["warnings"] if (ctl["level"] == "full" or w != standing) and
            not w.startswith(STANDING_WARNINGS or ("\0",))]


# --------------------------------------------------------------------------
# Looking at the host from outside


def proc_stat(pid):
    """(comm, state, ppid, starttime) of a process, or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    lp, rp = data.index("("), data.rindex(")")
    comm = data[lp + 1:rp]
    fields = data[rp + 2:].split()
    return comm, fields[0], int(fields[1]), int(fields[19])


def proc_uid(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def owner_scope(pid):
    """The scope in an instance's name (core/src/host/owner.c): FNV-1a of
    "<boot id>/<inode of its pid namespace>", 16 hex digits."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        text = "%s/%d" % (f.read().strip(), os.stat("/proc/%d/ns/pid" % pid).st_ino)
    h = 0xcbf29ce484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def owner_name(pid):
    """A live instance's name, p<PID>t<STARTTIME>h<SCOPE>: its cgroups'
    prefix and its containers' owner label."""
    st = proc_stat(pid)
    assert st is not None, "instance %d is gone" % pid
    return "p%dt%dh%s" % (pid, st[3], owner_scope(pid))


def proc_describe(pid):
    """A process's state, command line and cgroup, for a failure message."""
    out = [pid, proc_stat(pid)]
    for name in ("cmdline", "cgroup"):
        try:
            with open("/proc/%d/%s" % (pid, name), "rb") as f:
                out.append(f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip())
        except OSError as e:
            out.append(str(e))
    return out


def proc_environ(pid):
    """The process's environment as a list of 'K=V', or None if unreadable."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return [e.decode("utf-8", "replace") for e in f.read().split(b"\0") if e]
    except OSError:
        return None


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def process_snapshot():
    """{(pid, starttime)} of every process now."""
    snap = set()
    for pid in all_pids():
        st = proc_stat(pid)
        if st:
            snap.add((pid, st[3]))
    return snap


def has_mark(environ, mark_prefix):
    return environ is not None and any(e.startswith(mark_prefix) for e in environ)


def find_marked(mark_value, comm=None):
    """Live processes whose environment holds MARK_KEY=mark_value."""
    want = "%s=%s" % (MARK_KEY, mark_value)
    found = []
    for pid in all_pids():
        env = proc_environ(pid)
        if env is None or want not in env:
            continue
        st = proc_stat(pid)
        if st and st[1] != "Z" and (comm is None or st[0] == comm):
            found.append(pid)
    return found


def describe_pids(pids):
    """One line per pid: comm, state, parent (and its comm) and command line,
    for a failure message that says what was left."""
    out = []
    for pid in pids:
        st = proc_stat(pid)
        if not st:
            out.append("%d (gone)" % pid)
            continue
        chain, up = [], st[2]
        while up > 1 and len(chain) < 8:
            ust = proc_stat(up)
            if not ust:
                break
            chain.append("%d %s" % (up, ust[0]))
            up = ust[2]
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            cmd = "?"
        out.append("%d %s state %s, under %s: %s" % (pid, st[0], st[1], " < ".join(chain) or "init",
                                                     cmd[:120]))
    return "\n".join(out)


def launcher_above(pid):
    """The launcher (comm LAUNCHER, a child of the CLI) among pid's
    ancestors, or None."""
    while pid > 1:
        st = proc_stat(pid)
        if not st:
            return None
        parent = proc_stat(st[2])
        if st[0] == LAUNCHER and parent and parent[0] == "llm-sandbox":
            return pid
        pid = st[2]
    return None


def find_launcher(mark_value):
    """The launcher processes of the run marked mark_value. Under wsl2 the
    launcher is wsl.exe's stand-in become the plugin's opener (bwrap's
    parent, plugins/wsl2/open.c), in the environment of a WSL
    session (wsl.exe carries none of ours, so not the marker either): it is
    found above the run's marked processes."""
    if not WSL2:
        return find_marked(mark_value, LAUNCHER)
    found = []
    for pid in find_marked(mark_value):
        launcher = launcher_above(pid)
        if launcher and launcher not in found:
            found.append(launcher)
    return found


def container_of(pid):
    """The daemon ("docker", "podman") whose container pid is in, by its
    cgroup path, or None."""
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            groups = f.read()
    except OSError:
        return None
    return next((d for d, mark in DAEMON_CGROUP.items() if mark in groups), None)


def ancestry(pid):
    """(pid, comm) of pid and of each of its ancestors below init, as long
    as /proc still has them."""
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        st = proc_stat(pid)
        if st is None:
            return
        yield pid, st[0]
        pid = st[2]


def beside_us(pid):
    """Is pid, a process of a sandbox's host uid, a run of the root session
    that may run beside this one (DAEMON)? For a local session, any
    container's process; for a DAEMON session, another daemon's, or one
    outside the containers below a live llm-sandbox (a local run: one of
    ours outside its container would have no such parent)."""
    daemon = container_of(pid)
    if not DAEMON:
        return daemon is not None
    if daemon is not None:
        return daemon != BACKEND
    return any(comm == "llm-sandbox" for _, comm in ancestry(pid))


def leftover_processes(before):
    """Non-zombie processes that appeared during the test and belong to our
    runs: they carry this session's marker, or (their environment being
    unreadable, as for the agent, which makes itself non-dumpable) they run
    as the sandbox's host uid and are named like part of a run, and are not
    a run of the session beside this one (beside_us)."""
    me = os.getpid()
    prefix = "%s=%s:" % (MARK_KEY, SESSION)
    out = []
    for pid in all_pids():
        if pid == me:
            continue
        st = proc_stat(pid)
        if not st or (pid, st[3]) in before or st[1] in ("Z", "X"):
            continue
        env = proc_environ(pid)
        uid = proc_uid(pid)
        ours = has_mark(env, prefix) or (
            env is None and uid is not None and is_sandbox_host_uid(uid) and st[0] in RUN_COMMS
            and not beside_us(pid))
        if ours:
            out.append((pid, st[0], uid, st[1]))
    return out


_cgroup = None


def cgroup_facts():
    """What the binary says about cgroups here: doctor --json's "cgroup"
    object (core/src/runtime/report.c): version (1, 2 or None), enforced,
    how ("v1", "delegated", "scope", "unmanaged", "not-delegated",
    "scope-failed", "none"), unit, scope, parent (where the groups go),
    controllers. Asked once per session (in a delegated unit, this first
    run moves the harness itself into the unit's leaf cgroup)."""
    global _cgroup
    if _cgroup is None:
        p = subprocess.run([SBX_BIN, "doctor", "--json"], env=clean_env(mark=False),
                           capture_output=True, timeout=300, cwd="/")
        try:
            _cgroup = json.loads(p.stdout)["cgroup"]
        except (ValueError, KeyError) as e:
            raise AssertionError("doctor --json gave no cgroup facts (%s): %r" % (e, p))
    return _cgroup


def cgroups_enforced():
    """Memory, pids and CPU limits are cgroups here (else rlimit fallbacks
    and no CPU quota). Under wsl2, the distribution's cgroup the opener
    makes, as the plugin reports it, not the core's (plugins/wsl2)."""
    if WSL2:
        return backend_controls()["memory"]["level"] == "full"
    return bool(cgroup_facts()["enforced"])


def cgroup_version():
    return cgroup_facts()["version"]


def _scope_slices():
    """Where the transient scopes of our runs appear (cgroup v2 under
    systemd, when the binary asks for one per process): the slice above
    the scope doctor's own run got."""
    f = cgroup_facts()
    if f["version"] != 2 or f["how"] != "scope" or not f["parent"]:
        return []
    return [os.path.dirname(os.path.dirname(f["parent"]))]


# core/src/host/scope.c: "llm-sandbox-<OWNER>.scope"
SCOPE_RE = re.compile(r"^llm-sandbox-p(\d+)t(\d+)h([0-9a-f]{16})\.scope$")


def run_scopes():
    """{path} of the transient scopes our runs' servers live in."""
    out = set()
    for sl in _scope_slices():
        out.update(g for g in glob.glob(os.path.join(sl, "llm-sandbox-*.scope"))
                   if SCOPE_RE.match(os.path.basename(g)))
    return out


def cgroup_parents():
    """Every 'llm-sandbox' parent directory our runs could use: under each
    cgroup mount, at this process's own cgroup path (what the CLI inherits;
    on v2 without the leaf a run moved us to), directly under each v1
    hierarchy, and in the transient scopes of runs on v2."""
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            own[ctrls] = path
    if own.get("", "").endswith("/supervisor"):  # core/src/host/cgroup_int.h CG_LEAF
        own[""] = os.path.dirname(own[""])
    parents = set(glob.glob("/sys/fs/cgroup/*/llm-sandbox"))
    parents.update(glob.glob("/sys/fs/cgroup/llm-sandbox"))
    parents.update(os.path.join(sc, "llm-sandbox") for sc in run_scopes())
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            fstype, _, opts = post.split()[:3]
            mnt = pre.split()[4]
            if fstype == "cgroup2":
                path = own.get("")
            elif fstype == "cgroup":
                ctl = [o for o in opts.split(",") if o in
                       ("memory", "pids", "cpu", "cpuacct", "cpuset", "blkio", "devices",
                        "freezer") or o.startswith("name=")]
                path = next((p for c, p in own.items() if c and set(c.split(",")) == set(ctl)),
                            None)
            else:
                continue
            if path is not None:
                parents.add(os.path.join(mnt, path.lstrip("/"), "llm-sandbox"))
    return sorted(p for p in parents if os.path.isdir(p))


def cgroup_groups():
    """{path} of every group directory under the parents."""
    groups = set()
    for parent in cgroup_parents():
        try:
            for name in os.listdir(parent):
                if os.path.isdir(os.path.join(parent, name)):
                    groups.add(os.path.join(parent, name))
        except OSError:
            pass
    return groups


# cgroup.c: "<OWNER>-<SUFFIX>", the suffix a run number or "probe"; the
# owner p<PID>t<STARTTIME>h<SCOPE> (core/src/host/owner.h; no scope before it)
OWNER_RE = re.compile(r"^p(\d+)t(\d+)(?:h([0-9a-f]{16}))?-([a-z0-9]+)$")


def owner_alive(pid, start):
    st = proc_stat(pid)
    return st is not None and st[3] == start


def leftover_cgroups(before, cli_pids):
    """Groups that belong to a CLI we ran (all have exited by now) or to any
    dead owner and were not there before the test. A group named by an
    instance of another scope (another pid namespace or boot, which may
    share this cgroup tree: a container's server) is not ours to judge, as
    core/src/owner.c says: its pid is not one we can look up. In a DAEMON
    session only a CLI's: the daemon holds a container's limits, so its
    servers make no group of their own, and a local session beside it
    makes and removes them all the time."""
    mine = owner_scope(os.getpid())
    bad = []
    for g in cgroup_groups():
        name = os.path.basename(g)
        m = OWNER_RE.match(name)
        if m and m.group(3) and m.group(3) != mine:
            continue
        if m:
            pid, start = int(m.group(1)), int(m.group(2))
            if pid in cli_pids or (not DAEMON and g not in before and
                                   not owner_alive(pid, start)):
                bad.append(g)
        elif name.startswith("probe-") and name[6:].isdigit() and int(name[6:]) in cli_pids:
            bad.append(g)
        elif g not in before and not DAEMON:
            bad.append(g)  # e.g. a fixed-name group ("probe") that stayed
    return bad


def leftover_scopes(before, cli_pids):
    """Transient scopes (cgroup v2 under systemd) of a CLI we ran, or of a
    dead owner, that systemd has not removed: each goes when its process
    does. In a DAEMON session only a CLI's (as for groups)."""
    bad = []
    for sc in run_scopes():
        m = SCOPE_RE.match(os.path.basename(sc))
        pid, start = int(m.group(1)), int(m.group(2))
        if m.group(3) != owner_scope(os.getpid()):
            continue
        if pid in cli_pids or (not DAEMON and sc not in before and not owner_alive(pid, start)):
            bad.append(sc)
    return bad


def tmp_listing():
    """{name: owner uid} of /tmp, without pytest's own directories."""
    out = {}
    for name in os.listdir("/tmp"):
        if name.startswith("pytest-of-"):
            continue
        try:
            out[name] = os.lstat(os.path.join("/tmp", name)).st_uid
        except OSError:
            continue
    return out


# Names a leftover of the product would plausibly carry.
PRODUCT_NAME_RE = re.compile(r"sbx|llm|sandbox|bwrap|pasta|passt|agent|seccomp|workspace|probe",
                             re.I)


def tmp_entry_is_ours(name, uid):
    """Other sessions on this machine create and remove /tmp entries of
    their own while we run; attribute an entry to our runs when the
    sandbox's host uid owns it, when we (unprivileged: nobody else runs as
    our uid) own it, or when we own it and its name looks like the
    product's (as root: what the server itself leaves). Another user's
    entry is never ours: an unprivileged session may run beside this one."""
    if uid == HOST_UID_OF_SANDBOX or (ROOT and is_sandbox_host_uid(uid)):
        return True
    if uid != os.geteuid():
        return False
    # (a DAEMON session's servers keep nothing in /tmp, and a local
    # session beside it may: there only the sandboxes' uids count)
    return not ROOT or (not DAEMON and bool(PRODUCT_NAME_RE.search(name)))


@pytest.fixture(autouse=True)
def nothing_left_behind(request):
    """After every test: no process, cgroup or /tmp entry of our runs left."""
    del _cli_pids[:]
    procs_before = process_snapshot()
    groups_before = cgroup_groups()
    scopes_before = run_scopes()
    tmp_before = tmp_listing()
    mxc_before = mxc_agent_dirs() if MXC else set()
    yield
    problems = []
    # Processes: the CLI has returned, so the sandbox must be gone. A short
    # grace covers the kernel finishing a SIGKILL of a large tree.
    deadline = time.monotonic() + float(os.environ.get("SBX_ITEST_GRACE", "1.0")) * SLOW
    left = leftover_processes(procs_before)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = leftover_processes(procs_before)
    if left:
        problems.append("processes left running: %s" % ", ".join(
            "pid %d %s uid %s state %s" % p for p in left))
        for p in left:  # ours (marked): do not let them poison later tests
            try:
                os.kill(p[0], signal.SIGKILL)
            except OSError:
                pass
    # cgroups, and the scopes systemd removes once their process is gone
    deadline = time.monotonic() + 1.0 * SLOW
    bad = leftover_cgroups(groups_before, set(_cli_pids))
    while bad and time.monotonic() < deadline:
        time.sleep(0.05)
        bad = leftover_cgroups(groups_before, set(_cli_pids))
    if bad:
        problems.append("cgroups left behind: %s" % ", ".join(sorted(bad)))
    deadline = time.monotonic() + 2.0 * SLOW
    bad = leftover_scopes(scopes_before, set(_cli_pids))
    while bad and time.monotonic() < deadline:
        time.sleep(0.05)
        bad = leftover_scopes(scopes_before, set(_cli_pids))
    if bad:
        problems.append("transient scopes left behind: %s" % ", ".join(sorted(bad)))
    # pods and NetworkPolicies of the plugin's label in the namespace
    if CLUSTER and ROOT:
        left = cluster.leftover()
        if left:
            problems.append("cluster objects left behind: %s" % ", ".join(left))
            cluster.remove_all()
    # containers: the daemon is ours alone, so none may remain at all
    elif CONTAINER:
        left = containers.leftover(BACKEND)
        if left:
            problems.append("containers left behind: %s" % ", ".join(left))
            containers.remove_all(BACKEND)
    # /tmp: a new entry of ours that is still there a moment later
    now = tmp_listing()
    new = {n for n, uid in now.items() if n not in tmp_before and tmp_entry_is_ours(n, uid)}
    if new:
        time.sleep(0.2)
        new &= set(tmp_listing())
    if new:
        problems.append("new entries in /tmp: %s" % ", ".join(
            "%s (uid %d)" % (n, now[n]) for n in sorted(new)))
    # mxc: every server removes its copy of the agent when it exits
    if MXC:
        left = mxc_agent_dirs() - mxc_before
        if left:
            problems.append("agent copies left: %s" % ", ".join(sorted(left)))
    if problems:
        pytest.fail("%s left things behind:\n  %s" % (request.node.nodeid, "\n  ".join(problems)))


# --------------------------------------------------------------------------
# Network canaries (only ever on this machine's loopback)


class Canary:
    """A TCP listener on the host's loopback that records whether anything
    connected to it."""

    def __init__(self, family=socket.AF_INET, addr="127.0.0.1"):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.addr = addr
        self.port = self.sock.getsockname()[1]

    def connections(self):
        n = 0
        while True:
            try:
                c, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return n
            c.close()
            n += 1

    def close(self):
        self.sock.close()


@pytest.fixture
def canary():
    c = Canary()
    yield c
    c.close()


@pytest.fixture
def canary6():
    try:
        c = Canary(socket.AF_INET6, "::1")
    except OSError as e:
        pytest.skip("no IPv6 loopback on this host: %s" % e)
    yield c
    c.close()


# The core's seccomp filter seen from inside (python): the calls fail with
# EPERM under it, and the kernel reports no_new_privs and a filter mode.
FILTER_PROBE = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
r = libc.unshare(0x10000000)           # CLONE_NEWUSER
print("unshare", r, errno.errorcode.get(ctypes.get_errno(), 0) if r else 0)
r = libc.ptrace(0, 0, None, None)      # PTRACE_TRACEME
print("ptrace", r, errno.errorcode.get(ctypes.get_errno(), 0) if r else 0)
st = dict(l.split(":", 1) for l in open("/proc/self/status"))
print("nnp", st["NoNewPrivs"].strip(), "seccomp", st["Seccomp"].strip())
"""


# A program that forks until refused (the pids limit): prints how many
# children it made and the errno, exits 1.
FORK_UNTIL_REFUSED = """
import os, sys, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print(n, e.errno)
    sys.exit(1)
"""
