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
#   fault.sh flap HOST PCT PERIOD_S DUTY_PCT DURATION_S [egress|ingress|both]
#                                               the host's NIC (default both ways) alternates: PCT % slower
#                                               for DUTY_PCT % of every PERIOD_S, its own rate for the rest;
#                                               a background job that ends by itself after DURATION_S (then
#                                               the rate is back); prints its pid file; clear stops it
#   fault.sh loss HOST PCT [egress|ingress|both] PCT % of the host's packets dropped on the wire (default
#                                               both ways): nftables netdev ingress hooks at its bridge port
#                                               (egress) and its eth0 (ingress), `numgen random mod 10000 <
#                                               PCT*100` (no netem nor act_gact in this kernel); counted
#   fault.sh counters HOST                      what the loss rules dropped and passed, each direction
#   fault.sh stall PCT ONSET_S DURATION_S       machine-wide: every host's NIC, both ways, PCT % slower from
#                                               ONSET_S (seconds from now) for DURATION_S, then back to the
#                                               rate each had; a background job; prints its pid file
#   fault.sh mtu HOST BYTES                     the host's NIC MTU set to BYTES (68-65535; its peers keep
#                                               1500): a host configured unlike its peers
#   fault.sh at ONSET_S COMMAND ARGS...         run `fault.sh COMMAND ARGS...` ONSET_S seconds from now (a
#                                               fault with an onset, or `clear HOST` to end one); a background
#                                               job; prints its pid file; clear stops it before it fires
#   fault.sh clear [HOST]                       undo every fault (of HOST): background jobs (flap, and
#                                               stall for the whole cluster) stopped, rates, links, loss
#                                               rules, cgroups, SIGCONT, MTU 1500
#   fault.sh clear-jobs                         stop the background jobs only (cluster.sh down runs it)
#   fault.sh clear-cgroups                      remove the cgroups fault.sh made
# GDR_CLUSTER names the cluster as for cluster.sh. Background jobs: $dir/jobs/<what>.pid and .log
# (one line per change of rate, with the time), each in its own process group; at most 3600 s.
set -euo pipefail
name=${GDR_CLUSTER:-gc}
dir=/run/gdrcluster/$name
cg=gdrc-$name
die() { echo "fault.sh: $*" >&2; exit 2; }
conf() { [ -e "$dir/conf" ] || die "cluster '$name' is not up"; . "$dir/conf"; }
host_ok() { grep -qx "$1" "$dir/hosts" || die "no host '$1' in cluster '$name'"; }
pct_ok() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]] || die "'$1': a percentage (number)"; }
# A slowdown of PCT %: up to 100000 (1001x slower), where a 1 Mbit/s cluster keeps 1 kbit/s (tc
# refuses a rate of 0: a larger PCT failed inside tc, or in a flap's or stall's background job).
slow_ok() { pct_ok "$1"; awk -v p="$1" 'BEGIN { exit !(p <= 100000) }' || die "'$1': a slowdown in %, 0-100000"; }
idx() { echo "${1#"$name"}"; }
slowed() { awk -v r="$RATE_MBIT" -v p="$1" 'BEGIN { v = r * 1000 / (1 + p / 100); printf "%.0fkbit", (v < 1) ? 1 : v }'; }
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
  if [ "$p" = down ]; then   # tc cannot drop here (no act_gact): routes can (replace: twice is once)
    ip netns exec "gdrc-$a" ip route replace blackhole "169.254.$SUBNET.$(idx "$b")/32"
    ip netns exec "gdrc-$b" ip route replace blackhole "169.254.$SUBNET.$(idx "$a")/32"
    echo "fault.sh: link $a<->$b down"
    return
  fi
  link_one "$a" "$b" "$p"; link_one "$b" "$a" "$p"
  echo "fault.sh: link $a<->$b $p% slower ($(slowed "$p") of ${RATE_MBIT}mbit)"
}

cpu() {
  local h=$1 q=$2 period=40000 pids quota
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
  loss_clear "$h"
  for p in $(ip netns pids "gdrc-$h"); do kill -CONT "$p" 2>/dev/null || true; done
}

secs_ok() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]] && awk -v v="$1" -v lo="$2" 'BEGIN { exit !(v >= lo && v <= 3600) }' ||
            die "'$1': seconds, $2-3600"; }
rate_of() {  # HOST egress|ingress: the rate class 1:10 has now, as tc prints it (e.g. 16666Kbit)
  if [ "$2" = egress ]; then ns_tc "$1" class show dev eth0 classid 1:10
  else tc class show dev "${name}v$(idx "$1")" classid 1:10; fi | awk '{ for (i = 1; i < NF; i++) if ($i == "rate") { print $(i + 1); exit } }'
}
kbit_of() {  # a tc rate (20Mbit, 16666Kbit, 2000000bit) in kbit
  awk -v r="$1" 'BEGIN { n = r + 0; u = tolower(substr(r, length(n "") + 1));
    f = (u == "gbit") ? 1e6 : (u == "mbit") ? 1e3 : (u == "kbit") ? 1 : 1e-3; printf "%.0f", n * f }'
}
slower_than() { awk -v k="$(kbit_of "$1")" -v p="$2" 'BEGIN { v = k / (1 + p / 100); printf "%.0fkbit", (v < 1) ? 1 : v }'; }
dirs_of() { case $1 in egress|ingress) echo "$1" ;; both) echo "egress ingress" ;;
              *) die "direction '$1': egress, ingress or both" ;; esac; }
jobs_dir() { mkdir -p "$dir/jobs"; echo "$dir/jobs"; }
now() { date +%s.%N; }
log_line() { printf '%s %s\n' "$(now)" "$*"; }
nap() { sleep "$1" & wait $!; }   # a sleep that a TERM interrupts (the trap runs at once)
nap_until() { local s; s=$(awk -v t="$1" -v n="$(now)" 'BEGIN { printf "%.3f", (t > n) ? t - n : 0 }'); nap "$s"; }

job_alive() {  # PID: a live (not zombie) process running this script's loop, i.e. ours
  local cmd
  [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ] &&
    cmd=$(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null) && [[ $cmd == *"fault.sh _"* ]]
}

start_job() {  # NAME CMD...: CMD in a session of its own (so clear ends it with its sleeps), pid file
  local jd; jd=$(jobs_dir)
  [ -e "$jd/$1.pid" ] && job_alive "$(cat "$jd/$1.pid")" && die "$1 already runs (fault.sh clear first)"
  setsid "${@:2}" < /dev/null >> "$jd/$1.log" 2>&1 &
  echo $! > "$jd/$1.pid"
  echo "$jd/$1.pid"
}

flap() {
  local h=$1 p=$2 period=$3 duty=$4 dur=$5 dirn=${6:-both}
  local pf; pf=$(start_job "flap-$h" "$0" _flap "$h" "$p" "$period" "$duty" "$dur" "$dirn")
  echo "fault.sh: $h NIC $dirn flapping: $p% slower for $duty% of every ${period}s, for ${dur}s; pid file $pf"
}

flap_loop() {  # the background job of flap: bounded by cycles and by the clock, phases on the clock
  local h=$1 p=$2 period=$3 duty=$4 dur=$5 d n i t0 end
  local -A base
  for d in $(dirs_of "$6"); do base[$d]=$(rate_of "$h" "$d"); done
  n=$(awk -v a="$dur" -v t="$period" 'BEGIN { n = a / t; printf "%d", (n == int(n)) ? n : int(n) + 1 }')
  t0=$(now); end=$(awk -v t="$t0" -v a="$dur" 'BEGIN { printf "%.3f", t + a }')
  at() {  # the end of cycle $1's slow phase (F=duty) or of the whole cycle (F=100), at most the end
    awk -v t0="$t0" -v t="$period" -v i="$1" -v f="$2" -v e="$end" \
      'BEGIN { v = t0 + t * (i + f / 100); printf "%.3f", (v < e) ? v : e }'; }
  restore() { for d in "${!base[@]}"; do set_rate "$h" "$d" "${base[$d]}"; done; log_line "full $h (end)"; }
  trap 'restore; exit 0' TERM INT
  for ((i = 0; i < n; i++)); do
    awk -v t="$(now)" -v e="$end" 'BEGIN { exit !(t < e) }' || break
    for d in "${!base[@]}"; do set_rate "$h" "$d" "$(slower_than "${base[$d]}" "$p")"; done
    log_line "slow $h"; nap_until "$(at "$i" "$duty")"
    for d in "${!base[@]}"; do set_rate "$h" "$d" "${base[$d]}"; done
    log_line "full $h"; nap_until "$(at "$i" 100)"
  done
  trap - TERM INT
  log_line "done $h"
}

# Loss on the wire: where TCP cannot see the drop, so it loses the segment and must resend it.
# A drop in the sending stack (the output hook, a qdisc) returns an error to TCP, which retries
# at once as if nothing was lost: 1.5 % "egress loss" there cost nothing and resent nothing.
# Egress: the host's packets dropped as they arrive at its bridge port (the root namespace's
# netdev ingress hook on its veth peer); ingress: packets to it dropped as they arrive at its
# eth0 (netdev ingress in its namespace), before its IP stack.
loss_where() {  # HOST egress|ingress -> "NETNS-PREFIX TABLE CHAIN DEVICE"
  if [ "$2" = egress ]; then echo "- gdrfault-$name $1-egress ${name}v$(idx "$1")"
  else echo "gdrc-$1 gdrfault ingress eth0"; fi
}
in_ns() { if [ "$1" = - ]; then "${@:2}"; else ip netns exec "$1" "${@:2}"; fi; }

loss() {
  local h=$1 p=$2 dirn=${3:-both} n d ns t c dev
  n=$(awk -v p="$p" 'BEGIN { print int(p * 100 + 0.5) }')
  for d in $(dirs_of "$dirn"); do
    read -r ns t c dev <<< "$(loss_where "$h" "$d")"
    in_ns "$ns" nft add table netdev "$t"
    in_ns "$ns" nft add chain netdev "$t" "$c" "{ type filter hook ingress device $dev priority 0; policy accept; }"
    in_ns "$ns" nft flush chain netdev "$t" "$c"
    if [ "$n" -ge 10000 ]; then  # numgen's mod 10000 holds 0-9999: 100 % is no draw
      in_ns "$ns" nft add rule netdev "$t" "$c" counter drop
    else
      in_ns "$ns" nft add rule netdev "$t" "$c" numgen random mod 10000 '<' "$n" counter drop
    fi
    in_ns "$ns" nft add rule netdev "$t" "$c" counter
  done
  echo "fault.sh: $h drops $p% of its packets on the wire, $dirn ($n in 10000, nftables netdev ingress hooks)"
}

loss_clear() {  # HOST: its loss rules, both directions
  local d ns t c dev
  for d in egress ingress; do
    read -r ns t c dev <<< "$(loss_where "$1" "$d")"
    in_ns "$ns" nft delete chain netdev "$t" "$c" 2>/dev/null || true
  done
}

counters() {  # egress|ingress dropped passed, from the loss rules' counters
  local h=$1 d out="" ns t c dev
  host_ok "$h"
  for d in egress ingress; do
    read -r ns t c dev <<< "$(loss_where "$h" "$d")"
    out+=$(in_ns "$ns" nft list chain netdev "$t" "$c" 2>/dev/null | awk -v d="$d" -v h="$h" '
      /counter/ { for (i = 1; i < NF; i++) if ($i == "packets") v = $(i + 1); if (/drop/) dr = v; else ps = v }
      END { if (dr != "") printf "%s %s dropped %d passed %d (%.3f %%)\n", h, d, dr, ps, 100 * dr / ((dr + ps) ? dr + ps : 1) }' || true)
    out+=$'\n'
  done
  out=$(printf '%s' "$out" | sed '/^$/d')
  echo "${out:-$h: no loss rules}"
}

stall() {
  local p=$1 onset=$2 dur=$3
  local pf; pf=$(start_job stall "$0" _stall "$p" "$onset" "$dur")
  echo "fault.sh: every host's NIC, both ways, $p% slower from ${onset}s to $(awk -v a="$onset" -v b="$dur" 'BEGIN { print a + b }')s; pid file $pf"
}

stall_loop() {
  local p=$1 onset=$2 dur=$3 h d
  local -A base
  trap 'exit 0' TERM INT
  log_line "stall $p% in ${onset}s"; nap "$onset"
  while read -r h; do for d in egress ingress; do base[$h.$d]=$(rate_of "$h" "$d"); done; done < "$dir/hosts"
  restore() { local k; for k in "${!base[@]}"; do set_rate "${k%.*}" "${k##*.}" "${base[$k]}" || true; done; log_line "full (end)"; }
  trap 'restore; exit 0' TERM INT
  for k in "${!base[@]}"; do set_rate "${k%.*}" "${k##*.}" "$(slower_than "${base[$k]}" "$p")"; done
  log_line "slow all $p%"
  nap "$dur"
  trap - TERM INT
  restore
}

clear_jobs() {  # [HOST]: the background jobs (of HOST: its flap; without HOST every job)
  local f pid
  [ -d "$dir/jobs" ] || return 0
  for f in "$dir"/jobs/*.pid; do
    [ -e "$f" ] || continue
    [ $# -ge 1 ] && [ "$(basename "$f")" != "flap-$1.pid" ] && continue
    pid=$(cat "$f")
    [ "$pid" = "$PPID" ] && continue   # `at T clear`: not the job that runs this
    if job_alive "$pid"; then   # a session leader running this script's loop
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do job_alive "$pid" || break; sleep 0.1; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

# CMD ARGS...: the arguments' count, hosts and values, before anything changes; `at` checks its
# command so, before it waits (a fault it could not apply later failed in its log alone).
check() {
  local c=$1; shift
  case $c in
    nic) [ $# -eq 3 ] || die "usage: fault.sh nic HOST egress|ingress|both PCT"; conf; host_ok "$1"
         dirs_of "$2" > /dev/null; slow_ok "$3" ;;
    link) [ $# -eq 3 ] || die "usage: fault.sh link HOST_A HOST_B PCT|down"; conf; host_ok "$1"; host_ok "$2"
          [ "$1" != "$2" ] || die "link: two different hosts"; [ "$3" = down ] || slow_ok "$3" ;;
    cpu) [ $# -eq 2 ] || die "usage: fault.sh cpu HOST QUOTA_PCT"; conf; host_ok "$1"; pct_ok "$2"
         awk -v q="$2" 'BEGIN { exit !(q <= 100000) }' || die "cpu: QUOTA_PCT '$2': % of one CPU, 0-100000" ;;
    down|freeze|counters) [ $# -eq 1 ] || die "usage: fault.sh $c HOST"; conf; host_ok "$1" ;;
    flap) [ $# -eq 5 ] || [ $# -eq 6 ] || die "usage: fault.sh flap HOST PCT PERIOD_S DUTY_PCT DURATION_S [egress|ingress|both]"
          conf; host_ok "$1"; slow_ok "$2"; secs_ok "$3" 0.2; secs_ok "$5" 0.2; dirs_of "${6:-both}" > /dev/null
          [[ $4 =~ ^[0-9]+([.][0-9]+)?$ ]] && awk -v d="$4" 'BEGIN { exit !(d > 0 && d < 100) }' ||
            die "flap: DUTY_PCT '$4': the share of each period the NIC is slow, above 0 and below 100" ;;
    loss) [ $# -eq 2 ] || [ $# -eq 3 ] || die "usage: fault.sh loss HOST PCT [egress|ingress|both]"; conf; host_ok "$1"
          pct_ok "$2"; awk -v p="$2" 'BEGIN { exit !(p <= 100) }' || die "loss: PCT '$2' above 100"
          dirs_of "${3:-both}" > /dev/null ;;
    stall) [ $# -eq 3 ] || die "usage: fault.sh stall PCT ONSET_S DURATION_S"; conf; slow_ok "$1"; secs_ok "$2" 0
           secs_ok "$3" 0.2 ;;
    mtu) [ $# -eq 2 ] || die "usage: fault.sh mtu HOST BYTES"; conf; host_ok "$1"
         [[ $2 =~ ^[1-9][0-9]{1,4}$ ]] && [ "$2" -ge 68 ] && [ "$2" -le 65535 ] || die "mtu: '$2': bytes, 68-65535" ;;
    clear) [ $# -le 1 ] || die "usage: fault.sh clear [HOST]"; conf; [ $# -eq 0 ] || host_ok "$1" ;;
    at) [ $# -ge 2 ] || die "usage: fault.sh at ONSET_S COMMAND ARGS..."; conf; secs_ok "$1" 0
        case $2 in nic|link|cpu|down|freeze|flap|loss|stall|mtu|clear) ;; *) die "at: '$2' is not a fault" ;; esac
        check "${@:2}" ;;
  esac
}

cmd=${1:-}; shift || true
case $cmd in
  nic|link|cpu|down|freeze|flap|loss|counters|stall|mtu|clear|at) check "$cmd" "$@" ;;
esac
case $cmd in
  nic) nic "$@" ;;
  link) link "$@" ;;
  cpu) cpu "$@" ;;
  down) ip netns exec "gdrc-$1" ip link set eth0 down; echo "fault.sh: $1 NIC down" ;;
  freeze) for p in $(ip netns pids "gdrc-$1"); do kill -STOP "$p" 2>/dev/null || true; done
          echo "fault.sh: $1 frozen" ;;
  flap) flap "$@" ;;
  _flap) conf; flap_loop "$@" ;;
  loss) loss "$@" ;;
  counters) counters "$1" ;;
  stall) stall "$@" ;;
  _stall) conf; stall_loop "$@" ;;
  at) echo "fault.sh: in ${1}s: ${*:2}; pid file $(start_job "at-$$" "$0" _at "$@")" ;;
  _at) conf; trap 'exit 0' TERM INT; nap "$1"; trap - TERM INT; log_line "at: ${*:2}"; "$0" "${@:2}" ;;
  mtu) ip netns exec "gdrc-$1" ip link set eth0 mtu "$2"; echo "fault.sh: $1 eth0 MTU $2 (its peers 1500)" ;;
  clear) if [ $# -ge 1 ]; then clear_jobs "$1"; clear_host "$1"; else
           clear_jobs; while read -r h; do clear_host "$h"; done < "$dir/hosts"; fi; clear_cgroups ;;
  clear-jobs) clear_jobs ;;
  clear-cgroups) clear_cgroups ;;
  *) die "usage: fault.sh nic|link|cpu|down|freeze|flap|loss|counters|stall|mtu|clear|clear-jobs|clear-cgroups ... (see the header)" ;;
esac
