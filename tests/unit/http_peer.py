# SPDX-License-Identifier: MIT
"""The far end of test_http.c: a TLS server on 127.0.0.1 that checks the
client's certificate, written with the standard library only.

    http_peer.py DIR     makes throwaway certificates in DIR (a new
                         directory; tests/integration/tlscerts.py's layout:
                         DIR/client/{ca,cert,key}.pem is a client it
                         trusts, DIR/wrong-ca/ one whose CA is another),
                         prints the port it listens on, then serves until
                         its stdin closes.

Paths:
  GET /headers          200, the request's header lines as the body
  POST /attach          "Upgrade: tcp" (Docker's attach): 101, then echoes
                        bytes; a line "burst N\\n" answers N bytes of 'x' in
                        one TLS write and then stays silent; "end" closes
  GET /ws               WebSocket: takes the first offered subprotocol of
                        v5.channel.k8s.io and v4.channel.k8s.io; echoes each
                        message (reassembled) with a ping first; the message
                        "big" answers 200000 bytes in 3 fragments; "close"
                        answers Close 4000 "bye"; "drop" drops the TCP
                        connection without a Close; the client's Close is
                        echoed.
  GET /deny             403 with a body
"""
import base64
import hashlib
import os
import socket
import ssl
import struct
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import tlscerts  # noqa: E402

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(1)
        if not chunk:
            return None
        data += chunk
    return data.decode("latin-1")


def header(head, name):
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name.lower():
            return v.strip()
    return None


def send_frame(conn, opcode, payload, fin=True):
    b0 = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        hdr = struct.pack("!BB", b0, n)
    elif n < 65536:
        hdr = struct.pack("!BBH", b0, 126, n)
    else:
        hdr = struct.pack("!BBQ", b0, 127, n)
    conn.sendall(hdr + payload)


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def recv_frame(conn):
    b0, b1 = recv_exact(conn, 2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", recv_exact(conn, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", recv_exact(conn, 8))[0]
    if not b1 & 0x80:
        raise ValueError("client frame not masked")
    key = recv_exact(conn, 4)
    data = bytes(c ^ key[i % 4] for i, c in enumerate(recv_exact(conn, n)))
    return b0 & 0x80, b0 & 0x0F, data


def serve_ws(conn, head):
    offered = [p.strip() for p in (header(head, "Sec-WebSocket-Protocol") or "").split(",")]
    proto = next((p for p in ("v5.channel.k8s.io", "v4.channel.k8s.io") if p in offered), None)
    key = header(head, "Sec-WebSocket-Key")
    if not proto or not key or header(head, "Sec-WebSocket-Version") != "13":
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nbad")
        return
    accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
    conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                  "Sec-WebSocket-Protocol: %s\r\n\r\n" % (accept, proto)).encode())
    message, opcode0 = b"", 0
    while True:
        fin, opcode, data = recv_frame(conn)
        if opcode == 0x8:
            send_frame(conn, 0x8, data[:2])
            return
        if opcode in (0x9, 0xA):
            continue
        if opcode != 0:
            opcode0 = opcode
        message += data
        if not fin:
            continue
        if message == b"big":
            big = bytes(i % 251 for i in range(200000))
            send_frame(conn, 0x2, big[:70000], fin=False)
            send_frame(conn, 0x9, b"ping-between")
            send_frame(conn, 0x0, big[70000:140000], fin=False)
            send_frame(conn, 0x0, big[140000:], fin=True)
        elif message == b"close":
            send_frame(conn, 0x8, struct.pack("!H", 4000) + b"bye")
        elif message == b"drop":
            conn.shutdown(socket.SHUT_RDWR)
            return
        else:
            send_frame(conn, 0x9, b"are you there")
            send_frame(conn, opcode0, b"echo:" + message)
        message = b""


def serve_attach(conn):
    conn.sendall(b"HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
    buf = b""
    while True:
        data = conn.recv(65536)
        if not data:
            return
        buf += data
        while b"\n" in buf:
            line, _, buf = buf.partition(b"\n")
            if line.startswith(b"burst "):
                conn.sendall(b"x" * int(line[6:]))
            elif line == b"end":
                return
            else:
                conn.sendall(line + b"\n")


def serve(conn):
    try:
        head = read_head(conn)
        if head is None:
            return
        line = head.split("\r\n", 1)[0]
        if line.startswith("GET /headers "):
            body = head.encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        elif line.startswith("POST /attach ") and header(head, "Upgrade") == "tcp":
            serve_attach(conn)
        elif line.startswith("GET /ws "):
            serve_ws(conn, head)
        else:
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden")
    except (OSError, EOFError, ValueError, ssl.SSLError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    d = tlscerts.make(sys.argv[1])["server"]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "cert.pem"), os.path.join(d, "key.pem"))
    ctx.load_verify_locations(os.path.join(d, "ca.pem"))
    ctx.verify_mode = ssl.CERT_REQUIRED
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    print(lsock.getsockname()[1], flush=True)

    def accept_loop():
        while True:
            try:
                raw, _ = lsock.accept()
                conn = ctx.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
