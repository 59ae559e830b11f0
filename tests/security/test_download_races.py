# SPDX-License-Identifier: MIT
"""Races on download (issue 9): a session's background process swaps the
file being downloaded, as fast as it can, between a regular file, a
symbolic link to a host canary file, a link to a file of the sandbox's
own outside the workspace, and a FIFO, and a directory on the path
between a real one and a link to /, while the host calls download_file
and resources/read on it in a loop. Whatever the timing, an answer is the
regular file's content or an error; the canaries never come back, no call
hangs on the FIFO, and the server keeps serving. A link the agent followed
would return the inner canary (written by the racer, so it exists on
every backend), which makes the check able to fail."""
import base64
import os
import shutil
import tempfile
import time
import uuid

import pytest

from test_session_attacks import MarkedServer

RACER = r"""
import ctypes, os, time
host_canary, inner = %r, %r
with open("/tmp/inner", "w") as f:
    f.write(inner)
os.makedirs("/workspace/d/tmp", exist_ok=True)
for p in ("/workspace/target", "/workspace/d/tmp/inner"):
    with open(p, "w") as f:
        f.write("benign")
os.symlink("/", "/workspace/d.alt")
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):  # renameat2(RENAME_EXCHANGE): the swap is atomic
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
if os.fork() == 0:
    os.setsid()
    os.chdir("/workspace")
    t0, i = time.monotonic(), 0
    while time.monotonic() - t0 < 90:
        kind = i %% 4
        try:
            if kind == 0:
                with open("alt", "w") as f:
                    f.write("benign")
            elif kind == 1:
                os.symlink(host_canary, "alt")
            elif kind == 2:
                os.symlink("/tmp/inner", "alt")
            else:
                os.mkfifo("alt")
            exchange("target", "alt")
            os.unlink("alt")
            exchange("d", "d.alt")
        except OSError:
            pass
        i += 1
    os._exit(0)
time.sleep(0.2)
print("racing")
"""


@pytest.fixture
def host_canary():
    d = tempfile.mkdtemp(prefix="sbxsec-race-", dir="/var/tmp")
    os.chmod(d, 0o755)
    path = os.path.join(d, "canary.txt")
    value = "hostcanary-%s" % uuid.uuid4().hex
    with open(path, "w") as f:
        f.write(value)
    os.chmod(path, 0o644)
    yield path, value
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def server():  # test_session_attacks' marked server, in place of conftest's
    s = MarkedServer()
    yield s
    s.finish()


def _content(server, how, sid, path):
    """('ok', text) or ('error', message) of one read, and how long it took."""
    t0 = time.monotonic()
    if how == "download_file":
        sc, err = server.call("download_file", {"session_id": sid, "path": path})
        if err:
            out = ("error", sc.get("message", ""))
        elif sc["encoding"] == "base64":
            out = ("ok", base64.b64decode(sc["content"]).decode("utf-8", "replace"))
        else:
            out = ("ok", sc["content"])
    else:
        r = server.s.request("resources/read", {
            "uri": "sandbox://sessions/%s/files/%s" % (sid, path)}, timeout=30)
        if "error" in r:
            out = ("error", r["error"].get("message", ""))
        else:
            c = r["result"]["contents"][0]
            out = ("ok", c["text"] if "text" in c else
                   base64.b64decode(c["blob"]).decode("utf-8", "replace"))
    return out, time.monotonic() - t0


@pytest.mark.parametrize("how", ["download_file", "resources/read"])
def test_download_races_never_return_a_canary(server, how, host_canary):
    canary_path, canary = host_canary
    inner = "innercanary-%s" % uuid.uuid4().hex
    sid = server.call("create_session", {"language": "python"})[0]["session_id"]
    r, _ = server.call("execute_code", {"session_id": sid, "code": RACER % (canary_path, inner)})
    assert r["status"] == "ok" and r["stdout"] == "racing\n", r
    seen = {"ok": 0, "error": 0}
    slowest = 0.0
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < 12:
        for path in ("target", "d/tmp/inner"):
            (kind, text), took = _content(server, how, sid, path)
            n += 1
            slowest = max(slowest, took)
            assert canary not in text and inner not in text, (how, path, kind, text[:200])
            if kind == "ok":
                assert text == "benign", (how, path, text[:200])
            seen[kind] += 1
    # the race was real: both the file and the planted things were met
    assert seen["ok"] and seen["error"], (n, seen)
    assert slowest < 5, "a read took %.1f s (a FIFO opened for reading blocks)" % slowest
    # the host's canary is untouched and the server serves on
    with open(canary_path) as f:
        assert f.read() == canary
    r, _ = server.call("execute_code", {"session_id": sid, "code": "print('still here')"})
    assert r["stdout"] == "still here\n", r
    sc, err = server.call("close_session", {"session_id": sid})
    assert not err, sc
    print("%s: %d reads, %r, slowest %.2f s" % (how, n, seen, slowest))
