# llm-sandbox plot capture for Python: the capture itself, staged as
# /tmp/.sbx/python/_sbx_plots.py and imported by the finder in plots.py
# (sitecustomize) when a program first imports matplotlib.pyplot or
# plotly.io; hook(name, module, root) patches that module, root being the
# directory the program started in (its workspace).
#
# matplotlib (and seaborn, which draws through it): plt.show() saves every
# open figure as figure-NNN.png in the workspace and closes it; figures
# never shown are saved when the program ends (one-shot) or the cell ends
# (a session's driver calls sys._sbx_flush_plots). Each figure is saved
# exactly once, in order; the numbers continue across a session's cells.
# A figure the program saved itself into the workspace as an image
# (savefig('p.png'), .jpg, .gif, .webp, .svg) and did not change since is
# not saved again: that file is its one image.
# SBX_PLOT_FORMAT=svg saves SVG instead.
#
# plotly: fig.show() writes figure-NNN.html (plotly.js from its CDN), and
# figure-NNN.png too where plotly's image export (kaleido) is installed.
#
# The files are then the run's artifacts like any file it writes.
import atexit
import os
import sys

root = None
fmt = "svg" if os.environ.get("SBX_PLOT_FORMAT") == "svg" else "png"
count = [0]


def next_path(ext):
    count[0] += 1
    return os.path.join(root, "figure-%03d.%s" % (count[0], ext))


saved = {}  # id(figure) -> figure, saved by the program as an image
image_exts = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg")


def save_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in list(plt.get_fignums()):
        fig = plt.figure(num)
        try:
            if saved.get(id(fig)) is not fig or fig.stale:
                fig.savefig(next_path(fmt), format=fmt)
        finally:
            plt.close(fig)
    saved.clear()  # every figure it names is closed now


def patch_savefig(Figure):
    savefig = Figure.savefig

    def own_savefig(self, fname, *args, **kwargs):
        result = savefig(self, fname, *args, **kwargs)
        if isinstance(fname, (str, os.PathLike)):
            path = os.path.abspath(os.fspath(fname))
            ext = "." + kwargs["format"] if kwargs.get("format") else \
                os.path.splitext(path)[1].lower()
            if path.startswith(root + os.sep) and ext in image_exts:
                saved[id(self)] = self
        return result
    own_savefig.__doc__ = savefig.__doc__
    Figure.savefig = own_savefig


def patch_pyplot(plt):
    patch_savefig(sys.modules["matplotlib.figure"].Figure)

    def show(*args, **kwargs):
        save_figures()
    show.__doc__ = plt.show.__doc__
    plt.show = show
    # registered after pyplot's own exit handler, which closes every
    # figure, so that this one runs first
    atexit.register(save_figures)


def patch_plotly(pio):
    def show(fig, *args, **kwargs):
        path = next_path("html")
        pio.write_html(fig, path, include_plotlyjs="cdn")
        try:
            pio.write_image(fig, path[:-4] + "png")
        except Exception:
            pass  # no kaleido: the HTML file only
    pio.show = show


hooks = {"matplotlib.pyplot": patch_pyplot, "plotly.io": patch_plotly}


def hook(name, module, start_dir):
    global root

    if root is None:
        root = start_dir
        sys._sbx_flush_plots = save_figures
    hooks[name](module)
