# SPDX-License-Identifier: MIT
"""Helpers for the MCP tests in this directory (Debian's python3, no
other packages): start the real llm-sandbox server, talk newline-delimited
JSON-RPC to it, watch the processes it starts from outside, and start its
Streamable HTTP transport when the build has one.

Environment (set by ctest): SBX_BIN, the llm-sandbox binary.
"""
import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SBX_BIN = os.environ.get("SBX_BIN") or os.path.join(
    os.path.dirname(os.path.dirname(HERE)), "build", "bin", "llm-sandbox")
ROOT = os.geteuid() == 0
# core/src/policy/settings.c: the host uid that sandboxed code runs as when the
# server runs as root (LLM_SANDBOX_UID changes it).
SANDBOX_UID = int(os.environ.get("LLM_SANDBOX_UID", "1879048192"))
# Names of the processes a sandboxed run consists of, seen from outside.
SANDBOX_COMMS = {"bwrap", "agent", "sbx-agent", "python3", "pasta", "pasta.avx2"}
PROTOCOL = "2025-06-18"
NO_HTTP = "--http is not available in this build"


def clean_env(extra=None):
    """A minimal environment, so the caller's (BACKEND, SANDBOX_MEMORY,
    LLM_SANDBOX_CONFIG, ...) cannot change what is tested."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           # no ready sandboxes: these tests count a server's sandboxed
           # processes; tests/integration/test_pool.py tests the pool
           "LLM_SANDBOX_POOL": "0"}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TMPDIR"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update(extra or {})
    return env


# --------------------------------------------------------------------------
# Processes, seen from /proc


def _stat(pid):
    """(ppid, state, comm, starttime, uid) of pid, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
        with open("/proc/%d/status" % pid) as f:
            uid = next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
    except (OSError, StopIteration, ValueError):
        return None
    comm = st[st.index("(") + 1:st.rindex(")")]
    rest = st[st.rindex(")") + 2:].split()
    return int(rest[1]), rest[0], comm, int(rest[19]), uid


def processes():
    out = {}
    for e in os.listdir("/proc"):
        if e.isdigit():
            s = _stat(int(e))
            if s:
                out[int(e)] = s
    return out


def descendants(root_pid, table=None):
    """{pid: (comm, starttime, uid)} of every descendant of root_pid."""
    table = table or processes()
    children = {}
    for pid, (ppid, _state, comm, start, uid) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, [root_pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                _ppid, _state, comm, start, uid = table[c]
                out[c] = (comm, start, uid)
                todo.append(c)
    return out


def is_sandboxed(comm, uid):
    """A process of a sandboxed run: as root, one running as the sandbox
    uid; otherwise one of the names a run consists of."""
    if ROOT:  # the shared uid, or a box's own (LLM_SANDBOX_UID_RANGE's default)
        return uid == SANDBOX_UID or 1879113728 <= uid < 1879113728 + 65536
    return comm in SANDBOX_COMMS


class ProcWatch:
    """Polls /proc in the background and remembers every sandboxed
    descendant of one pid (the server) it ever saw, by pid and start time,
    so a process that was reparented after its parent died is still ours."""

    def __init__(self, root_pid, interval=0.02):
        self.root_pid = root_pid
        self.seen = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._interval = interval
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self._interval)

    def poll(self):
        found = {pid: v for pid, v in descendants(self.root_pid).items()
                 if is_sandboxed(v[0], v[2])}
        with self._lock:
            self.seen.update(found)

    def stop(self):
        self._stop.set()
        self._thread.join()

    def saw(self, comm):
        with self._lock:
            return any(v[0] == comm for v in self.seen.values())

    def alive(self):
        """{pid: (comm, state)} of the seen processes that still run. A
        zombie has ended: it waits only to be reaped by whoever inherited it."""
        with self._lock:
            seen = dict(self.seen)
        out = {}
        for pid, (comm, start, _uid) in seen.items():
            s = _stat(pid)
            if s and s[3] == start and s[1] not in ("Z", "X"):
                out[pid] = (comm, s[1])
        return out

    def wait_gone(self, timeout):
        """Seconds until none of the seen processes runs, or None."""
        t0 = time.monotonic()
        while True:
            if not self.alive():
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                return None
            time.sleep(0.02)


# --------------------------------------------------------------------------
# The server on stdio


class Server:
    """llm-sandbox speaking MCP on stdio. A reader thread splits stdout
    into lines and checks each is one JSON-RPC 2.0 object; stderr is kept."""

    def __init__(self, args=(), env=None):
        self.proc = subprocess.Popen([SBX_BIN, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env or clean_env())
        self.lines = queue.Queue()   # parsed messages, in order
        self.bad_lines = []          # stdout lines that were not one JSON-RPC object
        self.raw_lines = []          # every stdout line as it came, bytes
        self.stdout_bytes = 0
        self.stderr = bytearray()
        self.pending = []            # messages read but not yet claimed
        self.next_id = 1000
        self._readers = [threading.Thread(target=self._read_out, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for t in self._readers:
            t.start()

    @property
    def pid(self):
        return self.proc.pid

    def _read_out(self):
        for line in self.proc.stdout:
            self.stdout_bytes += len(line)
            self.raw_lines.append(line)
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("no newline at the end")
                msg = json.loads(line.decode("utf-8"))
                if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                    raise ValueError("not a JSON-RPC 2.0 object")
            except ValueError as e:
                self.bad_lines.append((str(e), line[:200]))
                continue
            self.lines.put(msg)
        self.lines.put(None)  # end of output

    def _read_err(self):
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):
            self.stderr += chunk

    # -- sending

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg, separators=(",", ":")).encode() + b"\n")

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def request_async(self, method, params=None, id=None):
        """Send a request; return its id."""
        id = self.new_id() if id is None else id
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return id

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    # -- receiving

    def next_message(self, timeout):
        if self.pending:
            return self.pending.pop(0)
        try:
            msg = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no message from the server within %.1f s" % timeout)
        if msg is None:
            self.lines.put(None)
            raise self._closed()
        return msg

    def _closed(self):
        """The EOFError for a server whose output ended: with its exit
        status (if it exited within a moment), its stdout lines that were
        not JSON-RPC, and the end of its stderr, so a failure says why."""
        try:
            status = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            status = "still running"
        self._readers[1].join(timeout=2)
        return EOFError("the server closed its output (exit status %s; non-JSON-RPC lines %r; "
                        "stderr %r)" % (status, self.bad_lines[-3:],
                                        bytes(self.stderr[-2000:]).decode(errors="replace")))

    def wait_for(self, pred, timeout=30.0):
        """The first message (read now or earlier) for which pred holds;
        the others stay pending."""
        for i, m in enumerate(self.pending):
            if pred(m):
                return self.pending.pop(i)
        deadline = time.monotonic() + timeout
        skipped = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no matching message within %.1f s" % timeout)
                try:
                    msg = self.lines.get(timeout=left)
                except queue.Empty:
                    continue
                if msg is None:
                    self.lines.put(None)
                    raise self._closed()
                if pred(msg):
                    return msg
                skipped.append(msg)
        finally:
            self.pending.extend(skipped)

    def response(self, id, timeout=30.0):
        return self.wait_for(lambda m: "method" not in m and m.get("id") == id, timeout)

    def request(self, method, params=None, timeout=30.0):
        return self.response(self.request_async(method, params), timeout)

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                        "clientInfo": {"name": "test_protocol", "version": "1"}})
        assert r["result"]["protocolVersion"] == PROTOCOL, r
        self.notify("notifications/initialized")
        return r["result"]

    def call_tool(self, name, arguments, timeout=60.0, meta=None):
        params = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params, timeout)

    # -- ending

    def close_stdin(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def finish(self, timeout=10.0):
        """Close stdin and wait; the exit code."""
        self.close_stdin()
        try:
            return self.proc.wait(timeout)
        finally:
            for t in self._readers:
                t.join(5)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# --------------------------------------------------------------------------
# The server on Streamable HTTP


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpUnavailable(Exception):
    """This build has no --http; the message says so."""


def start_http(env=None, timeout=10.0):
    """Start `llm-sandbox serve --http 127.0.0.1:PORT`; (process, url).
    Raises HttpUnavailable when the binary says it has no HTTP transport."""
    for _attempt in range(3):
        port = free_port()
        proc = subprocess.Popen([SBX_BIN, "serve", "--http", "127.0.0.1:%d" % port],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env or clean_env())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")
                if NO_HTTP in err:
                    raise HttpUnavailable("llm-sandbox says: " + err.strip())
                if "in use" in err.lower():
                    break  # lost the port to someone else: try another
                raise RuntimeError("serve --http exited with %d: %s" % (proc.returncode, err))
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return proc, "http://127.0.0.1:%d/mcp" % port
            except OSError:
                time.sleep(0.05)
        else:
            proc.kill()
            proc.wait()
            raise RuntimeError("serve --http did not listen within %.0f s" % timeout)
    raise RuntimeError("could not find a free port for serve --http")


# What the server exits with when SIGTERM ends it (mcp/serve.h: 128 + N).
SIGTERM_EXIT = 128 + signal.SIGTERM


def stop_http(proc, timeout=10.0):
    """SIGTERM, wait; the exit code (SIGTERM_EXIT when it ended well)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    return proc.returncode
