# llm-sandbox pre-started interpreter for Python one-shot runs: started in
# a fresh sandbox before any request, it waits, then runs the program once
# as `python3 main.py` would, and the sandbox is destroyed after it.
# Run as: python3 -S -c "<this file's contents>" STARTER (no __file__), where
# STARTER is the one-shot starter (start.py, staged in the box): its
# _sbx_site puts back what a program expects of `site` without the host's
# .pth files, before this says ready; its _sbx_exec runs the program.
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
    import os, sys

    del globals()["_sbx_main"]
    starter = {"__name__": "_sbx_start"}
    with open(sys.argv[1], "rb") as f:
        exec(compile(f.read(), sys.argv[1], "exec", dont_inherit=True), starter)
    starter["_sbx_site"]()
    run = starter["_sbx_exec"]
    del starter
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
    run(name, [name])


_sbx_main()
