# SPDX-License-Identifier: MIT
"""Write an image as a docker-archive (the `docker save` layout) to stdout or
a file, for `ctr -n k8s.io images import`: the test cluster has no registry
(scripts/k8s-cluster.sh).

  pack_image.py REF OUT --layer-tar ROOTFS.tar [--layer-tar MORE.tar ...] [--cmd JSON]
  pack_image.py REF OUT --file SRC:DEST:MODE ... [--entrypoint JSON]

REF is repository:tag, OUT a path or - for stdout. --layer-tar takes a root
filesystem tarball as a layer as it is (scripts/container-test-image.sh
writes one), bottom first (deploy/kubernetes/server-image.sh adds one with
the server); --file builds the layer from single files (the pause binary).
The archive is deterministic: the same input gives the same image ID.
"""
import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile

EPOCH = "1970-01-01T00:00:00Z"
CHUNK = 1 << 20


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def files_layer(specs, tmpdir):
    """A layer tar holding each SRC at DEST with MODE, owned by root."""
    path = os.path.join(tmpdir, "layer.tar")
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as t:
        for spec in specs:
            src, dest, mode = spec.split(":")
            ti = t.gettarinfo(src, arcname=dest.lstrip("/"))
            ti.mode = int(mode, 8)
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = "root"
            ti.mtime = 0
            with open(src, "rb") as f:
                t.addfile(ti, f)
    return path


def add_bytes(tar, name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = 0o644
    tar.addfile(ti, io.BytesIO(data))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ref")
    ap.add_argument("out")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--layer-tar", action="append")
    src.add_argument("--file", action="append")
    ap.add_argument("--entrypoint")
    ap.add_argument("--cmd")
    a = ap.parse_args()
    repo, _, tag = a.ref.rpartition(":")
    if not repo or "/" in tag:
        ap.error("REF must be repository:tag")

    with tempfile.TemporaryDirectory() as tmp:
        layers = a.layer_tar or [files_layer(a.file, tmp)]
        diff_ids = [sha256_file(layer) for layer in layers]
        config = {
            "architecture": "amd64",
            "os": "linux",
            "created": EPOCH,
            "config": {
                "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                "WorkingDir": "/",
            },
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d in diff_ids]},
            "history": [{"created": EPOCH, "created_by": "tests/k8s/pack_image.py"}
                        for _ in layers],
        }
        if a.entrypoint:
            config["config"]["Entrypoint"] = json.loads(a.entrypoint)
        if a.cmd:
            config["config"]["Cmd"] = json.loads(a.cmd)
        config_bytes = json.dumps(config, sort_keys=True).encode()
        config_id = hashlib.sha256(config_bytes).hexdigest()
        manifest = [{"Config": config_id + ".json", "RepoTags": [a.ref],
                     "Layers": [d + "/layer.tar" for d in diff_ids]}]

        out = sys.stdout.buffer if a.out == "-" else open(a.out + ".part", "wb")
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.GNU_FORMAT) as t:
            for layer, diff_id in zip(layers, diff_ids):
                ti = tarfile.TarInfo(diff_id)
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
                t.addfile(ti)
                ti = tarfile.TarInfo(diff_id + "/layer.tar")
                ti.size = os.path.getsize(layer)
                ti.mode = 0o644
                with open(layer, "rb") as f:
                    t.addfile(ti, f)
            add_bytes(t, config_id + ".json", config_bytes)
            add_bytes(t, "manifest.json", json.dumps(manifest).encode())
            add_bytes(t, "repositories", json.dumps({repo: {tag: diff_ids[-1]}}).encode())
        out.flush()
        if a.out != "-":
            out.close()
            os.replace(a.out + ".part", a.out)
    print("sha256:" + config_id, file=sys.stderr)


if __name__ == "__main__":
    main()
