#!/usr/bin/env bash
# fifo.sh program [args...]: runs the program (a symmem-run command line) with every
# thread of every PE under SCHED_FIFO, where a thread keeps its CPU until it blocks or
# yields: a wait that spins on work another thread of its CPU must do (this PE's progress
# thread, UCX's async thread, a PE of another emulated node) never ends, however fast the
# machine. Passes when the program exits 0. Exit 77 (skipped) where SCHED_FIFO is not
# allowed (no CAP_SYS_NICE or no real-time budget).
set -u
chrt -f 1 true 2>/dev/null || { echo "fifo: SCHED_FIFO not allowed here; skipped"; exit 77; }
exec chrt -f 1 "$@"
