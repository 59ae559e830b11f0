# SPDX-License-Identifier: MIT
"""The kernel's per-user quotas (issue 21): one sandbox takes all it can of
inotify instances, POSIX message-queue bytes and queued signals, and holds
them; meanwhile a second sandbox and a host process of the server's own
uid still get theirs. As root each box runs as a host uid of its own
(LLM_SANDBOX_UID_RANGE), so the inotify instances (counted per host uid,
128 by default) are its own; the message-queue bytes and queued signals
are bounded by the tight rlimits every box gets (64 KiB, 256 signals).

An unprivileged server's boxes are all charged to its uid (the kernel
counts a user namespace's processes against the namespace owner's quota
too, whatever ids are mapped inside, subordinate ones included): there the
rlimit-bounded quotas are checked, and inotify is not (it stays shared:
README, "What stays shared")."""
import json
import os
import subprocess

import pytest

from conftest import (BACKEND, HOLD, OWN_UIDS, ROOT, UID_RANGE, assert_box_ids, itest, live_run,
                      proc_status, run_lang)

if BACKEND not in ("bwrap", "nsjail", "docker", "podman"):
    pytest.skip("the per-user quota checks cover the local jails and the container engines",
                allow_module_level=True)

MSGQUEUE_BYTES = 64 * 1024
SIGPENDING = 256

COMMON = r'''
import ctypes, errno, json, os, signal, threading
libc = ctypes.CDLL(None, use_errno=True)

class MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long),
                ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long),
                ("pad", ctypes.c_long * 4)]

libc.mq_open.restype = ctypes.c_int
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(MqAttr)]
O_RDWR, O_CREAT, O_EXCL = 2, 0o100, 0o200

def inotify():
    fd = libc.inotify_init1(0)
    return fd, (0 if fd >= 0 else ctypes.get_errno())

def mq(name, msgsize):
    attr = MqAttr(0, 1, msgsize, 0)
    fd = libc.mq_open(name.encode(), O_RDWR | O_CREAT | O_EXCL, 0o600, ctypes.byref(attr))
    err = 0 if fd >= 0 else ctypes.get_errno()
    if fd >= 0:
        libc.mq_unlink(name.encode())  # the queue lives while fd is open
    return fd, err

def queue_signal():
    try:
        signal.pthread_kill(threading.get_ident(), signal.SIGRTMIN)
        return 0
    except OSError as e:
        return e.errno

signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
'''

# Take everything, keep it, report how much and how it ended.
HOG = COMMON + r'''
fds, n_mq, sigs = [], 0, 0
while True:
    fd, err_in = inotify()
    if fd < 0:
        break
    fds.append(fd)
while True:
    fd, err_mq = mq("/hog%d" % n_mq, 4096)
    if fd < 0:
        break
    fds.append(fd)
    n_mq += 1
while True:
    err_sig = queue_signal()
    if err_sig:
        break
    sigs += 1
print(json.dumps({"inotify": len(fds) - n_mq, "inotify_errno": err_in, "mq": n_mq,
                  "mq_errno": err_mq, "signals": sigs, "signal_errno": err_sig}), flush=True)
'''

# Take one of each: errno 0 when it was there.
PROBE = COMMON + r'''
fd, a = inotify()
fd2, b = mq("/probe%d" % os.getpid(), 8192)
print(json.dumps({"inotify": a, "mq": b, "signal": queue_signal()}))
'''


def host_probe():
    """The probe as a host process of the server's uid (this one's)."""
    out = subprocess.run(["/usr/bin/python3", "-c", PROBE], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    return json.loads(out)


def test_one_sandbox_cannot_drain_the_quotas_of_others():
    with live_run(HOG + HOLD["python"]) as live:
        hog_st = proc_status(live.pid)
        hog_uid = assert_box_ids(hog_st["Uid"].split(), hog_st["Gid"].split(), "hog")
        other = run_lang("python", PROBE + "print(open('/proc/self/status').read())")
        host = host_probe()
    assert live.result["status"] == "ok", live.result
    took = json.loads(live.result["stdout"].splitlines()[0])
    assert other["status"] == "ok", other
    lines = other["stdout"].splitlines()
    got = json.loads(lines[0])

    # The hog really went to the end of each: the kernel refused the next
    # one (EMFILE: a message-queue rlimit or the inotify instance count,
    # EAGAIN: the queued-signal rlimit), at the box's own limits.
    assert took["mq_errno"] == 24 and took["mq"] >= 1, took
    assert took["mq"] * 4096 <= MSGQUEUE_BYTES, took
    assert took["signal_errno"] == 11 and took["signals"] == SIGPENDING, took
    assert got["mq"] == 0 and got["signal"] == 0, got
    assert host["mq"] == 0 and host["signal"] == 0, host

    if ROOT and BACKEND in OWN_UIDS:
        with open("/proc/sys/fs/inotify/max_user_instances") as f:
            limit = int(f.read())
        assert took["inotify_errno"] == 24 and took["inotify"] == limit, took
        assert got["inotify"] == 0 and host["inotify"] == 0, (got, host)
        # two boxes at once: two host uids of the range
        other_uid = [line for line in lines if line.startswith("Uid:")]
        if BACKEND in ("docker", "podman"):  # no user namespace: the host uid inside
            assert int(other_uid[0].split()[1]) in UID_RANGE, other_uid
            assert int(other_uid[0].split()[1]) != hog_uid, (other_uid, hog_uid)
    else:
        # shared with the server's uid: the hog took what was left
        assert took["inotify_errno"] == 24, took


def test_doctor_reports_the_uids():
    """doctor names the range in use as root, and what stays shared when
    there is none (an ordinary user, or the range turned off)."""
    def uids_check(extra=None):
        out = subprocess.run([itest.SBX_BIN, "doctor", "--json"], capture_output=True,
                             text=True, timeout=120, env=itest.clean_env(extra)).stdout
        return next(c for c in json.loads(out)["checks"] if c["check"] == "sandbox_uids")

    c = uids_check()
    if ROOT:
        first, last = UID_RANGE[0], UID_RANGE[-1]
        assert c["status"] == "ok" and "%d-%d" % (first, last) in c["detail"], c
        c = uids_check({"LLM_SANDBOX_UID_RANGE": "off"})
    assert c["status"] == "warn" and "inotify instances" in c["detail"], c
    assert "stay shared" in c["detail"] and c["fix"], c
