# llm-sandbox starter for Python one-shot runs, staged as
# /tmp/.sbx/python/_sbx_start.py: the language's run command is
#   python3 -S /tmp/.sbx/python/_sbx_start.py main.py
# which behaves as `python3 main.py` does, for half the CPU. -S skips
# `site`, whose cost is mostly the host's .pth files (every one is executed
# at every start; one of them imports certifi, matplotlib's imports
# importlib.util). _sbx_site puts back what a program expects of site: the
# site-packages directories (Debian's dist-packages), after the standard
# library as site puts them, without running their .pth files; exit(),
# quit(), help(), copyright(), license(); and sitecustomize (the plot
# capture, plots.py). Then _sbx_exec runs the program as the interpreter
# runs a script: sys.argv, sys.path[0] its directory, __main__'s __file__,
# the traceback of an uncaught exception without this file's frame.
#
# The pre-started interpreter (prestart.py) and the zygote (zygote.py) run
# a program the same way: they load this file as a module (its __name__ is
# not "__main__"), take _sbx_site and _sbx_exec from it, and run nothing
# else of it.
#
# As the starter, everything is deleted from __main__ before the program
# runs there, so that the program sees none of the starter's names.


def _sbx_site():
    import os
    import site
    import sys

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


def _sbx_exec(name, argv):
    # run the file NAME in __main__ with ARGV as sys.argv, as `python3 NAME`
    # would; an uncaught exception is reported and ends it with status 1
    import importlib.machinery
    import os
    import sys

    path = os.path.abspath(name)
    sys.argv = argv
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
        # as the interpreter reports it, without this function's frame
        e = e.with_traceback(e.__traceback__.tb_next if e.__traceback__ else None)
        sys.excepthook(type(e), e, e.__traceback__)
        sys.exit(1)


def _sbx_start():
    import sys

    G = sys.modules["__main__"].__dict__
    site, run = G.pop("_sbx_site"), G.pop("_sbx_exec")
    del G["_sbx_start"]
    site()
    if len(sys.argv) < 2:
        sys.exit("usage: python3 -S _sbx_start.py PROGRAM [ARG...]")
    run(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    _sbx_start()
