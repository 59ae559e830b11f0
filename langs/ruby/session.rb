# llm-sandbox session driver for Ruby: a warm interpreter that runs one code
# cell per request and keeps top-level state (locals too) between cells.
# Run as: ruby -e "<this file's contents>" (no __FILE__, no siblings).
#
# Protocol: requests on stdin are "<code_len> <stdin_len>\n" + code bytes +
# stdin bytes (counts are bytes). After each cell the driver writes the end
# marker ESC "]sbx;" NONCE ";" NNN BEL to stdout, then to stderr; NNN is the
# cell's status (000 ok, 001 uncaught error, or the status it exited with).
# EOF between requests: exit 0. Bad nonce or header: message on stderr, exit 2.
#
# Cells are eval'd with TOPLEVEL_BINDING (self is main, backtraces say
# <main>): a local that a cell assigns is stored in that binding and the next
# cell sees it. The driver runs inside a lambda, so the top-level scope has no
# locals of its own and the driver's locals are not visible to cells.
#
# As in irb, a cell shows the value of its last statement (`x`, `arr.sort`)
# with #inspect on stdout, unless it is nil (puts, print) or the statement
# is an assignment, a definition (def, class, module), a require or a p/pp
# (which printed it already), or the cell ends in ";".
require 'ripper'
require 'stringio'

lambda do
  die = lambda do |msg|
    STDERR.write("session.rb: #{msg}\n")
    exit!(2)
  end
  nonce = ENV.delete('SBX_SESSION_NONCE').to_s  # also gone for child processes
  die.call('SBX_SESSION_NONCE is missing or malformed') unless nonce.match?(/\A[0-9a-f]{32}\z/)

  # Private copies of the control channel and of fds 1 and 2 (Ruby makes dups
  # close-on-exec); fd 0 becomes /dev/null so that neither user code nor its
  # children can read the requests. Markers go to the private copies so that
  # a cell that reassigns $stdout or reopens STDOUT still gets its marker out.
  ctl = STDIN.dup.binmode
  STDIN.reopen(File::NULL)
  out = STDOUT.dup.binmode
  err = STDERR.dup.binmode
  $0 = 'main.rb'

  read_exact = lambda do |n|
    data = n.zero? ? ''.b : ctl.read(n)
    die.call('end of input inside a request') unless data && data.bytesize == n
    data
  end

  quiet = %i[assign opassign massign def defs class module void_stmt].freeze
  show = lambda do |code, value|
    return if value.nil?
    tokens = Ripper.lex(code).reject { |t| %i[on_sp on_nl on_ignored_nl on_comment].include?(t[1]) }
    return if tokens.empty? || tokens.last[1] == :on_semicolon
    sexp = Ripper.sexp(code)
    last = sexp && sexp[1].is_a?(Array) ? sexp[1].last : nil
    return if !last.is_a?(Array) || quiet.include?(last[0])
    return if %i[command fcall vcall].include?(last[0]) && last[1].is_a?(Array) &&
              %w[require require_relative load p pp].include?(last[1][1])
    $stdout.write("#{value.inspect}\n")
  end

  n = 0
  loop do
    header = ctl.gets("\n", 64)
    exit(0) if header.nil?
    m = /\A(\d+) (\d+)\n\z/.match(header)
    die.call("malformed request header #{header.inspect}") unless m
    code = read_exact.call(m[1].to_i).force_encoding(Encoding::UTF_8)
    data = read_exact.call(m[2].to_i).force_encoding(Encoding.default_external)
    n += 1
    $stdin = StringIO.new(data)  # Kernel#gets and ARGF read it too
    status = begin
      show.call(code, eval(code, TOPLEVEL_BINDING, "cell #{n}", 1))
      0
    rescue SystemExit => e  # exit n, abort (which has printed its message)
      e.status & 255
    rescue Exception => e  # like ruby's own report, without driver frames
      bt = e.backtrace
      e.set_backtrace(bt.reject { |l| l.start_with?('-e:') }) if bt
      msg = if e.is_a?(SyntaxError) then "#{e.message.chomp}\n"  # ruby's own style
            else e.full_message(highlight: false, order: :top) end
      $stderr.write(msg) rescue nil
      e.is_a?(Interrupt) ? 130 : 1
    end
    [$stdout, $stderr, STDOUT, STDERR].each { |io| io.flush rescue nil }
    marker = format("\e]sbx;%s;%03d\a", nonce, status)
    out.syswrite(marker)
    err.syswrite(marker)
  end
end.call
