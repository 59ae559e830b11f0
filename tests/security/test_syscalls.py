# SPDX-License-Identifier: MIT
"""The syscall matrix (issue 9): programs/try_syscall.cpp, compiled and run
inside the sandbox, calls each sensitive syscall with arguments that make
the kernel fail harmlessly (an invalid pointer, descriptor or flag mix), so
"blocked" (the filter's EPERM, ENOSYS, EAFNOSUPPORT, or a SIGSYS kill) is
told from "reachable" (EFAULT, EBADF, EINVAL, ...). The whole matrix is
compared with the backend's expected file in expected/, line for line; the
calls the issue names must be blocked whatever that file says, and the
filter's own deny list (core/seccomp/policy.list) must show in it.

Container test images carry no C++ toolchain: there the probe is compiled
on the host, statically (g++ -static), and staged as the program's own
data: a Python program writes it into /workspace and executes it in place
of itself, inside the same container, filter and limits.

After a deliberate change, regenerate the file with SBX_SECURITY_REGEN=1
and review the diff: the assertions below still hold whatever it says."""
import base64
import os
import re
import shutil
import subprocess
import tempfile
import zlib

import pytest

from conftest import BACKEND, CONTAINER, SBX_SOURCE_DIR, itest, run_lang

HERE = os.path.dirname(os.path.abspath(__file__))
# wsl2's boxes are bubblewrap's (plugins/wsl2): the same matrix, one file.
EXPECTED = os.path.join(HERE, "expected", "%s.txt" % ("bwrap" if BACKEND == "wsl2" else BACKEND))

# Blocked on every backend, whatever the expected file says.
MUST_BLOCK = """
mount umount2 pivot_root chroot fsopen fspick open_tree move_mount mount_setattr unshare setns
clone_newuser clone_newns clone_newpid clone_newnet clone3 ptrace process_vm_readv
process_vm_writev kcmp pidfd_getfd keyctl add_key request_key bpf perf_event_open io_uring_setup
io_uring_enter io_uring_register userfaultfd kexec_load kexec_file_load init_module finit_module
delete_module open_by_handle_at name_to_handle_at swapon swapoff reboot acct quotactl syslog
sethostname settimeofday clock_settime adjtimex iopl ioperm modify_ldt personality_read_implies_exec
setgroups_0 mknod_dev_tmp ioctl_tiocsti ioctl_tiocsti_high_bits ioctl_tioclinux socket_netlink_audit
socket_netlink_netfilter socket_netlink_xfrm socket_netlink_uevent socket_packet socket_inet_raw
socket_inet6_raw socket_alg socket_vsock socket_key socketpair_inet x32_getpid i386_getpid
i386_unshare i386_mount
""".split()
# Reachable: if these fail, the program (not the filter) is broken and the
# matrix would prove nothing.
CONTROLS = {"getpid": "ok", "write_badfd": "EBADF", "clone_fork": "ok", "socket_unix": "ok",
            "socket_inet_tcp": "ok", "socket_netlink_route": "ok", "seccomp": "EFAULT",
            "personality_query": "ok", "mknod_dev": "EFAULT", "capset": "EFAULT"}


STAGE = r"""
import base64, os, zlib
with open("/workspace/try_syscall", "wb") as f:
    f.write(zlib.decompress(base64.b64decode(%r)))
os.chmod("/workspace/try_syscall", 0o755)
os.execv("/workspace/try_syscall", ["try_syscall"])
"""


def static_probe():
    """The probe, compiled on the host without shared libraries, as a
    Python program that runs it (compressed: the code cap is 1 MiB)."""
    if not shutil.which("g++"):
        pytest.skip("the %s image has no C++ compiler and this host has no g++ to build "
                    "the probe statically" % BACKEND)
    d = tempfile.mkdtemp(prefix="sbxsec-probe-", dir="/var/tmp")
    try:
        exe = os.path.join(d, "try_syscall")
        subprocess.run(["g++", "-std=c++17", "-O2", "-static", "-s", "-o", exe,
                        os.path.join(HERE, "programs", "try_syscall.cpp")], check=True)
        with open(exe, "rb") as f:
            blob = base64.b64encode(zlib.compress(f.read(), 9)).decode()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return STAGE % blob


@pytest.fixture(scope="module")
def matrix():
    if CONTAINER:
        # on standard input: one argument may not exceed 128 KiB
        r = itest.sbx("--language", "python", "--timeout", "120", "--code", "-",
                      input=static_probe().encode())
        res = itest.Result(r.json)
    else:
        with open(os.path.join(HERE, "programs", "try_syscall.cpp")) as f:
            res = run_lang("cpp", f.read(), "--timeout", "120")
    assert res["status"] == "ok", res
    rows = [line.split() for line in res["stdout"].splitlines()]
    assert all(len(r) == 3 for r in rows), res["stdout"]
    return rows


def test_matrix_is_the_expected_one(matrix):
    got = "".join("%s %s %s\n" % tuple(r) for r in matrix)
    if os.environ.get("SBX_SECURITY_REGEN") == "1":
        with open(EXPECTED, "w") as f:
            f.write(got)
    with open(EXPECTED) as f:
        want = f.read()
    want_rows = dict((line.split()[0], line) for line in want.splitlines())
    got_rows = dict((line.split()[0], line) for line in got.splitlines())
    diff = ["expected %r, got %r" % (want_rows.get(k), got_rows.get(k))
            for k in sorted(set(want_rows) | set(got_rows)) if want_rows.get(k) != got_rows.get(k)]
    assert not diff, "syscall matrix differs from %s:\n  %s" % (EXPECTED, "\n  ".join(diff))


def test_sensitive_calls_are_blocked(matrix):
    cls = {r[0]: r[2] for r in matrix}
    missing = [n for n in MUST_BLOCK if n not in cls]
    if missing and missing != ["i386_getpid", "i386_unshare", "i386_mount"]:
        pytest.fail("matrix lacks %s" % missing)
    open_ = ["%s=%s" % (r[0], r[1]) for r in matrix if r[0] in MUST_BLOCK and r[2] == "reachable"]
    assert not open_, "reachable from the sandbox: %s" % ", ".join(open_)


def test_controls_are_reachable(matrix):
    got = {r[0]: r[1] for r in matrix}
    assert {k: got.get(k) for k in CONTROLS} == CONTROLS


def test_policy_denials_show_in_the_matrix(matrix):
    """Every `deny NAME [ERRNO]` of the policy that the matrix calls by its
    own name answers with that errno: the filter, not the kernel, refused."""
    deny = {}
    with open(os.path.join(SBX_SOURCE_DIR, "core", "seccomp", "policy.list")) as f:
        for line in f:
            m = re.match(r"^deny\s+(\w+)(?:\s+(E[A-Z]+))?\s*$", line)
            if m:
                deny[m.group(1)] = m.group(2) or "EPERM"
    got = {r[0]: r[1] for r in matrix}
    checked = {n: (e, got[n]) for n, e in deny.items() if n in got}
    assert len(checked) >= 40, "the matrix calls few denied syscalls by name: %r" % checked
    wrong = {n: v for n, v in checked.items() if v[0] != v[1]}
    assert not wrong, "denied in policy.list but answered otherwise: %r" % wrong
