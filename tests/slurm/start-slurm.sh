#!/usr/bin/env bash
# Start a private, single-node Slurm on this machine, for the tests.
#
#   tests/slurm/start-slurm.sh STATE_DIR
#
# Everything lives under STATE_DIR (use a folder in the build tree): a fresh
# munge key and socket, slurm.conf, controller state, slurmd spool, logs and
# pid files. Nothing under /etc is read or written; clients find the
# configuration through SLURM_CONF (STATE_DIR/env.sh exports it).
#
# The node is this host, reached on loopback only (SlurmctldAddr/NodeAddr
# 127.0.0.1), CPUs = nproc, proctrack/linuxproc, task/none (no cgroups, no
# systemd), select/cons_tres, auth/munge, one partition with OverSubscribe=YES.
# munged runs as the munge user; slurmctld and slurmd run as root in the
# foreground (-D), in the background of this script. Ports are picked free
# on 127.0.0.1 unless GDR_SLURMCTLD_PORT / GDR_SLURMD_PORT are set.
#
# Waits until the node is idle (GDR_SLURM_START_TIMEOUT seconds, default 60).
# On any failure it prints the daemons' logs, stops what it started
# (stop-slurm.sh STATE_DIR) and exits non-zero. Packages:
# jobs/deps/debian-slurm.txt.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -eq 1 ]] || { echo "usage: $0 STATE_DIR" >&2; exit 2; }
mkdir -p "$1"
D=$(cd "$1" && pwd)
timeout_s=${GDR_SLURM_START_TIMEOUT:-60}

need=(munged mungekey slurmctld slurmd srun sbatch sinfo squeue scontrol runuser python3)
for b in "${need[@]}"; do
  if ! command -v "$b" >/dev/null 2>&1 && [[ ! -x /usr/sbin/$b ]]; then
    echo "start-slurm: '$b' not found; install: apt-get install $(tr '\n' ' ' < "$here/../../jobs/deps/debian-slurm.txt")" >&2
    exit 1
  fi
done
export PATH=$PATH:/usr/sbin:/sbin
id munge >/dev/null 2>&1 || { echo "start-slurm: no 'munge' user (is the munge package installed?)" >&2; exit 1; }

if [[ -f $D/run/started ]]; then
  echo "start-slurm: $D already holds a running test Slurm; stopping it first" >&2
  "$here/stop-slurm.sh" "$D" || true
fi

# From here on, a failure stops whatever was started.
started_ok=0
on_exit() {
  local rc=$?
  if [[ $started_ok -ne 1 ]]; then
    echo "start-slurm: failed (rc=$rc); logs follow" >&2
    for f in "$D"/log/*.log; do
      [[ -f $f ]] && { echo "==== $f" >&2; tail -n 40 "$f" >&2; }
    done
    "$here/stop-slurm.sh" "$D" >&2 || true
  fi
}
trap on_exit EXIT

mkdir -p "$D"/{etc,state,spool,log,run,munge}
rm -f "$D"/state/* "$D"/log/*.log "$D"/run/*.pid 2>/dev/null || true
: > "$D/run/started"      # marker for stop-slurm.sh

host=$(hostname -s)
nproc=$(nproc)

# ---- munge: private key, socket, pid, log; run as the munge user ---------
# munged wants its socket folder searchable by all, and its key private.
M=$D/munge K=$D/munge-key
mkdir -p "$K"
chown munge:munge "$M" "$K"; chmod 0755 "$M"; chmod 0700 "$K"
rm -f "$K"/munge.key "$M"/munged.pid "$M"/munge.socket.2*
mungekey --create --keyfile="$K/munge.key" --force 2>/dev/null ||
  dd if=/dev/urandom of="$K/munge.key" bs=1024 count=1 status=none
chown munge:munge "$K/munge.key"; chmod 0400 "$K/munge.key"
touch "$D/log/munged.log"; chown munge:munge "$D/log/munged.log"
runuser -u munge -- munged \
  --socket="$M/munge.socket.2" --key-file="$K/munge.key" \
  --pid-file="$M/munged.pid" --log-file="$D/log/munged.log" \
  --seed-file="$M/munged.seed"
for _ in $(seq 50); do [[ -S $M/munge.socket.2 && -s $M/munged.pid ]] && break; sleep 0.1; done
cp "$M/munged.pid" "$D/run/munged.pid"
munge -n -S "$M/munge.socket.2" | unmunge -S "$M/munge.socket.2" >/dev/null

# ---- ports ---------------------------------------------------------------
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ctl_port=${GDR_SLURMCTLD_PORT:-$(free_port)}
d_port=${GDR_SLURMD_PORT:-$(free_port)}
while [[ $d_port == "$ctl_port" ]]; do d_port=$(free_port); done

# ---- slurm.conf ----------------------------------------------------------
cat > "$D/etc/plugstack.conf" <<EOF
# empty: no SPANK plugins in the test cluster
EOF
cat > "$D/etc/slurm.conf" <<EOF
# Written by tests/slurm/start-slurm.sh: a single-node test cluster on loopback.
ClusterName=gdrtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldAddr=127.0.0.1
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
# Test only: the daemons run as root so that state in the build tree needs no chown.
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$M/munge.socket.2
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.daemon.pid
SlurmdPidFile=$D/run/slurmd.daemon.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
PlugStackConfig=$D/etc/plugstack.conf
Include $(cd "$here/../../jobs" && pwd)/slurm-common.conf
NodeName=$host NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$nproc State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF

export SLURM_CONF=$D/etc/slurm.conf
cat > "$D/env.sh" <<EOF
# source me: points Slurm's clients at the test cluster in $D
export SLURM_CONF=$D/etc/slurm.conf
EOF

# ---- daemons -------------------------------------------------------------
# Started with setsid so that a Ctrl-C in the calling terminal or ctest's
# process-group handling does not reach them; stop-slurm.sh ends them by pid.
setsid slurmctld -D -c -f "$SLURM_CONF" > "$D/log/slurmctld.stdout" 2>&1 < /dev/null &
echo $! > "$D/run/slurmctld.pid"
setsid slurmd -D -N "$host" -f "$SLURM_CONF" > "$D/log/slurmd.stdout" 2>&1 < /dev/null &
echo $! > "$D/run/slurmd.pid"

# ---- wait for the node to be idle ----------------------------------------
deadline=$((SECONDS + timeout_s))
state=
while (( SECONDS < deadline )); do
  for p in slurmctld slurmd; do
    kill -0 "$(cat "$D/run/$p.pid")" 2>/dev/null || { echo "start-slurm: $p exited" >&2; exit 1; }
  done
  state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
  [[ $state == idle ]] && break
  sleep 0.5
done
if [[ $state != idle ]]; then
  echo "start-slurm: node $host not idle after ${timeout_s}s (state '${state}')" >&2
  exit 1
fi

started_ok=1
echo "start-slurm: node $host idle; SLURM_CONF=$SLURM_CONF (slurmctld :$ctl_port, slurmd :$d_port)"
