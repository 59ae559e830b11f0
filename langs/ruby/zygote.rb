# llm-sandbox zygote for Ruby one-shot runs: one pre-loaded interpreter per
# box that forks one child per run (core/agent/proto.h, EXEC with
# AGENT_EXEC_ZYGOTE, PREP and FORK; docs/zygote-security.md says what the child
# inherits and why that is acceptable). The same protocol and the same
# steps as the Python zygote (langs/python/zygote.py), in Ruby: the system
# calls Ruby has no method for go through Fiddle (libffi, stdlib).
# Run as: ruby -e "<this file's contents>" (no __FILE__ of its own), with
# fd 3 the agent's SOCK_SEQPACKET control socket and CAP_SYS_ADMIN,
# CAP_NET_ADMIN, CAP_SYS_RESOURCE and CAP_SETPCAP in the box's user
# namespace, which no child keeps.
#
# Protocol on fd 3: the agent sends the seccomp filter (classic BPF, 8
# bytes an instruction); the zygote answers "ready". Then each message
# (PREP: u32 flags) comes with the next run's socket and status pipe, and a
# GO pipe when the child is to be held; the zygote forks that child, which
# isolates itself and answers u32 errno, u32 pid (the child, as the box
# sees it), u32 stage (where isolating it failed; 0 when it did not, held
# bit 31). The child (the init of the run's pid namespace, and the
# program's process it forked, pid 2) then waits on its socket for the run
# (a FORK payload, u32 flags, u32 argc, u32 envc, strings, cwd, with its
# stdin, stdout and stderr), answers as the zygote does, and only then
# runs the program (zygote.py says more); any failure ends it before a line
# of the program ran.
#
# The child runs the program as `ruby main.rb` does: compiled from its file
# (so __FILE__, $0, __dir__, require_relative, DATA and error_highlight's
# snippets are a cold run's), evaluated at the top level, and left to end
# through Ruby's own exit (at_exit handlers, exit and abort codes, an
# uncaught exception's report without this driver's frames, streams
# flushed). Everything of the driver lives in a lambda, so the program's
# top level (TOPLEVEL_BINDING) sees none of its locals; what it does see is
# the constants of the libraries loaded below (JSON, Set, ... without a
# require: docs/zygote-security.md).

require 'fiddle'
require 'socket'
# what most programs require anyway: loaded once here, shared by every child
require 'json'
require 'set'
require 'stringio'
require 'time'
require 'pp'

lambda do
  serve = lambda do
    libc = Fiddle::Handle::DEFAULT
    i, l, v = Fiddle::TYPE_INT, Fiddle::TYPE_LONG, Fiddle::TYPE_VOIDP
    fn = ->(name, args) { Fiddle::Function.new(libc[name], args, i) }
    unshare = fn.('unshare', [i])
    mount = fn.('mount', [v, v, v, l, v])
    umount2 = fn.('umount2', [v, i])
    prctl = fn.('prctl', [i, l, l, l, l])
    prctl_p = fn.('prctl', [i, l, v, l, l])
    capset = fn.('capset', [v, v])
    statvfs = fn.('statvfs', [v, v])
    ioctl = fn.('ioctl', [i, l, v])
    dup2 = fn.('dup2', [i, i])
    close = fn.('close', [i])
    cstr = ->(s) { s && "#{s}\0" }

    # the zygote's own objects out of the way of the children's pages
    GC.start
    GC.compact if GC.respond_to?(:compact)
    base = Dir.pwd # the workspace's path (FRESH mounts over it)
    ctl = Socket.for_fd(3)
    filt = ctl.recv(1 << 16)
    exit!(2) if filt.empty? || filt.bytesize % 8 != 0 # never a child without the filter
    # no user namespaces below this one, as bubblewrap's --disable-userns
    # would do (which would lock the box's mounts: the children could not
    # mount their own /proc); needs CAP_SYS_RESOURCE, which no child keeps
    File.write('/proc/sys/user/max_user_namespaces', '0')
    exit!(2) if File.read('/proc/sys/user/max_user_namespaces').strip != '0'
    ctl.send('ready', 0)

    stage = 0
    check = lambda do |r, what|
      raise SystemCallError.new(what, Fiddle.last_error.to_i.nonzero? || 1) if r != 0
    end

    # the box's support files (staged by the core before the zygote
    # started), read through the descriptor of the /tmp a fresh tmpfs now
    # covers: regular files and directories only, no symlinks
    copy_tree = lambda do |src, dst|
      from = "/proc/self/fd/#{src.fileno}"
      Dir.children(from).each do |name|
        st = File.lstat("#{from}/#{name}")
        path = File.join(dst, name)
        if st.directory?
          Dir.mkdir(path, st.mode & 0o7777)
          File.open("#{from}/#{name}", File::RDONLY | File::NOFOLLOW) do |d|
            raise SystemCallError.new(name, 20) unless d.stat.directory? # ENOTDIR
            copy_tree.(d, path)
          end
        elsif st.file?
          File.open("#{from}/#{name}", File::RDONLY | File::NOFOLLOW) do |f|
            File.open(path, File::WRONLY | File::CREAT | File::EXCL, st.mode & 0o7777) do |o|
              IO.copy_stream(f, o)
            end
          end
        end
      end
    end

    fresh_tmpfs = lambda do |path|
      # a new tmpfs over the box's, of the same size, inodes and mode
      sv = "\0" * 256 # struct statvfs: unsigned longs first (bsize, frsize, blocks, ..., files)
      check.(statvfs.(cstr.(path), sv), 'statvfs')
      f = sv.unpack('L!6')
      opts = format('size=%d,nr_inodes=%d,mode=%o', f[2] * f[1], f[5],
                    File.stat(path).mode & 0o7777)
      keep = File.open(path, File::RDONLY) # a directory (Ruby has no O_DIRECTORY)
      # MS_NOSUID | MS_NODEV
      check.(mount.(cstr.('tmpfs'), cstr.(path), cstr.('tmpfs'), 0x2 | 0x4, cstr.(opts)), 'mount')
      keep
    end

    isolate = lambda do
      # stage 3: mounts. The workspace stays the box's, which the agent
      # made fresh for this run (FRESH) and reads the artifacts from
      check.(mount.(nil, cstr.('/'), nil, 0x4000 | 0x40000, nil), 'mount') # MS_REC | MS_PRIVATE
      tmp = fresh_tmpfs.('/tmp')
      fresh_tmpfs.('/dev/shm').close
      # the box's /proc shows the box's processes (the zygote among them):
      # a proc of the run's own pid namespace replaces it; the kernel allows
      # that only once bubblewrap's read-only binds inside /proc are gone
      subs = File.readlines('/proc/self/mountinfo').map { |ln| ln.split[4] }
                 .select { |m| m.start_with?('/proc/') }
      subs.sort_by { |m| -m.length }.each do |m|
        check.(umount2.(cstr.(m), 2), "umount #{m}") # MNT_DETACH
      end
      check.(mount.(cstr.('proc'), cstr.('/proc'), cstr.('proc'), 0x2 | 0x4 | 0x8, nil),
             'mount /proc')
      stage = 4
      copy_tree.(tmp, '/tmp')
      tmp.close
      stage = 5 # loopback up, as in the box: SIOCSIFFLAGS, IFF_UP | IFF_RUNNING
      Socket.open(:INET, :DGRAM) do |s|
        check.(ioctl.(s.fileno, 0x8914, ['lo', 0x1 | 0x40].pack('a16s!x22')), 'SIOCSIFFLAGS')
      end
    end

    lock_down = lambda do
      stage = 6 # capabilities: none in any set, none to regain
      prctl.(47, 4, 0, 0, 0) # PR_CAP_AMBIENT_CLEAR_ALL
      64.times { |c| prctl.(24, c, 0, 0, 0) } # PR_CAPBSET_DROP (needs CAP_SETPCAP)
      check.(capset.([0x20080522, 0].pack('L2'), "\0" * 24), 'capset')
      st = File.read('/proc/self/status').lines.map { |ln| ln.split(':', 2) }
               .select { |kv| kv.size == 2 }.to_h # this run's /proc by now
      if %w[CapInh CapPrm CapEff CapBnd CapAmb].any? { |k| st.fetch(k).strip.to_i(16) != 0 }
        raise SystemCallError.new('capabilities left', 1)
      end
      stage = 7 # no_new_privs, then the project's strict filter
      prog = [filt.bytesize / 8, Fiddle::Pointer[filt].to_i].pack("S!x#{Fiddle::SIZEOF_VOIDP - 2}J")
      check.(prctl.(38, 1, 0, 0, 0), 'no_new_privs')
      check.(prctl_p.(22, 2, prog, 0, 0), 'seccomp')
    end

    # one 12-byte record (u32 errno, u32 pid, u32 stage), or less at EOF
    read_record = ->(io) { io.read(12) || ''.b }

    msg = fds = r1 = w1 = r2 = w2 = nil
    loop do
      msg, _addr, mflags, *anc = ctl.recvmsg(64, 0, 4096, scm_rights: true)
      exit!(0) if msg.nil? || msg.empty? # the agent is gone
      fds = anc.select { |a| a.cmsg_is?(:SOCKET, :RIGHTS) }.flat_map(&:unix_rights)
      # two pipes, one a writer: the short-lived child reports the run's pid
      # (or where it failed) on its own, the run reports it is isolated on
      # the other (zygote.py says why one shared pipe is not enough)
      r1, w1 = IO.pipe
      r2, w2 = IO.pipe
      # none dropped for want of room (zygote.py says why)
      truncated = (mflags & Socket::MSG_CTRUNC) != 0
      pid = [2, 3].include?(fds.size) && !truncated ? Process.fork : -1
      break if pid.nil?

      w1.close
      w2.close
      fds.each(&:close)
      rep = pid > 0 ? read_record.(r1) : ''.b
      ran = rep.bytesize == 12 && rep[0, 4] == "\0\0\0\0" ? read_record.(r2) : ''.b
      r1.close
      r2.close
      Process.wait(pid) if pid > 0
      out = if pid < 0 then [71, 0, 1].pack('L<3') # EPROTO
            elsif rep.bytesize < 12 then [10, 0, 2].pack('L<3') # ECHILD
            elsif rep.unpack1('l<') != 0 then rep
            elsif ran.bytesize < 12 then [10, 0, 3].pack('L<3')
            else
              e, _, st = ran.unpack('l<L<L<')
              [e, rep.unpack('L<2')[1], st].pack('l<L<L<')
            end
      ctl.send(out, 0)
    end

    # the next run's child: its own namespaces; then a grandchild, the init
    # of the new pid namespace (the agent's once this one exits), which
    # isolates itself (held: but for its cgroup namespace, capabilities and
    # filter, until GO), waits for the run on its socket, and forks the
    # program: init below
    r1.close
    r2.close
    ctl.autoclose = false # fd 3 is closed below, never again by this object
    w = w1 # where a failure is reported: the parent's pipe, then the run's
    argv = env = cwd = nil
    held = fds.size == 3
    sock, status, go = fds
    begin
      stage = 1
      # mount, pid, ipc, network; and cgroup, but held only after GO, rooted
      # at the run's own group (zygote.py says why)
      check.(unshare.(0x20000 | 0x20000000 | 0x08000000 | 0x40000000 | (held ? 0 : 0x02000000)),
             'unshare')
      stage = 2
      pid = Process.fork
      if pid
        w1.syswrite([0, pid, 0].pack('l<L<L<'))
        exit!(0)
      end
      w1.close
      w = w2
      stage = 3
      isolate.()
      lock_down.() unless held
      # every other descriptor the zygote had, but this interpreter's own
      # (Ruby made them anew in this process after the fork: it refuses to
      # wrap them) and the ones it still needs
      Dir.children('/proc/self/fd').map(&:to_i).each do |fd|
        next if fd < 3 || [w, sock, status, go].any? { |io| io&.fileno == fd }

        begin
          IO.for_fd(fd, autoclose: false)
        rescue ArgumentError
          next # "RubyVM reserves it"
        rescue SystemCallError
          next # the listing's own, closed by now
        end
        close.(fd)
      end
      # held (with a GO pipe): until GO, before the cgroup namespace, the
      # capabilities and the filter
      w.syswrite([0, 0, held ? 0x80000000 : 0].pack('l<L<L<'))
      w.close
    rescue Exception => e # rubocop:disable Lint/RescueException
      err = (e.errno if e.is_a?(SystemCallError)).to_i.nonzero? || 1
      begin
        w.syswrite([err, 0, stage].pack('l<L<L<'))
      ensure
        exit!(126)
      end
    end
    chan = Socket.for_fd(sock.fileno)
    sock.autoclose = false # chan closes it
    begin
      if held # the host moves this child into the run's cgroup, then GO
        ok = begin
          go.sysread(1) == 'g'
        rescue Exception # rubocop:disable Lint/RescueException
          false
        end
        exit!(126) unless ok # no GO (the box ends): nothing of a program ran
        go.close
        stage = 9 # the run's group, now this one's, as the cgroup namespace's root
        check.(unshare.(0x02000000), 'unshare')
        lock_down.()
      end
      # the program's process, forked now rather than when the run comes
      # (pid 2): it takes the run; this one, the init, writes its wait
      # status to the status pipe (init below)
      stage = 2
      pid = Process.fork
      if pid
        chan.close
        return [nil, [status, pid]]
      end
      status.close
      chan.send([0, 0, 0].pack('l<L<L<'), 0) if held # GO's answer: waiting for the run
      # ready: the run comes as a FORK payload with its stdin, stdout and
      # stderr (zygote.py)
      stage = 8
      msg, _addr, mflags, *anc = chan.recvmsg(1 << 20, 0, 4096, scm_rights: true)
      exit!(0) if msg.nil? || msg.empty? # the agent let this child go unused
      fds = anc.select { |a| a.cmsg_is?(:SOCKET, :RIGHTS) }.flat_map(&:unix_rights)
      if fds.size != 3 || (mflags & (Socket::MSG_CTRUNC | Socket::MSG_TRUNC)) != 0 ||
         msg.bytesize < 12
        raise SystemCallError.new("the run's descriptors", 71) # EPROTO
      end
      _flags, argc, envc = msg.unpack('L<3')
      strs = msg.byteslice(12..).split("\0", -1)[0, argc + envc + 1]
      argv, env, cwd = strs[0, argc], strs[argc, envc], strs[argc + envc]
      fds.each_with_index { |io, n| check.(dup2.(io.fileno, n) == n ? 0 : -1, 'dup2') }
      fds.each(&:close)
      chan.send([0, 0, 0].pack('l<L<L<'), 0)
      chan.close
    rescue Exception => e # rubocop:disable Lint/RescueException
      # after the zygote's answer: GO's or FORK's answer says why, and
      # nothing of the program ran
      err = (e.errno if e.is_a?(SystemCallError)).to_i.nonzero? || 1
      begin
        chan.send([err, 0, stage].pack('l<L<L<'), 0)
      ensure
        exit!(126)
      end
    end
    Dir.chdir(cwd.nil? || cwd.empty? ? base : File.join(base, cwd))
    ENV.clear
    env.each do |kv|
      k, _, val = kv.partition('=')
      ENV[k] = val
    end
    [argv, nil]
  end

  # The run's child is the init of its pid namespace, where the kernel
  # ignores a signal the init sends itself with the default action: the
  # program runs in a child of it (pid 2, as in a cold box), and the init
  # reaps what the namespace orphans and writes the program's wait status
  # to the agent's pipe (zygote.py's _sbx_init says more).
  init = lambda do |status, pid|
    begin
      %w[INT TERM HUP QUIT USR1 USR2 ALRM PIPE].each { |s| Signal.trap(s, 'SYSTEM_DEFAULT') }
      [$stdin, $stdout, $stderr].each(&:close)
      loop do
        p, st = Process.wait2(-1)
        next unless p == pid

        status.syswrite([st.to_i & 0xFFFFFFFF].pack('L<'))
        break
      end
    ensure
      exit!(0)
    end
  end

  argv, init_args = serve.()
  init.(*init_args) unless argv # the init; the program's process goes on below
  # argv is the run command (ruby FILE): run FILE as that would
  name = argv[1].force_encoding(Encoding.default_external)
  ARGV.replace(argv.drop(2).map { |a| a.force_encoding(Encoding.default_external) })
  $0 = name
  srand # the run's own random state: the zygote's was made before any run
  iseq = begin
    RubyVM::InstructionSequence.compile_file(name)
  rescue SyntaxError => e
    msg = e.message
    STDERR.write(msg.end_with?("\n") ? msg : "#{msg}\n") # as ruby reports it
    exit 1
  end
  src = File.binread(name)
  if (m = /^__END__\r?(?:\n|\z)/.match(src))
    data = File.open(name)
    data.seek(m.end(0))
    Object.const_set(:DATA, data)
  end
  src = nil # rubocop:disable Lint/UselessAssignment
  begin
    iseq.eval
  rescue SystemExit
    raise
  rescue Exception => e # rubocop:disable Lint/RescueException
    # as ruby reports it: without this driver's frames under the program's,
    # in the exception and in its causes
    seen = {}
    x = e
    while x && !seen[x.object_id]
      seen[x.object_id] = true
      bt = x.backtrace&.dup
      if bt
        bt.pop while bt.any? && bt.last.match?(/\A(?:-e|<internal:[^>]*>):/)
        x.set_backtrace(bt)
      end
      x = x.cause
    end
    raise e
  end
end.call
