#!/usr/bin/env bash
# Stop the test Slurm that start-slurm.sh started in STATE_DIR, and only it.
#
#   tests/slurm/stop-slurm.sh STATE_DIR
#
# Cancels its jobs, then ends slurmd, slurmctld and munged by the pids recorded
# in STATE_DIR/run (each checked against the process's name first, so a reused
# pid is never hit), and any slurmstepd that still holds a file of STATE_DIR
# open (job steps of this cluster log into STATE_DIR/log). Safe to run twice,
# and after a start that failed half-way. Exit 0 unless something survived.
set -uo pipefail
export PATH=$PATH:/usr/sbin:/sbin

[[ $# -eq 1 ]] || { echo "usage: $0 STATE_DIR" >&2; exit 2; }
[[ -d $1 ]] || { echo "stop-slurm: $1: no such directory (nothing to stop)"; exit 0; }
D=$(cd "$1" && pwd)

# pid_of NAME: the recorded pid of NAME if that process is still NAME.
pid_of() {
  local name=$1 f pid
  for f in "$D/run/$name.pid" "$D/run/$name.daemon.pid"; do
    [[ -s $f ]] || continue
    pid=$(tr -dc '0-9' < "$f")
    [[ -n $pid && -r /proc/$pid/comm && $(cat /proc/$pid/comm) == "$name" ]] && { echo "$pid"; return 0; }
  done
  return 1
}

# stop_pid NAME PID: TERM, wait up to 10 s, then KILL.
stop_pid() {
  local name=$1 pid=$2
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    [[ -r /proc/$pid/comm && $(cat /proc/$pid/comm 2>/dev/null) == "$name" ]] || return 0
    sleep 0.1
  done
  echo "stop-slurm: $name ($pid) ignored TERM; sending KILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.2
}

# Cancel this cluster's jobs while the controller is still up.
if [[ -f $D/etc/slurm.conf ]] && pid_of slurmctld >/dev/null; then
  export SLURM_CONF=$D/etc/slurm.conf
  jobs=$(timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  if [[ -n ${jobs// /} ]]; then
    echo "stop-slurm: cancelling jobs $jobs"
    # shellcheck disable=SC2086
    timeout 10 scancel $jobs 2>/dev/null || true
    for _ in $(seq 50); do
      [[ -z $(timeout 5 squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
fi

for name in slurmd slurmctld munged; do
  if pid=$(pid_of "$name"); then
    echo "stop-slurm: stopping $name ($pid)"
    stop_pid "$name" "$pid"
  fi
done
# munged's pid file is written by munged itself.
if [[ -s $D/munge/munged.pid ]]; then
  pid=$(tr -dc '0-9' < "$D/munge/munged.pid")
  if [[ -n $pid && -r /proc/$pid/comm && $(cat /proc/$pid/comm) == munged ]]; then
    echo "stop-slurm: stopping munged ($pid)"
    stop_pid munged "$pid"
  fi
fi

# Orphaned job steps of this cluster: slurmstepd processes with a file under $D open.
for p in /proc/[0-9]*; do
  [[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
  for fd in "$p"/fd/*; do
    if [[ $(readlink "$fd" 2>/dev/null) == "$D"/* ]]; then
      pid=${p#/proc/}
      echo "stop-slurm: stopping leftover slurmstepd ($pid)"
      stop_pid slurmstepd "$pid"
      break
    fi
  done
done

rc=0
for name in slurmd slurmctld munged; do
  if pid=$(pid_of "$name"); then echo "stop-slurm: $name ($pid) still running" >&2; rc=1; fi
done
rm -f "$D/run/started"
exit $rc
