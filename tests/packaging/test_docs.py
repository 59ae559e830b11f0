# SPDX-License-Identifier: MIT
"""The man pages and the bash completion cannot drift from the program:
llm-sandbox(1)'s option lists against each command's --help, its commands
against the dispatcher's, llm-sandbox.conf(5)'s keys against the core's
settings tables, llm-sandbox-manifest(5)'s keys against the loader's schema
tables; the pages format without a warning; the completion script parses
and completes commands, options, languages and backends from the real
binary."""
import glob
import os
import re
import shutil
import subprocess

import pytest

BUILD = os.environ["SBX_BUILD_DIR"]
SRC = os.environ["SBX_SOURCE_DIR"]
BIN = os.environ["SBX_BIN"]
MAN = os.path.join(BUILD, "man")
COMPLETION = os.path.join(SRC, "data", "bash-completion", "llm-sandbox")
# --help and -h are accepted everywhere; the pages may list them or not
UNIVERSAL = {"--help", "-h"}


def help_text(*args):
    p = subprocess.run([BIN, *args, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p
    return p.stdout


def options_in(lines):
    """Short and long options named at the start of the given lines, or
    after a comma or space: '-l, --language NAME', '--socket PATH, --json:'."""
    found = set()
    for line in lines:
        found |= set(re.findall(r"(?:^|[ ,\[])(--?[a-zA-Z][a-zA-Z-]*)", line))
    return found - UNIVERSAL


def help_options(*args):
    """The options a --help lists: its lines that begin with an option."""
    return options_in(l.strip() for l in help_text(*args).splitlines()
                      if l.strip().startswith("-"))


def roff_plain(text):
    text = re.sub(r"\\f[BIRP]", "", text)
    return text.replace("\\-", "-").replace('"', " ")


def man_sections(page):
    """{.SS title or .SH title: [tag lines of .TP items]} of a page."""
    sections, cur, tag_next = {}, None, False
    for line in open(os.path.join(MAN, page)):
        line = line.rstrip("\n")
        if line.startswith((".SH", ".SS")):
            cur = roff_plain(line[3:]).strip()
            sections.setdefault(cur, [])
        elif line.startswith(".TP"):
            tag_next = True
        elif tag_next:
            tag_next = False
            m = re.match(r"\.(?:B|I|BR|BI|IR|RB)\s+(.*)", line)
            sections[cur].append(roff_plain(m.group(1) if m else line).strip())
    return sections


def command_sections():
    """{('run',), ('session', 'create'), ...: options} from llm-sandbox(1)."""
    out = {}
    for title, tags in man_sections("llm-sandbox.1").items():
        m = re.fullmatch(r"llm-sandbox((?: [a-z]+)+)", title)
        if m:
            out[tuple(m.group(1).split())] = options_in(tags)
    return out


def commands():
    """Every command and session subcommand the program's help names."""
    cmds = set(re.findall(r"^(?:usage:)? *llm-sandbox ([a-z]+)", help_text(), re.M))
    subs = re.findall(r"^  ([a-z]+)(?: |$)", help_text("session"), re.M)
    assert {"serve", "run", "session", "plugins", "doctor"} <= cmds, cmds
    assert {"create", "exec", "close"} <= set(subs), subs
    return {(c,) for c in cmds} | {("session", s) for s in subs}


def test_every_command_has_a_section_and_no_other():
    assert set(command_sections()) == commands()


@pytest.mark.parametrize("cmd", sorted(c for c in [("serve",), ("run",), ("session",),
                                                   ("plugins",), ("doctor",)]) +
                         [("session", s) for s in
                          ("create", "exec", "close", "list", "upload", "download", "files")],
                         ids=" ".join)
def test_man_options_are_the_help_options(cmd):
    documented = command_sections()[cmd]
    listed = help_options(*cmd)
    assert listed, "no options found in %s --help" % " ".join(cmd)
    assert documented == listed, "man page only: %s; --help only: %s" % (
        sorted(documented - listed), sorted(listed - documented))


def test_global_options():
    """llm-sandbox --help names the global options in its usage lines; the
    command's own are those no subcommand has."""
    tokens = set(re.findall(r"(?:^|[ ,\[(|])(--[a-z][a-z-]*)", help_text(), re.M))
    per_command = set().union(*[help_options(*c) for c in commands()])
    documented = options_in(man_sections("llm-sandbox.1")["OPTIONS"])
    assert documented == (tokens - per_command - UNIVERSAL) | {"--config"}, documented
    assert "--config" in tokens


def source_files():
    return glob.glob(os.path.join(SRC, "core", "src", "**", "*.c"), recursive=True)


def c_block(pattern):
    """The text of each initializer `<pattern> = { ... };` in core/src."""
    blocks = []
    for path in source_files():
        text = open(path).read()
        for m in re.finditer(pattern + r"\s*=\s*\{(.*?)\n\};", text, re.S):
            blocks.append(m)
    return blocks


def config_keys():
    keys = set()
    for name in ("other_vars", "limit_vars"):
        found = c_block(r"\b%s\[\]" % name)
        assert len(found) == 1, "%s: the settings table moved or split; update this test" % name
        keys |= set(re.findall(r'"([A-Z][A-Z0-9_]*)"', found[0].group(1)))
    assert len(keys) > 40, keys
    return keys


def test_conf_page_lists_every_config_key():
    tags = man_sections("llm-sandbox.conf.5")
    documented = set()
    for title, lines in tags.items():
        if title in ("Backend, languages and plugins", "Limits", "Isolation",
                     "Libraries and caches", "Sessions, files and warm sandboxes", "Server"):
            for line in lines:
                documented |= set(re.findall(r"\b[A-Z][A-Z0-9_]{2,}\b", line))
    keys = config_keys()
    assert documented == keys, "page only: %s; core only: %s" % (
        sorted(documented - keys), sorted(keys - documented))


def test_man_environment_names_are_config_keys():
    env = set()
    for line in man_sections("llm-sandbox.1")["ENVIRONMENT"]:
        env |= set(re.findall(r"\b[A-Z][A-Z0-9_]{2,}\b", line))
    assert "LLM_SANDBOX_CONFIG" in env
    assert env - {"LLM_SANDBOX_CONFIG"} <= config_keys(), env - config_keys()


# Where each schema table of the manifest loader sits in a manifest.
SCHEMA_PLACES = {
    "top_keys": "",
    "requires_keys": "requires.",
    "binary_keys": "requires.binaries[].",
    "setting_keys": "settings.KEY.",
    "lang_keys": "language.",
    "docs_keys": "language.docs.",
    "example_keys": "language.docs.examples[].",
    "mode_keys": "language.modes.NAME.",
    "install_keys": "language.install.",
    "step_keys": "language.install.steps[].",
    "warm_keys": "language.warm.",
    "session_keys": "language.session.",
    "prestart_keys": "language.prestart.",
    "zygote_keys": "language.zygote.",
    "support_keys": "language.support[].",
}


def test_manifest_page_lists_every_schema_key():
    schema = set()
    for m in c_block(r"static const struct key_desc (\w+)\[\]"):
        table = m.group(1)
        assert table in SCHEMA_PLACES, "schema table %s has no place in SCHEMA_PLACES" % table
        for key in re.findall(r'\{"([a-z_]+)",\s*YAMLTREE_', m.group(2)):
            schema.add(SCHEMA_PLACES[table] + key)
    assert len(schema) > 50, schema
    documented = set()
    for title, lines in man_sections("llm-sandbox-manifest.5").items():
        if title in ("Every plugin", "Languages"):
            documented |= {l.split()[0] for l in lines}
    # warm steps share the install steps' table
    documented.discard("language.warm.steps")
    schema.discard("language.warm.steps")
    assert documented == schema, "page only: %s; loader only: %s" % (
        sorted(documented - schema), sorted(schema - documented))


@pytest.mark.skipif(not shutil.which("man"), reason="man is not installed")
@pytest.mark.parametrize("page", ["llm-sandbox.1", "llm-sandbox.conf.5", "llm-sandbox-manifest.5"])
def test_pages_format_without_warnings(page):
    p = subprocess.run(["man", "--warnings=w", "-E", "UTF-8", "-l", "-Tutf8", "-Z",
                        os.path.join(MAN, page)], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8"))
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "@" not in open(os.path.join(MAN, page)).read().replace("\\(at", ""), \
        "an unconfigured @VARIABLE@ is left"


def complete(*words):
    """COMPREPLY of the completion for the command line `llm-sandbox
    words...` with the cursor at the end of the last word."""
    line = " ".join(words)
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
              '_llm_sandbox; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["/bin/bash", "--norc", "-c", script, "complete", COMPLETION, BIN,
                        *words], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, SBX_LINE=line))
    assert p.returncode == 0, p
    return {w for w in p.stdout.split("\n") if w}


def test_completion_parses():
    p = subprocess.run(["/bin/bash", "-n", COMPLETION], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_completion_commands():
    assert complete("") == {c[0] for c in commands()}
    assert complete("ru") == {"run"}
    assert complete("session", "") == {c[1] for c in commands() if len(c) == 2}


def test_completion_options_are_the_man_pages():
    sections = command_sections()
    for cmd in [("run",), ("serve",), ("session", "create"), ("session", "exec")]:
        got = complete(*cmd, "-") - UNIVERSAL
        assert got == sections[cmd], (cmd, got, sections[cmd])
    assert complete("--config", "/dev/null", "run", "--l") == {"--language", "--libraries"}
    assert complete("--") - UNIVERSAL == options_in(man_sections("llm-sandbox.1")["OPTIONS"])


def test_completion_languages_and_backends():
    langs = complete("run", "--language", "")
    assert {"python", "ruby"} <= langs, langs
    assert complete("run", "-l", "py") == {"python"}
    assert complete("session", "create", "-l", "rub") == {"ruby"}
    backends = complete("run", "--backend", "")
    assert "bwrap" in backends and not backends & langs, backends
