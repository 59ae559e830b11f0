# SPDX-License-Identifier: MIT
"""A small Kubernetes API client for the tests, from Python's standard library
only (ssl, socket, http.client): REST calls with the client certificate of a
kubeconfig, and exec over a raw WebSocket with the v5.channel.k8s.io
subprotocol, the way the C plugin speaks it.

It reads the kubeconfig scripts/k8s-cluster.sh writes: one cluster, one user,
file or inline (-data) certificates. It is not a general kubeconfig parser.
"""
import base64
import hashlib
import http.client
import json
import os
import socket
import ssl
import struct
import tempfile
import time
import urllib.parse

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CH_STDIN, CH_STDOUT, CH_STDERR, CH_STATUS, CH_RESIZE, CH_CLOSE = 0, 1, 2, 3, 4, 255


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %d: %s" % (status, body[:500]))
        self.status = status
        self.body = body


def _kubeconfig_fields(path):
    """The first value of each key we use, from a simple block-style file."""
    want = ("server", "certificate-authority", "certificate-authority-data",
            "client-certificate", "client-certificate-data", "client-key", "client-key-data")
    found = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.strip().lstrip("- ").partition(":")
            if sep and key in want and key not in found:
                found[key] = value.strip().strip("'\"")
    return found


class Cluster:
    def __init__(self, kubeconfig):
        cfg = _kubeconfig_fields(kubeconfig)
        url = urllib.parse.urlsplit(cfg["server"])
        if url.scheme != "https":
            raise ValueError("kubeconfig server must be https: %s" % cfg["server"])
        self.host, self.port = url.hostname, url.port or 443
        self._tmp = tempfile.TemporaryDirectory(prefix="kube-test-")

        def material(name):
            if name + "-data" in cfg:
                p = os.path.join(self._tmp.name, name)
                with open(p, "wb") as f:
                    f.write(base64.b64decode(cfg[name + "-data"]))
                return p
            return cfg[name]

        self.ctx = ssl.create_default_context(cafile=material("certificate-authority"))
        self.ctx.load_cert_chain(material("client-certificate"), material("client-key"))

    # ------------------------------------------------------------ REST

    def request(self, method, path, body=None, ok=(200, 201, 202)):
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
        try:
            data = None if body is None else json.dumps(body).encode()
            headers = {"Accept": "application/json"}
            if data is not None:
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read().decode(errors="replace")
        finally:
            conn.close()
        if resp.status not in ok:
            raise ApiError(resp.status, raw)
        return json.loads(raw) if raw else None

    def get(self, path):
        return self.request("GET", path)

    def create(self, path, obj):
        return self.request("POST", path, obj)

    def delete(self, path, grace=None):
        q = "" if grace is None else "?gracePeriodSeconds=%d" % grace
        try:
            return self.request("DELETE", path + q)
        except ApiError as e:
            if e.status != 404:
                raise
            return None

    def wait(self, what, probe, timeout):
        """Poll probe() until it returns something true, at most timeout s."""
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            last = probe()
            if last:
                return last
            time.sleep(0.25)
        raise TimeoutError("no %s within %d s (last: %r)" % (what, timeout, last))

    # ------------------------------------------------------------ exec

    def exec(self, ns, pod, argv, stdin=None, container=None, timeout=60):
        """Run argv in the pod over a v5.channel.k8s.io WebSocket.

        Returns (exit code, stdout bytes, stderr bytes, status dict). stdin,
        when given, is sent and then closed with v5's close message."""
        q = [("command", a) for a in argv]
        q += [("stdin", "true" if stdin is not None else "false"),
              ("stdout", "true"), ("stderr", "true"), ("tty", "false")]
        if container:
            q.append(("container", container))
        path = "/api/v1/namespaces/%s/pods/%s/exec?%s" % (ns, pod, urllib.parse.urlencode(q))
        raw = socket.create_connection((self.host, self.port), timeout=timeout)
        sock = self.ctx.wrap_socket(raw, server_hostname=self.host)
        try:
            self._handshake(sock, path)
            if stdin is not None:
                if stdin:
                    sock.sendall(_frame(2, bytes([CH_STDIN]) + stdin))
                sock.sendall(_frame(2, bytes([CH_CLOSE, CH_STDIN])))
            out = {CH_STDOUT: b"", CH_STDERR: b"", CH_STATUS: b""}
            for opcode, payload in _frames(sock):
                if opcode == 8:  # close
                    break
                if opcode == 9:  # ping
                    sock.sendall(_frame(10, payload))
                    continue
                if opcode in (1, 2) and payload:
                    ch = payload[0]
                    out[ch] = out.get(ch, b"") + payload[1:]
        finally:
            sock.close()
        status = json.loads(out[CH_STATUS]) if out[CH_STATUS] else {}
        return _exit_code(status), out[CH_STDOUT], out[CH_STDERR], status

    def _handshake(self, sock, path):
        key = base64.b64encode(os.urandom(16))
        req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"
               % (path, self.host, self.port, key.decode()))
        sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(1)
            if not chunk:
                raise ConnectionError("connection closed during the WebSocket handshake")
            head += chunk
        lines = head.decode(errors="replace").split("\r\n")
        if " 101 " not in lines[0] + " ":
            rest = sock.recv(65536).decode(errors="replace")
            raise ConnectionError("exec upgrade refused: %s %s" % (lines[0], rest[:500]))
        headers = {}
        for line in lines[1:]:
            k, sep, v = line.partition(":")
            if sep:
                headers[k.strip().lower()] = v.strip()
        accept = base64.b64encode(hashlib.sha1(key + WS_GUID).digest()).decode()
        if headers.get("sec-websocket-accept") != accept:
            raise ConnectionError("bad Sec-WebSocket-Accept: %r" % headers.get("sec-websocket-accept"))
        if headers.get("sec-websocket-protocol") != "v5.channel.k8s.io":
            raise ConnectionError("server chose subprotocol %r" % headers.get("sec-websocket-protocol"))


def _exit_code(status):
    if status.get("status") == "Success":
        return 0
    for cause in status.get("details", {}).get("causes", []):
        if cause.get("reason") == "ExitCode":
            return int(cause["message"])
    return None


def _frame(opcode, payload):
    """One final, masked client frame."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _frames(sock):
    """Yield (opcode, payload) for each message, fragments joined."""
    opcode, parts = None, []
    while True:
        try:
            h = _recv_exact(sock, 2)
        except EOFError:
            return
        fin, op, n = h[0] & 0x80, h[0] & 0x0F, h[1] & 0x7F
        if n == 126:
            n = struct.unpack("!H", _recv_exact(sock, 2))[0]
        elif n == 127:
            n = struct.unpack("!Q", _recv_exact(sock, 8))[0]
        mask = _recv_exact(sock, 4) if h[1] & 0x80 else None
        payload = _recv_exact(sock, n)
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        if op >= 8:  # control frames may come between fragments
            yield op, payload
            if op == 8:
                return
            continue
        if op != 0:
            opcode, parts = op, []
        parts.append(payload)
        if fin:
            yield opcode, b"".join(parts)
            opcode, parts = None, []
