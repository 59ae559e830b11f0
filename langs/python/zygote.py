# llm-sandbox zygote for Python one-shot runs: one pre-loaded interpreter
# per box that forks one child per run (core/agent/proto.h, EXEC with
# AGENT_EXEC_ZYGOTE, PREP and FORK; docs/zygote-security.md says what the child
# inherits and why that is acceptable).
# Run as: python3 -c "<this file's contents>" STARTER (no __file__), where
# STARTER is the one-shot starter (start.py, staged in the box), whose
# _sbx_exec runs each child's program; with fd 3 the agent's SOCK_SEQPACKET
# control socket and CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_RESOURCE and
# CAP_SETPCAP in the box's user namespace, which no child keeps.
#
# Protocol on fd 3: the agent sends the seccomp filter (classic BPF, 8
# bytes an instruction); the zygote answers "ready". Then each message
# (PREP: u32 flags) comes with two descriptors, a SOCK_SEQPACKET socket of
# the agent's for the next run and the run's status pipe (the child, the
# init of the run's pid namespace, writes the program's wait status there,
# u32), or three, the third a GO pipe (held: AGENT_PREP_HOLD). The zygote
# forks the next run's child, which isolates itself (held: in its
# namespaces, with its mounts, but before its cgroup namespace,
# capabilities and filter, until the host has moved it into a cgroup of
# the run's own and the agent writes one byte on the GO pipe; EOF without
# it ends the child). The answer is u32 errno, u32 pid (the child, as the
# box sees it), u32 stage (where isolating it failed; when it did not, 0,
# or held bit 31, which the agent requires of a held child). The child
# then forks the program's process (pid 2), which waits on the socket for
# the run: a FORK payload (u32 flags, u32 argc, u32 envc, strings, cwd)
# with three descriptors, its stdin, stdout and stderr. Held, GO's answer
# comes first on that socket: errno 0 once the child's last steps are
# done. Each answer is as the zygote's (errno 0, or the errno and stage
# that failed); the program runs only after its run's answer, and any
# failure ends the child before a line of the program ran.
#
# Everything lives inside functions deleted before the program runs, so
# the program, which runs in the real __main__ namespace, sees none of the
# driver's names.


def _sbx_serve():
    import array, ctypes, os, socket, struct, sys

    libc = ctypes.CDLL(None, use_errno=True)
    # what most programs import anyway: loaded once here, shared by every child
    import collections, datetime, functools, io, itertools, json, math, re, string  # noqa

    import gc

    gc.collect()
    gc.freeze()  # what the zygote made stays out of the children's collections (and pages)
    base = os.getcwd()  # the workspace's path (FRESH mounts over it)
    ctl = socket.socket(fileno=3)
    filt = ctl.recv(1 << 16)
    if not filt or len(filt) % 8:
        os._exit(2)  # never a child without the filter
    # no user namespaces below this one, as bubblewrap's --disable-userns
    # would do (which would lock the box's mounts: the children could not
    # mount their own /proc); needs CAP_SYS_RESOURCE, which no child keeps
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0")
    with open("/proc/sys/user/max_user_namespaces") as f:
        if f.read().strip() != "0":
            os._exit(2)
    ctl.send(b"ready")
    U = ctypes.c_ulong

    def check(r, stage):
        if r != 0:
            raise OSError(ctypes.get_errno() or 1, stage)

    def copy_tree(src_fd, dst):
        # the box's support files (staged by the core before the zygote
        # started): regular files and directories only, no symlinks
        for e in os.scandir(src_fd):
            st = e.stat(follow_symlinks=False)
            path = os.path.join(dst, e.name)
            if e.is_dir(follow_symlinks=False):
                os.mkdir(path, st.st_mode & 0o7777)
                fd = os.open(e.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=src_fd)
                try:
                    copy_tree(fd, path)
                finally:
                    os.close(fd)
            elif e.is_file(follow_symlinks=False):
                i = os.open(e.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=src_fd)
                o = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, st.st_mode & 0o7777)
                try:
                    while os.sendfile(o, i, None, 1 << 20) > 0:
                        pass
                finally:
                    os.close(i)
                    os.close(o)

    def fresh_tmpfs(path):
        # a new tmpfs over the box's, of the same size, inodes and mode
        v, st = os.statvfs(path), os.stat(path)
        opts = "size=%d,nr_inodes=%d,mode=%o" % (v.f_blocks * v.f_frsize, v.f_files,
                                                  st.st_mode & 0o7777)
        keep = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", U(0x2 | 0x4), opts.encode()),
              "mount")  # MS_NOSUID | MS_NODEV
        return keep

    def isolate():
        # stage 3: mounts. The workspace stays the box's, which the agent
        # made fresh for this run (FRESH) and reads the artifacts from
        check(libc.mount(None, b"/", None, U(0x4000 | 0x40000), None), "mount")  # MS_REC|MS_PRIVATE
        tmp = fresh_tmpfs("/tmp")
        os.close(fresh_tmpfs("/dev/shm"))
        # the box's /proc shows the box's processes (the zygote among them):
        # a proc of the run's own pid namespace replaces it; the kernel allows
        # that only once bubblewrap's read-only binds inside /proc are gone
        with open("/proc/self/mountinfo") as f:
            subs = [ln.split()[4] for ln in f if ln.split()[4].startswith("/proc/")]
        for m in sorted(subs, key=len, reverse=True):
            check(libc.umount2(m.encode(), 2), "umount " + m)  # MNT_DETACH
        check(libc.mount(b"proc", b"/proc", b"proc", U(0x2 | 0x4 | 0x8), None), "mount /proc")
        stage[0] = 4
        copy_tree(tmp, "/tmp")
        os.close(tmp)
        stage[0] = 5  # loopback up, as in the box: SIOCSIFFLAGS, IFF_UP | IFF_RUNNING
        import fcntl

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            fcntl.ioctl(s, 0x8914, struct.pack("16sh22x", b"lo", 0x1 | 0x40))

    def lock_down():
        stage[0] = 6  # capabilities: none in any set, none to regain
        libc.prctl(U(47), U(4), U(0), U(0), U(0))  # PR_CAP_AMBIENT_CLEAR_ALL
        for c in range(64):
            libc.prctl(U(24), U(c), U(0), U(0), U(0))  # PR_CAPBSET_DROP (needs CAP_SETPCAP)
        hdr, data = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
        check(libc.capset(hdr, data), "capset")
        with open("/proc/self/status") as f:  # this run's /proc by now
            st = dict(ln.split(":", 1) for ln in f.read().splitlines() if ":" in ln)
        if any(int(st[k], 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")):
            raise OSError(1, "capabilities left")
        stage[0] = 7  # no_new_privs, then the project's strict filter

        class fprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        buf = ctypes.create_string_buffer(filt, len(filt))
        prog = fprog(len(filt) // 8, ctypes.addressof(buf))
        check(libc.prctl(U(38), U(1), U(0), U(0), U(0)), "no_new_privs")
        check(libc.prctl(U(22), U(2), ctypes.byref(prog), U(0), U(0)), "seccomp")

    def read_record(fd):
        # one 12-byte record (u32 errno, u32 pid, u32 stage), or less at EOF
        rec = b""
        while len(rec) < 12:
            b = os.read(fd, 12 - len(rec))
            if not b:
                break
            rec += b
        return rec

    stage = [0]
    while True:
        try:
            msg, anc, mflags, _ = ctl.recvmsg(64, socket.CMSG_SPACE(3 * 4))
        except InterruptedError:
            continue
        if not msg:
            os._exit(0)  # the agent is gone
        fds = array.array("i")
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % 4])
        # two pipes, one a writer: the short-lived child reports the run's
        # pid (or where it failed) on its own, the run reports it is
        # isolated on the other. One shared pipe gave no order between the
        # two: a run isolated before its parent wrote the pid had its
        # record read as the parent's, and the agent was told pid 0.
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        # a descriptor the buffer had no room for was dropped: never a child
        # without its GO pipe (it would not be held)
        pid = os.fork() if len(fds) in (2, 3) and not mflags & socket.MSG_CTRUNC else -1
        if pid == 0:
            break
        os.close(w1)
        os.close(w2)
        for fd in fds:
            os.close(fd)
        rep = read_record(r1) if pid > 0 else b""
        ran = read_record(r2) if len(rep) == 12 and rep[:4] == b"\0\0\0\0" else b""
        os.close(r1)
        os.close(r2)
        if pid > 0:
            os.waitpid(pid, 0)
        if pid < 0:
            out = struct.pack("<III", 71, 0, 1)  # EPROTO
        elif len(rep) < 12:
            out = struct.pack("<III", 10, 0, 2)  # ECHILD
        elif struct.unpack_from("<i", rep)[0] != 0:
            out = rep
        elif len(ran) < 12:
            out = struct.pack("<III", 10, 0, 3)
        else:
            e, _, st = struct.unpack_from("<iII", ran)
            out = struct.pack("<iII", e, struct.unpack_from("<I", rep, 4)[0], st)
        ctl.send(out)

    # the next run's child: its own namespaces; then a grandchild, the init
    # of the new pid namespace (the agent's once this one exits), which
    # isolates itself (held: but for its cgroup namespace, capabilities and
    # filter, until GO), waits for the run on its socket, and forks the
    # program (_sbx_init)
    os.close(r1)
    os.close(r2)
    ctl.detach()  # fd 3 is closed below, never again by this object
    w = w1  # where a failure is reported: the parent's pipe, then the run's
    held = len(fds) == 3
    sock, status, go = fds[0], fds[1], fds[2] if held else -1
    try:
        stage[0] = 1
        # mount, pid, ipc, network; and cgroup, so that the run sees "/" as
        # a cold box does: held, only once the host has moved it into the
        # run's own group (below), which will be that namespace's root
        check(libc.unshare(U(0x20000 | 0x20000000 | 0x08000000 | 0x40000000 |
                             (0 if held else 0x02000000))), "unshare")
        stage[0] = 2
        pid = os.fork()
        if pid:
            os.write(w1, struct.pack("<iII", 0, pid, 0))
            os._exit(0)
        os.close(w1)
        w = w2
        stage[0] = 3
        isolate()
        if not held:
            lock_down()
        lo = 3
        for fd in sorted(k for k in (w, sock, status, go) if k >= 3):
            os.closerange(lo, fd)
            lo = fd + 1
        os.closerange(lo, 1 << 16)
        # isolated; held (with a GO pipe), but for the cgroup namespace, the
        # capabilities and the filter, which come after GO (the agent checks)
        os.write(w, struct.pack("<iII", 0, 0, 0x80000000 if held else 0))
        os.close(w)
    except BaseException as e:
        err = e.errno if isinstance(e, OSError) and e.errno else 1
        try:
            os.write(w, struct.pack("<iII", err, 0, stage[0]))
        finally:
            os._exit(126)
    chan = socket.socket(fileno=sock)
    try:
        if held:  # the host moves this child into the run's cgroup, then GO
            try:
                ok = os.read(go, 1) == b"g"
            except BaseException:
                ok = False
            if not ok:
                os._exit(126)  # no GO (the box ends): nothing of a program ran
            os.close(go)
            stage[0] = 9  # the run's group, now this one's, as the cgroup namespace's root
            check(libc.unshare(U(0x02000000)), "unshare")
            lock_down()
        # the program's process, forked now rather than when the run comes
        # (pid 2, as a cold box's program is): it takes the run; this one,
        # the init, writes its wait status to the status pipe (_sbx_init)
        stage[0] = 2
        pid = os.fork()
        if pid:
            chan.close()
            return None, (status, pid)
        os.close(status)
        if held:
            chan.send(struct.pack("<iII", 0, 0, 0))  # GO's answer: waiting for the run
        # ready: the run comes as a FORK payload (u32 flags, u32 argc, u32
        # envc, strings, cwd) with its stdin, stdout and stderr
        stage[0] = 8
        while True:
            try:
                msg, anc, mflags, _ = chan.recvmsg(1 << 20, socket.CMSG_SPACE(3 * 4))
                break
            except InterruptedError:
                continue
        if not msg:
            os._exit(0)  # the agent let this child go unused
        fds = array.array("i")
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % 4])
        if len(fds) != 3 or mflags & (socket.MSG_CTRUNC | socket.MSG_TRUNC) or len(msg) < 12:
            raise OSError(71, "the run's descriptors")  # EPROTO
        _, argc, envc = struct.unpack_from("<III", msg)
        strs = msg[12:].split(b"\0")[: argc + envc + 1]
        argv, env, cwd = strs[:argc], strs[argc : argc + envc], strs[argc + envc]
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        chan.send(struct.pack("<iII", 0, 0, 0))
        chan.close()
    except BaseException as e:
        # after the zygote's answer: GO's or FORK's answer says why, and
        # nothing of the program ran
        err = e.errno if isinstance(e, OSError) and e.errno else 1
        try:
            chan.send(struct.pack("<iII", err, 0, stage[0]))
        finally:
            os._exit(126)
    os.chdir(os.path.join(base, cwd.decode("utf-8", "surrogateescape")) if cwd else base)
    os.environ.clear()
    for kv in env:
        k, _, v = kv.partition(b"=")
        os.environb[k] = v
    return [a.decode("utf-8", "surrogateescape") for a in argv], None


def _sbx_init(status, pid):
    # The run's child is the init of its pid namespace, and the kernel
    # ignores a signal an init sends itself while its action is the
    # default: so the program runs in a child of it (pid 2, forked before
    # the run came, as in a cold box, where the agent is pid 1), and the
    # init reaps what the namespace orphans and writes the program's wait
    # status to the agent's pipe when it ends. Its signals keep their
    # default action, so the program's own cannot reach it and the agent's
    # (SIGKILL, at a timeout or a cancel) end it, and with it the
    # namespace. The init does as little as it can (each page it writes is
    # copied from the zygote's).
    import _signal, os

    try:
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        os.closerange(0, status)  # the run's stdin is the program's alone
        os.closerange(status + 1, 1 << 16)
        while True:
            p, st = os.waitpid(-1, 0)
            if p == pid:
                os.write(status, (st & 0xFFFFFFFF).to_bytes(4, "little"))
                break
    finally:
        os._exit(0)


def _sbx_exit(code):
    # The end of `python3 main.py` without the interpreter's finalization:
    # that touches every object the zygote loaded, copying each page of its
    # heap into the child for nothing (most of a forked run's CPU). What a
    # program can see of the end is kept: non-daemon threads are waited
    # for, atexit functions run, the streams are flushed. Objects still
    # alive are not destroyed (Python does not promise that either).
    import os, sys

    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        import atexit

        atexit._run_exitfuncs()
    finally:
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                code = code or 120
        os._exit(code & 0xFF)


def _sbx_main():
    import sys

    g = globals()
    serve, init, end = g.pop("_sbx_serve"), g.pop("_sbx_init"), g.pop("_sbx_exit")
    del g["_sbx_main"]
    # the one-shot starter (start.py, staged in the box) runs the program:
    # loaded before the first fork, so that every child shares it
    starter = {"__name__": "_sbx_start"}
    with open(sys.argv[1], "rb") as f:
        exec(compile(f.read(), sys.argv[1], "exec", dont_inherit=True), starter)
    run = starter["_sbx_exec"]
    del starter
    argv, init_args = serve()
    if argv is None:  # the init; the program's process goes on below
        init(*init_args)
    # the run's own random state: the zygote's was made before any run
    if "random" in sys.modules:
        sys.modules["random"].seed()
    # argv is the run command (python3 FILE): run FILE as that would
    try:
        run(argv[-1], [argv[-1]])
    except SystemExit as e:
        end(e.code)
    end(0)


_sbx_main()
