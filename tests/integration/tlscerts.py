# SPDX-License-Identifier: MIT
"""Throwaway certificates for the docker TLS tests (test_docker_tls.py):
a CA, a server certificate for 127.0.0.1 and client certificates, made with
the openssl command in a private directory. Docker's layout: a client
directory holds ca.pem, cert.pem and key.pem.

    server/      ca.pem, cert.pem, key.pem   the daemon's (--tlscacert ...)
    client/      ca.pem, cert.pem, key.pem   a client the daemon trusts
    wrong-ca/    another CA's ca.pem, the good client's pair: the server's
                 certificate does not verify
    no-cert/     ca.pem only: no client certificate to show
    other-cert/  ca.pem, and a pair signed by the other CA: the daemon
                 refuses it
"""
import os
import shutil
import subprocess

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]


def _ssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


def _ca(d, name):
    _ssl("req", "-x509", *EC, "-keyout", name + "-key.pem", "-out", name + ".pem", "-days", "2",
         "-subj", "/CN=llm-sandbox test %s" % name, cwd=d)


def _signed(d, name, ca, ext):
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(ext)
    _ssl("req", *EC, "-keyout", name + "-key.pem", "-out", name + ".csr", "-subj",
         "/CN=" + name, cwd=d)
    _ssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + "-key.pem",
         "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "2", "-extfile",
         name + ".ext", "-out", name + "-cert.pem", cwd=d)


def _layout(d, sub, ca, cert):
    out = os.path.join(d, sub)
    os.makedirs(out, mode=0o700)
    shutil.copy(os.path.join(d, "work", ca + ".pem"), os.path.join(out, "ca.pem"))
    if cert:
        shutil.copy(os.path.join(d, "work", cert + "-cert.pem"), os.path.join(out, "cert.pem"))
        shutil.copy(os.path.join(d, "work", cert + "-key.pem"), os.path.join(out, "key.pem"))
    return out


def make(d):
    """Fill the empty directory d (made 0700 here); {name: directory}."""
    if os.path.exists(d):
        shutil.rmtree(d)
    work = os.path.join(d, "work")
    os.makedirs(work, mode=0o700)
    os.chmod(d, 0o700)
    _ca(work, "ca")
    _ca(work, "other-ca")
    _signed(work, "server", "ca", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _signed(work, "client", "ca", "extendedKeyUsage=clientAuth\n")
    _signed(work, "other-client", "other-ca", "extendedKeyUsage=clientAuth\n")
    return {"server": _layout(d, "server", "ca", "server"),
            "client": _layout(d, "client", "ca", "client"),
            "wrong-ca": _layout(d, "wrong-ca", "other-ca", "client"),
            "no-cert": _layout(d, "no-cert", "ca", None),
            "other-cert": _layout(d, "other-cert", "ca", "other-client")}
