# SPDX-License-Identifier: MIT
"""What a model reads of a run, through the real MCP server on the backend
under test (issue 23): the text block is the readable form (a status line,
then stdout and stderr as printed) with the JSON in structuredContent, or
the JSON again under LLM_SANDBOX_RESULT_TEXT=json; images are known by
their bytes (PNG, JPEG, GIF, WebP inline; SVG, and HTML or ELF named .png,
resource links); at most LLM_SANDBOX_INLINE_IMAGES images (and _BYTES of
them) come inline, the rest as links, and the result says how many were
held back. The files are written by the program itself, so the tests need
nothing but the language's own interpreter (the container test image has
no matplotlib: tests/integration/test_artifacts.py draws real figures).
"""
import base64
import json
import re
import shutil
import uuid

import pytest

from conftest import CONTAINER, MXC, WEAK_LIMIT, run_cli
from test_sessions import Client

pytestmark = pytest.mark.contract

# 1x1 images made with Pillow: real files, not just their magic
JPEG = ("/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4n"
        "ICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIy"
        "MjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjL/wAARCAABAAEDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEA"
        "AAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEI"
        "I0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4"
        "eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo"
        "6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQA"
        "AQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNE"
        "RUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3"
        "uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDi6KKK+ZP3E//Z")
WEBP = "UklGRjwAAABXRUJQVlA4IDAAAADQAQCdASoBAAEAAUAmJaACdLoB+AADsAD+8ut//NgVzXPv9//S4P0uD9Lg/9KQAAA="
GIF = "R0lGODdhAQABAIEAAP8AAAAAAAAAAAAAACwAAAAAAQABAAAIBAABBAQAOw=="

# A PNG of n x 1 grey pixels, in plain Python (zlib and struct only).
PNG_FUNC = r'''
import struct, zlib
def png(n):
    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"\0" + bytes([128]) * n
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", n, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
'''


@pytest.fixture
def client():
    c = Client()
    yield c
    c.finish()


def call(client, args):
    r = client.s.call_tool("execute_code", args, timeout=120)
    assert "result" in r, r
    return r["result"], r["result"]["structuredContent"]


def text_of(r):
    """The result's text block without its weak-limit warning lines (every
    run has them where no cgroup is writable; test_weak_limit_warnings_are_logged
    checks them)."""
    lines = r["content"][0]["text"].splitlines(keepends=True)
    return "".join(l for l in lines if not (l.startswith("warning: ") and WEAK_LIMIT.search(l)))


def blocks(r, kind):
    return [c for c in r["content"] if c["type"] == kind]


def test_text_is_the_readable_form(client):
    r, sc = call(client, {"code": "import sys\nprint('line one')\nprint('tab\\there \"q\"')\n"
                                  "print('oops', file=sys.stderr)\nsys.exit(3)"})
    assert sc["status"] == "error" and sc["exit_code"] == 3, sc
    assert r["isError"] is True
    assert r["content"][0]["type"] == "text"
    assert text_of(r) == ("status: error, exit code 3\n"
                          "--- stdout ---\nline one\ntab\there \"q\"\n"
                          "--- stderr ---\noops\n"), r["content"][0]
    # a traceback reads as printed, not as one escaped JSON string
    r, sc = call(client, {"code": "def f():\n    raise ValueError('bad value')\nf()"})
    text = text_of(r)
    assert text.startswith("status: error, exit code 1\n--- stderr ---\nTraceback"), text
    assert "\n    raise ValueError('bad value')\nValueError: bad value\n" in text, text
    assert "\\n" not in text and "stdout" not in text, text


def test_text_says_limit_truncation_and_refusal(client):
    r, sc = call(client, {"code": "while True: pass", "timeout": 1})
    assert sc["status"] == "timeout", sc
    # (the exit code of a killed program is the backend's: 137 under bwrap)
    assert re.fullmatch(r"status: timeout(, exit code %s)?, limit hit: wall_time\n"
                        % sc["exit_code"], text_of(r)), r
    r, sc = call(client, {"code": "print(1)", "memory": "100G"})
    assert sc["status"] == "refused", sc
    assert r["content"][0]["text"] == (
        "status: refused\nmessage: memory 100 GiB is above the ceiling of 2 GiB; the operator "
        "raises it with LLM_SANDBOX_MAX_MEMORY\n"), r["content"][0]


def test_text_says_truncation():
    c = Client({"LLM_SANDBOX_OUTPUT_BYTES": "1k"})
    try:
        r, sc = call(c, {"code": "import sys\nsys.stdout.write('x' * 5000)"})
        assert sc["stdout_truncated"] is True, sc
        text = text_of(r)
        assert text == ("status: ok, exit code 0, stdout truncated (1024 of 5000 bytes kept)\n"
                        "--- stdout ---\n" + "x" * 1024 + "\n"), text[:300]
    finally:
        c.finish()


def test_json_text_behind_a_setting():
    """LLM_SANDBOX_RESULT_TEXT=json: the spec's SHOULD, for clients that
    read no structuredContent."""
    c = Client({"LLM_SANDBOX_RESULT_TEXT": "json"})
    try:
        r, sc = call(c, {"code": "print('a\\nb')"})
        assert json.loads(r["content"][0]["text"]) == sc and sc["stdout"] == "a\nb\n", r
    finally:
        c.finish()


def test_images_known_by_their_bytes(client):
    code = PNG_FUNC + (
        "import base64, shutil\n"
        "open('a.png', 'wb').write(png(3))\n"
        "open('b.jpg', 'wb').write(base64.b64decode(%r))\n"
        "open('c.gif', 'wb').write(base64.b64decode(%r))\n"
        "open('d.webp', 'wb').write(base64.b64decode(%r))\n"
        "open('no-name', 'wb').write(png(2))\n"
        "open('e.svg', 'w').write('<svg xmlns=\"http://www.w3.org/2000/svg\">"
        "<script>alert(1)</script></svg>')\n"
        "open('page.png', 'w').write('<html><body>not an image</body></html>')\n"
        "shutil.copyfile('/bin/true', 'elf.png')\n") % (JPEG, GIF, WEBP)
    r, sc = call(client, {"code": code})
    assert sc["status"] == "ok", sc
    types = {a["path"]: a["mime_type"] for a in sc["artifacts"]}
    assert types == {"a.png": "image/png", "b.jpg": "image/jpeg", "c.gif": "image/gif",
                     "d.webp": "image/webp", "no-name": "image/png",
                     "e.svg": "image/svg+xml", "page.png": "application/octet-stream",
                     "elf.png": "application/octet-stream"}, types
    images = blocks(r, "image")
    # (files written within one clock tick are listed by name)
    assert sorted(i["mimeType"] for i in images) == ["image/gif", "image/jpeg", "image/png",
                                                     "image/png", "image/webp"], images
    jpeg = next(i for i in images if i["mimeType"] == "image/jpeg")
    assert base64.b64decode(jpeg["data"]) == base64.b64decode(JPEG)
    links = {l["name"]: l["mimeType"] for l in blocks(r, "resource_link")}
    assert links == {"e.svg": "image/svg+xml", "page.png": "application/octet-stream",
                     "elf.png": "application/octet-stream"}, links
    assert "images_held_back" not in sc
    text = text_of(r)
    assert text.startswith("status: ok, exit code 0\n--- files ---\n"), text
    assert sorted(text.splitlines()[2].split(", ")) == sorted(types), text


def test_inline_images_are_capped(client):
    """40 images: the first 8 (LLM_SANDBOX_INLINE_IMAGES' default) inline,
    the other 32 as links, and the result says so."""
    r, sc = call(client, {"code": PNG_FUNC + "for i in range(40):\n"
                                             "    open('img-%02d.png' % i, 'wb').write(png(4))\n"})
    assert sc["status"] == "ok" and len(sc["artifacts"]) == 40, sc
    assert "artifacts_truncated" not in sc, sc
    assert len(blocks(r, "image")) == 8
    links = blocks(r, "resource_link")
    assert [l["name"] for l in links] == ["img-%02d.png" % i for i in range(8, 40)], links
    assert all(l["mimeType"] == "image/png" for l in links)
    assert sc["images_held_back"] == 32, sc
    assert r["content"][0]["text"].endswith(
        "32 images held back (past the inline cap, LLM_SANDBOX_INLINE_IMAGES and _BYTES): "
        "read them by uri\n"), r["content"][0]["text"]
    # a held-back image is still there to read
    got = client.s.request("resources/read", {"uri": links[0]["uri"]})["result"]["contents"][0]
    assert base64.b64decode(got["blob"]).startswith(b"\x89PNG"), got


def test_inline_cap_is_configurable():
    """The count and the bytes, each on its own."""
    c = Client({"LLM_SANDBOX_INLINE_IMAGES": "2"})
    try:
        r, sc = call(c, {"code": PNG_FUNC + "for i in range(5):\n"
                                            "    open('i%d.png' % i, 'wb').write(png(4))\n"})
        assert len(blocks(r, "image")) == 2 and sc["images_held_back"] == 3, sc
    finally:
        c.finish()
    c = Client({"LLM_SANDBOX_INLINE_IMAGE_BYTES": "1k"})
    try:
        # 600 and 600 bytes: the second would pass 1 KiB; the small third fits
        r, sc = call(c, {"code": "open('big1.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' * 75)\n"
                                 "open('big2.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' * 75)\n"
                                 "open('small.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' * 8)\n"})
        assert [len(base64.b64decode(i["data"])) for i in blocks(r, "image")] == [600, 64], r
        assert sc["images_held_back"] == 1
        assert [l["name"] for l in blocks(r, "resource_link")] == ["big2.png"]
    finally:
        c.finish()


@pytest.mark.skipif(CONTAINER or MXC, reason="the limits a local jail enforces without cgroups "
                    "(a container engine enforces them itself)")
def test_weak_limit_warnings_are_logged():
    """A limit held only by a fallback is a warning message while the run
    starts (and stays in the result's warnings); logging/setLevel error
    silences it."""
    c = Client({"LLM_SANDBOX_CGROUP": "off"})
    try:
        r, sc = call(c, {"code": "print(1)"})
        assert sc["status"] == "ok" and sc["warnings"], sc
        msgs = [m["params"] for m in c.s.pending if m.get("method") == "notifications/message"]
        assert [(m["level"], m["data"]) for m in msgs] == \
            [("warning", w) for w in sc["warnings"]], msgs
        assert "".join("warning: %s\n" % w for w in sc["warnings"]) in r["content"][0]["text"]
        c.s.pending.clear()
        assert c.s.request("logging/setLevel", {"level": "error"})["result"] == {}
        _, sc = call(c, {"code": "print(2)"})
        assert sc["warnings"] and not [m for m in c.s.pending
                                       if m.get("method") == "notifications/message"]
    finally:
        c.finish()


@pytest.mark.skipif(CONTAINER or MXC or not shutil.which("g++"),
                    reason="g++ on this host (the container test image has none)")
def test_cli_says_it_compiles():
    """A build shows on stderr while it runs: a plain line on a pipe."""
    src = "#include <cstdio>\nint main() { std::puts(\"built\"); } // %s\n" % uuid.uuid4().hex
    r = run_cli(["run", "--language", "cpp", "--code", src], timeout=120)
    err = [l for l in r.err.decode().splitlines() if not WEAK_LIMIT.search(l)]
    assert r.rc == 0 and r.out == b"built\n", r
    assert err == ["llm-sandbox: compiling"], r
    # the same program again: the compile cache has it, nothing to say
    r = run_cli(["run", "--language", "cpp", "--code", src], timeout=120)
    err = [l for l in r.err.decode().splitlines() if not WEAK_LIMIT.search(l)]
    assert r.rc == 0 and r.out == b"built\n" and err == [], r
