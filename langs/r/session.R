# llm-sandbox session driver for R: a warm interpreter that runs one code
# cell per request in .GlobalEnv, which keeps its objects between cells.
# Run as: Rscript -e "<this file's contents>" (no script file, no siblings).
#
# Protocol: requests on stdin are "<code_len> <stdin_len>\n" + code bytes +
# stdin bytes (counts are bytes). After each cell the driver writes the end
# marker ESC "]sbx;" NONCE ";" NNN BEL to stdout, then to stderr; NNN is the
# cell's status (000 ok, 001 error, or the status given to quit()/q()).
# EOF between requests: exit 0. Bad nonce or header: message on stderr, exit 2.
#
# Limitations: the requests arrive on fd 0, which R cannot move away, so a
# cell's stdin data is dropped, and neither user code (file("stdin")) nor
# its child processes (system("cat")) may read standard input. quit()/q()
# end the cell, not R (base::quit() still ends R). A sink() left open by a
# cell is closed at the end of the cell so that the marker reaches the host.
# The driver lives in this local() environment: ls() in a cell lists none
# of it.
local({
  die <- function(msg) {
    cat("session.R: ", msg, "\n", sep = "", file = stderr())
    base::quit(save = "no", status = 2)
  }
  nonce <- Sys.getenv("SBX_SESSION_NONCE")
  Sys.unsetenv("SBX_SESSION_NONCE")  # not inherited by child processes
  if (!grepl("^[0-9a-f]{32}$", nonce)) die("SBX_SESSION_NONCE is missing or malformed")
  con <- file("stdin", open = "rb")  # binary: the counts are bytes

  read_exact <- function(n) {
    out <- raw(0)
    while (length(out) < n) {
      b <- readBin(con, "raw", n - length(out))
      if (!length(b)) die("end of input inside a request")
      out <- c(out, b)
    }
    out
  }
  read_header <- function() {  # NULL on EOF before a request
    line <- raw(0)
    repeat {
      b <- readBin(con, "raw", 1L)
      if (!length(b) && !length(line)) return(NULL)
      if (!length(b) || b == as.raw(0L) || length(line) > 64L) die("malformed request header")
      if (b == as.raw(10L)) break
      line <- c(line, b)
    }
    line <- rawToChar(line)
    if (!grepl("^[0-9]+ [0-9]+$", line)) die(paste("malformed request header", line))
    as.numeric(strsplit(line, " ")[[1]])
  }

  # quit()/q() found on the search path ahead of base's: they unwind to the
  # cell's "sbx_quit" restart with the status.
  masks <- new.env()
  masks$quit <- masks$q <- function(save = "default", status = 0, runLast = TRUE)
    invokeRestart("sbx_quit", status)
  attach(masks, name = "sbx:session", warn.conflicts = FALSE)

  # Messages as Rscript prints them: "Error in f() : msg" or "Error: msg".
  # A call that is the driver's own eval() is not shown (a top-level stop()).
  describe <- function(cond, with_call, without_call) {
    cl <- conditionCall(cond)
    msg <- conditionMessage(cond)
    if (is.null(cl) || identical(cl, quote(eval(expr, .GlobalEnv))))
      return(paste0(without_call, msg))
    dcall <- paste0(with_call, deparse(cl, nlines = 1L))
    long <- nchar(dcall) + nchar(sub("\n.*", "", msg)) > 72L
    paste0(dcall, " : ", if (long) "\n  ", msg)
  }
  warns <- list()  # collected per top-level expression, printed after it
  on_warning <- function(w) {
    if (getOption("warn", 0) >= 2) return()  # R turns it into an error
    if (getOption("warn", 0) >= 0) warns[[length(warns) + 1L]] <<- w
    invokeRestart("muffleWarning")
  }
  print_warnings <- function(prefix = "") {
    k <- length(warns)
    if (!k) return()
    text <- vapply(warns, describe, "", "In ", "")
    if (k > 1L) text <- paste0(seq_len(k), ": ", text)
    cat(prefix, if (k == 1L) "Warning message:\n" else "Warning messages:\n",
        paste0(text, "\n", collapse = ""), sep = "", file = stderr())
    warns <<- list()
  }

  run_cell <- function(code) {
    status <- 0L
    withRestarts(tryCatch({
      text <- rawToChar(code)
      Encoding(text) <- "UTF-8"
      exprs <- tryCatch(parse(text = text, keep.source = FALSE),
                        error = function(e) stop(simpleError(conditionMessage(e))))
      for (expr in exprs) {
        withCallingHandlers({
          r <- withVisible(eval(expr, .GlobalEnv))
          if (r$visible) if (isS4(r$value)) methods::show(r$value) else print(r$value)
        }, warning = on_warning)
        print_warnings()
      }
    }, error = function(e) {
      cat(describe(e, "Error in ", "Error: "), "\n", sep = "", file = stderr())
      print_warnings("In addition: ")
      status <<- 1L
    }, interrupt = function(i) status <<- 130L),
    sbx_quit = function(s) {
      print_warnings()
      s <- suppressWarnings(as.integer(s))
      status <<- if (length(s) != 1L || is.na(s)) 0L else s %% 256L
    })
    status
  }

  repeat {
    header <- read_header()
    if (is.null(header)) base::quit(save = "no", status = 0)
    code <- read_exact(header[1])
    read_exact(header[2])  # the cell's stdin data: dropped (see above)
    status <- run_cell(code)
    # a plot device left open (R_DEFAULT_DEVICE=png: Rplot001.png, ...) is
    # closed, so that the cell's plots are complete files when it ends
    try(grDevices::graphics.off(), silent = TRUE)
    while (sink.number() > 0L) sink()
    if (sink.number(type = "message") != 2L) sink(type = "message")
    marker <- sprintf("\033]sbx;%s;%03d\a", nonce, status)
    flush(stdout()); cat(marker, file = stdout()); flush(stdout())
    flush(stderr()); cat(marker, file = stderr()); flush(stderr())
  }
})
