# SPDX-License-Identifier: MIT
"""Artifacts through the real MCP server on the backend under test: every
new or changed file of a run is listed (never an input, a symlink or a
FIFO), readable with resources/read while it is kept, images come inline,
plots of matplotlib, seaborn, plotly and R become files, each exactly
once, and the caps and the time to live hold.
"""
import base64
import re
import shutil
import subprocess
import time

import pytest

from conftest import CONTAINER, run_cli
from test_sessions import Client

pytestmark = pytest.mark.contract



def host_python_has(module):
    """Whether the python3 the local backends run (/usr/bin/python3) has it."""
    return subprocess.run(["/usr/bin/python3", "-c", "import " + module],
                          capture_output=True).returncode == 0


needs_matplotlib = pytest.mark.skipif(
    CONTAINER or not host_python_has("matplotlib"),
    reason="matplotlib is not installed here (Debian: python3-matplotlib), or the container "
           "test image has none")
needs_r = pytest.mark.skipif(CONTAINER or not shutil.which("Rscript"),
                             reason="no R here, or the container test image has none")


@pytest.fixture
def client():
    c = Client()
    yield c
    c.finish()


def call(client, args):
    r = client.s.call_tool("execute_code", args, timeout=120)["result"]
    return r, r["structuredContent"]


def read(client, uri):
    return client.s.request("resources/read", {"uri": uri})


def test_new_files_are_artifacts_and_inputs_are_not(client):
    r, sc = call(client, {"code": "import os\n"
                                  "os.makedirs('out/deep', exist_ok=True)\n"
                                  "open('out/deep/table.csv', 'w').write('a,b\\n1,2\\n')\n"
                                  "open('note.txt', 'w').write('hello')\n"
                                  "open('raw.bin', 'wb').write(bytes(range(256)))\n"
                                  "os.symlink('/etc/passwd', 'link')\n"
                                  "os.mkfifo('pipe')\n"
                                  "print(open('input.txt').read())",
                          "files": {"input.txt": "given"}})
    assert sc["status"] == "ok", sc
    arts = sc["artifacts"]
    # in the order written; not the program, the staged input, the symlink or the FIFO
    assert [a["path"] for a in arts] == ["out/deep/table.csv", "note.txt", "raw.bin"], arts
    assert [a["mime_type"] for a in arts] == ["text/csv", "text/plain",
                                              "application/octet-stream"]
    assert [a["size"] for a in arts] == [8, 5, 256]
    links = [c for c in r["content"] if c["type"] == "resource_link"]
    assert [(l["uri"], l["name"]) for l in links] == [(a["uri"], a["path"]) for a in arts]
    got = read(client, arts[0]["uri"])["result"]["contents"][0]
    assert (got["mimeType"], got["text"]) == ("text/csv", "a,b\n1,2\n")
    got = read(client, arts[2]["uri"])["result"]["contents"][0]
    assert base64.b64decode(got["blob"]) == bytes(range(256))
    # a made-up run id, a path of the run that is no artifact, a bad escape
    run_prefix = arts[0]["uri"].rsplit("/files/", 1)[0]
    for uri in ["sandbox://runs/00000000000000000000000000000000/files/note.txt",
                run_prefix + "/files/input.txt", run_prefix + "/files/link",
                run_prefix + "/files/%zz", run_prefix + "/files/../note.txt"]:
        assert "error" in read(client, uri), uri


def test_caps_and_time_to_live():
    c = Client({"LLM_SANDBOX_ARTIFACTS_MAX": "2", "LLM_SANDBOX_ARTIFACT_TTL": "1",
                "LLM_SANDBOX_ARTIFACTS_BYTES": "1K"})
    try:
        _, sc = call(c, {"code": "for i in range(5): open('f%d.txt' % i, 'w').write('x' * i)"})
        assert [a["path"] for a in sc["artifacts"]] == ["f0.txt", "f1.txt"]
        assert sc["artifacts_truncated"] is True
        _, sc = call(c, {"code": "open('big.txt', 'w').write('y' * 4096)\n"
                                 "open('small.txt', 'w').write('z')"})
        big, small = sc["artifacts"]
        assert sc["artifacts_truncated"] is True  # big is listed but was not kept
        assert "error" in read(c, big["uri"])
        assert read(c, small["uri"])["result"]["contents"][0]["text"] == "z"
        time.sleep(1.5)
        assert "error" in read(c, small["uri"])
    finally:
        c.finish()


def test_session_artifacts_are_the_changed_files(client):
    sid = client.create()
    _, sc = call(client, {"session_id": sid, "code": "open('a.txt', 'w').write('1')\n"
                                                     "open('b.txt', 'w').write('1')"})
    assert [a["path"] for a in sc["artifacts"]] == ["a.txt", "b.txt"]
    assert sc["artifacts"][0]["uri"] == "sandbox://sessions/%s/files/a.txt" % sid
    _, sc = call(client, {"session_id": sid, "code": "x = 1"})
    assert sc["artifacts"] == []
    _, sc = call(client, {"session_id": sid, "code": "open('b.txt', 'w').write('22')"})
    assert [(a["path"], a["size"]) for a in sc["artifacts"]] == [("b.txt", 2)]
    uri = sc["artifacts"][0]["uri"]
    assert read(client, uri)["result"]["contents"][0]["text"] == "22"
    client.ok("close_session", {"session_id": sid})
    assert "error" in read(client, uri)


@needs_matplotlib
def test_matplotlib_figures_each_once_in_order(client):
    r, sc = call(client, {"code": "import matplotlib.pyplot as plt\n"
                                  "plt.plot([1, 2, 3]); plt.show()\n"
                                  "plt.figure(); plt.bar([1, 2], [3, 4])\n"
                                  "print('drawn')"})
    assert sc["status"] == "ok" and sc["stderr"] == "", sc
    assert [a["path"] for a in sc["artifacts"]] == ["figure-001.png", "figure-002.png"]
    images = [c for c in r["content"] if c["type"] == "image"]
    assert len(images) == 2 and all(i["mimeType"] == "image/png" for i in images)
    assert all(base64.b64decode(i["data"]).startswith(b"\x89PNG") for i in images)
    # seaborn draws through matplotlib
    if host_python_has("seaborn"):
        _, sc = call(client, {"code": "import seaborn as sns, matplotlib.pyplot as plt\n"
                                      "sns.histplot([1, 2, 2, 3]); plt.show()"})
        assert [a["path"] for a in sc["artifacts"]] == ["figure-001.png"], sc


@needs_matplotlib
def test_savefig_is_the_one_image(client):
    """A figure the program saved itself is not captured again at exit
    (issue 23): savefig('p.png') returns one image; a figure changed after
    its savefig, or saved outside the workspace, is still captured."""
    r, sc = call(client, {"code": "import matplotlib.pyplot as plt\n"
                                  "plt.plot([1, 2, 3]); plt.savefig('p.png')"})
    assert sc["status"] == "ok", sc
    assert [a["path"] for a in sc["artifacts"]] == ["p.png"], sc
    assert [c["type"] for c in r["content"]] == ["text", "image"], r["content"]
    _, sc = call(client, {"code": "import matplotlib.pyplot as plt\n"
                                  "plt.plot([1]); plt.savefig('a.png'); plt.show()\n"
                                  "plt.figure(); plt.plot([2]); plt.savefig('b.png')\n"
                                  "plt.title('changed since')\n"
                                  "plt.figure(); plt.plot([3]); plt.savefig('/tmp/c.png')"})
    assert sorted(a["path"] for a in sc["artifacts"]) == \
        ["a.png", "b.png", "figure-001.png", "figure-002.png"], sc


@needs_matplotlib
def test_forty_figures_cap_the_inline_images(client):
    """40 figures: 8 inline (LLM_SANDBOX_INLINE_IMAGES), 32 held back as
    resource links, and the result says how many."""
    r, sc = call(client, {"code": "import matplotlib.pyplot as plt\n"
                                  "for i in range(40):\n"
                                  "    plt.figure(figsize=(1, 1), dpi=30); plt.plot([i, 0])\n",
                          "timeout": 120})
    assert sc["status"] == "ok", sc
    assert [a["path"] for a in sc["artifacts"]] == ["figure-%03d.png" % i for i in range(1, 41)]
    assert len([c for c in r["content"] if c["type"] == "image"]) == 8
    links = [c for c in r["content"] if c["type"] == "resource_link"]
    assert [l["name"] for l in links] == ["figure-%03d.png" % i for i in range(9, 41)], links
    assert sc["images_held_back"] == 32
    assert "32 images held back" in r["content"][0]["text"], r["content"][0]["text"]


@needs_matplotlib
def test_matplotlib_in_a_session(client):
    sid = client.create()
    _, sc = call(client, {"session_id": sid, "code": "import matplotlib.pyplot as plt\n"
                                                     "plt.plot([1, 2]); plt.show()\n"
                                                     "plt.figure(); plt.plot([2, 1])"})
    assert [a["path"] for a in sc["artifacts"]] == ["figure-001.png", "figure-002.png"], sc
    r, sc = call(client, {"session_id": sid, "code": "plt.figure(); plt.plot([3, 3]); plt.show()"})
    assert [a["path"] for a in sc["artifacts"]] == ["figure-003.png"], sc
    assert [c["type"] for c in r["content"]] == ["text", "image"]


@pytest.mark.skipif(CONTAINER or not host_python_has("plotly"),
                    reason="plotly is not installed here (Debian: python3-plotly)")
def test_plotly_figure_as_html(client):
    _, sc = call(client, {"code": "import plotly.graph_objects as go\n"
                                  "go.Figure(go.Bar(y=[1, 3, 2])).show()"})
    assert sc["status"] == "ok", sc
    assert [a["path"] for a in sc["artifacts"]][0] == "figure-001.html", sc
    html = read(client, sc["artifacts"][0]["uri"])["result"]["contents"][0]["text"]
    assert "plotly" in html.lower()


# malloc may reserve a 64 MiB arena for each thread that contends for it
ARENA = 64 << 20


def _room_left(status, limits):
    """Bytes between a program's peak address space and its RLIMIT_AS."""
    peak = int(re.search(r"^VmPeak:\s+(\d+) kB$", status, re.M).group(1)) << 10
    limit = re.search(r"^Max address space\s+(\d+)", limits, re.M)
    assert limit, "no RLIMIT_AS in the run: %s" % limits
    return int(limit.group(1)) - peak


# Without cgroups (as nobody here) memory falls back to RLIMIT_AS, which
# counts address space that is only reserved. A plot there must leave room
# for two more threads' malloc arenas: at 512 MiB an R plot peaked at ~502
# MiB, and now and then pango could not map a thread's stack, so GLib ended
# R with SIGTRAP (exit 133).
@pytest.mark.parametrize("lang", ["r", "python"])
def test_a_plot_leaves_room_under_the_address_space_fallback(client, lang):
    if lang == "r" and (CONTAINER or not shutil.which("Rscript")):
        pytest.skip("no R here, or the container test image has none")
    if lang == "python" and (CONTAINER or not host_python_has("matplotlib")):
        pytest.skip("matplotlib is not installed here, or the container test image has none")
    src = {"r": "plot(1:10)\nhist(c(1, 2, 2, 3))\ninvisible(dev.off())\n"
                "cat(readLines('/proc/self/status'), sep = '\\n')\ncat('@@\\n')\n"
                "cat(readLines('/proc/self/limits'), sep = '\\n')\n",
           "python": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\n"
                     "plt.savefig('a.png')\nprint(open('/proc/self/status').read())\n"
                     "print('@@')\nprint(open('/proc/self/limits').read())\n"}[lang]
    _, sc = call(client, {"language": lang, "code": src})
    assert sc["status"] == "ok", sc
    if not any("RLIMIT_AS" in w for w in sc["warnings"]):
        pytest.skip("memory is a cgroup's limit here: no RLIMIT_AS fallback (%s)" % sc["warnings"])
    status, limits = sc["stdout"].split("@@", 1)
    room = _room_left(status, limits)
    assert room >= 2 * ARENA, "only %d MiB left under RLIMIT_AS" % (room >> 20)


@needs_r
def test_r_plots(client):
    r, sc = call(client, {"language": "r", "code": "plot(1:10)\nhist(c(1, 2, 2, 3))"})
    assert sc["status"] == "ok" and "Fontconfig" not in sc["stderr"], sc
    assert [a["path"] for a in sc["artifacts"]] == ["Rplot001.png", "Rplot002.png"]
    assert [c["type"] for c in r["content"]] == ["text", "image", "image"]
    has_ggplot = subprocess.run(["Rscript", "-e", "library(ggplot2)"],
                                capture_output=True).returncode == 0
    if has_ggplot:
        _, sc = call(client, {"language": "r", "code":
                              "library(ggplot2)\nprint(ggplot(data.frame(x = 1:3, y = 3:1), "
                              "aes(x, y)) + geom_point())"})
        assert [a["path"] for a in sc["artifacts"]] == ["Rplot001.png"], sc
    sid = client.create("r")
    _, sc = call(client, {"session_id": sid, "code": "plot(1:3)"})
    assert [a["path"] for a in sc["artifacts"]] == ["Rplot001.png"], sc
    _, sc = call(client, {"session_id": sid, "code": "y <- 2"})
    assert sc["artifacts"] == []


def test_cli_saves_artifacts(tmp_path):
    out = tmp_path / "out"
    r = run_cli(["run", "--artifacts", str(out), "--code",
                 "import os\nos.makedirs('d/e', exist_ok=True)\n"
                 "open('d/e/x.txt', 'w').write('hi')\nopen('y.bin', 'wb').write(b'\\0\\1')"])
    assert r.rc == 0, r
    assert (out / "d" / "e" / "x.txt").read_text() == "hi"
    assert (out / "y.bin").read_bytes() == b"\0\1"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == \
        ["d/e/x.txt", "y.bin"]
    # a symlink already in DIR is never followed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "d").symlink_to(elsewhere)
    (planted / "y.bin").symlink_to(elsewhere / "y.bin")
    r = run_cli(["run", "--artifacts", str(planted), "--code",
                 "import os\nos.makedirs('d', exist_ok=True)\nopen('d/x.txt', 'w').write('1')\n"
                 "open('y.bin', 'w').write('2')"])
    assert r.rc == 125 and b"not saved" in r.err, r
    assert list(elsewhere.iterdir()) == []
