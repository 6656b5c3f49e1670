#!/usr/bin/env bash
# Runs one command under CUDA MPS and never leaves the daemon running.
#
#   jobs/with_mps.sh COMMAND [ARGS...]   start MPS, check it answers, run COMMAND, stop MPS;
#                                        exits with COMMAND's status
#   jobs/with_mps.sh --status            one line: on / off / unclear (what gdrbench records)
#
# Several ranks on one GPU without MPS time-slice it: every device operation may
# wait for a context switch (~150 us on an H200; 8 B device latency 154 us without
# MPS, 15-18 us with). With one rank per GPU MPS changes nothing worth the trouble.
#
# The daemon gets its own pipe and log folders (CUDA_MPS_PIPE_DIRECTORY and
# CUDA_MPS_LOG_DIRECTORY, exported to COMMAND; set them to choose others), so it
# serves COMMAND's processes only. It is stopped with `quit` when COMMAND ends,
# fails or is interrupted; if it is still there after MPS_STOP_S (10) seconds its
# own pid is killed and the script exits 3. Refused (exit 2, one line): no
# nvidia-cuda-mps-control, no GPU (nvidia-smi), or an MPS daemon already running
# (someone else's: starting a second or stopping theirs would both be wrong).
# The start must answer within MPS_START_S (20) seconds, else exit 3.
# A run's file says what gdrbench saw: the fact `cuda.mps` (src/core/mps.h).
set -u
me=with_mps.sh
stop_s=${MPS_STOP_S:-10}
start_s=${MPS_START_S:-20}

# Pids of running nvidia-cuda-mps-control processes (argv[0], not comm: comm is
# cut to 15 characters, which the MPS server shares).
daemon_pids() {
  local d a
  for d in /proc/[0-9]*; do  # builtins only: no fork per process
    a=
    { IFS= read -r -d '' a <"$d/cmdline"; } 2>/dev/null
    [ "${a##*/}" = nvidia-cuda-mps-control ] && echo "${d#/proc/}"
  done
  return 0
}

status_line() {
  local pipes=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps} pids
  pids=$(daemon_pids | tr '\n' ' ')
  if [ -n "$pids" ] && [ -S "$pipes/control" ]; then echo "on: nvidia-cuda-mps-control runs (pid ${pids% }), control socket $pipes/control"
  elif [ -n "$pids" ]; then echo "unclear: nvidia-cuda-mps-control runs (pid ${pids% }) but $pipes/control is no socket"
  elif [ -S "$pipes/control" ]; then echo "unclear: $pipes/control exists but no nvidia-cuda-mps-control is visible"
  else echo "off: no nvidia-cuda-mps-control process, no control socket in $pipes"; fi
}

refuse() { echo "$me: $*" >&2; exit 2; }

[ $# -ge 1 ] || refuse "usage: jobs/with_mps.sh COMMAND [ARGS...] | --status"
if [ "$1" = --status ]; then status_line; exit 0; fi
command -v nvidia-cuda-mps-control >/dev/null || refuse "no nvidia-cuda-mps-control on PATH (it comes with the NVIDIA driver): cannot run under MPS here"
nvidia-smi -L >/dev/null 2>&1 || refuse "no GPU here (nvidia-smi -L failed): MPS needs one"
others=$(daemon_pids | tr '\n' ' ')
[ -z "$others" ] || refuse "an MPS control daemon already runs (pid ${others% }): not starting a second one; stop it first (echo quit | nvidia-cuda-mps-control, with its CUDA_MPS_PIPE_DIRECTORY)"

base=$(mktemp -d /tmp/gdr-mps.XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-$base/pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-$base/log}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
started= ours=

stop_mps() {
  local rc=$? t
  trap - EXIT INT TERM
  if [ -n "$started" ]; then
    [ -n "$ours" ] || ours=$(daemon_pids | head -1)
    echo quit | timeout 5 nvidia-cuda-mps-control >/dev/null 2>&1
    for ((t = 0; t < stop_s * 10; t++)); do
      [ -n "$ours" ] && kill -0 "$ours" 2>/dev/null || break
      sleep 0.1
    done
    if [ -n "$ours" ] && kill -0 "$ours" 2>/dev/null; then
      echo "$me: MPS daemon $ours did not quit within ${stop_s} s: killing it" >&2
      kill -KILL "$ours" 2>/dev/null
      rc=3
    fi
    echo "$me: MPS stopped (logs in $CUDA_MPS_LOG_DIRECTORY)" >&2
  fi
  exit "$rc"
}
trap stop_mps EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started=1  # from here on the EXIT trap stops it, whatever happens
nvidia-cuda-mps-control -d || { echo "$me: nvidia-cuda-mps-control -d failed" >&2; exit 3; }
# It answers once it is up: ask a harmless question.
for ((t = 0; t < start_s * 10; t++)); do
  if echo get_default_active_thread_percentage | timeout 2 nvidia-cuda-mps-control >/dev/null 2>&1; then
    break
  fi
  sleep 0.1
done
if [ "$t" -ge $((start_s * 10)) ]; then echo "$me: MPS did not answer within ${start_s} s" >&2; exit 3; fi
ours=$(daemon_pids | head -1)  # it answered, so it runs: the only one (others were refused)
echo "$me: MPS started (pid ${ours:-?}, pipes $CUDA_MPS_PIPE_DIRECTORY); running: $*" >&2
# In the background so that a signal to this script runs its trap at once (bash
# defers traps until a foreground command ends); the trap ends the command first
# (SIGTERM: a background command ignores SIGINT), then MPS.
"$@" <&0 &
child=$!
trap 'kill -TERM $child 2>/dev/null; wait $child; exit 130' INT
trap 'kill -TERM $child 2>/dev/null; wait $child; exit 143' TERM
wait $child
