# SPDX-License-Identifier: MIT
"""What a model reads, through the real MCP server on the backend under
test: a session cell's last value is shown as in a notebook (Python,
JavaScript, Ruby, R), pandas frames as text tables and matplotlib figures
as images; get_language_details and sandbox://languages list the libraries
that really import where programs run (the host's toolchain on local
backends, the image's on container ones), with their versions, and whether
plots come back, probed once per toolchain and kept in the cache directory.
"""
import json
import shutil
import subprocess

import pytest

from conftest import CONTAINER
from test_sessions import Client
import containers

pytestmark = pytest.mark.contract

LANGS = [l for l in ("python", "javascript", "ruby", "r")
         if (l in containers.IMAGE_LANGS if CONTAINER else
             shutil.which({"python": "python3", "javascript": "node", "ruby": "ruby",
                           "r": "Rscript"}[l]))]

# Per language: (cell, stdout) in order, in one session.
CELLS = {
    "python": [("x = 41", ""), ("x", "41\n"), ("y = x + 1", ""), ("[].sort()", ""),
               ("import math\nmath.sqrt(16)", "4.0\n"), ("x;", ""), ("print(y)", "42\n")],
    "javascript": [("let x = 41", ""), ("x", "41\n"), ("let y = x + 1", ""),
                   ("console.log(y)", "42\n"), ("[x, y].map((v) => v * 2)", "[ 82, 84 ]\n")],
    "ruby": [("x = 41", ""), ("x", "41\n"), ("y = x + 1", ""), ("puts y", "42\n"),
             ("[x, y].map { |v| v * 2 }", "[82, 84]\n"), ("nil", "")],
    "r": [("x <- 41", ""), ("x", "[1] 41\n"), ("y <- x + 1", ""), ("invisible(y)", ""),
          ("c(x, y) * 2", "[1] 82 84\n")],
}


@pytest.fixture
def client():
    c = Client()
    yield c
    c.finish()


def details(client, lang):
    return client.ok("get_language_details", {"language": lang})


def names(d):
    return {e.split(" ")[0].lower(): e.split(" ")[1] for e in d["preinstalled_libraries"]}


@pytest.mark.parametrize("lang", LANGS)
def test_session_shows_the_last_value(client, lang):
    sid = client.create(lang)
    for cell, out in CELLS[lang]:
        r = client.run(sid, cell)
        assert (cell, r["status"], r["stdout"], r["stderr"]) == (cell, "ok", out, ""), r
    # a one-shot run stays a plain script: its last value is not shown (R
    # scripts print top-level values themselves, as Rscript does)
    code = CELLS[lang][0][0] + "\n" + CELLS[lang][1][0]
    r = client.ok("execute_code", {"language": lang, "code": code})
    assert (r["status"], r["stdout"]) == ("ok", "[1] 41\n" if lang == "r" else ""), r


def test_session_frames_and_figures(client):
    """A DataFrame as its text table on stdout, display() and a figure as
    an image, where pandas and matplotlib import (the details say so)."""
    libs = names(details(client, "python"))
    sid = client.create()
    r = client.run(sid, "display({'a': 1}, 'b')\ndisplay(None)")
    assert (r["status"], r["stdout"]) == ("ok", "{'a': 1}\n'b'\n"), r
    if "pandas" in libs:
        r = client.run(sid, "import pandas as pd\n"
                            "df = pd.DataFrame({'n': [1, 2, 3], 's': ['a', 'b', 'c']})\n"
                            "df.head(2)")
        assert (r["status"], r["stdout"]) == ("ok", "   n  s\n0  1  a\n1  2  b\n"), r
        assert r["artifacts"] == [], r
        r = client.run(sid, "display(df, include=['text/html'])")
        assert [a["path"] for a in r["artifacts"]] == ["display-001.html"], r
    if "matplotlib" in libs:
        res = client.s.call_tool("execute_code", {"session_id": sid, "code":
                                 "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
                                 "ax.plot([1, 2, 3])"}, timeout=120)["result"]
        sc = res["structuredContent"]
        assert (sc["status"], sc["stdout"]) == ("ok", ""), sc  # no "[<Line2D ...>]"
        assert [a["path"] for a in sc["artifacts"]] == ["figure-001.png"], sc
        assert [c["type"] for c in res["content"]] == ["text", "image"], res
        # the figure again, closed since: shown as an image, not a repr
        r = client.run(sid, "ax.set_title('again')\nfig")
        assert (r["status"], r["stdout"]) == ("ok", ""), r
        assert [a["path"] for a in r["artifacts"]] == ["display-002.png"
                                                        if "pandas" in libs else
                                                        "display-001.png"], r


def in_sandbox_versions(client, wanted):
    """The versions importlib.metadata sees in a sandbox of this backend
    (None: not installed), by a run, not by the probe."""
    code = ("import importlib.metadata as m, json\nout = {}\n"
            "for n in %r:\n"
            "    try:\n        out[n] = m.version(n)\n"
            "    except m.PackageNotFoundError:\n        out[n] = None\n"
            "print(json.dumps(out))" % (wanted,))
    r = client.ok("execute_code", {"language": "python", "code": code})
    return json.loads(r["stdout"])


def test_python_details_are_what_imports_there(client):
    wanted = ["pip", "matplotlib", "numpy", "pandas", "plotly"]
    d = details(client, "python")
    libs = names(d)
    truth = in_sandbox_versions(client, wanted)
    for n in wanted:
        assert libs.get(n) == truth[n], (n, truth, d["preinstalled_libraries"])
    assert d["visualization_support"] == bool(truth["matplotlib"] or truth["plotly"]), d
    assert d["version"] and d["version"][0].isdigit(), d
    if not CONTAINER and subprocess.run(
            ["dpkg-query", "-W", "-f", "${Status}", "python3-matplotlib"],
            capture_output=True, text=True).stdout == "install ok installed":
        assert "matplotlib" in libs and d["visualization_support"] is True, d
    if CONTAINER:  # the image's python3-pip, and none of the host's libraries
        assert truth["pip"] and not truth["matplotlib"], truth
    # the resource says the same
    res = client.s.request("resources/read", {"uri": "sandbox://languages"})
    by_name = json.loads(res["result"]["contents"][0]["text"])
    assert by_name["python"]["preinstalled_libraries"] == d["preinstalled_libraries"]


def test_other_languages_list_their_libraries(client):
    """Ruby's default gems, R's base packages (and its plots): there on
    every toolchain that has the language."""
    if "ruby" in LANGS:
        libs = names(details(client, "ruby"))
        r = client.ok("execute_code", {"language": "ruby", "code": "require 'json'\n"
                                       "puts Gem.loaded_specs['json']&.version || JSON::VERSION"})
        assert libs.get("json") == r["stdout"].strip(), libs
    if "r" in LANGS:
        d = details(client, "r")
        assert "stats" in names(d) and d["visualization_support"] is True, d
    if "javascript" in LANGS:
        d = details(client, "javascript")
        assert d["visualization_support"] is False and isinstance(
            d["preinstalled_libraries"], list), d


def test_details_are_probed_once_per_toolchain(tmp_path):
    """The answer is kept in the cache directory under the toolchain's key:
    a second server reads it instead of probing (a library planted in the
    entry shows), and on a local backend a directory the libraries came
    from that changed since makes it probe again."""
    env = {"LLM_SANDBOX_CACHE_DIR": str(tmp_path)}
    c = Client(env)
    first = details(c, "python")
    c.finish()
    entries = []
    for f in (tmp_path / "details").iterdir():
        e = json.loads(f.read_text())
        if e["libraries"] == first["preinstalled_libraries"] and e["version"] == first["version"]:
            entries.append((f, e))
    assert len(entries) == 1, list((tmp_path / "details").iterdir())
    path, entry = entries[0]
    assert bool(entry["paths"]) != bool(CONTAINER), entry  # local: the directories, stamped
    entry["libraries"] = sorted(entry["libraries"] + ["zz-planted 9.9"])
    path.write_text(json.dumps(entry))
    c = Client(env)
    assert "zz-planted 9.9" in details(c, "python")["preinstalled_libraries"]
    c.finish()
    if CONTAINER:
        return
    lines = entry["paths"].splitlines()
    lines[0] = lines[0].split("\t")[0] + "\tstale"
    entry["paths"] = "\n".join(lines) + "\n"
    path.write_text(json.dumps(entry))
    c = Client(env)
    again = details(c, "python")
    c.finish()
    assert again["preinstalled_libraries"] == first["preinstalled_libraries"], again
    assert "zz-planted 9.9" not in json.loads(path.read_text())["libraries"]
