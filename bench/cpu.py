#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""CPU per run (issue 22): user+system time of an MCP server and of every
process below it, over N trivial runs, divided by N; next to it runs/s of
the same calls and how many of them found no ready sandbox. CPU time is
stable on a noisy shared machine where wall time is not.

How it is counted: /proc/PID/stat of the server and of every live
descendant, utime+stime plus cutime+cstime (the children each has waited
for, with theirs), summed before and after the calls. A process that ended
and was waited for is in its parent's cutime; sandbox processes are the
server's descendants (bwrap, nsjail), so everything a run starts counts.
Containers are not (dockerd's shims run them): for Docker the delta of
usage_usec in cpu.stat of the containers' parent cgroup is added, which
keeps the usage of containers already removed, and dockerd's own tree.

Runs used by bench/run; alone: bench/cpu.py [--backend B ...] [--lang L ...]
[--runs N] [--bin PATH] (bwrap and nsjail by default; the machine-wide
lock as bench/run takes it). A benchmark, not a test.
"""
import argparse
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TICK = os.sysconf("SC_CLK_TCK")
LAST_CGROUP = None  # the containers' parent cgroup measure() last found


def proc_table():
    """{pid: (ppid, own+waited-for CPU seconds)} of every process."""
    table = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d, "rb") as f:
                s = f.read()
        except OSError:
            continue
        f = s[s.rindex(b")") + 2:].split()
        # after the name: state ppid ... utime(14) stime cutime cstime
        table[int(d)] = (int(f[1]), sum(int(x) for x in f[11:15]) / TICK)
    return table


def tree_cpu(roots):
    """CPU seconds of the processes in `roots` and all their descendants."""
    table = proc_table()
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    todo, seen, total = [r for r in roots if r in table], set(), 0.0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += table[pid][1]
        todo += children.get(pid, [])
    return total


def cgroup_usage(path):
    """usage_usec of a cgroup (v2) in seconds, 0 when there is none."""
    if not path:
        return 0.0
    try:
        with open(os.path.join(path, "cpu.stat")) as f:
            for line in f:
                k, v = line.split()
                if k == "usage_usec":
                    return int(v) / 1e6
    except OSError:
        pass
    return 0.0


class Meter:
    """CPU of a server's process tree (and optional extra roots and one
    cgroup) between start() and stop()."""

    def __init__(self, pids, cgroup=None):
        self.pids, self.cgroup = list(pids), cgroup

    def now(self):
        return tree_cpu(self.pids) + cgroup_usage(self.cgroup)

    def start(self):
        self.c0, self.t0 = self.now(), time.perf_counter()

    def stop(self):
        return self.now() - self.c0, time.perf_counter() - self.t0


class CpuStat:
    """CPU ms per run, runs/s, calls that found no ready sandbox."""

    def __init__(self, cpu_ms, rate, empty, n):
        self.cpu_ms, self.rate, self.empty, self.n = cpu_ms, rate, empty, n


def from_pool(res):
    return bool((res or {}).get("warm"))


def from_zygote(res):
    return (res or {}).get("sandbox") == "zygote"


def cpu_series(srv, args, runs, meter, warmup=3, window=1, parse_warm=True, hit=from_pool):
    """`runs` calls back to back (window=1) or `window` in flight, after
    `warmup` calls; a CpuStat, or (False, error) at the first failure.
    With parse_warm, the calls whose result `hit` does not accept (no
    ready sandbox; not forked from a zygote) are counted."""
    for _ in range(warmup):
        ok, _, err, _ = srv.tool("execute_code", args)
        if not ok:
            return False, err
    meter.start()
    empty = 0
    if window == 1:
        for _ in range(runs):
            ok, _, err, res = srv.tool("execute_code", args)
            if not ok:
                return False, err
            if parse_warm and not hit(res):
                empty += 1
    else:
        answers, _ = srv.mcp.call_window("tools/call", {"name": "execute_code",
                                                        "arguments": args}, runs, window)
        for msg in answers:
            ok, err, res = srv.parse(msg)
            if not ok:
                return False, err
            if parse_warm and not hit(res):
                empty += 1
    cpu, secs = meter.stop()
    return CpuStat(cpu * 1000.0 / runs, runs / secs, empty if parse_warm else None, runs), None


def bare_python(runs):
    """CPU ms per run of a bare `/usr/bin/python3 -c pass` (RUSAGE_CHILDREN)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["/usr/bin/python3", "-c", "pass"], check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    secs = time.perf_counter() - t0
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return CpuStat(cpu * 1000.0 / runs, runs / secs, None, runs)


def container_cgroup(docker_host):
    """The parent cgroup of the containers a dockerd runs now, or None."""
    env = dict(os.environ, DOCKER_HOST=docker_host)
    try:
        ids = subprocess.run(["docker", "ps", "-q"], env=env, capture_output=True,
                             text=True, timeout=30).stdout.split()
        if not ids:
            return None
        pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", ids[0]], env=env,
                             capture_output=True, text=True, timeout=30).stdout.strip()
        with open("/proc/%s/cgroup" % pid) as f:
            rel = next(line.split(":", 2)[2].strip() for line in f if line.startswith("0::"))
    except (OSError, StopIteration, subprocess.SubprocessError):
        return None
    return os.path.dirname(os.path.join("/sys/fs/cgroup", rel.lstrip("/")))


def measure(b, backend, langs, runs, logdir, extra_pids=(), docker_host=None, rate_runs=None):
    """{(lang, "cold"|"warm"|"warm x2"): CpuStat or NA} on one backend."""
    global LAST_CGROUP
    out = {}
    cold = b.Server("ours", [b_bin(b)], b.ours_env(backend, {"LLM_SANDBOX_POOL": "0"}),
                    logdir + "/cpu-%s-cold.log" % backend)
    warm = b.Server("ours", [b_bin(b)], b.ours_env(backend), logdir + "/cpu-%s.log" % backend)
    try:
        for lang in langs:
            args = {"language": lang, "code": b.CODE[lang]}
            for name, srv, window, n in (("cold", cold, 1, runs), ("warm", warm, 1, runs),
                                         ("warm x2", warm, 2, rate_runs or runs)):
                cg = container_cgroup(docker_host) if docker_host else None
                meter = Meter([srv.mcp.p.pid] + list(extra_pids), cg)
                if docker_host and cg is None:
                    # no container runs yet: one call makes one, then measure
                    srv.tool("execute_code", args)
                    meter.cgroup = container_cgroup(docker_host)
                if meter.cgroup:
                    LAST_CGROUP = meter.cgroup
                s, err = cpu_series(srv, args, n, meter, window=window, parse_warm=name != "cold")
                out[(lang, name)] = s if s else b.NA(err)
                b.log("cpu %s %s %s: %s" % (backend, lang, name, fmt(out[(lang, name)])))
    finally:
        cold.close()
        warm.close()
    if backend in ZYGOTE_BACKENDS:
        for lang in langs:
            if lang in ZYGOTE_LANGS:
                out.update(measure_zygote(b, backend, runs, logdir, rate_runs, lang))
                if os.geteuid() == 0:  # cgroups are root's on a v1 host
                    out.update(measure_zygote(b, backend, runs, logdir, rate_runs, lang, True))
    return out


# the backends that make zygote boxes (LLM_SANDBOX_ZYGOTE), and the
# languages with a zygote
ZYGOTE_BACKENDS = ("bwrap", "nsjail")
ZYGOTE_LANGS = ("python", "ruby")


def measure_zygote(b, backend, runs, logdir, rate_runs=None, lang="python", cgroups=False):
    """{(lang + " (zygote)", "warm"|"warm x2"): CpuStat or NA}: runs forked
    from a zygote, with cgroups off (the rlimit fallbacks), or with them
    (each run then gets a group of its own: lang + " (zygote, cgroups)");
    its "no ready sandbox" counts calls that were not forked from the
    zygote."""
    out = {}
    label = lang + (" (zygote, cgroups)" if cgroups else " (zygote)")
    log = "/cpu-%s-%szygote%s.log" % (backend, "" if lang == "python" else lang + "-",
                                      "-cgroups" if cgroups else "")
    env = {"LLM_SANDBOX_ZYGOTE": "true", "LLM_SANDBOX_CGROUP": "auto" if cgroups else "off"}
    srv = b.Server("ours", [b_bin(b)], b.ours_env(backend, env), logdir + log)
    args = {"language": lang, "code": b.CODE[lang]}
    try:
        # the first call is cold and starts the zygote box: wait for it
        deadline = time.monotonic() + 60
        while True:
            ok, _, err, res = srv.tool("execute_code", args)
            if not ok or from_zygote(res) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        for name, window, n in (("warm", 1, runs), ("warm x2", 2, rate_runs or runs)):
            if not ok:
                s = b.NA(err)
            elif not from_zygote(res):
                s = b.NA("no run was forked from a zygote in 60 s")
            else:
                s, err = cpu_series(srv, args, n, Meter([srv.mcp.p.pid]), window=window,
                                    hit=from_zygote)
                s = s if s else b.NA(err)
            out[(label, name)] = s
            b.log("cpu %s %s %s: %s" % (backend, label, name, fmt(s)))
    finally:
        srv.close()
    return out


def burst(b, backend, pool, size, rounds, logdir, pause=3.0):
    """Bursts of `size` back-to-back python calls, each after `pause`
    seconds idle (the pool refills), on a server with LLM_SANDBOX_POOL=pool:
    (calls that found no ready sandbox, calls), or an NA."""
    srv = b.Server("ours", [b_bin(b)], b.ours_env(backend, {"LLM_SANDBOX_POOL": str(pool)}),
                   logdir + "/burst-%s.log" % backend)
    args = {"language": "python", "code": b.CODE["python"]}
    empty = calls = 0
    try:
        for r in range(rounds + 1):
            time.sleep(pause)
            for _ in range(size):
                ok, _, err, res = srv.tool("execute_code", args)
                if not ok:
                    return b.NA(err)
                if r:  # the first burst sizes the pool
                    calls += 1
                    empty += 0 if (res or {}).get("warm") else 1
    finally:
        srv.close()
    return empty, calls


def rows_of(backend, langs, res):
    """measure()'s results as table() rows, the zygote's after Python's."""
    rows = []
    for lang in langs:
        for name in (lang, lang + " (zygote)"):
            if (name, "warm") in res:
                rows.append((backend, name, {n: res.get((name, n)) for n in
                                             ("cold", "warm", "warm x2")}))
    return rows


def b_bin(b):
    return b.ARGS.bin


def fmt(s):
    if not isinstance(s, CpuStat):
        return "n/a (%s)" % getattr(s, "error", s)
    return "%.1f ms CPU/run, %.1f runs/s%s" % (
        s.cpu_ms, s.rate, "" if s.empty is None else ", %d/%d found no ready sandbox" % (
            s.empty, s.n))


def table(rows):
    """Markdown: rows of (backend, lang, {name: CpuStat|NA})."""
    out = ["| CPU per run (server + descendants) | backend | cold ms | cold runs/s "
           "| warm ms | warm runs/s | warm: no ready sandbox | 2 in flight ms | 2 in flight runs/s "
           "| 2 in flight: no ready sandbox |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def c(s, what):
        if not isinstance(s, CpuStat):
            return "n/a" if s is not None else "—"
        if what == "empty":
            return "—" if s.empty is None else "%d/%d" % (s.empty, s.n)
        return "%.1f" % (s.cpu_ms if what == "cpu" else s.rate)

    for backend, lang, d in rows:
        cells = []
        for name in ("cold", "warm", "warm x2"):
            s = d.get(name)
            cells += [c(s, "cpu"), c(s, "rate")] + ([c(s, "empty")] if name != "cold" else [])
        out.append("| %s | %s | %s |" % (lang, backend, " | ".join(cells)))
    if any(lang.endswith("(zygote)") for _, lang, _ in rows):
        out += ["", "(zygote): LLM_SANDBOX_ZYGOTE=true, cgroups off; its \"no ready sandbox\" "
                "counts the calls that were not forked from the zygote."]
    return "\n".join(out)


def bench_start(a):
    """For a script beside bench/run, with its options parsed into a (bin,
    no_lock): bench/run loaded as a module (b) with its ARGS, the tests'
    machine-wide lock taken (or None), and a directory for the servers'
    logs; the machine's load printed."""
    import importlib.machinery
    import importlib.util
    import tempfile
    a.bin = os.path.abspath(a.bin)
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    b = importlib.util.module_from_spec(spec)
    loader.exec_module(b)
    b.ARGS = a
    lock = b.take_lock(a)
    logdir = tempfile.mkdtemp(prefix="llm-sandbox-bench-logs-", dir="/var/tmp")
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    return b, lock, logdir


def main():
    ap = argparse.ArgumentParser(description="CPU per run (issue 22)")
    ap.add_argument("--backend", action="append")
    ap.add_argument("--lang", action="append")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--bursts", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "llm-sandbox"))
    ap.add_argument("--no-lock", action="store_true", help="the caller holds flock /tmp")
    a = ap.parse_args()
    b, lock, logdir = bench_start(a)
    print("bare /usr/bin/python3 -c pass: %s" % fmt(bare_python(a.runs)))
    rows = []
    for backend in a.backend or ["bwrap", "nsjail"]:
        res = measure(b, backend, a.lang or ["python"], a.runs, logdir)
        rows += rows_of(backend, a.lang or ["python"], res)
    print(table(rows))
    for backend in a.backend or ["bwrap", "nsjail"]:
        for pool, size in ((2, 2), (2, 4), (8, 8)):
            r = burst(b, backend, pool, size, a.bursts, logdir)
            print("%s, LLM_SANDBOX_POOL=%d, bursts of %d python calls after 3 s idle: %s" % (
                backend, pool, size, "n/a (%s)" % r.error if isinstance(r, b.NA) else
                "%d/%d found no ready sandbox" % r))
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    if lock is not None:
        os.close(lock)


if __name__ == "__main__":
    sys.exit(main())
