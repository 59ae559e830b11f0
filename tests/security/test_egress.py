# SPDX-License-Identifier: MIT
"""Network egress (issue 9), in Python and JavaScript: TCP, UDP, a DNS
query, IPv6, raw and packet sockets, unusual families, and the host's
loopback services and unix sockets (abstract and by path). The targets are
canary listeners this test starts on this machine's own addresses (its
loopback and its interfaces' addresses); nothing else is ever contacted.
The host counts what reached each canary."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid

import pytest

from conftest import BACKEND, CONTAINER, backend_controls, run_lang

LANGS = ["python", "javascript"]


def host_addresses():
    """This machine's own non-loopback addresses (v4 and v6, global scope)."""
    out = []
    for fam in ("-4", "-6"):
        r = subprocess.run(["ip", "-o", fam, "addr", "show", "scope", "global"],
                           capture_output=True, text=True)
        for m in re.finditer(r"inet6? ([0-9a-f.:]+)/", r.stdout):
            out.append(m.group(1))
    return out


class Canaries:
    """TCP and UDP listeners on every local address, and unix stream
    listeners (abstract, and by path in a world-writable directory)."""

    def __init__(self):
        self.tcp, self.udp = [], []
        addrs = ["127.0.0.1", "::1"] + host_addresses()
        for a in addrs:
            fam = socket.AF_INET6 if ":" in a else socket.AF_INET
            try:
                t = socket.socket(fam, socket.SOCK_STREAM)
                t.bind((a, 0))
                t.listen(8)
                t.setblocking(False)
                u = socket.socket(fam, socket.SOCK_DGRAM)
                u.bind((a, 0))
                u.setblocking(False)
            except OSError:
                continue
            self.tcp.append((a, t.getsockname()[1], t))
            self.udp.append((a, u.getsockname()[1], u))
        self.dir = tempfile.mkdtemp(prefix="sbxsec-net-", dir="/var/tmp")
        os.chmod(self.dir, 0o777)
        self.path = os.path.join(self.dir, "canary.sock")
        self.abstract = "sbxsec-canary-%s" % uuid.uuid4().hex[:12]
        self.unix = []
        for name in ("\0" + self.abstract, self.path):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(name)
            s.listen(8)
            s.setblocking(False)
            self.unix.append(s)
        os.chmod(self.path, 0o777)

    def targets(self):
        return {"tcp": [[a, p] for a, p, _ in self.tcp], "udp": [[a, p] for a, p, _ in self.udp],
                "abstract": self.abstract, "path": self.path, "resolve": True}

    def hits(self):
        """What reached any canary: connections accepted, datagrams read."""
        got = []
        for a, p, s in self.tcp:
            got += ["tcp %s:%d" % (a, p) for _ in _drain(s.accept)]
        for a, p, s in self.udp:
            got += ["udp %s:%d" % (a, p) for _ in _drain(lambda s=s: s.recvfrom(4096))]
        for s in self.unix:
            got += ["unix %r" % s.getsockname() for _ in _drain(s.accept)]
        return got

    def close(self):
        for s in [t[2] for t in self.tcp + self.udp] + self.unix:
            s.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _drain(fn):
    out = []
    while True:
        try:
            out.append(fn())
        except (BlockingIOError, InterruptedError):
            return out


@pytest.fixture
def canaries():
    c = Canaries()
    yield c
    c.close()


EGRESS_PY = r"""
import json, socket, struct
T = json.loads(%r)
out = {}
def attempt(label, fn):
    try:
        out[label] = fn()
    except OSError as e:
        out[label] = e.errno if e.errno is not None else type(e).__name__
def tcp(a, p):
    s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET)
    s.settimeout(3)
    s.connect((a, p)); s.close()
    return "connected"
def udp(a, p, payload=b"sbx-egress"):
    s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(payload, (a, p)); s.close()
    return "sent"
for a, p in T["tcp"]:
    attempt("tcp %%s" %% a, lambda: tcp(a, p))
for a, p in T["udp"]:
    attempt("udp %%s" %% a, lambda: udp(a, p))
# a DNS query for a name that cannot exist, to a canary as the "resolver"
q = struct.pack(">HHHHHH", 0x5b5b, 0x100, 1, 0, 0, 0) + b"\x0bsbx-canary\x07invalid\x00\x00\x01\x00\x01"
a, p = T["udp"][0]
attempt("dns", lambda: udp(a, p, q))
if T["resolve"]:
    attempt("getaddrinfo", lambda: socket.getaddrinfo("sbx-canary.invalid", 80) and "resolved")
def unix(addr):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    s.connect(addr); s.close()
    return "connected"
attempt("abstract", lambda: unix("\0" + T["abstract"]))
attempt("path", lambda: unix(T["path"]))
def raw(fam, typ, proto, dest):
    s = socket.socket(fam, typ, proto)
    s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", dest); s.close()
    return "sent"
attempt("raw_icmp", lambda: raw(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP, ("127.0.0.1", 0)))
attempt("ping_socket", lambda: raw(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP, ("127.0.0.1", 0)))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300) and "opened")
attempt("netlink_netfilter", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12) and "opened")
attempt("interfaces", lambda: sorted(n for _, n in socket.if_nameindex()))
# the host's sockets are not in this namespace's tables
out["proc_net"] = {f: open("/proc/net/" + f).read() for f in ("tcp", "tcp6", "udp", "udp6", "unix")}
print(json.dumps(out))
"""

EGRESS_JS = r"""
const net = require('net'), dgram = require('dgram'), dns = require('dns');
const T = %s;
const out = {};
const tcp = (label, opts) => new Promise((res) => {
  const s = net.connect(opts);
  const done = (v) => { out[label] = v; s.destroy(); res(); };
  s.setTimeout(3000, () => done('timeout'));
  s.on('connect', () => done('connected'));
  s.on('error', (e) => done(e.code));
});
const udp = (label, a, p) => new Promise((res) => {
  const s = dgram.createSocket(a.includes(':') ? 'udp6' : 'udp4');
  s.on('error', (e) => { out[label] = e.code; s.close(); res(); });
  s.send('sbx-egress', p, a, (e) => { out[label] = e ? e.code : 'sent'; s.close(); res(); });
});
(async () => {
  for (const [a, p] of T.tcp) await tcp('tcp ' + a, {host: a, port: p});
  for (const [a, p] of T.udp) await udp('udp ' + a, a, p);
  await tcp('abstract', {path: '\0' + T.abstract});
  await tcp('path', {path: T.path});
  if (T.resolve) await new Promise((res) => dns.lookup('sbx-canary.invalid', (e) => {
    out.getaddrinfo = e ? e.code : 'resolved'; res(); }));
  console.log(JSON.stringify(out));
})();
"""

FAILED_TCP = {111, 101, 99, 113, 110, "ECONNREFUSED", "ENETUNREACH", "EADDRNOTAVAIL",
              "EHOSTUNREACH", "timeout"}


def check_nothing_reached(c, out):
    hits = c.hits()
    assert hits == [], "canaries reached from the sandbox: %s (program saw %r)" % (hits, out)


@pytest.mark.parametrize("lang", LANGS)
def test_network_off_reaches_no_canary(lang, canaries):
    t = canaries.targets()
    assert len(t["tcp"]) >= 2, t  # at least the two loopbacks
    src = EGRESS_PY % json.dumps(t) if lang == "python" else EGRESS_JS % json.dumps(t)
    r = run_lang(lang, src, "--timeout", "60")
    assert r["status"] == "ok", r
    out = json.loads(r["stdout"])
    check_nothing_reached(canaries, out)
    for a, _ in t["tcp"]:
        assert out["tcp " + a] in FAILED_TCP, (a, out)
    for k in ("abstract", "path"):
        assert out[k] in (111, 2, "ECONNREFUSED", "ENOENT"), (k, out)
    assert out["getaddrinfo"] != "resolved", out
    if lang == "python":
        assert out["interfaces"] == ["lo"], out
        assert out["raw_icmp"] == 1, out  # EPERM
        # EPERM/EACCES; the engines open ICMP datagram sockets to every gid
        # in the container's own network namespace (ping_group_range), whose
        # loopback is its own: the canaries below show nothing got out
        assert out["ping_socket"] in ((1, 13, "sent") if CONTAINER else (1, 13)), out
        assert out["packet"] == 97 and out["netlink_netfilter"] == 97, out  # EAFNOSUPPORT
        for f, text in out["proc_net"].items():
            for _, port, _s in canaries.tcp + canaries.udp:
                assert ":%04X " % port not in text, (f, port)
            assert canaries.abstract not in text and canaries.path not in text, f


@pytest.mark.parametrize("lang", LANGS)
def test_network_on_reaches_no_host_loopback_or_unix_socket(lang, canaries):
    """With network on, the host's other addresses are reachable (README);
    its loopback and its unix sockets are not."""
    ctl = backend_controls()["network_on"]
    if ctl["level"] != "full":
        pytest.skip("%s reports network_on as %s here: %s" % (BACKEND, ctl["level"], ctl["note"]))
    t = canaries.targets()
    t["resolve"] = False  # a name lookup would go to the host's real resolver
    t["tcp"] = [x for x in t["tcp"] if x[0] in ("127.0.0.1", "::1")]
    t["udp"] = [x for x in t["udp"] if x[0] in ("127.0.0.1", "::1")]
    for s in canaries.tcp + canaries.udp:
        if s[0] not in ("127.0.0.1", "::1"):
            s[2].close()
    canaries.tcp = [s for s in canaries.tcp if s[0] in ("127.0.0.1", "::1")]
    canaries.udp = [s for s in canaries.udp if s[0] in ("127.0.0.1", "::1")]
    src = EGRESS_PY % json.dumps(t) if lang == "python" else EGRESS_JS % json.dumps(t)
    # the DNS probe goes to the loopback canary only, never to a real resolver
    r = run_lang(lang, src, "--timeout", "60", "--network", "on",
                 extra_env={"LLM_SANDBOX_NETWORK": "on"})
    assert r["status"] == "ok", r
    out = json.loads(r["stdout"])
    check_nothing_reached(canaries, out)
    for a, _ in t["tcp"]:
        assert out["tcp " + a] in FAILED_TCP, (a, out)
    for k in ("abstract", "path"):
        assert out[k] in (111, 2, "ECONNREFUSED", "ENOENT"), (k, out)
