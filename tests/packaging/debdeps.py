# SPDX-License-Identifier: MIT
"""What the core opens with dlopen() against what the Debian packages
declare. dpkg-shlibdeps sees only DT_NEEDED; the core opens libcurl for
plugins whose manifests say `requires: {host: [http]}`, libmicrohttpd for
`serve --http` and libsystemd for a delegated transient scope on systemd
hosts (core/src/host/scope.c), by the SONAMEs compiled into it. So:

  - every SONAME in the binary's .rodata is one of those three roles (a new
    dlopen() target fails here until it is declared);
  - the package owning each (dpkg -S, as dpkg-shlibdeps would find it) is
    in the Depends of every package that ships a manifest with host: [http]
    (role http), or in the core package's Recommends or Depends (roles
    serve_http and systemd_scope).

Used by tests/packaging/test_debian.py (debian/control and the build tree)
and by scripts/package-check.sh in the root the .debs were installed into:
    python3 debdeps.py debs DEBDIR BINARY
"""
import io
import os
import re
import struct
import subprocess
import sys
import tarfile

# What each dlopen()ed library is for, by the start of its SONAME.
ROLES = {"libcurl.": "http", "libmicrohttpd.": "serve_http", "libsystemd.": "systemd_scope"}
CORE = "llm-sandbox"


def rodata(binary):
    """The bytes of an ELF64 little-endian file's .rodata section."""
    data = open(binary, "rb").read()
    assert data[:4] == b"\x7fELF" and data[4] == 2, "%s: not an ELF64 file" % binary
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def section(i):
        name, _type, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", data,
                                                                   shoff + i * shentsize)
        return name, off, size

    _, stroff, _ = section(shstrndx)
    for i in range(shnum):
        name, off, size = section(i)
        if data[stroff + name:data.index(b"\0", stroff + name)] == b".rodata":
            return data[off:off + size]
    raise AssertionError("%s has no .rodata" % binary)


def dlopened(binary):
    """The SONAMEs compiled into the binary as strings, with their role."""
    found = {}
    for m in re.finditer(rb"lib[a-z0-9_+-]+\.so\.[0-9]+(?=\0)", rodata(binary)):
        soname = m.group().decode()
        roles = [r for prefix, r in ROLES.items() if soname.startswith(prefix)]
        assert roles, "%s opens %s, which has no role in debdeps.ROLES: declare it" % (
            binary, soname)
        found[soname] = roles[0]
    assert set(found.values()) == set(ROLES.values()), (
        "%s: expected a SONAME for every role %s, found %s" % (binary, ROLES, found))
    return found


def package_of(soname):
    """The Debian package that ships the library the dynamic linker finds
    for soname (as dpkg-shlibdeps resolves a DT_NEEDED entry)."""
    cache = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True,
                           check=True).stdout
    paths = re.findall(r"^\s*%s \(libc6,x86-64[^)]*\) => (\S+)$" % re.escape(soname), cache,
                       re.M) or re.findall(r"^\s*%s \(.*\) => (\S+)$" % re.escape(soname),
                                           cache, re.M)
    assert paths, "%s is not installed here (ldconfig -p)" % soname
    for path in (paths[0], os.path.realpath(paths[0])):
        for cand in (path, "/usr" + path if not path.startswith("/usr/") else path[4:]):
            p = subprocess.run(["dpkg", "-S", cand], capture_output=True, text=True)
            if p.returncode == 0:
                return p.stdout.split(":")[0].split(",")[0].strip()
    raise AssertionError("no package owns %s (%s)" % (soname, paths[0]))


def relation_names(field):
    """Package names in a Depends-like field, alternatives included."""
    names = set()
    for group in (field or "").split(","):
        for alt in group.split("|"):
            alt = re.sub(r"\(.*?\)|\[.*?\]|<.*?>", "", alt).strip()
            if alt and not alt.startswith("$"):
                names.add(alt.split(":")[0])
    return names


def wants_http(manifest_text):
    """Does a manifest's requires.host list name http?"""
    m = re.search(r"^requires:\n((?:[ \t#].*\n|\n)*)", manifest_text, re.M)
    block = m.group(1) if m else ""
    flow = re.search(r"^\s+host:\s*\[([^\]]*)\]", block, re.M)
    if flow:
        return "http" in [s.strip().strip("\"'") for s in flow.group(1).split(",")]
    seq = re.search(r"^(\s+)host:\s*\n((?:\1\s+-.*\n)*)", block, re.M)
    return bool(seq) and re.search(r"-\s*[\"']?http[\"']?\s*$", seq.group(2), re.M) is not None


def check(packages, binary):
    """packages: {name: {"Depends": str, "Recommends": str, "manifests":
    {file: text}}}. Returns the lines checked; raises on a missing one."""
    lines = []
    for soname, role in sorted(dlopened(binary).items()):
        dep = package_of(soname)
        if role == "http":
            users = [p for p, f in packages.items()
                     if any(wants_http(t) for t in f["manifests"].values())]
            assert users, "no package ships a plugin with host: [http]"
            for p in sorted(users):
                assert dep in relation_names(packages[p]["Depends"]), (
                    "%s ships a plugin with host: [http] (the core opens %s for it) but does "
                    "not Depend on %s" % (p, soname, dep))
                lines.append("%s Depends on %s (%s, host: [http])" % (p, dep, soname))
        else:
            core = packages[CORE]
            why = {"serve_http": "serve --http",
                   "systemd_scope": "a delegated scope on systemd hosts"}[role]
            assert dep in relation_names(core["Recommends"]) | relation_names(core["Depends"]), (
                "%s does not Recommend %s (the core opens %s for %s)" % (CORE, dep, soname, why))
            lines.append("%s Recommends %s (%s, %s)" % (CORE, dep, soname, why))
    return lines


def from_debs(debdir):
    """The packages of a directory of .debs (debug symbol packages left out)."""
    packages = {}
    for name in sorted(os.listdir(debdir)):
        if not name.endswith(".deb") or "-dbgsym_" in name:
            continue
        path = os.path.join(debdir, name)

        def field(f):
            return subprocess.run(["dpkg-deb", "-f", path, f], capture_output=True, text=True,
                                  check=True).stdout.strip()

        tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", path], capture_output=True,
                             check=True).stdout
        manifests = {}
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            for m in t.getmembers():
                if m.isfile() and re.search(r"/llm-sandbox/plugins/[^/]+\.yaml$", m.name):
                    manifests[m.name] = t.extractfile(m).read().decode()
        packages[field("Package")] = {"Depends": field("Depends"),
                                      "Recommends": field("Recommends"), "manifests": manifests}
    return packages


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "debs":
        sys.exit("usage: debdeps.py debs DEBDIR BINARY")
    for line in check(from_debs(sys.argv[2]), sys.argv[3]):
        print(line)
    print("every library the core opens is declared by the packages that need it")
