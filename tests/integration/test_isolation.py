# SPDX-License-Identifier: MIT
"""What sandboxed code can see and do (issue 2, section 7; DESIGN section 3):
environment, files, processes, identity, privileges. Checked from inside
(the program reports) and from outside (the host's /proc) where possible."""
import json
import os
import socket
import subprocess
import time

import pytest

import conftest
from conftest import (BASE_ENV, CONTAINER, LAUNCHER, MXC, PYTHON_ENV, SBX_BIN, WSL2, assert_box_ids,
                      clean_env, code, find_launcher, find_marked, inside_ids, new_mark,
                      proc_status, run_cli)
# a run that lives until released (it slept 1.5 s, which bounded the look from
# outside and was then waited out)
from test_pool import HOLD, release

pytestmark = pytest.mark.contract


def inside(src, *args, **kw):
    """Run src, which prints one JSON document; return it."""
    res = code(src, *args, **kw)
    assert res["status"] == "ok", res
    return json.loads(res["stdout"])


def test_server_environment_not_visible():
    secret = "s3cr3t-%s" % new_mark()
    env = clean_env({"SECRET_TOKEN": secret, "AWS_SECRET_ACCESS_KEY": secret,
                     "LD_PRELOAD": "/nonexistent.so", "PYTHONPATH": "/root",
                     "HOME": "/root"}, mark=False)
    r = run_cli(["run", "--json", "--code",
                 "import os, json; print(json.dumps(dict(os.environ)))"], env=env)
    res = r.json
    assert res["status"] == "ok", res
    seen = json.loads(res["stdout"])
    assert secret not in res["stdout"]
    assert "SECRET_TOKEN" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert "LD_PRELOAD" not in seen and seen.get("PYTHONPATH") != "/root"
    # only the documented variables (the base set and the language's)
    expected = dict(BASE_ENV, **PYTHON_ENV)
    assert {k: v for k, v in seen.items() if k != "PWD"} == expected, seen


def test_environment_allow_list_passes_only_what_is_listed():
    env = clean_env({"SECRET_TOKEN": "nope", "PASS_ME": "yes-please",
                     "LLM_SANDBOX_ENV_ALLOW": "PASS_ME,NOT_SET_ANYWHERE"}, mark=False)
    r = run_cli(["run", "--json", "--code",
                 "import os, json; print(json.dumps(dict(os.environ)))"], env=env)
    seen = json.loads(r.json["stdout"])
    assert seen.get("PASS_ME") == "yes-please", seen
    assert "SECRET_TOKEN" not in seen and "NOT_SET_ANYWHERE" not in seen


def test_launcher_and_agent_run_with_the_clean_environment():
    """From outside: the jail's launcher (bwrap, nsjail; and so pid 1 inside)
    was executed with the allow-listed environment only, not the server's
    plus an option to clear it."""
    mark = new_mark()
    env = clean_env({"SECRET_TOKEN": "leak-check"}, mark_value=mark)
    p = subprocess.Popen([SBX_BIN, "run", "--json", "--code", HOLD],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    try:
        seen = {}
        deadline = time.monotonic() + 10
        while (LAUNCHER not in seen or "python3" not in seen) and time.monotonic() < deadline:
            for comm in (LAUNCHER, "python3"):
                for pid in (find_launcher(mark) if comm == LAUNCHER else find_marked(mark, comm)):
                    seen[comm] = pid
            time.sleep(0.02)
        assert LAUNCHER in seen and "python3" in seen, seen
        for comm, pid in seen.items():
            with open("/proc/%d/environ" % pid, "rb") as f:
                environ = f.read()
            assert b"SECRET_TOKEN" not in environ, (comm, environ)
            if WSL2 and comm == LAUNCHER:  # a WSL session's: wsl.exe carries none of ours
                assert b"WSL_DISTRO_NAME=" in environ, (comm, environ)
            else:
                assert b"PATH=/usr/bin:/bin" in environ, (comm, environ)
    finally:
        if "python3" in seen:
            release(seen["python3"])
        out, err = p.communicate(timeout=30)
    assert json.loads(out)["status"] == "ok", (out, err)


def test_identity_inside():
    info = inside("import os, socket, json, pwd\n"
                  "print(json.dumps([os.getuid(), os.geteuid(), os.getgid(), os.getegid(),\n"
                  "  os.getgroups(), socket.gethostname(), os.getcwd(), pwd.getpwuid(os.getuid())"
                  ".pw_name]))")
    uid, euid, gid, egid, groups, host, cwd, name = info
    assert (uid, gid) == (euid, egid) and inside_ids(uid, gid), info
    # MXC gives no way to name its box's uts namespace: it keeps the host's name
    assert host == (socket.gethostname() if MXC else "sandbox")
    assert cwd == "/workspace"
    assert name == "sandbox"
    assert 0 not in groups, groups


def test_identity_outside_and_privileges():
    """From the host: the sandboxed program runs as an unprivileged host uid
    (as root: the dedicated sandbox uid, never 0), without capabilities,
    with no_new_privs and a seccomp filter; the launcher too."""
    mark = new_mark()
    p = subprocess.Popen([SBX_BIN, "run", "--json", "--code", HOLD],
                         env=clean_env(mark_value=mark), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    try:
        pids = {}
        deadline = time.monotonic() + 10
        while len(pids) < 2 and time.monotonic() < deadline:
            for comm in ("python3", LAUNCHER):
                found = find_launcher(mark) if comm == LAUNCHER else find_marked(mark, comm)
                if found:
                    pids[comm] = found[0]
            time.sleep(0.02)
        assert set(pids) == {"python3", LAUNCHER}, pids
        for comm, pid in pids.items():
            st = proc_status(pid)
            uids = st["Uid"].split()
            gids = st["Gid"].split()
            assert_box_ids(uids, gids, comm)
            assert st["CapEff"] == "0000000000000000", (comm, st["CapEff"])
            assert st["CapPrm"] == "0000000000000000", (comm, st["CapPrm"])
            assert st["NoNewPrivs"] == "1", (comm, st["NoNewPrivs"])
        prog = proc_status(pids["python3"])
        assert prog["Seccomp"] == "2", prog["Seccomp"]
        assert prog["CapBnd"] == "0000000000000000", prog["CapBnd"]
    finally:
        if "python3" in pids:
            release(pids["python3"])
        out, err = p.communicate(timeout=30)
    assert json.loads(out)["status"] == "ok", (out, err)


def test_host_secrets_not_readable():
    info = inside(r"""
import os, json, glob
out = {}
for p in ["/root", "/home", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/sys",
          "/etc/ssh", "/var", "/run", "/boot", "/opt", "/srv", "/media", "/mnt",
          "/work", "/usr/local/../../root", "/proc/1/root/root"]:
    try:
        if os.path.isdir(p):
            out[p] = "dir:" + ",".join(sorted(os.listdir(p))[:5])
        else:
            out[p] = "file:" + open(p).read(20)
    except Exception as e:
        out[p] = type(e).__name__
out["homes"] = glob.glob("/home/*")
print(json.dumps(out))
""")
    if MXC:
        # MXC shows the host's system directories (read-only) and nothing
        # else of it; the denied /root and /home are empty tmpfs, /var holds
        # only MXC's /var/run symlink (to a /run the box does not have) and
        # the way to the agent's read-only copy (/var/tmp/llm-sandbox-mxc-*)
        for p in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/sys", "/etc/ssh", "/run",
                  "/boot", "/opt", "/srv", "/media", "/mnt", "/work"]:
            assert info[p] == "FileNotFoundError", (p, info[p])
        for p in ["/root", "/home", "/usr/local/../../root"]:
            assert info[p] == "dir:", (p, info[p])
        assert info["/var"] == "dir:run,tmp", info["/var"]
    elif CONTAINER:
        # The root filesystem is the image's (with its own /var, /run,
        # /srv, ..., and Docker's read-only /sys), never the host's: no
        # host path is there, and the image's secrets are not readable.
        for p in ["/root", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh",
                  "/usr/local/../../root"]:
            assert info[p] in ("FileNotFoundError", "PermissionError"), (p, info[p])
        assert info["/work"] == "FileNotFoundError", info["/work"]
        assert info["/home"] in ("dir:", "FileNotFoundError"), info["/home"]
    else:
        for p in ["/root", "/home", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/sys",
                  "/etc/ssh", "/var", "/run", "/boot", "/opt", "/srv", "/media", "/mnt",
                  "/work", "/usr/local/../../root"]:
            assert info[p] == "FileNotFoundError", (p, info[p])
    assert info["homes"] == []
    if MXC:  # pid 1 is MXC's bwrap, whose root is the box's: its own empty /root
        assert info["/proc/1/root/root"] == "dir:", info
    else:
        assert not info["/proc/1/root/root"].startswith(("dir:", "file:")), info


def test_etc_is_minimal_and_generated():
    info = inside("import os, json\n"
                  "print(json.dumps([sorted(os.listdir('/etc')), open('/etc/passwd').read(),\n"
                  "                  open('/etc/hosts').read(), os.getuid(), os.getgid()]))")
    listing, passwd, hosts, uid, gid = info
    if not CONTAINER:
        # containers: /etc is the image's (test_host_secrets_not_readable
        # checks its secrets are unreadable); passwd and group are ours
        assert "shadow" not in listing and "sudoers" not in listing, listing
        assert "hostname" not in listing and "machine-id" not in listing, listing
        assert len(listing) < 25, listing
    # generated, not the host's
    assert inside_ids(uid, gid) and "sandbox:x:%d:%d:" % (uid, gid) in passwd, (uid, passwd)
    with open("/etc/passwd") as f:
        host_users = [line.split(":")[0] for line in f if line.strip()]
    extra = [u for u in host_users if u not in ("root", "sandbox", "nobody") and
             (u + ":") in passwd]
    assert not extra, "host accounts visible: %s" % extra
    assert "127.0.0.1" in hosts


def test_only_own_processes_visible():
    info = inside("import os, json\n"
                  "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
                  "cmd = open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0].decode()\n"
                  "print(json.dumps([pids, os.getpid(), cmd]))")
    pids, me, pid1 = info
    # the agent (pid 1) and the program; MXC: its bwrap is pid 1, then the agent
    assert len(pids) <= (4 if MXC else 3), pids
    assert me in pids and 1 in pids
    # the agent, not the host's init (bwrap mounts it; nsjail runs it from an
    # fd; a pod's boot receives it into its own /tmp)
    assert pid1 in (("bwrap",) if MXC else ("/.sbx/agent", "sbx-agent", "/tmp/.sbx/agent")), pid1
    assert max(pids) < 50, pids


def test_host_processes_not_reachable():
    # a host pid that certainly exists outside: our own
    info = inside("import os, json\ntry:\n    os.kill(%d, 0); out = 'alive'\n"
                  "except OSError as e:\n    out = e.errno\nprint(json.dumps(out))" % os.getpid())
    assert info == 3, info  # ESRCH: the host's pids do not exist in there


def test_workspace_writable_system_read_only():
    info = inside(r"""
import os, json
out = {}
open("/workspace/note.txt", "w").write("hi")
out["workspace"] = open("/workspace/note.txt").read()
open("/tmp/t.txt", "w").write("tmp")
out["tmp"] = open("/tmp/t.txt").read()
for p in ["/usr/evil", "/evil", "/etc/evil", "/bin/evil", "/usr/lib/evil", "/.sbx/evil",
          "/proc/sys/kernel/hostname"]:
    try:
        open(p, "w").write("x")
        out[p] = "written"
    except OSError as e:
        out[p] = e.errno
try:
    os.chmod("/usr/bin/python3", 0o777)
    out["chmod"] = "done"
except OSError as e:
    out["chmod"] = e.errno
out["ls"] = sorted(os.listdir("/workspace"))
print(json.dumps(out))
""")
    assert info["workspace"] == "hi" and info["tmp"] == "tmp"
    # MXC: the box's own / and /etc (denied: an empty tmpfs) are writable
    # tmpfs of the box; no host path is (plugins/mxc/README.md)
    own = ["/evil", "/etc/evil"] if MXC else []
    for p in own:
        assert info[p] == "written", (p, info[p])
        assert not os.path.exists(p), p  # nothing of it reached the host
    for p in ["/usr/evil", "/evil", "/etc/evil", "/bin/evil", "/usr/lib/evil", "/.sbx/evil"]:
        # EROFS (or EACCES); ENOENT where the jail has no /.sbx (nsjail)
        if p not in own:
            assert info[p] in ((30, 13, 2) if p.startswith("/.sbx/") else (30, 13)), (p, info[p])
    assert info["/usr/evil"] == 30, info
    assert MXC or info["/evil"] == 30, info
    assert info["/proc/sys/kernel/hostname"] in (30, 13, 1), info
    assert info["chmod"] in (30, 1), info
    assert "main.py" in info["ls"] and "note.txt" in info["ls"]


def test_workspace_is_fresh_for_every_run():
    res = code("open('/workspace/leftover', 'w').write('x'); open('/tmp/leftover', 'w')")
    assert res["status"] == "ok", res
    info = inside("import os, json\nprint(json.dumps([sorted(os.listdir('/workspace')), "
                  "sorted(os.listdir('/tmp'))]))")
    # /tmp/.sbx: the language's support files (plot capture), staged each run
    assert info == [["main.py"], [".sbx"]], info


def test_seccomp_blocks_dangerous_calls():
    info = inside(r"""
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, args in [("unshare", (0x10000000,)), ("mount", (b"none", b"/tmp", b"tmpfs", 0, None)),
                   ("ptrace", (16, 1, 0, 0)), ("setns", (0, 0)), ("chroot", (b"/tmp",))]:
    r = getattr(libc, name)(*args)
    out[name] = [r, ctypes.get_errno()]
for fam in ("AF_ALG", "AF_VSOCK"):
    try:
        socket.socket(getattr(socket, fam), socket.SOCK_SEQPACKET if fam == "AF_ALG" else socket.SOCK_STREAM).close()
        out[fam] = "allowed"
    except OSError as e:
        out[fam] = e.errno
print(json.dumps(out))
""")
    for name in ("unshare", "mount", "ptrace", "setns", "chroot"):
        assert info[name][0] == -1 and info[name][1] == 1, (name, info[name])  # EPERM
    assert info["AF_ALG"] != "allowed" and info["AF_VSOCK"] != "allowed", info


def test_cannot_gain_root_inside():
    info = inside(r"""
import os, json, subprocess
out = {}
try:
    os.setuid(0); out["setuid"] = "became root"
except OSError as e:
    out["setuid"] = e.errno
st = open("/proc/self/status").read()
out["caps"] = [l.split()[1] for l in st.splitlines() if l.startswith(("CapEff", "CapPrm", "CapBnd", "CapAmb"))]
out["nnp"] = [l.split()[1] for l in st.splitlines() if l.startswith("NoNewPrivs")][0]
print(json.dumps(out))
""")
    assert info["setuid"] in (1, 22), info  # EPERM, or EINVAL: uid 0 is not even mapped
    assert info["caps"] == ["0000000000000000"] * 4, info
    assert info["nnp"] == "1"


def test_dev_is_minimal():
    info = inside("import os, json\nprint(json.dumps(sorted(os.listdir('/dev'))))")
    for bad in ("sda", "vda", "mem", "kmem", "kmsg", "net", "tty0", "loop0"):
        assert bad not in info, info
    assert "null" in info and "urandom" in info
