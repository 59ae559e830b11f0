# llm-sandbox pre-started R for one-shot runs (core/src/pool.c), started as
#   sh -c 'exec R --no-echo --no-restore --file=/dev/fd/3 3<&0 </dev/null'
# which is what `Rscript main.R` runs, except that R reads its program from
# fd 3, the pool's pipe, and its stdin is /dev/null (a run with stdin data
# does not use this interpreter). R loads its default packages, then reads
# this text as the first top-level input: the ready signal, on stdout and
# stderr. Then it waits for more input: the run sends the program's text
# and end of input, and R's own read-eval-print loop runs it exactly as it
# runs main.R (auto-printing, warnings, "Execution halted", exit status).
# End of input with no program: R exits 0. Nothing here leaves a name
# behind; .Last.value is NULL, as in a fresh R. One difference remains:
# commandArgs() says --file=/dev/fd/3, not --file=main.R.
cat("\033]sbx;ready;000\a"); cat("\033]sbx;ready;000\a", file = stderr())
