#!/usr/bin/env bash
# An emulated multi-host cluster on one machine: each host is a network
# namespace (gdrc-<host>) with its own hostname (a persistent UTS namespace),
# its NIC a veth pair on one bridge, link-local IPv4 only (169.254.S.i/24),
# and both directions of every host link rate-limited with tc htb so that the
# network, not the CPU, sets the times. Real mpirun reaches the hosts through
# rsh-agent.sh (it enters the host's namespaces). Needs root, iproute2, unshare.
#
#   cluster.sh up N [RATE_MBIT]    make hosts <name>1..<name>N (default rate 20 Mbit/s)
#   cluster.sh down                remove everything `up` made (also after a crash)
#   cluster.sh status              hosts, addresses, qdiscs
#   cluster.sh reap                kill every process left inside the hosts (a run's orphans)
#   cluster.sh exec HOST CMD...    run CMD inside HOST (its net and UTS namespaces, at nice -10)
#   cluster.sh hostfile            print the path of the mpirun hostfile (HOST slots=1 per line)
#   cluster.sh launcher-args       print the mpirun arguments for the cluster: the rsh agent, TCP on
#                                  169.254/16 only, and waits that yield (GDR_WAIT_YIELD=1, Open MPI's
#                                  mpi_yield_when_idle): the hosts share the machine's cores
#
# GDR_CLUSTER (default gc, at most 6 characters) names the cluster and prefixes
# its hosts, interfaces and namespaces; GDR_CLUSTER_SUBNET (default 77) is S.
# Several clusters with different names and subnets can exist at once.
# State: /run/gdrcluster/<name>/ (conf, hosts, hostfile, <host>.uts).
set -euo pipefail
name=${GDR_CLUSTER:-gc}
subnet=${GDR_CLUSTER_SUBNET:-77}
root=/run/gdrcluster
dir=$root/$name
die() { echo "cluster.sh: $*" >&2; exit 2; }
[[ $name =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "GDR_CLUSTER '$name': 1-6 characters, a-z then a-z0-9"
[[ $subnet =~ ^[0-9]+$ ]] && [ "$subnet" -ge 1 ] && [ "$subnet" -le 254 ] || die "GDR_CLUSTER_SUBNET '$subnet': 1-254"
br=${name}br

# htb on both ends of a host's veth: class 1:10 (default) is the NIC's rate in
# that direction; fault.sh lowers it or adds a class per slow peer (1:2x).
# tbf alone cannot classify per destination (one slow link), and prio is not in
# this kernel, so htb it is (its token bucket is tbf's).
shape() {  # DEV RATE_MBIT [netns]
  local ns=() ; [ $# -ge 3 ] && ns=(ip netns exec "$3")
  "${ns[@]}" tc qdisc replace dev "$1" root handle 1: htb default 10 r2q 100
  "${ns[@]}" tc class replace dev "$1" parent 1: classid 1:1 htb rate "$2"mbit ceil "$2"mbit burst 2k cburst 2k quantum 30000
  "${ns[@]}" tc class replace dev "$1" parent 1:1 classid 1:10 htb rate "$2"mbit ceil "$2"mbit burst 2k cburst 2k quantum 30000
}

up() {
  local n=$1 rate=${2:-20}
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 200 ] || die "up N: N must be 2-200, got '$n'"
  [[ $rate =~ ^[0-9]+$ ]] && [ "$rate" -ge 1 ] || die "rate '$rate': whole Mbit/s"
  [ -e "$dir/conf" ] && die "cluster '$name' is already up ($dir); run down first"
  mkdir -p "$dir"
  trap 'echo "cluster.sh: up failed, removing what was made" >&2; down' ERR
  printf 'N=%s\nRATE_MBIT=%s\nSUBNET=%s\nNAME=%s\n' "$n" "$rate" "$subnet" "$name" > "$dir/conf"
  ip link add "$br" type bridge
  ip link set "$br" up
  : > "$dir/hosts"; : > "$dir/hostfile"
  for i in $(seq 1 "$n"); do
    local h=$name$i ns=gdrc-$name$i
    ip netns add "$ns"
    ip link add "${name}v$i" type veth peer name "${name}e$i"
    ip link set "${name}e$i" netns "$ns"
    ip netns exec "$ns" ip link set "${name}e$i" name eth0
    ip netns exec "$ns" ip addr add "169.254.$subnet.$i/24" dev eth0
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip link set eth0 up
    # Packets of at most one MTU: with GSO a 64 KiB super-packet passes the shaper as one unit,
    # and a 64 KiB iteration took anywhere from 0.5x to 1.9x its paced time.
    ip netns exec "$ns" ip link set dev eth0 gso_max_size 1514
    ip link set dev "${name}v$i" gso_max_size 1514
    ip link set "${name}v$i" master "$br"
    ip link set "${name}v$i" up
    shape eth0 "$rate" "$ns"            # the host's egress
    shape "${name}v$i" "$rate"          # its ingress (the bridge's egress towards it)
    touch "$dir/$h.uts"
    unshare --uts="$dir/$h.uts" hostname "$h"
    echo "$h" >> "$dir/hosts"
    echo "$h slots=1" >> "$dir/hostfile"
  done
  trap - ERR
  echo "cluster.sh: $n hosts up (${name}1..${name}$n, 169.254.$subnet.1-$n, $rate Mbit/s each way); hostfile $dir/hostfile"
}

reap() {  # only processes inside this cluster's namespaces: they are ours
  local ns p
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^gdrc-$name[0-9]+$" || true); do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  done
}

down() {
  [ -d "$dir" ] || { echo "cluster.sh: cluster '$name' is not up"; return 0; }
  local h
  # A Slurm started on the cluster (slurm.sh): its munged runs outside the hosts, so stop it by pid.
  [ -d "$dir/slurm" ] && { "$(dirname "$0")/slurm.sh" stop || true; }
  "$(dirname "$0")/fault.sh" clear-jobs 2>/dev/null || true   # flap and stall loops
  reap
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^gdrc-$name[0-9]+$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  for f in "$dir"/*.uts; do [ -e "$f" ] && { umount "$f" 2>/dev/null || true; rm -f "$f"; }; done
  for l in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${name}(v[0-9]+|br)$" || true); do
    ip link del "$l" 2>/dev/null || true
  done
  "$(dirname "$0")/fault.sh" clear-cgroups 2>/dev/null || true
  nft delete table netdev "gdrfault-$name" 2>/dev/null || true   # fault.sh loss's rules at the bridge ports
  rm -rf "$dir"
  echo "cluster.sh: cluster '$name' down"
}

status() {
  [ -e "$dir/conf" ] || { echo "cluster '$name': down"; return 1; }
  cat "$dir/conf"
  while read -r h; do
    local ns=gdrc-$h
    printf '%s %s egress: %s ingress: %s\n' "$h" \
      "$(ip netns exec "$ns" ip -o -4 addr show dev eth0 | awk '{print $4}') $(ip netns exec "$ns" cat /sys/class/net/eth0/operstate)" \
      "$(ip netns exec "$ns" tc class show dev eth0 | grep -o 'class htb 1:[0-9a-f]* .*rate [0-9.A-Za-z]*' | awk '{print $3"="$NF}' | tr '\n' ' ')" \
      "$(tc class show dev "${name}v${h#"$name"}" | grep -o 'class htb 1:[0-9a-f]* .*rate [0-9.A-Za-z]*' | awk '{print $3"="$NF}' | tr '\n' ' ')"
  done < "$dir/hosts"
}

cmd=${1:-}; shift || true
case $cmd in
  up) [ $# -ge 1 ] || die "usage: cluster.sh up N [RATE_MBIT]"; up "$@" ;;
  down) down ;;
  status) status ;;
  reap) reap ;;
  hostfile) [ -e "$dir/hostfile" ] || die "cluster '$name' is not up"; echo "$dir/hostfile" ;;
  launcher-args)
    echo "--mca plm_rsh_agent $(cd "$(dirname "$0")" && pwd)/rsh-agent.sh --mca btl_tcp_if_include 169.254.0.0/16" \
         "--mca oob_tcp_if_include 169.254.0.0/16 --mca mpi_yield_when_idle 1 -x GDR_WAIT_YIELD=1" ;;
  exec)
    [ $# -ge 2 ] || die "usage: cluster.sh exec HOST CMD..."
    h=$1; shift
    [ -e "$dir/$h.uts" ] || die "no host '$h' in cluster '$name'"
    # At nice GDR_CLUSTER_NICE (default -10; the ranks, started from here, inherit it): the hosts
    # are network-bound (~0.1 core at 4 hosts) but wait for a CPU behind the machine's other work.
    exec nice -n "${GDR_CLUSTER_NICE:--10}" nsenter --net="/run/netns/gdrc-$h" --uts="$dir/$h.uts" "$@" ;;
  *) die "usage: cluster.sh up N [RATE_MBIT] | down | status | reap | exec HOST CMD... | hostfile | launcher-args" ;;
esac
