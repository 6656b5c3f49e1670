#!/bin/sh
# mpirun ... slow_rank.sh gdrbench run ...: the rank GDR_SLOW_RANK is made
# slow for real before it execs the command. With a writable cgroup v2 or v1
# cpu controller: its own cgroup, GDR_SLOW_QUOTA us of CPU per GDR_SLOW_PERIOD us
# (defaults 1000 and 40000: a fortieth of a core, off for up to 39 ms at a time). Otherwise: it is bound to CPU 0 beside a
# busy loop bound there too (its pid written to GDR_SLOW_PIDFILE, which the
# caller kills). GDR_SLOW_CGROUP names the cgroup (the caller removes it).
set -e
if [ "${OMPI_COMM_WORLD_RANK:-}" = "${GDR_SLOW_RANK:--1}" ]; then
  name=${GDR_SLOW_CGROUP:-gdrbench-slow-$$}
  quota=${GDR_SLOW_QUOTA:-1000}
  if [ -w /sys/fs/cgroup/cgroup.procs ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null &&
     mkdir -p "/sys/fs/cgroup/$name" 2>/dev/null && echo "$quota ${GDR_SLOW_PERIOD:-40000}" > "/sys/fs/cgroup/$name/cpu.max"; then
    echo $$ > "/sys/fs/cgroup/$name/cgroup.procs"
    echo "slow_rank: rank $OMPI_COMM_WORLD_RANK in cgroup v2 $name, cpu.max $quota/${GDR_SLOW_PERIOD:-40000}" >&2
  elif mkdir -p "/sys/fs/cgroup/cpu/$name" 2>/dev/null && echo "${GDR_SLOW_PERIOD:-40000}" > "/sys/fs/cgroup/cpu/$name/cpu.cfs_period_us" &&
       echo "$quota" > "/sys/fs/cgroup/cpu/$name/cpu.cfs_quota_us"; then
    echo $$ > "/sys/fs/cgroup/cpu/$name/tasks"
    echo "slow_rank: rank $OMPI_COMM_WORLD_RANK in cgroup v1 cpu/$name, quota $quota/${GDR_SLOW_PERIOD:-40000} us" >&2
  else
    taskset -c 0 sh -c 'while :; do :; done' &
    echo $! > "${GDR_SLOW_PIDFILE:?no cgroup and no GDR_SLOW_PIDFILE}"
    echo "slow_rank: rank $OMPI_COMM_WORLD_RANK bound to CPU 0 beside busy loop $!" >&2
    exec taskset -c 0 "$@"
  fi
fi
exec "$@"
