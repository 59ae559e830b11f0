# SPDX-License-Identifier: MIT
"""debian/ against the build tree, without building packages (that is
scripts/package-check.sh): debian/split-plugins puts every plugin of the
build in a package debian/control has, and every such package gets one;
the libraries the core opens with dlopen() are declared by the packages
that need them (debdeps.py); every lintian override says why."""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import debdeps  # noqa: E402

BUILD = os.environ["SBX_BUILD_DIR"]
SRC = os.environ["SBX_SOURCE_DIR"]
BIN = os.environ["SBX_BIN"]
DEBIAN = os.path.join(SRC, "debian")


def control():
    """{package: {field: value}} of debian/control's binary stanzas."""
    stanzas, cur, last = [], {}, None
    for line in open(os.path.join(DEBIAN, "control")):
        line = line.rstrip("\n")
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                stanzas.append(cur)
            cur, last = {}, None
        elif line[0] in " \t":
            cur[last] += " " + line.strip()
        else:
            last, _, value = line.partition(":")
            cur[last] = value.strip()
    if cur:
        stanzas.append(cur)
    return {s["Package"]: s for s in stanzas if "Package" in s}


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """{package: [files]} as debian/split-plugins assigns the build tree's
    plugin directory."""
    plugindirs = glob.glob(os.path.join(BUILD, "lib", "**", "llm-sandbox", "plugins"),
                           recursive=True)
    assert len(plugindirs) == 1, plugindirs
    rel = os.path.relpath(plugindirs[0], BUILD)
    work = tmp_path_factory.mktemp("split")
    os.mkdir(work / "debian")
    p = subprocess.run([os.path.join(DEBIAN, "split-plugins"), BUILD, rel, *control()],
                       cwd=work, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = {}
    for f in glob.glob(str(work / "debian" / "*.install")):
        out[os.path.basename(f)[:-len(".install")]] = open(f).read().split()
    return {"files": out, "dir": plugindirs[0]}


def test_every_plugin_package_gets_its_plugin(split):
    plugin_packages = {p for p in control() if p.startswith(("llm-sandbox-backend-",
                                                            "llm-sandbox-lang-"))}
    assert set(split["files"]) == plugin_packages
    for pkg, files in split["files"].items():
        assert any(f.endswith(".yaml") for f in files), (pkg, files)


def test_split_plugins_refuses_a_plugin_without_a_stanza(split, tmp_path):
    os.mkdir(tmp_path / "debian")
    packages = [p for p in control() if p != "llm-sandbox-lang-ruby"]
    p = subprocess.run([os.path.join(DEBIAN, "split-plugins"), BUILD,
                        os.path.relpath(split["dir"], BUILD), *packages],
                       cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode != 0 and "llm-sandbox-lang-ruby" in p.stderr, p


def test_dlopened_libraries_are_declared(split):
    pkgs = control()
    packages = {}
    for name, stanza in pkgs.items():
        manifests = {f: open(os.path.join(split["dir"], os.path.basename(f))).read()
                     for f in split["files"].get(name, []) if f.endswith(".yaml")}
        packages[name] = {"Depends": stanza.get("Depends", ""),
                          "Recommends": stanza.get("Recommends", ""), "manifests": manifests}
    if not shutil.which("dpkg"):
        pytest.skip("dpkg is not installed: no package owns the libraries here")
    lines = debdeps.check(packages, BIN)
    assert any("libcurl" in l for l in lines) and any("libmicrohttpd" in l for l in lines), lines


def test_the_check_fails_without_the_declaration(split):
    """The same check with libcurl4 taken out of the docker package's
    Depends must fail: it is a real check."""
    stanza = control()["llm-sandbox-backend-docker"]
    manifests = {f: open(os.path.join(split["dir"], os.path.basename(f))).read()
                 for f in split["files"]["llm-sandbox-backend-docker"] if f.endswith(".yaml")}
    packages = {"llm-sandbox": {"Depends": "", "Recommends": "libmicrohttpd12", "manifests": {}},
                "llm-sandbox-backend-docker": {
                    "Depends": re.sub(r"\blibcurl4\b", "", stanza["Depends"]),
                    "Recommends": "", "manifests": manifests}}
    if not shutil.which("dpkg"):
        pytest.skip("dpkg is not installed")
    with pytest.raises(AssertionError, match="does not Depend on libcurl4"):
        debdeps.check(packages, BIN)


def test_lintian_overrides_say_why():
    p = subprocess.run([os.path.join(SRC, "tests", "packaging", "check-overrides.sh"), DEBIAN],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
