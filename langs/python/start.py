# llm-sandbox starter for Python one-shot runs, staged as
# /tmp/.sbx/python/_sbx_start.py: the language's run command is
#   python3 -S /tmp/.sbx/python/_sbx_start.py main.py
# which behaves as `python3 main.py` does, for half the CPU. -S skips
# `site`, whose cost is mostly the host's .pth files (every one is executed
# at every start; one of them imports certifi, matplotlib's imports
# importlib.util). This puts back what a program expects of site: the
# site-packages directories (Debian's dist-packages), after the standard
# library as site puts them, without running their .pth files; exit(),
# quit(), help(), copyright(), license(); and sitecustomize (the plot
# capture, plots.py). Then it runs the program as the interpreter runs a
# script: sys.argv, sys.path[0] its directory, __main__'s __file__, the
# traceback of an uncaught exception without this file's frame.
#
# Everything lives inside _sbx_start so that the program, which runs in the
# real __main__ namespace, sees none of the starter's names.


def _sbx_start():
    import importlib.machinery
    import os
    import site
    import sys

    G = sys.modules["__main__"].__dict__
    del G["_sbx_start"]
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
    if len(sys.argv) < 2:
        sys.exit("usage: python3 -S _sbx_start.py PROGRAM [ARG...]")
    name = sys.argv[1]
    path = os.path.abspath(name)
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(path)  # as for a script: its directory
    with open(path, "rb") as f:
        source = f.read()
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
        # as the interpreter reports it, without this starter's frame
        e = e.with_traceback(e.__traceback__.tb_next if e.__traceback__ else None)
        sys.excepthook(type(e), e, e.__traceback__)
        sys.exit(1)


_sbx_start()
