# SPDX-License-Identifier: MIT
"""Cross-session access (issue 9): two sandboxes at once, as two callers
would have them. The first leaves a secret everywhere it can (workspace,
/tmp, /dev/shm, System V shared memory, an abstract unix socket and a
loopback listener) and waits; the second, in Python and in JavaScript,
goes looking. Both all run as the same host uid, so only the namespaces
keep them apart; the host checks the first one's pid and namespaces too."""
import json
import os
import uuid

import pytest

from conftest import CONTAINER, HOLD, live_run, run_lang

OWNER = r"""
import ctypes, json, os, socket, threading
secret = %r
for p in ("/workspace/secret", "/tmp/secret", "/dev/shm/secret"):
    open(p, "w").write(secret)
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(0x5b5b, 4096, 0o1666)  # IPC_CREAT | 0666
addr = libc.shmat(shmid, None, 0)
ctypes.memmove(addr, secret.encode(), len(secret))
hits = []
def serve(s):
    while True:
        c, _ = s.accept(); hits.append(1); c.close()
a = socket.socket(socket.AF_UNIX); a.bind("\0sbx-xsession"); a.listen(8)
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("127.0.0.1", 45454)); t.listen(8)
for s in (a, t):
    threading.Thread(target=serve, args=(s,), daemon=True).start()
"""
OWNER_END = "\nprint(json.dumps({'hits': len(hits), 'shm': shmid}))\n"

SEEKER_PY = r"""
import ctypes, json, os, signal, socket
out = {}
for p in ("/workspace/secret", "/tmp/secret", "/dev/shm/secret"):
    try:
        out[p] = open(p).read()
    except OSError as e:
        out[p] = type(e).__name__
libc = ctypes.CDLL(None, use_errno=True)
out["shmget"] = libc.shmget(0x5b5b, 0, 0)
out["ipcs"] = open("/proc/sysvipc/shm").read().splitlines()[1:]
def conn(fam, addr):
    s = socket.socket(fam); s.settimeout(2)
    try:
        s.connect(addr); return "connected"
    except OSError as e:
        return e.errno
    finally:
        s.close()
out["abstract"] = conn(socket.AF_UNIX, "\0sbx-xsession")
out["tcp"] = conn(socket.AF_INET, ("127.0.0.1", 45454))
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
try:
    os.kill(%d, 0); out["kill_owner"] = "alive"
except OSError as e:
    out["kill_owner"] = e.errno
print(json.dumps(out))
"""

SEEKER_JS = r"""
const fs = require('fs'), net = require('net');
const out = {};
for (const p of ['/workspace/secret', '/tmp/secret', '/dev/shm/secret']) {
  try { out[p] = fs.readFileSync(p, 'utf8'); } catch (e) { out[p] = e.code; }
}
out.ipcs = fs.readFileSync('/proc/sysvipc/shm', 'utf8').trim().split('\n').slice(1);
const conn = (opts) => new Promise((res) => {
  const s = net.connect(opts); s.setTimeout(2000, () => { s.destroy(); res('timeout'); });
  s.on('connect', () => { s.destroy(); res('connected'); }); s.on('error', (e) => res(e.code));
});
(async () => {
  out.abstract = await conn({path: '\0sbx-xsession'});
  out.tcp = await conn({host: '127.0.0.1', port: 45454});
  try { process.kill(%d, 0); out.kill_owner = 'alive'; } catch (e) { out.kill_owner = e.code; }
  console.log(JSON.stringify(out));
})();
"""


@pytest.mark.parametrize("lang", ["python", "javascript"])
def test_one_sandbox_cannot_reach_another(lang):
    secret = "xsession-%s" % uuid.uuid4().hex
    with live_run(OWNER % secret + HOLD["python"] + OWNER_END) as owner:
        src = (SEEKER_PY if lang == "python" else SEEKER_JS) % owner.pid
        seeker = run_lang(lang, src, "--timeout", "30")
        # a rootful engine maps no user namespace (both runs are the
        # sandbox uid on the host too): the others keep them apart
        for n in ("mnt", "ipc", "net", "pid") + (() if CONTAINER else ("user",)):
            assert os.readlink("/proc/%d/ns/%s" % (owner.pid, n)) != \
                os.readlink("/proc/self/ns/%s" % n)
    assert seeker["status"] == "ok", seeker
    assert secret not in seeker["stdout"] + seeker["stderr"]
    out = json.loads(seeker["stdout"])
    assert out["ipcs"] == [], out
    assert out["abstract"] in (111, "ECONNREFUSED"), out
    assert out["tcp"] in (111, "ECONNREFUSED"), out
    assert out["kill_owner"] in (3, "ESRCH"), out
    if lang == "python":
        assert out["shmget"] == -1, out
    res = owner.result
    assert res["status"] == "ok", res
    mine = json.loads(res["stdout"])
    assert mine["hits"] == 0 and mine["shm"] >= 0, mine
