# llm-sandbox pre-started interpreter for Python one-shot runs: started in
# a fresh sandbox before any request, it waits, then runs the program once
# as `python3 main.py` would, and the sandbox is destroyed after it.
# Run as: python3 -S -c "<this file's contents>" (no __file__): as the
# one-shot starter (start.py) does, it puts back what a program expects of
# `site` without the host's .pth files, before it says ready.
#
# Protocol: once started, it writes ESC "]sbx;ready;000" BEL to stdout and
# to stderr. Then a line on stdin, the program's file name relative to the
# workspace, says the program is in place; the rest of stdin is the
# program's. End of input before the line: exit 0 (the pool closed it
# unused); a bad line: exit 2.
#
# Everything lives inside _sbx_main so that the program, which runs in the
# real __main__ namespace, sees none of the driver's names.


def _sbx_main():
    import importlib.machinery, os, site, sys

    del globals()["_sbx_main"]
    for d in site.getsitepackages():
        if d not in sys.path and os.path.isdir(d):
            sys.path.append(d)
    site.setquit()
    site.setcopyright()
    site.sethelper()
    try:
        import sitecustomize  # noqa: F401
    except ImportError:
        pass
    # the first compile() faults the parser in (about 2 ms): before, not after
    compile("pass", "<prestart>", "exec", dont_inherit=True)
    for fd in (1, 2):
        os.write(fd, b"\x1b]sbx;ready;000\x07")
    # a byte at a time: sys.stdin has read nothing yet, so the program gets
    # the rest of fd 0 intact
    line = b""
    while not line.endswith(b"\n"):
        try:
            b = os.read(0, 1)
        except OSError:
            b = b""
        if not b:
            os._exit(0 if not line else 2)
        line += b
        if len(line) > 4096:
            os._exit(2)
    name = line[:-1].decode("utf-8", "surrogateescape")
    path = os.path.abspath(name)
    sys.argv = [name]
    sys.path[0] = os.path.dirname(path)  # as for a script: its directory
    with open(path, "rb") as f:
        source = f.read()
    G = sys.modules["__main__"].__dict__
    G["__file__"] = path
    G["__cached__"] = None
    G["__loader__"] = importlib.machinery.SourceFileLoader("__main__", path)
    try:
        code = compile(source, path, "exec", dont_inherit=True)
        del source
        exec(code, G)
    except SystemExit:
        raise
    except BaseException as e:
        # as the interpreter reports it, without this driver's frame
        e = e.with_traceback(e.__traceback__.tb_next if e.__traceback__ else None)
        sys.excepthook(type(e), e, e.__traceback__)
        sys.exit(1)


_sbx_main()
