# SPDX-License-Identifier: MIT
"""Reading host secrets and writing outside the workspace (issue 9), in
Python and JavaScript. The host plants what the code goes after: a
world-readable secret and a world-writable canary in a world-writable
directory (so only the sandbox's mount namespace stands in the way), a
secret in the CLI's own environment, a line in the kernel log; afterwards
it checks its own files, not the program's report."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest

from conftest import BACKEND, CONTAINER, ROOT, run_lang

LANGS = ["python", "javascript"]


@pytest.fixture
def planted():
    d = tempfile.mkdtemp(prefix="sbxsec-", dir="/var/tmp")
    os.chmod(d, 0o777)
    secret = "hostsecret-%s" % uuid.uuid4().hex
    paths = {"dir": d, "secret": os.path.join(d, "secret.txt"),
             "canary": os.path.join(d, "canary.txt"), "value": secret}
    with open(paths["secret"], "w") as f:
        f.write(secret + "\n")
    with open(paths["canary"], "w") as f:
        f.write("canary-original\n")
    os.chmod(paths["secret"], 0o644)
    os.chmod(paths["canary"], 0o666)
    yield paths
    shutil.rmtree(d, ignore_errors=True)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_targets(p):
    s = p["secret"]
    return [s, "/proc/self/root" + s, "/proc/1/root" + s, "/proc/1/cwd/../.." + s,
            "/etc/shadow", "/etc/gshadow", "/root/.bashrc", "/root/.ssh/id_rsa", "/home",
            "/var/tmp", "/proc/1/environ", "/dev/kmsg", "/proc/kmsg", "/var/log/syslog",
            "/sys/kernel/debug", "/proc/sysrq-trigger"]


READ_PY = r"""
import json, os, sys
out = {}
for p in json.loads(sys.argv[1] if len(sys.argv) > 1 else %r):
    try:
        if os.path.isdir(p):
            out[p] = "dir:" + ",".join(sorted(os.listdir(p)))
        else:
            with open(p, "rb") as f:
                out[p] = "read:" + f.read(4096).decode("utf-8", "replace")
    except OSError as e:
        out[p] = type(e).__name__
# every environment and command line this process can see
for pid in os.listdir("/proc"):
    for what in ("environ", "cmdline"):
        try:
            with open("/proc/%%s/%%s" %% (pid, what), "rb") as f:
                out["/proc/%%s/%%s" %% (pid, what)] = f.read().decode("utf-8", "replace")
        except OSError as e:
            out["/proc/%%s/%%s" %% (pid, what)] = type(e).__name__
out["env"] = dict(os.environ)
# and every file outside /usr and /proc that is readable at all, keeping
# only what looks like a planted secret (the host's prefixes; the program
# does not know the values)
found, nread = [], 0
for top in ("/etc", "/tmp", "/dev/shm", "/workspace", "/run", "/var", "/root", "/home"):
    for root, dirs, files in os.walk(top):
        for n in files:
            try:
                with open(os.path.join(root, n), "rb") as f:
                    data = f.read(1 << 20)
                nread += 1
                if (b"hostsecret-" in data or b"envsecret-" in data) and \
                        os.path.join(root, n) != "/workspace/main.py":
                    found.append(os.path.join(root, n))
            except OSError:
                pass
out["walk"] = [nread, found]
print(json.dumps(out))
"""

READ_JS = r"""
const fs = require('fs');
const out = {};
for (const p of %s) {
  try {
    out[p] = fs.statSync(p).isDirectory() ? 'dir:' + fs.readdirSync(p).sort().join(',')
                                          : 'read:' + fs.readFileSync(p, 'utf8').slice(0, 4096);
  } catch (e) { out[p] = e.code; }
}
for (const pid of fs.readdirSync('/proc')) {
  for (const what of ['environ', 'cmdline']) {
    try { out[`/proc/${pid}/${what}`] = fs.readFileSync(`/proc/${pid}/${what}`, 'utf8'); }
    catch (e) { out[`/proc/${pid}/${what}`] = e.code; }
  }
}
out.env = process.env;
console.log(JSON.stringify(out));
"""

# What must not be readable (beyond "the secret never shows up").
MUST_FAIL = ["/etc/shadow", "/etc/gshadow", "/root/.bashrc", "/root/.ssh/id_rsa", "/home",
             "/var/tmp", "/dev/kmsg", "/proc/kmsg", "/var/log/syslog", "/sys/kernel/debug",
             "/proc/1/environ", "/proc/sysrq-trigger"]


# A container's root is its image, which has these directories of its own,
# and its /sys is a read-only sysfs without debugfs mounted on it.
IMAGE_DIRS = ("/home", "/var/tmp", "/sys/kernel/debug")


@pytest.mark.parametrize("lang", LANGS)
def test_host_secrets_do_not_reach_the_code(lang, planted):
    secret = planted["value"]
    env_secret = "envsecret-%s" % uuid.uuid4().hex
    targets = read_targets(planted)
    src = (READ_PY % (json.dumps(targets),) if lang == "python"
           else READ_JS % (json.dumps(targets),))
    # the secret in the CLI's (the server's) environment, under names a
    # careless allow-list might pass
    extra = {"SBX_SECRET_TOKEN": env_secret, "OPENAI_API_KEY": env_secret,
             "AWS_SECRET_ACCESS_KEY": env_secret, "HOME": planted["dir"]}
    r = run_lang(lang, src, "--timeout", "60", extra_env=extra)
    assert r["status"] == "ok", r
    text = r["stdout"] + r["stderr"]
    assert secret not in text, "the host's planted secret reached the code"
    assert env_secret not in text, "the server's environment reached the code"
    out = json.loads(r["stdout"])
    for p in targets:
        if CONTAINER and p in IMAGE_DIRS and out[p].startswith("dir:"):
            # the image's own (empty) directory: none of the host's entries
            seen = set(out[p][4:].split(",")) - {""}
            assert not seen & set(os.listdir(p)), (p, out[p])
            assert os.path.basename(planted["dir"]) not in seen, (p, out[p])
            continue
        assert not str(out[p]).startswith(("read:", "dir:")), (p, str(out[p])[:200])
    for p in MUST_FAIL:
        if CONTAINER and p in IMAGE_DIRS:
            continue
        assert out[p] in ("FileNotFoundError", "PermissionError", "ENOENT", "EACCES"), (p, out[p])
    # the code could look at something (this is no empty result)
    assert out["env"].get("PATH") == "/usr/bin:/bin", out["env"]
    if lang == "python":
        nread, found = out["walk"]
        assert found == [] and nread >= 5, out["walk"]


def test_kernel_log_is_not_readable():
    """A line the host writes to the kernel log does not reach the code by
    any of the usual routes (kmsg, syslog(2), dmesg)."""
    if not ROOT:
        pytest.skip("writing the kernel log needs root")
    mark = "sbx-kmsg-canary-%s" % uuid.uuid4().hex
    try:
        with open("/dev/kmsg", "w") as f:
            f.write("<6>%s\n" % mark)
    except OSError as e:
        pytest.skip("cannot write /dev/kmsg here: %s" % e)
    # the host can read it back: a real canary
    host = subprocess.run(["dmesg"], capture_output=True, text=True)
    assert host.returncode == 0 and mark in host.stdout, host.stderr
    r = run_lang("python", r"""
import ctypes, json, subprocess
out = {}
for p in ("/dev/kmsg", "/proc/kmsg", "/var/log/kern.log", "/var/log/dmesg"):
    try:
        out[p] = open(p, "rb").read(1 << 20).decode("utf-8", "replace")
    except OSError as e:
        out[p] = type(e).__name__
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(1 << 20)
n = libc.klogctl(3, buf, len(buf))
out["klogctl"] = buf.raw[:n].decode("utf-8", "replace") if n > 0 else ctypes.get_errno()
try:
    p = subprocess.run(["dmesg"], capture_output=True, text=True)
    out["dmesg"] = [p.returncode, p.stdout, p.stderr]
except OSError as e:
    out["dmesg"] = type(e).__name__
print(json.dumps(out))
""")
    assert r["status"] == "ok", r
    assert mark not in r["stdout"] + r["stderr"]
    out = json.loads(r["stdout"])
    assert out["klogctl"] == 1, out["klogctl"]  # EPERM: syslog(2) is denied
    for p in ("/dev/kmsg", "/proc/kmsg"):
        assert out[p] in ("FileNotFoundError", "PermissionError"), (p, out[p])
    assert out["dmesg"] == "FileNotFoundError" or out["dmesg"][0] != 0, out["dmesg"]


WRITE_PY = r"""
import json, os
d, canary, name = %r, %r, %r
out = {}
def attempt(label, fn):
    try:
        fn()
        out[label] = "done"
    except OSError as e:
        out[label] = type(e).__name__
attempt("overwrite", lambda: open(canary, "w").write("pwned"))
attempt("via_proc_root", lambda: open("/proc/1/root" + canary, "w").write("pwned"))
attempt("via_self_root", lambda: open("/proc/self/root" + canary, "w").write("pwned"))
attempt("create", lambda: open(d + "/new.txt", "w").write("pwned"))
attempt("mkdir_parent", lambda: os.makedirs(d, exist_ok=True))
attempt("symlink", lambda: os.symlink("/workspace", d + "/link"))
attempt("unlink", lambda: os.unlink(canary))
attempt("etc_passwd", lambda: open("/etc/passwd", "a").write("evil::0:0::/:/bin/sh\n"))
attempt("usr", lambda: open("/usr/lib/" + name, "w").write("pwned"))
attempt("var_tmp", lambda: open("/var/tmp/" + name, "w").write("pwned"))
# these succeed, inside the sandbox only
attempt("tmp", lambda: open("/tmp/" + name, "w").write("pwned"))
attempt("shm", lambda: open("/dev/shm/" + name, "w").write("pwned"))
print(json.dumps(out))
"""

WRITE_JS = r"""
const fs = require('fs');
const [d, canary, name] = [%s, %s, %s];
const out = {};
const attempt = (label, fn) => { try { fn(); out[label] = 'done'; } catch (e) { out[label] = e.code; } };
attempt('overwrite', () => fs.writeFileSync(canary, 'pwned'));
attempt('via_proc_root', () => fs.writeFileSync('/proc/1/root' + canary, 'pwned'));
attempt('via_self_root', () => fs.writeFileSync('/proc/self/root' + canary, 'pwned'));
attempt('create', () => fs.writeFileSync(d + '/new.txt', 'pwned'));
attempt('mkdir_parent', () => fs.mkdirSync(d, {recursive: true}));
attempt('symlink', () => fs.symlinkSync('/workspace', d + '/link'));
attempt('unlink', () => fs.unlinkSync(canary));
attempt('etc_passwd', () => fs.appendFileSync('/etc/passwd', 'evil::0:0::/:/bin/sh\n'));
attempt('usr', () => fs.writeFileSync('/usr/lib/' + name, 'pwned'));
attempt('var_tmp', () => fs.writeFileSync('/var/tmp/' + name, 'pwned'));
attempt('tmp', () => fs.writeFileSync('/tmp/' + name, 'pwned'));
attempt('shm', () => fs.writeFileSync('/dev/shm/' + name, 'pwned'));
console.log(JSON.stringify(out));
"""


@pytest.mark.parametrize("lang", LANGS)
def test_writes_outside_the_workspace_do_not_reach_the_host(lang, planted):
    name = "sbxsec-written-%s" % uuid.uuid4().hex[:12]
    before = {p: sha(p) for p in (planted["canary"], planted["secret"], "/etc/passwd")}
    listing = sorted(os.listdir(planted["dir"]))
    args = (planted["dir"], planted["canary"], name)
    src = WRITE_PY % args if lang == "python" else WRITE_JS % tuple(json.dumps(a) for a in args)
    r = run_lang(lang, src)
    assert r["status"] == "ok", r
    out = json.loads(r["stdout"])
    # from the host: nothing changed, nothing appeared
    assert {p: sha(p) for p in before} == before
    assert sorted(os.listdir(planted["dir"])) == listing
    for d in ("/tmp", "/dev/shm", "/var/tmp", "/usr/lib"):
        assert not os.path.exists(os.path.join(d, name)), d
    # and the program's side of it: the host paths do not even exist there,
    # the system is read-only, the sandbox's own /tmp and /dev/shm work
    inside = ("overwrite", "via_proc_root", "via_self_root", "create", "symlink", "unlink",
              "etc_passwd", "usr", "var_tmp")
    if BACKEND == "podman":  # its own /var/tmp tmpfs, sized (test_container_posture.py)
        inside = tuple(k for k in inside if k not in ("create", "symlink", "var_tmp"))
    for k in inside:
        assert out[k] != "done", (k, out)
    assert out["tmp"] == "done" and out["shm"] == "done", out
