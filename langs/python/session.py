# llm-sandbox session driver for Python: a warm interpreter that runs one
# code cell per request and keeps the top-level namespace between cells.
# Run as: python3 -u -c "<this file's contents>" (no __file__, no siblings).
#
# Protocol: requests on stdin are "<code_len> <stdin_len>\n" + code bytes +
# stdin bytes (counts are bytes). After each cell the driver writes the end
# marker ESC "]sbx;" NONCE ";" NNN BEL to stdout, then to stderr; NNN is the
# cell's status (000 ok, 001 uncaught error, or the status it exited with).
# EOF between requests: exit 0. Bad nonce or header: message on stderr, exit 2.
#
# Everything lives inside _sbx_main so that the cells, which run in the real
# __main__ namespace (pickle, dataclasses and `if __name__ == "__main__"`
# behave as in `python3 main.py`), see none of the driver's names.
#
# Notebook semantics, as Jupyter's and E2B's: a bare expression on a cell's
# last line is shown through sys.displayhook (its repr on stdout, None shown
# as nothing, `_` set), unless the line ends in ";". A pandas DataFrame so
# shows as its text table; a matplotlib figure or artist shows nothing (the
# figure comes back as an image, plots.py). display(*objs) is a builtin when
# IPython is absent; display(df, include=["text/html"]) also writes the
# object's HTML to display-NNN.html (an artifact), and only then.


def _sbx_main():
    import ast, builtins, io, linecache, os, re, sys, traceback

    del globals()["_sbx_main"]
    nonce = os.environ.pop("SBX_SESSION_NONCE", "")  # pop also unsetenv()s
    if not re.fullmatch(r"[0-9a-f]{32}", nonce):
        sys.stderr.write("session.py: SBX_SESSION_NONCE is missing or malformed\n")
        sys.exit(2)

    # Private copies of the control channel and of fds 1 and 2 (os.dup makes
    # them close-on-exec); fd 0 becomes /dev/null so that neither user code
    # nor its children can read the requests by accident. The markers go to
    # the private fds so that a cell that replaces sys.stdout or dup2()s over
    # fd 1 still gets its marker to the host.
    ctl = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out_fd, err_fd = os.dup(1), os.dup(2)
    enc, errs = sys.stdin.encoding, sys.stdin.errors
    sys.argv = ["main.py"]
    root = sys.path[0] = os.getcwd()  # like a script in the workspace
    G = sys.modules["__main__"].__dict__

    def fail(msg):
        sys.stderr.write("session.py: %s\n" % msg)
        sys.stderr.flush()
        os._exit(2)

    def read_exact(n):
        data = ctl.read(n)
        if len(data) != n:
            fail("end of input inside a request")
        return data

    def write_all(fd, data):
        while data:
            data = data[os.write(fd, data):]

    def report(e):
        # Like the interpreter, without this driver's frames (the first
        # entries of the traceback, of "<string>": run as python3 -c). The
        # traceback module, unlike the built-in hook, shows the cells'
        # source lines; a hook the user set is honoured.
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
            tb = tb.tb_next
        e = e.with_traceback(tb)
        try:
            if sys.excepthook is not sys.__excepthook__:
                return sys.excepthook(type(e), e, e.__traceback__)
        except BaseException:
            pass
        traceback.print_exception(type(e), e, e.__traceback__)

    shown = [0]  # display-NNN files written

    def display_path(ext):
        shown[0] += 1
        return os.path.join(root, "display-%03d.%s" % (shown[0], ext))

    def is_mpl(v):
        return type(v).__module__.startswith("matplotlib.")

    def show_figure(fig):
        # A figure still open in pyplot is saved when the cell ends (with
        # the cell's other figures); one closed already (shown in an earlier
        # cell) is saved now, under a name of its own.
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None and fig.number in plt.get_fignums():
            return
        fig.savefig(display_path("png"), format="png")

    def show(value, include=()):
        if type(value).__name__ == "Figure" and is_mpl(value):
            show_figure(value)
        elif is_mpl(value) or (isinstance(value, (list, tuple)) and value and
                               all(is_mpl(v) for v in value)):
            pass  # an artist (Axes, Line2D): its figure is the image
        else:
            sys.stdout.write(repr(value) + "\n")
        if "text/html" in include and hasattr(value, "_repr_html_"):
            with open(display_path("html"), "w", encoding="utf-8") as f:
                f.write(value._repr_html_() or "")

    def displayhook(value):
        if value is None:
            return
        builtins._ = None  # as the default hook: not shown by its own repr
        show(value)
        builtins._ = value

    def display(*objs, include=None, exclude=None, **kwargs):
        """Show each object as a cell's last expression would: its repr on
        stdout, a matplotlib figure as an image. include=["text/html"] also
        writes the object's HTML (pandas, for one) to display-NNN.html."""
        for obj in objs:
            if obj is not None or include:
                show(obj, tuple(include or ()))

    sys.displayhook = displayhook
    builtins.display = display

    def split_cell(code, text, name):
        # The cell as one "exec" unit, or its statements but the last one,
        # then that last one as a "single" unit (which calls sys.displayhook
        # on an expression's value) when it is a bare expression not
        # silenced by a trailing ";". A syntax error is raised by the plain
        # compile, so it reads as Python's own.
        whole = compile(code, name, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        last = whole.body[-1] if whole.body else None
        if not isinstance(last, ast.Expr):
            return [compile(whole, name, "exec", dont_inherit=True)]
        lines = text.splitlines(True)
        rest = "".join(lines[last.end_lineno - 1:])
        rest = rest.encode("utf-8")[last.end_col_offset:].decode("utf-8", "replace")
        if rest.lstrip().startswith(";"):
            return [compile(whole, name, "exec", dont_inherit=True)]
        whole.body.pop()
        return [compile(whole, name, "exec", dont_inherit=True),
                compile(ast.Interactive(body=[last]), name, "single", dont_inherit=True)]

    def run_cell(n, code):
        name = "<cell %d>" % n
        # Register the source so tracebacks and inspect can show its lines.
        text = code.decode("utf-8", "replace")
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        try:
            for unit in split_cell(code, text, name):
                exec(unit, G)
            return 0
        except SystemExit as e:
            if e.code is None:
                return 0
            if isinstance(e.code, int):
                return e.code & 255
            try:
                print(e.code, file=sys.stderr)
            except BaseException:
                pass
            return 1
        except KeyboardInterrupt as e:
            report(e)
            return 130
        except BaseException as e:
            report(e)
            return 1

    n = 0
    while True:
        header = ctl.readline(64)
        if not header:
            sys.exit(0)
        m = re.fullmatch(rb"(\d+) (\d+)\n", header)
        if not m:
            fail("malformed request header %r" % header)
        code = read_exact(int(m.group(1)))
        data = read_exact(int(m.group(2)))
        n += 1
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding=enc, errors=errs)
        status = run_cell(n, code)
        flush_plots = getattr(sys, "_sbx_flush_plots", None)
        if flush_plots is not None:  # figures of the cell never shown (plots.py)
            try:
                flush_plots()
            except BaseException as e:
                report(e)
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException:
                pass
        marker = ("\x1b]sbx;%s;%03d\x07" % (nonce, status)).encode()
        write_all(out_fd, marker)
        write_all(err_fd, marker)


_sbx_main()
