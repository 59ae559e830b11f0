# llm-sandbox plot capture for Python, staged into every sandbox as
# /tmp/.sbx/python/sitecustomize.py (on PYTHONPATH): a meta path finder
# that loads the capture itself (/tmp/.sbx/python/_sbx_plots.py, from
# plots_impl.py) only when a program imports matplotlib.pyplot or
# plotly.io, so that a run that draws nothing pays for one small module.
# Loaded at start-up by `site` (sessions, a program's own python3
# children) or by the one-shot starter (start.py, prestart.py), which run
# the interpreter with -S.


def _sbx_hook():
    import os
    import sys

    start_dir = os.getcwd()  # where figures go, whatever the program's cwd later
    # by its path, not by import: a program's own _sbx_plots.py cannot stand in
    impl = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sbx_plots.py")
    names = ("matplotlib.pyplot", "plotly.io")
    capture = {}

    def hook(name, module):
        if not capture:
            capture["__name__"] = "_sbx_plots"
            with open(impl, "rb") as f:
                exec(compile(f.read(), impl, "exec"), capture)
        capture["hook"](name, module, start_dir)

    class Finder:
        """No importlib.abc: importing it costs more than a whole
        interpreter start."""

        def find_spec(self, name, path, target=None):
            if name not in names:
                return None
            for finder in sys.meta_path:
                if finder is self:
                    continue
                spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
                if spec is not None and spec.loader is not None:
                    exec_module = spec.loader.exec_module

                    def run(module, exec_module=exec_module, name=name):
                        exec_module(module)
                        hook(name, module)
                    spec.loader.exec_module = run
                    return spec
            return None

    sys.meta_path.insert(0, Finder())


_sbx_hook()
del _sbx_hook
