# SPDX-License-Identifier: MIT
"""Privilege surfaces (issue 9): setuid and file-capability binaries, and
real attempts (valid arguments this time, unlike the syscall matrix) at
unshare, mount, ptrace, keyctl, bpf, perf_event_open, io_uring and
userfaultfd, from Python (ctypes) and JavaScript (the util-linux tools).
After the attempts the host compares the program's namespaces, mounts and
descriptors with the agent's: nothing new may have appeared."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import CONTAINER, HOLD, ROOT, live_run, ppid_of, read_text, run_lang

PROBE_C = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    char line[256], cap[64] = "?";
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "CapEff:", 7) == 0)
            sscanf(line + 7, "%63s", cap);
    int r = setuid(0);
    printf("%d %d %s %d\n", (int)getuid(), (int)geteuid(), cap, r);
    return 0;
}
"""


@pytest.fixture
def privileged_probes():
    """A setuid-root and a file-capability copy of a probe under /usr (the
    part of the host the sandbox sees), removed afterwards."""
    if not ROOT:
        pytest.skip("planting setuid-root binaries needs root")
    if CONTAINER:
        pytest.skip("the probes are planted in the host's /usr, which a container does not see "
                    "(its /usr is the image's); test_container_posture.py checks no_new_privs "
                    "and empty capability sets on every thread, and the image's own setuid "
                    "tools (su, newuidmap) are run by test_util_linux_tools_from_javascript")
    if not shutil.which("gcc") or not shutil.which("setcap"):
        pytest.skip("needs gcc and setcap on the host")
    d = tempfile.mkdtemp(prefix="sbxsec-", dir="/usr/local/lib")
    os.chmod(d, 0o755)
    try:
        src = os.path.join(d, "probe.c")
        with open(src, "w") as f:
            f.write(PROBE_C)
        suid, fcap = os.path.join(d, "suid"), os.path.join(d, "fcap")
        subprocess.run(["gcc", "-O2", "-o", suid, src], check=True)
        shutil.copy(suid, fcap)
        os.chown(suid, 0, 0)
        os.chmod(suid, 0o4755)
        os.chmod(fcap, 0o755)
        subprocess.run(["setcap", "cap_setuid,cap_dac_override,cap_sys_admin+ep", fcap],
                       check=True)
        # on the host they work: the probes are real
        host = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               suid], capture_output=True, text=True, check=True).stdout.split()
        assert host[1] == "0", host
        yield {"suid": suid, "fcap": fcap}
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("lang", ["python", "javascript"])
def test_setuid_and_file_capabilities_grant_nothing(lang, privileged_probes):
    paths = json.dumps([privileged_probes["suid"], privileged_probes["fcap"]])
    if lang == "python":
        src = ("import json, os, subprocess\nout = []\nfor p in %s:\n"
               "    out.append([oct(os.stat(p).st_mode), subprocess.run([p], capture_output=True,"
               " text=True).stdout.split()])\nprint(json.dumps(out))" % paths)
    else:
        src = ("const fs = require('fs'), cp = require('child_process');\n"
               "console.log(JSON.stringify(%s.map((p) => ['0o' + fs.statSync(p).mode.toString(8),"
               " cp.execFileSync(p).toString().split(/\\s+/).filter(Boolean)])));" % paths)
    res = run_lang(lang, src)
    assert res["status"] == "ok", res
    (suid_mode, suid_out), (_, fcap_out) = json.loads(res["stdout"])
    assert int(suid_mode, 8) & 0o4000, "the setuid bit is visible inside: %s" % suid_mode
    for out in (suid_out, fcap_out):
        uid, euid, capeff, setuid_rc = out
        assert (uid, euid) == ("1000", "1000"), out
        assert capeff == "0000000000000000", out
        assert setuid_rc == "-1", out


ATTEMPTS_PY = r"""
import ctypes, json, os, signal, struct, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
def sc(label, nr, *args):
    r = libc.syscall(nr, *args)
    out[label] = "ok" if r >= 0 else os.strerror(ctypes.get_errno())
child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
buf = ctypes.create_string_buffer(256)
sc("unshare_user", 272, 0x10000000)
sc("unshare_mount", 272, 0x00020000)
sc("unshare_net", 272, 0x40000000)
sc("mount_tmpfs", 165, b"none", b"/tmp", b"tmpfs", 0, None)
sc("mount_bind", 165, b"/usr", b"/workspace", None, 4096, None)
sc("ptrace_attach_child", 101, 16, child, 0, 0)
sc("ptrace_attach_agent", 101, 16, 1, 0, 0)
sc("ptrace_traceme", 101, 0, 0, 0, 0)
sc("keyctl_session", 250, 1, b"sbx", 0, 0)  # KEYCTL_JOIN_SESSION_KEYRING
sc("add_key", 248, b"user", b"sbx", b"x", 1, ctypes.c_long(-2))
map_attr = struct.pack("IIII", 2, 4, 4, 1) + bytes(112)  # BPF_MAP_TYPE_ARRAY
sc("bpf_map_create", 321, 0, ctypes.create_string_buffer(map_attr, 128), 128)
pe = struct.pack("IIQQQQQ", 1, 128, 0, 0, 0, 0, 0) + bytes(72)  # software cpu-clock
sc("perf_event_open", 298, ctypes.create_string_buffer(pe, 128), 0, -1, -1, 0)
sc("io_uring_setup", 425, 8, ctypes.create_string_buffer(120))
sc("userfaultfd", 323, 0o2000000)
sc("setns_agent_net", 308, os.open("/proc/1/ns/net", os.O_RDONLY) if os.path.exists("/proc/1/ns/net") else -1, 0)
print(json.dumps(out), flush=True)
os.kill(child, signal.SIGKILL)
"""


def test_privileged_calls_fail_and_change_nothing():
    if os.uname().machine != "x86_64":
        pytest.skip("the attempts use x86_64 syscall numbers")
    with live_run(ATTEMPTS_PY + HOLD["python"]) as live:
        prog, agent = live.pid, ppid_of(live.pid)
        for n in ("mnt", "pid", "ipc", "uts", "net", "user", "cgroup"):
            assert os.readlink("/proc/%d/ns/%s" % (prog, n)) == \
                os.readlink("/proc/%d/ns/%s" % (agent, n)), "a new %s namespace" % n
        mounts = lambda pid: sorted(" ".join(line.split()[3:6]) for line in  # noqa: E731
                                    read_text("/proc/%d/mountinfo" % pid).splitlines())
        assert mounts(prog) == mounts(agent), "the program changed its mounts"
        fds = [os.readlink("/proc/%d/fd/%s" % (prog, fd)) for fd in os.listdir("/proc/%d/fd" % prog)]
        bad = [t for t in fds if any(k in t for k in ("io_uring", "userfaultfd", "perf_event",
                                                     "bpf", "net:["))]
        assert not bad, fds
        st = read_text("/proc/%d/status" % prog)
        assert "TracerPid:\t0" in st, st
    res = live.result
    assert res["status"] == "ok", res
    out = json.loads(res["stdout"].splitlines()[0])
    assert out.pop("ptrace_traceme") in ("Operation not permitted",), out
    assert all(v != "ok" for v in out.values()), out
    assert len(out) == 14, out


def test_util_linux_tools_from_javascript():
    tools = {"unshare -U true": "/usr/bin/unshare", "unshare -r id": "/usr/bin/unshare",
             "unshare -m true": "/usr/bin/unshare", "nsenter -t 1 -m true": "/usr/bin/nsenter",
             "mount -t tmpfs none /tmp": "/usr/bin/mount", "su -c id root": "/usr/bin/su",
             "newuidmap 1 0 0 1": "/usr/bin/newuidmap"}
    cmds = [c for c, path in tools.items() if os.path.exists(path)]
    if len(cmds) < 3:
        pytest.skip("util-linux tools missing on this host")
    src = ("const cp = require('child_process'); const out = {};\n"
           "for (const c of %s) { const r = cp.spawnSync('sh', ['-c', c], {input: ''});\n"
           "  out[c] = [r.status, r.stdout.toString() + r.stderr.toString()]; }\n"
           "try { process.setuid(0); out.setuid = 'root'; } catch (e) { out.setuid = e.code; }\n"
           "console.log(JSON.stringify(out));" % json.dumps(cmds))
    res = run_lang("javascript", src, "--timeout", "30")
    assert res["status"] == "ok", res
    out = json.loads(res["stdout"])
    assert out.pop("setuid") in ("EPERM", "EINVAL"), out
    for c, (status, text) in out.items():
        assert status != 0, (c, text)
        assert "uid=0" not in text, (c, text)
