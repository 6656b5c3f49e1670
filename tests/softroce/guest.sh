#!/bin/bash
# A Soft-RoCE guest (or a pair, node1 and node2) kept up for a group of ctest
# cases, so that each case does not boot its own (15-25 s each under
# emulation). ctest starts it as a FIXTURES_SETUP case and stops it as the
# FIXTURES_CLEANUP case; the cases run in it through `run.sh --guest DIR`.
#
#   guest.sh start DIR [--nodes 1|2] [--lifetime S] [--watch-pid PID]
#   guest.sh exec DIR JOBDIR [--timeout S] [--env NAME=VALUE]... -- COMMAND [ARG]...
#   guest.sh stop DIR
#
# start: boots the guest(s) with DIR shared at /results and guest_serve.sh
#   serving DIR/.queue in node1, waits until they answer (at most 240 s),
#   and returns. The guests stay up until `stop`, until PID (default: the
#   caller, ctest) is gone, or for S seconds (default 3600).
# exec: runs COMMAND in node1 (the guest, with --nodes 1) with cwd JOBDIR (a
#   folder under DIR, /results/<its path under DIR> in the guest), streams
#   its output and exits with its status: 124 after S seconds (default 600;
#   the command is then killed in the guest), 125 when the guest is not up
#   or dies. --env sets a variable for COMMAND. JOBDIR/.vm keeps cmd, env,
#   out and rc, as vm.sh's control folder does.
# stop: tells the guests to power off, waits at most 30 s, then kills them.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 125; }
[[ $# -ge 2 ]] || usage
action=$1 dir=$2
shift 2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
q=$dir/.queue

pids() { cat "$q/pids" 2>/dev/null || true; }
# PID is still our vm.sh of DIR (not a process that reused its number).
up() { [[ $(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) == *"$here/vm.sh --share $dir "* ]]; }
all_up() {
  local p n=0
  for p in $(pids); do up "$p" || return 1; n=$((n + 1)); done
  [[ $n -gt 0 ]]
}
any_up() {
  local p
  for p in $(pids); do up "$p" && return 0; done
  return 1
}
consoles() {
  local f
  for f in "$q"/vm*.log "$dir"/.vm*/guest.log "$q/guest.log"; do
    [[ -f $f ]] && { echo "--- $f"; tail -n 15 "$f"; }
  done
  for f in "$dir"/.vm*/console.log; do
    [[ -f $f ]] && { echo "--- $f"; tail -n 25 "$f"; }
  done
  return 0
}
stop_guests() {
  [[ -d $q ]] || return 0
  : >"$q/stop"
  local p n
  for ((n = 0; n < 150; n++)); do any_up || return 0; sleep 0.2; done
  echo "guest.sh: the guests did not power off within 30 s; killing them" >&2
  for p in $(pids); do up "$p" && kill "$p" 2>/dev/null || true; done
  for ((n = 0; n < 50; n++)); do any_up || return 0; sleep 0.2; done
}

. "$here/free_port.sh"

start() {
  local nodes=1 lifetime=3600 watch=$PPID
  while [[ $# -gt 0 ]]; do
    case $1 in
      --nodes) nodes=$2; shift 2 ;;
      --lifetime) lifetime=$2; shift 2 ;;
      --watch-pid) watch=$2; shift 2 ;;
      *) echo "guest.sh start: unknown option $1" >&2; usage ;;
    esac
  done
  stop_guests  # one left from an earlier run in DIR
  rm -rf "$q" "$dir"/.vm "$dir"/.vm-node1 "$dir"/.vm-node2
  mkdir -p "$q"
  local vm=("$here/vm.sh" --share "$dir" --timeout "$lifetime" --watch-pid "$watch")
  local ready=() t0=$SECONDS p1
  if [[ $nodes == 1 ]]; then
    "${vm[@]}" -- sh "$here/guest_serve.sh" >"$q/vm.log" 2>&1 </dev/null &
    echo $! >>"$q/pids"
    ready=("$dir/.vm/ready")
  elif [[ $nodes == 2 ]]; then
    p1=$(free_port)
    "${vm[@]}" --node 2 --link "$((p1 + 1)):$p1" -- \
      sh -c 'while [ ! -e /results/.queue/stop ]; do sleep 0.3; done' >"$q/vm-node2.log" 2>&1 </dev/null &
    echo $! >>"$q/pids"
    "${vm[@]}" --node 1 --link "$p1:$((p1 + 1))" -- sh "$here/guest_serve.sh" >"$q/vm-node1.log" 2>&1 </dev/null &
    echo $! >>"$q/pids"
    ready=("$dir/.vm-node1/ready" "$dir/.vm-node2/ready")
  else
    echo "guest.sh start: --nodes is 1 or 2" >&2; exit 125
  fi
  local f missing
  while :; do
    missing=
    for f in "${ready[@]}"; do [[ -e $f ]] || missing=$f; done
    [[ -z $missing ]] && break
    if ! all_up || ((SECONDS - t0 >= 240)); then
      echo "guest.sh: the guest did not come up (no $missing after $((SECONDS - t0)) s)"
      consoles
      stop_guests
      exit 1
    fi
    sleep 0.2
  done
  echo "guest.sh: $nodes guest(s) up in $((SECONDS - t0)) s, serving $q"
  cat "$dir"/.vm*/guest.log
}

exec_job() {
  local jobdir=$1 timeout=600 envs=() rel job name rc=
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do
    case $1 in
      --timeout) timeout=$2; shift 2 ;;
      --env) envs+=("$2"); shift 2 ;;
      *) echo "guest.sh exec: unknown option $1" >&2; usage ;;
    esac
  done
  [[ ${1:-} == -- ]] && shift
  [[ $# -gt 0 ]] || usage
  all_up || { echo "guest.sh: no shared guest up in $dir (did its start case fail?)"; consoles; exit 125; }
  mkdir -p "$jobdir"
  jobdir=$(cd "$jobdir" && pwd)
  rel=${jobdir#"$dir"/}
  [[ $rel != "$jobdir" ]] || { echo "guest.sh: $jobdir is not under $dir" >&2; exit 125; }
  job=$jobdir/.vm
  rm -rf "$job"; mkdir -p "$job"
  { printf '%q ' "$@"; echo; } >"$job/cmd"
  {
    printf 'export GDR_VM_CWD=%q\n' "/results/$rel"
    for e in "${envs[@]}"; do printf 'export %q\n' "$e"; done
  } >"$job/env"
  : >"$job/out"
  # The output streams until the job ends; a case that ends first (its
  # deadline, or ctest stopping it) has the job killed in the guest.
  sleep "$(( ${timeout%.*} + 120 ))" &
  local hold=$!
  tail -s 0.2 -n +1 -F --pid="$hold" "$job/out" 2>/dev/null &
  local tail_pid=$!
  trap '[[ -e $job/rc ]] || : >"$job/kill"; kill $hold 2>/dev/null; wait $tail_pid 2>/dev/null' EXIT
  trap 'exit 130' INT TERM
  name=$(date +%s%N)-$$
  echo "$rel/.vm" >"$q/$name.tmp"
  mv "$q/$name.tmp" "$q/$name.job"
  local t0=$SECONDS
  while [[ ! -e $job/rc ]]; do
    # A guest that hangs (or still ends a killed job) takes no new job.
    if [[ -e $q/$name.job ]] && ((SECONDS - t0 >= 60)); then
      rm -f "$q/$name.job"
      echo "guest.sh: the shared guest did not take the job within 60 s; its console:"
      consoles; exit 125
    fi
    if ! all_up; then
      sleep 1  # the rc of a job that ended as the guest stopped
      [[ -e $job/rc ]] && break
      echo "guest.sh: the shared guest went down while it ran the job; its console:"
      consoles; exit 125
    fi
    if ((SECONDS - t0 >= ${timeout%.*})); then
      echo "guest.sh: the job timed out after $timeout s; killing it in the guest" >&2
      : >"$job/kill"
      exit 124
    fi
    sleep 0.2
  done
  rc=$(cat "$job/rc")
  echo "guest.sh: job exited $rc after $((SECONDS - t0)) s in the shared guest" >&2
  exit "$rc"
}

case $action in
  start) start "$@" ;;
  exec) exec_job "$@" ;;
  stop) stop_guests; echo "guest.sh: stopped the guests of $dir"; consoles | grep -E '^(---|serve:)' || true ;;
  *) usage ;;
esac
