#!/bin/sh
# Runs in a shared Soft-RoCE guest (guest.sh start boots one with this as its
# command): serves the jobs `guest.sh exec` queues, one at a time, until
# /results/.queue/stop appears. A request is a file .queue/*.job naming a job
# folder under /results that holds cmd, env and out as vm.sh writes them;
# the job's status goes to rc there. A job runs in its own session, so a
# `kill` file in its folder (guest.sh exec's deadline, or its case killed)
# ends it and everything it started, and nothing of it outlives it: a rank
# left behind would keep the rxe devices busy for the next case. (dash's
# kill takes no --: -PID is the process group.)
q=/results/.queue

run_job() {
  d=$1
  rm -f "$d/pid" "$d/rc"
  (
    . "$d/env"
    cd "${GDR_VM_CWD:-/results}" || { echo 125 >"$d/rc"; exit 0; }
    setsid sh -c 'echo $$ >"$1/pid"; exec sh "$1/cmd"' sh "$d" </dev/null >>"$d/out" 2>&1
    echo $? >"$d/rc.tmp" && mv "$d/rc.tmp" "$d/rc"
  ) &
  # Checked once a second: each check forks, and forks are dear under
  # emulation while the job runs beside them.
  sig=TERM n=0
  until [ -e "$d/rc" ]; do
    if [ -e "$d/kill" ] && [ -s "$d/pid" ]; then
      kill -"$sig" -"$(cat "$d/pid")" 2>/dev/null
      n=$((n + 1)); [ $n -ge 5 ] && sig=KILL  # 5 s to end on TERM
    fi
    sleep 1
  done
  [ -s "$d/pid" ] && kill -KILL -"$(cat "$d/pid")" 2>/dev/null
  wait
}

while [ ! -e "$q/stop" ]; do
  for req in "$q"/*.job; do
    [ -e "$req" ] || break
    job=$(cat "$req")
    rm -f "$req"
    echo "serve: $(cut -d' ' -f1 /proc/uptime) s: job $job" >>"$q/guest.log"
    run_job "/results/$job"
    echo "serve: $(cut -d' ' -f1 /proc/uptime) s: job $job exited $(cat "/results/$job/rc")" >>"$q/guest.log"
  done
  sleep 0.2
done
