#!/usr/bin/env bash
# A real multi-host Slurm over the emulated cluster (cluster.sh): slurmctld
# and munged on the first host, one slurmd in every host's network and UTS
# namespaces (each its own hostname, address, spool, log and NodeName), so
# that `salloc -N 4` gives four hosts and `srun --mpi=pmix` starts one rank in
# each. Debian's slurm-wlm is not built with --enable-multiple-slurmd; it
# needs none here, since every slurmd is alone in its namespace.
#
#   slurm.sh start     on a cluster that is up: start the daemons, wait until every node is idle
#   slurm.sh stop      cancel the jobs, stop every daemon and job step it started (safe to repeat)
#   slurm.sh env       print the path of env.sh (exports SLURM_CONF; clients run inside a host:
#                      cluster.sh exec <name>1 salloc ...)
#
# GDR_CLUSTER / GDR_CLUSTER_SUBNET pick the cluster as for cluster.sh. State:
# /run/gdrcluster/<name>/slurm (conf, munge key and socket, controller state,
# per-node spool, logs, pids). Nothing under /etc is read or written; a Slurm
# elsewhere on this machine (tests/slurm's, on 127.0.0.1 in the root
# namespace) is not touched: these daemons listen only inside the cluster's
# namespaces. Waits are bounded (GDR_SLURM_START_TIMEOUT, default 60 s).
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin
name=${GDR_CLUSTER:-gc}
dir=/run/gdrcluster/$name
S=$dir/slurm
jobs_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # slurm-common.conf
die() { echo "slurm.sh: $*" >&2; exit 2; }
fail() { echo "slurm.sh: $*" >&2; exit 1; }
[[ $name =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "GDR_CLUSTER '$name': 1-6 characters, a-z then a-z0-9"

in_host() { local h=$1; shift; nsenter --net="/run/netns/gdrc-$h" --uts="$dir/$h.uts" "$@"; }

# pid_of NAME FILE: the pid in FILE if that process is still NAME.
pid_of() {
  local pid
  [[ -s $2 ]] || return 1
  pid=$(tr -dc '0-9' < "$2")
  [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == "$1" ]] && echo "$pid"
}

# stop_all NAME:PID...: TERM to all at once (each slurmd takes ~3 s to exit, slurmctld ~4 s: one
# after another that was 16 s), up to 10 s for them to go, then KILL what is left.
stop_all() {
  local np left
  for np in "$@"; do kill -TERM "${np#*:}" 2>/dev/null || true; done
  for _ in $(seq 100); do
    left=()
    for np in "$@"; do [[ $(cat "/proc/${np#*:}/comm" 2>/dev/null) == "${np%%:*}" ]] && left+=("$np"); done
    [[ ${#left[@]} -eq 0 ]] && return 0
    sleep 0.1
  done
  echo "slurm.sh: ${left[*]} ignored TERM for 10 s; KILL" >&2
  for np in "${left[@]}"; do kill -KILL "${np#*:}" 2>/dev/null || true; done
}

write_conf() {  # N SUBNET
  local n=$1 sub=$2 h1=${name}1
  cat > "$S/etc/slurm.conf" <<EOF
# Written by jobs/cluster/slurm.sh: Slurm over the emulated cluster '$name'.
ClusterName=gdr$name
SlurmctldHost=$h1(169.254.$sub.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
TmpFS=$S/tmpfs
SlurmctldPidFile=$S/run/slurmctld.daemon.pid
SlurmdPidFile=$S/run/slurmd.%n.daemon.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.%n.log
PlugStackConfig=$S/etc/plugstack.conf
Include $jobs_dir/slurm-common.conf
NodeName=${name}[1-$n] NodeAddr=169.254.$sub.[1-$n] CPUs=$(nproc) State=UNKNOWN
PartitionName=$name Nodes=${name}[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  echo "# empty: no SPANK plugins" > "$S/etc/plugstack.conf"
  # What cluster.sh launcher-args gives mpirun, as environment: srun passes it to the ranks.
  # MPI over UCX's tcp (pml ucx), not ob1's TCP BTL: launched by srun --mpi=pmix, 4 of 67
  # launches of 4 ranks crashed in MPI_Init (SIGSEGV, a NULL call from mca_btl_tcp.so under
  # opal_progress in ompi_mpi_init: Open MPI 4.1.4); with pml ucx 0 of 70.
  cat > "$S/env.sh" <<EOF
# source me inside a host of cluster '$name' (cluster.sh exec ${name}1 ...): Slurm's clients
# find this Slurm; the ranks talk TCP on eth0 (169.254/16) only, with waits that yield.
export SLURM_CONF=$S/etc/slurm.conf
export OMPI_MCA_mpi_yield_when_idle=1 GDR_WAIT_YIELD=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any UCX_TLS=tcp,self UCX_NET_DEVICES=eth0
EOF
}

start_munge() {
  local M=$S/munge
  chown munge:munge "$M" "$S/munge-key"; chmod 0755 "$M"; chmod 0700 "$S/munge-key"
  mungekey --create --keyfile="$S/munge-key/munge.key" --force 2>/dev/null ||
    dd if=/dev/urandom of="$S/munge-key/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$S/munge-key/munge.key"; chmod 0400 "$S/munge-key/munge.key"
  touch "$S/log/munged.log"; chown munge:munge "$S/log/munged.log"
  # A path-bound Unix socket: every namespace reaches it, so one munged serves all hosts.
  runuser -u munge -- munged --socket="$M/munge.socket.2" --key-file="$S/munge-key/munge.key" \
    --pid-file="$M/munged.pid" --log-file="$S/log/munged.log" --seed-file="$M/munged.seed"
  for _ in $(seq 50); do [[ -S $M/munge.socket.2 && -s $M/munged.pid ]] && return 0; sleep 0.1; done
  fail "munged did not create $M/munge.socket.2 within 5 s"
}

start() {
  [[ $(id -u) -eq 0 ]] || fail "needs root (namespaces, munged as the munge user)"
  [[ -e $dir/conf ]] || die "cluster '$name' is not up (cluster.sh up N first)"
  for b in munged mungekey slurmctld slurmd sinfo runuser nsenter; do
    command -v "$b" >/dev/null || fail "'$b' not found; install jobs/deps/debian-slurm.txt"
  done
  local timeout_s=${GDR_SLURM_START_TIMEOUT:-60} nice=${GDR_CLUSTER_NICE:--10}
  [[ $timeout_s =~ ^[0-9]+$ ]] || die "GDR_SLURM_START_TIMEOUT '$timeout_s': whole seconds"
  [[ $nice =~ ^-?[0-9]+$ ]] || die "GDR_CLUSTER_NICE '$nice': an integer"
  [[ -e $S/started ]] && die "Slurm on cluster '$name' is already started ($S); run stop first"
  local n sub; n=$(sed -n 's/^N=//p' "$dir/conf"); sub=$(sed -n 's/^SUBNET=//p' "$dir/conf")
  mkdir -p "$S"/{etc,state,spool,log,run,munge,munge-key,tmp,tmpfs}
  : > "$S/started"
  # shellcheck disable=SC2154
  trap 'rc=$?; if [[ $rc -ne 0 ]]; then echo "slurm.sh: start failed (exit $rc); logs:" >&2;
        tail -n 15 "$S"/log/*.log >&2 2>/dev/null; stop >&2; fi' EXIT
  write_conf "$n" "$sub"
  export SLURM_CONF=$S/etc/slurm.conf
  start_munge
  # setsid: a Ctrl-C or ctest's process-group kill does not reach the daemons; stop ends them by pid.
  # (exec ...) &: $! is the daemon itself (nsenter and setsid exec, neither forks).
  (exec nsenter --net="/run/netns/gdrc-${name}1" --uts="$dir/${name}1.uts" setsid slurmctld -D -c -f "$SLURM_CONF") \
    > "$S/log/slurmctld.stdout" 2>&1 < /dev/null &
  echo $! > "$S/run/slurmctld.pid"
  # The job steps inherit slurmd's nice, as ranks started by cluster.sh exec inherit its -10.
  local i
  for i in $(seq 1 "$n"); do
    mkdir -p "$S/spool/$name$i"
    # Its own mount namespace, where the per-node folder tmp/<host> is seen at $S/tmpfs (TmpFS):
    # Slurm's PMIx plugin makes TmpFS/spmix_appdir_<uid>_<job>.<step> on every node of a step,
    # and nodes sharing one /tmp failed with "File exists".
    mkdir -p "$S/tmp/$name$i"
    # shellcheck disable=SC2016
    (exec unshare --mount --propagation private -- nsenter --net="/run/netns/gdrc-$name$i" \
       --uts="$dir/$name$i.uts" /bin/sh -c 'mount --bind "$1" "$2" && exec nice -n "$4" setsid slurmd -D -f "$3"' \
       sh "$S/tmp/$name$i" "$S/tmpfs" "$SLURM_CONF" "$nice") > "$S/log/slurmd.$name$i.stdout" 2>&1 < /dev/null &
    echo $! > "$S/run/slurmd.$name$i.pid"
  done
  local deadline idle=0
  deadline=$((SECONDS + timeout_s))
  while (( SECONDS < deadline )); do
    for f in "$S"/run/slurmctld.pid "$S"/run/slurmd.*[0-9].pid; do
      kill -0 "$(cat "$f")" 2>/dev/null || fail "$(basename "$f" .pid) exited: $(tail -n 2 "$S/log/$(basename "$f" .pid).stdout" | tr '\n' ' ')"
    done
    idle=$(in_host "${name}1" timeout 5 sinfo -h -N -o %t 2>/dev/null | grep -c '^idle$' || true)
    (( idle == n )) && break
    sleep 0.5
  done
  (( idle == n )) || fail "$idle of $n nodes idle after ${timeout_s} s"
  trap - EXIT
  echo "slurm.sh: $n nodes idle (${name}1..$name$n), slurmctld on ${name}1; source $S/env.sh, clients via cluster.sh exec ${name}1"
}

stop() {
  [[ -d $S ]] || { echo "slurm.sh: no Slurm on cluster '$name'"; return 0; }
  local p f jobs
  if p=$(pid_of slurmctld "$S/run/slurmctld.pid") && [[ -e $dir/${name}1.uts ]]; then
    export SLURM_CONF=$S/etc/slurm.conf
    jobs=$(in_host "${name}1" timeout 5 squeue -h -o %i 2>/dev/null | tr '\n' ' ' || true)
    # shellcheck disable=SC2086
    [[ -n ${jobs// /} ]] && { in_host "${name}1" timeout 5 scancel $jobs 2>/dev/null || true; }
  fi
  # The pid recorded at the start (nsenter exec'd into the daemon) and the daemon's own pid file.
  local daemons=() what
  for f in "$S"/run/slurmd.*pid "$S"/run/slurmctld*pid; do
    [[ -e $f ]] || continue
    what=$(basename "$f"); what=${what%%.*}
    p=$(pid_of "$what" "$f") && daemons+=("$what:$p")
  done
  [[ ${#daemons[@]} -gt 0 ]] && stop_all "${daemons[@]}"
  # Job steps left behind: slurmstepd processes holding a file of this Slurm open.
  daemons=()
  for p in /proc/[0-9]*; do
    [[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
    for f in "$p"/fd/*; do
      [[ $(readlink "$f" 2>/dev/null) == "$S"/* ]] && { daemons+=("slurmstepd:${p#/proc/}"); break; }
    done
  done
  p=$(pid_of munged "$S/munge/munged.pid") && daemons+=("munged:$p")
  [[ ${#daemons[@]} -gt 0 ]] && stop_all "${daemons[@]}"
  rm -rf "$S"
  echo "slurm.sh: Slurm on cluster '$name' stopped"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  env) [[ -e $S/env.sh ]] || die "no Slurm on cluster '$name' (slurm.sh start)"; echo "$S/env.sh" ;;
  *) die "usage: slurm.sh start | stop | env   (GDR_CLUSTER names the cluster)" ;;
esac
