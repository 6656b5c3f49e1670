#!/usr/bin/env bash
# Faults for the emulated cluster (cluster.sh), by class and severity. A
# severity PCT means "PCT % slower": the time of a transfer x (1 + PCT/100),
# i.e. the rate / (1 + PCT/100).
#
#   fault.sh nic HOST egress|ingress|both PCT   the host's NIC slower in that direction
#   fault.sh link HOST_A HOST_B PCT|down        the one link A<->B slower (both directions), or
#                                               carrying nothing (a blackhole route each way)
#   fault.sh cpu HOST QUOTA_PCT                 every process of HOST (its ranks) limited to
#                                               QUOTA_PCT % of one CPU (cgroup v2 cpu.max, else v1
#                                               cpu.cfs_quota_us), period 40 ms; run it after the ranks start
#   fault.sh down HOST                          the host's NIC goes down (a host dropping out)
#   fault.sh freeze HOST                        every process of HOST stopped (SIGSTOP; a hung host)
#   fault.sh mtu HOST BYTES                     the host's NIC MTU set to BYTES (68-65535; its peers keep
#                                               1500): a host configured unlike its peers
#   fault.sh clear [HOST]                       undo every fault (of HOST): rates, links, cgroups, SIGCONT
#   fault.sh clear-cgroups                      remove the cgroups fault.sh made
# GDR_CLUSTER names the cluster as for cluster.sh.
set -euo pipefail
name=${GDR_CLUSTER:-gc}
dir=/run/gdrcluster/$name
cg=gdrc-$name
die() { echo "fault.sh: $*" >&2; exit 2; }
conf() { [ -e "$dir/conf" ] || die "cluster '$name' is not up"; . "$dir/conf"; }
host_ok() { grep -qx "$1" "$dir/hosts" || die "no host '$1' in cluster '$name'"; }
pct_ok() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]] || die "'$1': a percentage (number)"; }
idx() { echo "${1#"$name"}"; }
slowed() { awk -v r="$RATE_MBIT" -v p="$1" 'BEGIN { printf "%.0fkbit", r * 1000 / (1 + p / 100) }'; }
ns_tc() { ip netns exec "gdrc-$1" tc "${@:2}"; }

set_rate() {  # HOST egress|ingress RATE
  local h=$1
  if [ "$2" = egress ]; then
    ns_tc "$h" class change dev eth0 parent 1:1 classid 1:10 htb rate "$3" ceil "$3" burst 2k cburst 2k quantum 30000
  else
    tc class change dev "${name}v$(idx "$h")" parent 1:1 classid 1:10 htb rate "$3" ceil "$3" burst 2k cburst 2k quantum 30000
  fi
}

nic() {
  local h=$1 dirn=$2 p=$3
  host_ok "$h"; pct_ok "$p"
  case $dirn in egress|ingress) set_rate "$h" "$dirn" "$(slowed "$p")" ;;
    both) set_rate "$h" egress "$(slowed "$p")"; set_rate "$h" ingress "$(slowed "$p")" ;;
    *) die "nic: direction '$dirn': egress, ingress or both" ;; esac
  echo "fault.sh: $h NIC $dirn $p% slower ($(slowed "$p") of ${RATE_MBIT}mbit)"
}

link_one() {  # FROM TO PCT: FROM's egress towards TO
  local a=$1 b=$2 rate; rate=$(slowed "$3")
  local cls=1:$(printf '%x' $((0x200 + $(idx "$b"))))
  ns_tc "$a" class replace dev eth0 parent 1:1 classid "$cls" htb rate "$rate" ceil "$rate" burst 2k cburst 2k quantum 30000
  ns_tc "$a" filter replace dev eth0 parent 1: protocol ip prio 1 handle "800::$(idx "$b")" u32 \
    match ip dst "169.254.$SUBNET.$(idx "$b")/32" flowid "$cls"
}

link() {
  local a=$1 b=$2 p=$3
  host_ok "$a"; host_ok "$b"; [ "$a" != "$b" ] || die "link: two different hosts"
  if [ "$p" = down ]; then   # tc cannot drop here (no act_gact): routes can
    ip netns exec "gdrc-$a" ip route add blackhole "169.254.$SUBNET.$(idx "$b")/32"
    ip netns exec "gdrc-$b" ip route add blackhole "169.254.$SUBNET.$(idx "$a")/32"
    echo "fault.sh: link $a<->$b down"
    return
  fi
  pct_ok "$p"
  link_one "$a" "$b" "$p"; link_one "$b" "$a" "$p"
  echo "fault.sh: link $a<->$b $p% slower ($(slowed "$p") of ${RATE_MBIT}mbit)"
}

cpu() {
  local h=$1 q=$2 period=40000 pids quota
  host_ok "$h"; pct_ok "$q"
  quota=$(awk -v q="$q" -v p=$period 'BEGIN { v = int(q * p / 100); print (v < 1000 ? 1000 : v) }')
  pids=$(ip netns pids "gdrc-$h")
  [ -n "$pids" ] || die "cpu: no process runs on $h yet"
  if [ -w /sys/fs/cgroup/cgroup.procs ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    local d=/sys/fs/cgroup/$cg-$h; mkdir -p "$d"; echo "$quota $period" > "$d/cpu.max"
    for p in $pids; do echo "$p" > "$d/cgroup.procs" 2>/dev/null || true; done
  else
    local d=/sys/fs/cgroup/cpu/$cg-$h; mkdir -p "$d"
    echo $period > "$d/cpu.cfs_period_us"; echo "$quota" > "$d/cpu.cfs_quota_us"
    for p in $pids; do echo "$p" > "$d/tasks" 2>/dev/null || true; done
  fi
  echo "fault.sh: $h's $(echo $pids | wc -w) processes limited to $quota us of CPU per $period us ($d)"
}

clear_cgroups() {
  local d p
  for d in /sys/fs/cgroup/"$cg"-* /sys/fs/cgroup/cpu/"$cg"-*; do
    [ -d "$d" ] || continue
    local up=/sys/fs/cgroup/cgroup.procs; [ -e "$d/tasks" ] && up=/sys/fs/cgroup/cpu/tasks
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do echo "$p" > "$up" 2>/dev/null || true; done
    rmdir "$d" 2>/dev/null || true
  done
}

clear_host() {
  local h=$1 r; r="${RATE_MBIT}mbit"
  set_rate "$h" egress "$r"; set_rate "$h" ingress "$r"
  ns_tc "$h" filter del dev eth0 parent 1: 2>/dev/null || true
  for c in $(ns_tc "$h" class show dev eth0 | awk '$3 ~ /^1:2/ {print $3}'); do ns_tc "$h" class del dev eth0 classid "$c"; done
  ip netns exec "gdrc-$h" ip link set eth0 up
  ip netns exec "gdrc-$h" ip link set eth0 mtu 1500
  ip netns exec "gdrc-$h" ip route flush type blackhole 2>/dev/null || true
  for p in $(ip netns pids "gdrc-$h"); do kill -CONT "$p" 2>/dev/null || true; done
}

cmd=${1:-}; shift || true
case $cmd in
  nic) [ $# -eq 3 ] || die "usage: fault.sh nic HOST egress|ingress|both PCT"; conf; nic "$@" ;;
  link) [ $# -eq 3 ] || die "usage: fault.sh link HOST_A HOST_B PCT|down"; conf; link "$@" ;;
  cpu) [ $# -eq 2 ] || die "usage: fault.sh cpu HOST QUOTA_PCT"; conf; cpu "$@" ;;
  down) [ $# -eq 1 ] || die "usage: fault.sh down HOST"; conf; host_ok "$1"
        ip netns exec "gdrc-$1" ip link set eth0 down; echo "fault.sh: $1 NIC down" ;;
  freeze) [ $# -eq 1 ] || die "usage: fault.sh freeze HOST"; conf; host_ok "$1"
          for p in $(ip netns pids "gdrc-$1"); do kill -STOP "$p" 2>/dev/null || true; done
          echo "fault.sh: $1 frozen" ;;
  mtu) [ $# -eq 2 ] || die "usage: fault.sh mtu HOST BYTES"; conf; host_ok "$1"
       [[ $2 =~ ^[0-9]{2,5}$ ]] && [ "$2" -ge 68 ] && [ "$2" -le 65535 ] || die "mtu: '$2': bytes, 68-65535"
       ip netns exec "gdrc-$1" ip link set eth0 mtu "$2"; echo "fault.sh: $1 eth0 MTU $2 (its peers 1500)" ;;
  clear) conf; if [ $# -ge 1 ]; then host_ok "$1"; clear_host "$1"; else
           while read -r h; do clear_host "$h"; done < "$dir/hosts"; fi; clear_cgroups ;;
  clear-cgroups) clear_cgroups ;;
  *) die "usage: fault.sh nic|link|cpu|down|freeze|mtu|clear|clear-cgroups ... (see the header)" ;;
esac
