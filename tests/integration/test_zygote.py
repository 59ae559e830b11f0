# SPDX-License-Identifier: MIT
"""Zygote runs (core/src/sessions/pool.c, core/agent/zygote.inc,
langs/python/zygote.py, langs/ruby/zygote.rb) through the real MCP server
on the backend under test: one pre-loaded Python or Ruby interpreter per
zygote box forks each run into namespaces of its own under the strict
seccomp filter. The tests that apply to both run for both (ZLANGS).

What must hold: every run asserted here did come from the zygote (the
result says "sandbox": "zygote", so no test passes on the cold path);
nothing passes from one run to the next, module state the zygote loaded
included; a forked run is confined exactly as a cold one (no capabilities,
no_new_privs, the filter, its own mount, pid, ipc and network namespaces,
pid 2 under an init of its own, as a cold run's program is under the
agent); it behaves as a cold run, down to the signals it sends itself; a
zygote that cannot isolate a child (each box prepares the next run's
child before the run comes) is never used: its runs take a ready sandbox
or start cold, and the server says why; with the setting off no run is
forked.

Where cgroups hold the limits (as root here, on v1; in the VM's cgroup
v2 settings also as a user in a delegated scope) each forked run gets a
group of its own with its limits, and its cgroup namespace is rooted
there as a cold box's is (pool_zygote.c); as nobody the limits are the
rlimit fallbacks. So every test here checks one path as root and the
other as nobody, and two tests check the groups themselves: a run's is
its own, made for it and gone with it, and a language whose zygote
cannot hold a child gets no zygote where cgroups hold the limits.
"""
import os
import shutil
import signal
import threading
import time

import pytest

from conftest import (BACKEND, CONTAINER, MXC, WSL2, cgroup_version, cgroups_enforced,
                      find_marked, proc_status)
from test_limits import MIB, _cgroup_dir, _read
from test_pool import LEAVE, LOOK, Server, release

# the local jails make zygote boxes (plugin.h, SBX_BOX_ZYGOTE): bwrap and nsjail
pytestmark = [pytest.mark.contract,
              pytest.mark.skipif(CONTAINER or MXC or WSL2 or BACKEND not in ("bwrap", "nsjail"),
                                 reason="zygote boxes are made by bwrap and nsjail only")]

ZYGOTE_ENV = {"LLM_SANDBOX_ZYGOTE": "true"}

# the languages with a zygote; each test that applies to both takes lang
ZLANGS = ["python", "ruby"]
# what a forked run's process is called, seen from the host
COMM = {"python": "python3", "ruby": "ruby"}
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(params=ZLANGS)
def lang(request):
    if not shutil.which(request.param if request.param != "python" else "python3"):
        pytest.skip("%s is not installed here" % request.param)
    return request.param


# test_pool.py's programs, and Ruby's: a run leaves a file in the workspace,
# /tmp and /dev/shm, an environment variable, a global (and a method on a
# core class), a cwd and a detached process; the next looks for them
ZLEAVE = dict(LEAVE, ruby=r"""
File.write('left.txt', 'x')
File.write('/tmp/left-tmp', 'x')
File.write('/dev/shm/sbx-left', 'x')
ENV['SBX_LEFT'] = '1'
$sbx_left = 1
class String; def sbx_left; end; end
Dir.chdir('/tmp')
Process.spawn('sleep', '300', pgroup: true)
puts 'left'
""")
ZLOOK = dict(LOOK, ruby=r"""
puts [File.exist?('left.txt'), File.exist?('/tmp/left-tmp'), ENV.key?('SBX_LEFT'),
      !$sbx_left.nil? || String.method_defined?(:sbx_left), Dir.pwd].join(' ')
pids = Dir.children('/proc').grep(/\A\d+\z/).map(&:to_i).sort
puts pids == [1, Process.pid].uniq.sort ? 'True' :
     pids.map { |p| File.read("/proc/#{p}/comm").strip }.inspect
""")
SHM = {"python": "import os\nprint(os.listdir('/dev/shm'))\n",
       "ruby": "p Dir.children('/dev/shm')\n"}


class ZygoteServer(Server):
    def __init__(self, extra=None, **kw):
        env = dict(ZYGOTE_ENV)
        env.update(extra or {})
        super().__init__(extra=env, **kw)

    def zygote_run(self, code, language="python", **kw):
        """A run forked from the zygote. A kind gets its pool (and zygote
        box) from its first run, which is cold; until the zygote is up,
        runs take a ready sandbox or start cold (and are repeated)."""
        deadline = time.monotonic() + 60
        while True:
            sc = self.run(code, language, **kw)
            if sc.get("sandbox") == "zygote":
                assert sc.get("warm") is True, sc
                return sc
            assert sc.get("sandbox") in ("cold", "ready"), sc
            assert time.monotonic() < deadline, "no run was forked from a zygote: %r" % (sc,)
            time.sleep(0.1)


@pytest.fixture
def zserver():
    s = ZygoteServer()
    yield s
    s.finish()


def test_nothing_passes_between_zygote_runs(zserver, lang):
    sc = zserver.zygote_run(ZLEAVE[lang], lang)
    assert sc["status"] == "ok" and sc["stdout"] == "left\n", sc
    # the run's pid namespace ended with it: the detached sleep is gone
    deadline = time.monotonic() + 10
    while find_marked(zserver.mark, "sleep") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert find_marked(zserver.mark, "sleep") == []
    sc = zserver.zygote_run(ZLOOK[lang] + SHM[lang], lang)
    assert sc["status"] == "ok", sc
    first, second, shm = sc["stdout"].splitlines()
    assert [w.lower() for w in first.split()] == ["false"] * 4 + ["/workspace"], sc
    assert second == "True" and shm == "[]", sc


def test_module_state_the_zygote_loaded_does_not_pass(zserver):
    """json is loaded in the zygote before any run: a run that patches it
    patches its own copy."""
    sc = zserver.zygote_run(
        "import json, sys\n"
        "assert 'json' in sys.modules\n"
        "json.dumps = lambda *a, **k: 'patched'\n"
        "json.JSONEncoder.encode = lambda self, o: 'patched'\n"
        "sys.modules['collections'].OrderedDict = None\n"
        "print(json.dumps([1]))\n")
    assert sc["status"] == "ok" and sc["stdout"] == "patched\n", sc
    sc = zserver.zygote_run(
        "import json, collections\n"
        "print(json.dumps([1]), json.JSONEncoder().encode({'a': 2}), "
        "collections.OrderedDict is not None)\n")
    assert sc["status"] == "ok" and sc["stdout"] == '[1] {"a": 2} True\n', sc


def test_ruby_library_state_the_zygote_loaded_does_not_pass(zserver):
    """json and set are required in the Ruby zygote before any run: a run
    that reopens JSON, Set or Hash changes its own copy."""
    if not shutil.which("ruby"):
        pytest.skip("ruby is not installed here")
    sc = zserver.zygote_run(
        "raise 'json not preloaded' unless defined?(JSON::VERSION) && defined?(Set)\n"
        "module JSON; def self.generate(*) 'patched' end; end\n"
        "class Hash; def to_json(*) 'patched' end; end\n"
        "class Set; def include?(*) :patched end; end\n"
        "puts JSON.generate([1]), {}.to_json, Set[1].include?(2)\n", "ruby")
    assert sc["status"] == "ok" and sc["stdout"] == "patched\npatched\npatched\n", sc
    sc = zserver.zygote_run(
        "require 'json'\nrequire 'set'\n"
        "puts JSON.generate([1]), {'a' => 2}.to_json, Set[1].include?(1)\n", "ruby")
    assert sc["status"] == "ok" and sc["stdout"] == '[1]\n{"a":2}\ntrue\n', sc


RANDOM = {"python": "import random; print(random.getrandbits(64))",
          "ruby": "puts rand(1 << 64)"}


def test_random_state_is_the_runs_own(zserver, lang):
    outs = set()
    for _ in range(3):
        sc = zserver.zygote_run(RANDOM[lang], lang)
        assert sc["status"] == "ok", sc
        outs.add(sc["stdout"])
    assert len(outs) == 3, outs


PASS = {"python": "pass", "ruby": "nil"}

CONFINED = r"""
import ctypes, os, socket
st = dict(l.split(':\t', 1) for l in open('/proc/self/status').read().splitlines())
print(os.getpid(), st['NoNewPrivs'].strip(), st['Seccomp'].strip(),
      all(int(st[k], 16) == 0 for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb')))
libc = ctypes.CDLL(None, use_errno=True)
for what, r in (('unshare', lambda: libc.unshare(0x20000)),
                ('userns', lambda: libc.unshare(0x10000000)),
                ('mount', lambda: libc.mount(b'tmpfs', b'/tmp', b'tmpfs', 0, None)),
                ('umount', lambda: libc.umount2(b'/proc', 2))):
    print(what, r(), ctypes.get_errno())
print(sorted(p for p in os.listdir('/proc') if p.isdigit()) == ['1', '2'] or
      sorted(p for p in os.listdir('/proc') if p.isdigit()))
try:
    socket.create_connection(('10.0.2.2', 53), timeout=2)
    print('net reachable')
except OSError as e:
    print('net', type(e).__name__)
print(sorted(i[1] for i in socket.if_nameindex()))
"""
CONFINED_RB = r"""
require 'fiddle'
require 'socket'
st = File.read('/proc/self/status').lines.map { |l| l.chomp.split(":\t", 2) }.to_h
puts [Process.pid, st['NoNewPrivs'].strip, st['Seccomp'].strip,
      %w[CapInh CapPrm CapEff CapBnd CapAmb].all? { |k| st[k].to_i(16) == 0 } ? 'True' : 'False']
       .join(' ')
fn = ->(n, a) { Fiddle::Function.new(Fiddle::Handle::DEFAULT[n], a, Fiddle::TYPE_INT) }
i, v = Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP
[['unshare', -> { fn.('unshare', [i]).(0x20000) }],
 ['userns', -> { fn.('unshare', [i]).(0x10000000) }],
 ['mount', -> { fn.('mount', [v, v, v, Fiddle::TYPE_LONG, v])
                 .("tmpfs\0", "/tmp\0", "tmpfs\0", 0, nil) }],
 ['umount', -> { fn.('umount2', [v, i]).("/proc\0", 2) }]].each do |what, r|
  ret = r.()
  puts "#{what} #{ret} #{Fiddle.last_error}"
end
pids = Dir.children('/proc').grep(/\A\d+\z/).sort
puts pids == %w[1 2] ? 'True' : pids.inspect
begin
  Socket.tcp('10.0.2.2', 53, connect_timeout: 2).close
  puts 'net reachable'
rescue SystemCallError, SocketError, IOError => e
  puts "net #{e.class}"
end
p Socket.getifaddrs.map(&:name).uniq.sort
"""


def test_a_zygote_run_is_confined(zserver, lang):
    """Everything a cold run's program gets, the forked child has: pid 2
    of its own pid namespace, under an init of its own (the zygote and the
    agent out of sight; a cold program is pid 2 under the agent), no
    capabilities, no_new_privs and the filter (no unshare, no mount), a
    network namespace with loopback only."""
    sc = zserver.zygote_run(CONFINED if lang == "python" else CONFINED_RB, lang)
    assert sc["status"] == "ok", sc
    lines = sc["stdout"].splitlines()
    assert lines[0] == "2 1 2 True", sc
    for line in lines[1:5]:
        what, r, errno_ = line.split()
        assert r == "-1" and errno_ == "1", sc  # EPERM from the filter
    assert lines[5] == "True", sc
    assert lines[6].startswith("net ") and lines[6] != "net reachable", sc
    assert lines[7] == ("['lo']" if lang == "python" else '["lo"]'), sc


# 6 s at most: the test ends the run with SIGWINCH once it has read the
# namespaces (test_pool.release; SIGWINCH, which neither interpreter
# catches by itself, so SigCgt shows when the handler is in place)
SLEEP6 = {"python": "import signal, sys, time; open('/tmp/sbx-zyg-child', 'w')\n"
                    "signal.signal(signal.SIGWINCH, lambda *_: sys.exit(0)); time.sleep(6)",
          "ruby": "File.write('/tmp/sbx-zyg-child', ''); trap('WINCH') { exit 0 }; sleep 6"}


def test_a_zygote_run_has_its_own_namespaces(zserver, lang):
    """Seen from the host while it runs: the child's mount, pid, ipc and
    network namespaces are neither its zygote's nor the server's. (NSpid:
    the host's, the box's, and for a run's processes the run's.)"""
    def ns(pid):
        return {k: os.readlink("/proc/%d/ns/%s" % (pid, k)) for k in ("mnt", "pid", "ipc", "net")}

    zserver.zygote_run(PASS[lang], lang)
    out = {}
    t = threading.Thread(target=lambda: out.update(zserver.run(SLEEP6[lang], lang)))
    t.start()
    try:
        deadline = time.monotonic() + 5
        child = None
        while child is None:
            for p in find_marked(zserver.mark, COMM[lang]):
                try:
                    if os.readlink("/proc/%d/cwd" % p) == "/workspace" and \
                            proc_status(p).get("NSpid", "").split()[2:] == ["2"]:
                        child = p
                except OSError:
                    pass
            assert time.monotonic() < deadline, "no forked child seen"
            time.sleep(0.05)
        zygotes = [p for p in find_marked(zserver.mark, COMM[lang])
                   if len(proc_status(p).get("NSpid", "").split()) == 2]
        assert zygotes, "no zygote seen"
        mine, theirs, host = ns(child), ns(zygotes[0]), ns(zserver.s.pid)
    finally:
        if child is not None:
            release(child, signal.SIGWINCH, 6.0)
        t.join()
    assert out.get("sandbox") == "zygote" and out["status"] == "ok", out
    for k in mine:
        assert len({mine[k], theirs[k], host[k]}) == 3, (k, mine, theirs, host)


SAME = r"""
import os, sys
print(sys.argv, __name__, os.path.basename(__file__), sys.path[0], os.getcwd())
print(sum(int(x) for x in sys.stdin.read().split()))
print(sorted(k for k in os.environ if not k.startswith('SBX_TEST_MARK')))
sys.stderr.write('to stderr\n')
import warnings
1 / int(os.environ.get('ZERO', '0'))
"""


SAME_RB = r"""
puts [ARGV.inspect, $0, __FILE__, File.basename(__dir__), Dir.pwd, self.inspect].join(' ')
puts $stdin.read.split.sum(&:to_i)
p ENV.keys.reject { |k| k.start_with?('SBX_TEST_MARK') }.sort
$stderr.puts 'to stderr'
def boom(x)
  1 / x
end
boom(ENV.fetch('ZERO', '0').to_i)
"""


def test_a_zygote_run_behaves_as_a_cold_run(zserver, lang):
    code = SAME if lang == "python" else SAME_RB
    cold = ZygoteServer(pool="0")
    try:
        c = cold.run(code, lang, stdin="1 2 3")
    finally:
        cold.finish()
    assert c.get("sandbox") == "cold", c
    z = zserver.zygote_run(code, lang, stdin="1 2 3")
    for k in ("status", "exit_code", "stdout"):
        assert z[k] == c[k], (k, z, c)
    assert z["stderr"] == c["stderr"], (z["stderr"], c["stderr"])
    assert "ZeroDivisionError" in z["stderr"] and z["exit_code"] == 1, z


# a Ruby run's descriptors; it adds MARKED to its interpreter's eventfds
# (Fiddle's write, as Ruby refuses to wrap them) and shows their counts
FDS_RB = r"""
require 'fiddle'
fds = Dir.children('/proc/self/fd').map(&:to_i).sort
kinds = fds.map { |fd| [fd, (File.readlink("/proc/self/fd/#{fd}") rescue 'gone')] }
p kinds.reject { |fd, t| fd < 3 || t.include?('[eventfd]') || t == 'gone' }
evs = kinds.select { |_, t| t.include?('[eventfd]') }.map(&:first)
write = Fiddle::Function.new(Fiddle::Handle::DEFAULT['write'],
                             [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T],
                             Fiddle::TYPE_SSIZE_T)
evs.each { |fd| write.(fd, [1 << 40].pack('Q'), 8) } if ENV['SBX_MARK_EVENTFDS']
puts evs.map { |fd| File.read("/proc/self/fdinfo/#{fd}")[/^eventfd-count:\s*(\h+)/, 1].to_i(16) }
        .join(' ')
"""
MARKED = 1 << 40


def test_a_ruby_zygote_run_has_descriptors_of_its_own(zserver):
    """Beyond stdin, stdout and stderr a forked Ruby run holds only its
    interpreter's eventfds, made anew in it: what one run adds to its
    eventfds, the next does not find in its own (they are neither shared
    with the zygote nor with the run before)."""
    if not shutil.which("ruby"):
        pytest.skip("ruby is not installed here")
    code = "ENV['SBX_MARK_EVENTFDS'] = '1'\n" + FDS_RB
    sc = zserver.zygote_run(code, "ruby")
    assert sc["status"] == "ok", sc
    others, counts = (sc["stdout"].splitlines() + [""])[:2]
    assert others == "[]", sc
    assert counts and any(int(c) >= MARKED for c in counts.split()), sc
    for _ in range(2):
        sc = zserver.zygote_run(FDS_RB, "ruby")
        assert sc["status"] == "ok", sc
        others, counts = (sc["stdout"].splitlines() + [""])[:2]
        assert others == "[]", sc
        assert all(int(c) < MARKED for c in counts.split()), sc


# how a Ruby program ends: at_exit handlers (in reverse), exit and exit!
# codes, abort's message, an uncaught exception's report (after the
# handlers, with error_highlight's snippet and no frame of the zygote's),
# buffered output flushed (or not, after exit!), a syntax error, DATA
ENDS_RB = [
    "at_exit { puts 'first' }\nat_exit { puts 'second' }\nprint 'buffered'\nexit 3\n",
    "at_exit { $stderr.puts 'handler' }\nabort 'bye'\n",
    "$stdout.print 'lost'\nexit! 5\n",
    "at_exit { puts 'ae' }\n[1].each { |x| x.no_such_method }\n",
    "def f\n  raise ArgumentError, 'no'\nend\nbegin\n  f\nrescue => e\n  raise 'again'\nend\n",
    "at_exit { exit 9 }\nputs 'x'\n",
    "Thread.new { sleep }\nputs 'main ends'\n",
    "puts(\n",
    "puts DATA.read\n__END__\nafter the end\n",
    "require_relative 'no_such_file'\n",
    "$stdout.sync = false\nSTDOUT.write('a' * 70000)\nraise Interrupt\n",
]


def test_a_ruby_zygote_run_ends_as_ruby_does(zserver):
    if not shutil.which("ruby"):
        pytest.skip("ruby is not installed here")
    cold = ZygoteServer(pool="0")
    try:
        want = [cold.run(code, "ruby") for code in ENDS_RB]
    finally:
        cold.finish()
    for code, c in zip(ENDS_RB, want):
        assert c.get("sandbox") == "cold", c
        z = zserver.zygote_run(code, "ruby")
        for k in ("status", "exit_code", "stdout", "stderr"):
            assert z[k] == c[k], (code, k, z[k], c[k])


def test_a_zygote_run_ends_as_python_does(zserver):
    """Without the interpreter's finalization (zygote.py says why), what a
    program sees of its end holds: non-daemon threads finish, atexit
    functions run, buffered output is flushed, sys.exit's code and message."""
    sc = zserver.zygote_run(
        "import atexit, sys, threading, time\n"
        "sys.stdout = open(1, 'w', buffering=1 << 16, closefd=False)\n"
        "atexit.register(lambda: print('atexit'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread'))).start()\n"
        "print('buffered', end='')\n"
        "sys.exit('bye')\n")
    assert sc["stdout"] == "bufferedthread\natexit\n" and sc["stderr"] == "bye\n", sc
    assert sc["exit_code"] == 1, sc
    sc = zserver.zygote_run("raise SystemExit(7)")
    assert sc["exit_code"] == 7 and sc["stderr"] == "", sc


# programs that end by signals they send themselves (an uncaught Interrupt
# in Ruby is re-raised as SIGINT); and one that forwards a signal to a
# child of its own, which the run's init must not take for its own
SELF_SIGNALS = {
    "python": ["import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nprint('alive')\n",
               "import os\nprint('before', flush=True)\nos.kill(os.getpid(), 9)\nprint('alive')\n",
               "import os, signal\nsignal.signal(signal.SIGUSR1, lambda *a: print('caught'))\n"
               "os.kill(os.getpid(), signal.SIGUSR1)\nos.abort()\n"],
    "ruby": ["Process.kill(:TERM, Process.pid)\nsleep 1\nputs 'alive'\n",
             "raise Interrupt\n",
             "trap(:USR1) { puts 'caught' }\nProcess.kill(:USR1, Process.pid)\nsleep 0.2\n"
             "Process.kill(:KILL, Process.pid)\n"],
}


def test_a_zygote_run_ends_by_its_own_signals_as_a_cold_one(zserver, lang):
    """The kernel ignores a signal the init of a pid namespace sends itself
    with the default action; a forked program is not that init (pid 2 under
    one, as a cold one is under the agent), so one that kills itself dies
    as a cold one does, and its result says the same."""
    cold = ZygoteServer(pool="0")
    try:
        want = [cold.run(code, lang) for code in SELF_SIGNALS[lang]]
    finally:
        cold.finish()
    for code, c in zip(SELF_SIGNALS[lang], want):
        assert c.get("sandbox") == "cold" and c["status"] == "killed", c
        z = zserver.zygote_run(code, lang)
        for k in ("status", "exit_code", "stdout", "stderr"):
            assert z[k] == c[k], (code, k, z[k], c[k])


ARTIFACTS = {
    "python": ("open('out.txt', 'w').write('hello')\nimport os\n"
               "os.chmod('.', 0o700)\nprint(sorted(os.listdir('.')))",
               "['main.py', 'out.txt']\n",
               "import os, stat\nprint(sorted(os.listdir('.')), "
               "oct(stat.S_IMODE(os.stat('.').st_mode)))",
               "['main.py'] 0o755\n"),
    "ruby": ("File.write('out.txt', 'hello')\nFile.chmod(0o700, '.')\np Dir.children('.').sort",
             '["main.rb", "out.txt"]\n',
             "puts \"#{Dir.children('.').sort} #{format('%#o', File.stat('.').mode & 0o7777)}\"",
             '["main.rb"] 0755\n'),
}


def test_zygote_run_artifacts_and_a_fresh_workspace(zserver, lang):
    write, wrote, look, fresh = ARTIFACTS[lang]
    sc = zserver.zygote_run(write, lang)
    assert sc["status"] == "ok" and sc["stdout"] == wrote, sc
    assert [a["path"] for a in sc["artifacts"]] == ["out.txt"], sc
    sc = zserver.zygote_run(look, lang)
    assert sc["status"] == "ok" and sc["stdout"] == fresh, sc


SLEEP100 = {"python": "import time\ntime.sleep(100)", "ruby": "sleep 100"}
PRINT42 = {"python": "print(6 * 7)", "ruby": "puts 6 * 7"}
BIG = {"python": "x = bytearray(2 << 30)", "ruby": "x = 'x' * (2 << 30)"}
SLEEP1 = {"python": "import time; time.sleep(1); print(1)", "ruby": "sleep 1; puts 1"}


def test_zygote_run_timeout_then_the_next_run(zserver, lang):
    zserver.zygote_run(PASS[lang], lang)
    sc = zserver.run(SLEEP100[lang], lang, timeout=2)
    assert sc["status"] == "timeout", sc
    sc = zserver.zygote_run(PRINT42[lang], lang)
    assert sc["status"] == "ok" and sc["stdout"] == "42\n", sc


def test_zygote_run_limits_hold(zserver, lang):
    """The rlimit fallbacks apply to the child as to a cold run's program."""
    zserver.zygote_run(PASS[lang], lang)
    sc = zserver.zygote_run(BIG[lang], lang, memory="256m")
    assert sc["status"] == "oom" or "MemoryError" in sc["stderr"], sc


def test_concurrent_runs_while_the_zygote_is_busy(lang):
    """A zygote box forks one run at a time, and a kind has at most
    LLM_SANDBOX_POOL of them (1 here): of three calls in flight (two run
    at once on this machine's two CPUs, or more) not all are forked, and
    the others still run, in a ready sandbox or cold."""
    s = ZygoteServer(pool="1", extra={"LLM_SANDBOX_MAX_CONCURRENT": "3"})
    try:
        s.zygote_run(PASS[lang], lang)
        ids = [s.s.request_async("tools/call", {"name": "execute_code", "arguments": {
            "code": SLEEP1[lang], "language": lang}})
            for _ in range(3)]
        out = [s.s.response(i, 120)["result"]["structuredContent"] for i in ids]
    finally:
        s.finish()
    assert [sc["stdout"] for sc in out] == ["1\n"] * 3, out
    kinds = [sc["sandbox"] for sc in out]
    assert "zygote" in kinds and set(kinds) - {"zygote"}, kinds


HALF = {"python": "import os, time; time.sleep(0.5); print(os.getpid())",
        "ruby": "sleep 0.5; puts Process.pid"}


def test_runs_in_flight_together_each_fork(zserver, lang):
    """A run that finds the kind's zygote box busy makes the kind want one
    more (up to LLM_SANDBOX_POOL): once the filler has made it, two runs in
    flight together are both forked, each from a box of its own."""
    zserver.zygote_run(PASS[lang], lang)
    code = HALF[lang]
    deadline, seen = time.monotonic() + 60, []
    while True:
        ids = [zserver.s.request_async("tools/call", {"name": "execute_code", "arguments": {
            "code": code, "language": lang}}) for _ in range(2)]
        out = [zserver.s.response(i, 120)["result"]["structuredContent"] for i in ids]
        assert all(sc["status"] == "ok" for sc in out), out
        kinds = [sc["sandbox"] for sc in out]
        seen.append(kinds)
        if kinds == ["zygote", "zygote"]:
            break
        assert time.monotonic() < deadline, "two runs in flight were never both forked: %r" % seen
        time.sleep(0.2)


# (program, what it prints): a trivial run, a run whose background child
# (its own, or a subprocess) still holds stdout when the program ends, and
# one that fills the pipe
BACK_TO_BACK = [
    ("print('hi')", "hi\n"),
    ("import os, time\nif os.fork() == 0:\n    time.sleep(5)\nprint('forked')", "forked\n"),
    ("import subprocess\nsubprocess.Popen(['sleep', '5'])\nprint('bg')", "bg\n"),
    ("import sys\nsys.stdout.write('x' * 100000)", "x" * 100000),
]


def test_zygote_runs_back_to_back_beside_ready_sandboxes():
    """Forked runs while the pool makes ready sandboxes beside the zygote
    box (two other runs in flight with each, so boxes start all the time
    and the CPUs are busy). A forked run once ended now and then without
    its end being seen (killed at its timeout, status "timeout"): the
    zygote read the run's "isolated" record as its parent's, which holds
    the run's pid, and told the agent pid 0 (zygote.py's two pipes)."""
    s = ZygoteServer(pool="4")
    bad, forked = [], 0
    try:
        s.zygote_run("pass")
        for i in range(450):
            code, want = BACK_TO_BACK[i % len(BACK_TO_BACK)]
            ids = [s.s.request_async("tools/call", {"name": "execute_code", "arguments": {
                "code": c, "language": "python", "timeout": 10}})
                for c in (code, "print(1)", "print(2)")]
            for k, (rid, w) in enumerate(zip(ids, (want, "1\n", "2\n"))):
                sc = s.s.response(rid, 120)["result"]["structuredContent"]
                forked += sc.get("sandbox") == "zygote"
                if sc.get("status") != "ok" or sc.get("stdout") != w:
                    bad.append((i, k, sc.get("sandbox"), sc.get("status"),
                                sc.get("stdout", "")[:40], sc.get("stderr", "")[:200]))
    finally:
        s.finish()
    assert not bad, "%d of %d runs went wrong: %r" % (len(bad), 3 * 450, bad[:5])
    assert forked >= 100, "only %d of %d runs were forked from the zygote" % (forked, 3 * 450)


def test_zygote_off_forks_nothing():
    s = Server(extra={"LLM_SANDBOX_ZYGOTE": "false", "LLM_SANDBOX_CGROUP": "off"})
    try:
        seen = {s.run("pass")["sandbox"] for _ in range(6)}
    finally:
        s.finish()
    assert seen <= {"cold", "ready"} and "zygote" not in seen, seen


# a run that prints the cgroups it sees and waits on a sleep of its own
# (which the test finds on the host, reads the group of, and kills)
IN_GROUP = {
    "python": "import subprocess\nprint(open('/proc/self/cgroup').read(), end='')\n"
              "subprocess.run(['/bin/sleep', '60'])\nprint('done')\n",
    "ruby": "print File.read('/proc/self/cgroup')\nsystem('/bin/sleep', '60')\nputs 'done'\n",
}


def test_each_forked_run_has_a_cgroup_of_its_own(lang):
    """Where cgroups hold the limits, a forked run is in a group made for it
    with its limits, not its box's (one zygote box serves every run here,
    and each run's group differs and is gone once the run is), and it sees
    that group as the root of its cgroup namespace, as a cold run does."""
    if not cgroups_enforced():
        pytest.skip("no cgroup enforces the limits here")
    s = ZygoteServer(extra={"LLM_SANDBOX_POOL": "1"})
    limits = dict(memory="96m", pids=24)
    try:
        s.zygote_run("pass" if lang == "python" else "nil", lang, **limits)
        groups = []
        for _ in range(3):
            got = {}
            t = threading.Thread(target=lambda: got.update(sc=s.run(IN_GROUP[lang], lang, **limits)))
            t.start()
            deadline = time.monotonic() + 60
            while not find_marked(s.mark, "sleep"):
                assert t.is_alive() and time.monotonic() < deadline, got
                time.sleep(0.02)
            pid = find_marked(s.mark, "sleep")[0]
            mem, pids = _cgroup_dir(pid, "memory"), _cgroup_dir(pid, "pids")
            assert "/llm-sandbox/p" in mem, mem
            if cgroup_version() == 2:
                assert int(_read(mem, "memory.max")) == 96 * MIB
            else:
                assert int(_read(mem, "memory.limit_in_bytes")) == 96 * MIB
            assert _read(pids, "pids.max") == "24"
            os.kill(pid, 9)
            t.join(60)
            sc = got["sc"]
            assert sc["sandbox"] == "zygote" and sc["status"] == "ok", sc
            lines = sc["stdout"].splitlines()
            assert lines[-1] == "done" and all(ln.endswith(":/") for ln in lines[:-1]), sc
            assert not os.path.exists(mem), "the run's group outlived it: %s" % mem
            groups.append(mem)
        assert len(set(groups)) == 3, groups
        # its memory limit is its own group's: the kill is reported as one
        sc = s.zygote_run(BIG[lang], lang, **limits)
        assert sc["status"] == "oom" and sc["limit"] == "memory", sc
    finally:
        s.finish()


def test_no_zygote_where_cgroups_hold_the_limits_and_it_cannot_hold(tmp_path):
    """A zygote without language.zygote.holds could not be held while its
    child moves into a group of its own: where cgroups hold the limits its
    runs are never forked; without cgroups the same language's are."""
    if not cgroups_enforced():
        pytest.skip("no cgroup enforces the limits here")
    if not shutil.which("ruby"):
        pytest.skip("ruby is not installed here")
    with open(os.path.join(HERE, "..", "..", "langs", "ruby", "zygote.rb")) as f:
        (tmp_path / "holdless-zygote.rb").write_text(f.read())
    (tmp_path / "holdless.yaml").write_text(broken_manifest(
        "holdless", "Ruby whose zygote does not say it can hold a child", "ruby", "-e", "rb",
        holds=False))
    env = {"LLM_SANDBOX_PLUGIN_PATH": str(tmp_path)}
    s = ZygoteServer(extra=env)
    try:
        seen = set()
        for _ in range(8):
            sc = s.run("puts 'ran'", "holdless")
            assert sc["status"] == "ok" and sc["stdout"] == "ran\n", sc
            seen.add(sc["sandbox"])
            time.sleep(0.2)
        assert "zygote" not in seen and "ready" in seen, seen
    finally:
        s.finish()
    s = ZygoteServer(extra=dict(env, LLM_SANDBOX_CGROUP="off"))
    try:
        assert s.zygote_run("puts 'ran'", "holdless")["stdout"] == "ran\n"
    finally:
        s.finish()


# a stand-in zygote's driver: it takes the filter, says ready, and answers
# each PREP (its descriptors in fds: the child's socket, and a held one's
# GO pipe) as the lines given say
STAND_IN = r'''
def _sbx_main():
    import os, socket, struct
    ctl = socket.socket(fileno=3)
    ctl.recv(1 << 16)
    ctl.send(b"ready")
    while True:
        msg, anc, _, _ = ctl.recvmsg(1 << 20, socket.CMSG_SPACE(5 * 4))
        if not msg:
            os._exit(0)
        fds = []
        for _, _, data in anc:
            fds += [struct.unpack_from("i", data, i)[0] for i in range(0, len(data) // 4 * 4, 4)]
%s

_sbx_main()
'''
# one that cannot isolate any child, at the filter's step
BROKEN_CHILD = STAND_IN % """\
        for fd in fds:
            os.close(fd)
        ctl.send(struct.pack("<iII", 1, 0, 7))  # EPERM at the filter"""


def broken_manifest(name, what, interp, flag, ext, holds=True):
    """A data-only language whose zygote (driver NAME-zygote.EXT) is
    broken as `what` says (and says it holds a child, as ours do)."""
    return """\
# %s
name: %s
kind: language
version: 1.0.0
abi: "1.0"
description: Test language for test_zygote.py
language:
  source_file: main.%s
  run: [%s, "{source}"]
  zygote:
    run: [%s, %s, "{driver}"]
    driver: %s-zygote.%s
    holds: %s
""" % (what, name, ext, interp, interp, flag, name, ext, "true" if holds else "false")


def refused_run(s, code, lang):
    """Runs of a language whose zygote cannot isolate a child, until the
    server gives up its zygote boxes (a box prepares the next run's child
    before the run comes, so no run meets the failure): each runs whole,
    never forked. The server's stderr, which says why."""
    deadline = time.monotonic() + 60
    while True:
        sc = s.run(code, lang)
        assert sc["status"] == "ok" and sc["stdout"] == "ran\n", sc
        assert sc["sandbox"] in ("cold", "ready"), sc
        log = bytes(s.s.stderr).decode(errors="replace")
        if "no zygote box on" in log:
            return log
        assert time.monotonic() < deadline, "the broken zygote was never given up: " + log
        time.sleep(0.1)


def refused_on(tmp_path, files, code, lang):
    """refused_run on a server whose plugin path holds files (a data-only
    language's manifest and its zygote's driver, by name); the server's
    stderr."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    s = ZygoteServer(extra={"LLM_SANDBOX_PLUGIN_PATH": str(tmp_path)})
    try:
        return refused_run(s, code, lang)
    finally:
        s.finish()


BROKEN = broken_manifest("brokenzyg", "a data-only Python whose zygote refuses every run",
                         "python3", "-c", "py")


def test_a_zygote_that_cannot_isolate_a_run_is_not_used(tmp_path):
    """Fail closed: a child that could not get its filter never runs a
    program; the server gives up the kind's zygote boxes and says why."""
    log = refused_on(tmp_path, {"brokenzyg.yaml": BROKEN, "brokenzyg-zygote.py": BROKEN_CHILD},
                     "print('ran')", "brokenzyg")
    assert "could not be isolated (seccomp filter)" in log, log


# a stand-in zygote that says it holds (language.zygote.holds) but does
# not: its child goes on at once (here: waits to be killed) and its answer
# lacks the held bit
UNHELD_CHILD = STAND_IN % """\
        pid = os.fork()
        if pid == 0:
            os.read(fds[0], 1)
            os._exit(0)
        for fd in fds:
            os.close(fd)
        ctl.send(struct.pack("<iII", 0, pid, 0))"""


def test_a_zygote_that_does_not_hold_its_run_is_not_used(tmp_path):
    """Fail closed where cgroups hold the limits: a child that was to wait
    for its group and says it does not (the agent checks the zygote's
    answer) is killed, and the zygote with it; the server gives up the
    kind's zygote boxes and says why."""
    if not cgroups_enforced():
        pytest.skip("no cgroup enforces the limits here: no run is held")
    manifest = broken_manifest("unheldzyg", "a data-only Python whose zygote does not hold its runs",
                               "python3", "-c", "py")
    log = refused_on(tmp_path, {"unheldzyg.yaml": manifest, "unheldzyg-zygote.py": UNHELD_CHILD},
                     "print('ran')", "unheldzyg")
    assert "did not hold the run" in log, log


# the real Ruby zygote (langs/ruby/zygote.rb), with its seccomp prctl made
# to fail as a kernel refusing the filter would: EPERM at the filter's step
BROKEN_RB_PRELUDE = r'''
require 'fiddle'
module SbxRefuseSeccomp
  def call(*a)
    return super unless a.first == 22 # PR_SET_SECCOMP
    Fiddle.last_error = 1
    -1
  end
end
Fiddle::Function.prepend(SbxRefuseSeccomp)
'''

BROKEN_RB = broken_manifest("brokenrbzyg", "Ruby whose zygote cannot apply the filter to a run",
                            "ruby", "-e", "rb")


def test_a_ruby_zygote_that_cannot_isolate_a_run_is_not_used(tmp_path):
    """Fail closed, the Ruby zygote's own code: a child whose filter could
    not be applied never runs a program (its output would show), and is
    reported to the agent at that step (at PREP, or held at GO); the
    server gives up the kind's zygote boxes and says why."""
    if not shutil.which("ruby"):
        pytest.skip("ruby is not installed here")
    with open(os.path.join(HERE, "..", "..", "langs", "ruby", "zygote.rb")) as f:
        zygote = f.read()
    log = refused_on(tmp_path, {"brokenrbzyg.yaml": BROKEN_RB,
                                "brokenrbzyg-zygote.rb": BROKEN_RB_PRELUDE + zygote},
                     "puts 'ran'", "brokenrbzyg")
    assert "could not be isolated (seccomp filter): Operation not permitted" in log, log
