#!/bin/bash
# Guest side of jobs/bench_verbs_vs_perftest.sh: runs inside ONE Soft-RoCE
# guest (vm.sh) each gdrbench verbs mode beside the perftest tool of the same
# shape, on the same devices and sizes, REPEAT times, and leaves the raw
# outputs in OUT/rep<R>/.
#
#   bench_guest.sh OUT GDRBENCH
#
# Like with like (--verbs-mode, transports/verbs/README.md#modes):
#   ib_write_lat  <-> latency --verbs-mode poll   (receiver polls the last byte)
#   ib_send_lat   <-> latency --verbs-mode imm    (receiver polls its CQ)
#   ib_write_bw   <-> bw --verbs-mode write       (receiver idle, one immediate per window)
#   ib_send_bw    <-> bw --verbs-mode imm         (a completion per message)
# Each pair runs back to back, in ABBA order over the repeats (odd repeats
# perftest first, even ones gdrbench first), so a change of load on the host
# hits both alike and neither always runs first.
#
# Settings come from the environment (the host script sets them):
#   BW_SIZES, LAT_SIZES   sizes in bytes, space separated (each list geometric
#                         with BW_FACTOR / LAT_FACTOR, so gdrbench's sweep
#                         -b FIRST -e LAST -f FACTOR gives the same sizes)
#   WINDOW                perftest --tx-depth and gdrbench --window (same value)
#   BW_ITERS              gdrbench bw iterations (perftest -n = BW_ITERS*WINDOW,
#                         the same number of messages)
#   LAT_ITERS             latency exchanges, both tools
#   REPEAT                how many times the whole set runs (the spread)
#   FASTPATHS             1: also each fast path off against the default, at
#                         FP_LAT_SIZE (latency, imm: inline) and FP_BW_SIZE
#                         (bw: write with signaling / postlist off, imm with
#                         receive batches off); and the other wait than the
#                         default (latency imm: GDR_VERBS_WAIT=event; bw
#                         write, event by default on rxe: =poll, at
#                         FP_BW_SIZE and FP_BIG_SIZE)
#   PARTS                 which pairs run: "lat bw" (default), or one of them
#   SERVER_DEV CLIENT_DEV perftest server / client device; gdrbench rank 1 /
#                         rank 0, so the data flows CLIENT_DEV -> SERVER_DEV
#                         in both tools (rank 0 is the bw sender)
#   NODES                 1 (one guest, rxe1 -> rxe0 over a veth pair) or 2
#                         (tests/softroce/two_nodes.sh --command: this script
#                         runs in node1; perftest's server runs in node2 through
#                         relay.sh, its client here against node2's 169.254.67.2;
#                         gdrbench rank 0 in node1, rank 1 in node2; rxe0 on
#                         both, so the data flows node1 -> node2 in both tools)
# Files per repeat: perftest_<tool>_<size>.{client,server}.txt,
# gdr_<lat|bw>_<mode>.{h5,txt}, fp_<name>_{on,off}.{h5,txt}.
# perftest converts its rdtsc cycles with a CPU MHz it estimates; under
# emulation that estimate sometimes fails (inf/nan in the row): rerun then.
set -uo pipefail
root=$1 gdr=$2
: "${BW_SIZES:?}" "${LAT_SIZES:?}" "${BW_FACTOR:?}" "${LAT_FACTOR:?}"
: "${WINDOW:=64}" "${BW_ITERS:=10}" "${LAT_ITERS:=1000}" "${REPEAT:=2}" "${FASTPATHS:=1}"
: "${NODES:=1}" "${WARMUP:=1}" "${PARTS:=lat bw}"
if [[ $NODES == 2 ]]; then : "${SERVER_DEV:=rxe0}" "${CLIENT_DEV:=rxe0}"
else : "${SERVER_DEV:=rxe0}" "${CLIENT_DEV:=rxe1}"; fi
relay=$(cd "$(dirname "$0")" && pwd)/relay.sh
server_host=127.0.0.1
[[ $NODES == 2 ]] && server_host=169.254.67.2
: "${FP_LAT_SIZE:=8}" "${FP_BW_SIZE:=4096}" "${FP_BIG_SIZE:=1048576}"
port=18600
status=0
stamp() { echo "[$(date +%T)] $*"; }

# One perftest server/client pair, out-of-band TCP over 127.0.0.1 (one
# guest) or to node2's link-local address (two guests; the server runs in
# node2 through relay.sh, whose client here lasts as long as the server).
# The client is retried until the server listens.
perftest_pair() {  # tool size file-stem args...
  local tool=$1 size=$2 stem=$3; shift 3
  port=$((port + 1))
  if [[ $NODES == 2 ]]; then
    "$relay" node2 "timeout 120 $tool -d $SERVER_DEV -x 0 -p $port -s $size $* 2>&1" \
      >"$stem.server.txt" 2>&1 &
  else
    timeout 120 "$tool" -d "$SERVER_DEV" -x 0 -p "$port" -s "$size" "$@" \
      >"$stem.server.txt" 2>&1 &
  fi
  local spid=$! rc=1 try
  for try in $(seq 1 40); do
    sleep 0.5
    kill -0 "$spid" 2>/dev/null || break
    timeout 120 "$tool" -d "$CLIENT_DEV" -x 0 -p "$port" -s "$size" "$@" "$server_host" \
      >"$stem.client.txt" 2>&1 && { rc=0; break; }
    grep -q "Couldn't connect\|Unable to open file descriptor" "$stem.client.txt" || break
  done
  wait "$spid" || rc=1
  [[ $rc == 0 ]] || { stamp "FAILED: $tool -s $size (see $stem.*.txt)"; status=1; }
  return $rc
}
# perftest_pair, rerun (up to 3 tries) while the result row reads inf or nan.
perftest() {  # tool size file-stem args...
  local try
  for try in 1 2 3; do
    perftest_pair "$@" || return
    grep -qiE "inf|nan" <<< "$(grep -E "^ +$2 +" "$3.client.txt")" || return 0
    [[ $try == 3 ]] && return 0
    stamp "$1 -s $2: perftest's cycle-to-time conversion failed (inf/nan); rerun"
    mv "$3.client.txt" "$3.client.try$try.txt"
  done
}

first() { echo "$1"; }
order() { (($1 % 2)) && echo "perftest first" || echo "gdrbench first"; }
last() { echo "${!#}"; }

# gdrbench: rank 0 on CLIENT_DEV (sender of bw, initiator of latency), rank 1
# on SERVER_DEV, one app context per rank (as run.sh --hcas does); with two
# nodes rank 0 in node1, rank 1 in node2. Extra environment (a fast path
# off) goes first: NAME=VALUE... -- stem args...
gdr_run() {
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  local stem=$1; shift
  local where=(-np 1 env "${envs[@]}" GDR_VERBS_HCA="$CLIENT_DEV" "$gdr" run "$@" --output "$stem.h5" :
               -np 1 env "${envs[@]}" GDR_VERBS_HCA="$SERVER_DEV" "$gdr" run "$@" --output "$stem.h5")
  [[ $NODES == 2 ]] &&
    where=(--host node1,node2 -np 2 env "${envs[@]}" GDR_VERBS_HCA="$SERVER_DEV" "$gdr" run "$@" --output "$stem.h5")
  # Not bound by default, as perftest's processes (BIND=core: Open MPI's own default for 2 ranks).
  timeout 240 mpirun --allow-run-as-root --bind-to "${BIND:-none}" "${where[@]}" \
    >"$stem.txt" 2>&1 || { stamp "FAILED: gdrbench $* (see $stem.txt)"; status=1; }
  grep -E "latency:|bw:" "$stem.txt"
}
lat_args() { echo -T verbs -t latency --gid-index 0 --reference none -n "$LAT_ITERS" -w 20; }
bw_args() { echo -T verbs -t bw --gid-index 0 --reference none --window "$WINDOW" -n "$BW_ITERS" -w "$WARMUP"; }

for rep in $(seq 1 "$REPEAT"); do
  out=$root/rep$rep
  mkdir -p "$out"
  stamp "repeat $rep of $REPEAT"
  lat_pairs=() bw_pairs=()
  [[ " $PARTS " == *" lat "* ]] && lat_pairs=("ib_write_lat poll" "ib_send_lat imm")
  [[ " $PARTS " == *" bw "* ]] && bw_pairs=("ib_write_bw write" "ib_send_bw imm")
  for pair in "${lat_pairs[@]}"; do
    read -r tool mode <<<"$pair"
    stamp "$tool: sizes $LAT_SIZES, -n $LAT_ITERS; and gdrbench latency --verbs-mode $mode ($(order $rep))"
    pt() {
      for s in $LAT_SIZES; do
        perftest "$tool" "$s" "$out/perftest_${tool}_$s" -n "$LAT_ITERS"
        grep -E "^ +$s +" "$out/perftest_${tool}_$s.client.txt" || true
      done
    }
    # shellcheck disable=SC2046
    gd() { gdr_run -- "$out/gdr_lat_$mode" $(lat_args) --verbs-mode "$mode" \
             -b "$(first $LAT_SIZES)" -e "$(last $LAT_SIZES)" -f "$LAT_FACTOR"; }
    if ((rep % 2)); then pt; gd; else gd; pt; fi
  done
  for pair in "${bw_pairs[@]}"; do
    read -r tool mode <<<"$pair"
    stamp "$tool: sizes $BW_SIZES, -t $WINDOW, -n $((BW_ITERS * WINDOW)); and gdrbench bw --verbs-mode $mode ($(order $rep))"
    pt() {
      for s in $BW_SIZES; do
        perftest "$tool" "$s" "$out/perftest_${tool}_$s" -t "$WINDOW" -n "$((BW_ITERS * WINDOW))"
        grep -E "^ +$s +" "$out/perftest_${tool}_$s.client.txt" || true
      done
    }
    # shellcheck disable=SC2046
    gd() { gdr_run -- "$out/gdr_bw_$mode" $(bw_args) --verbs-mode "$mode" \
             -b "$(first $BW_SIZES)" -e "$(last $BW_SIZES)" -f "$BW_FACTOR"; }
    if ((rep % 2)); then pt; gd; else gd; pt; fi
  done
  if [[ $FASTPATHS == 1 ]]; then
    # Each fast path off against the same shape with all on, as its own pair
    # in ABBA order (odd repeats on first): a run's place in the block must
    # not decide (with "on" always first, every "off" read faster).
    stamp "fast paths: latency at $FP_LAT_SIZE B, bw at $FP_BW_SIZE / $FP_BIG_SIZE B, each on and off ($( ((rep % 2)) && echo on || echo off) first)"
    fp() {  # [OFF_ARGS="args the off run adds"] [OFF_BIND=core] fp name ENV=VALUE|"" test-args...
      local name=$1 env=$2; shift 2
      # shellcheck disable=SC2086
      local on=(gdr_run -- "$out/fp_${name}_on" "$@") off=(gdr_run ${env:+"$env"} -- "$out/fp_${name}_off" "$@" ${OFF_ARGS:-})
      local off_bind=${OFF_BIND:-${BIND:-none}}
      if ((rep % 2)); then "${on[@]}"; BIND=$off_bind "${off[@]}"; else BIND=$off_bind "${off[@]}"; "${on[@]}"; fi
    }
    lat_imm=(--verbs-mode imm -b "$FP_LAT_SIZE" -e "$FP_LAT_SIZE")
    lat_poll=(--verbs-mode poll -b "$FP_LAT_SIZE" -e "$FP_LAT_SIZE")
    bw_write=(--verbs-mode write -b "$FP_BW_SIZE" -e "$FP_BW_SIZE")
    bw_imm=(--verbs-mode imm -b "$FP_BW_SIZE" -e "$FP_BW_SIZE")
    big_write=(--verbs-mode write -b "$FP_BIG_SIZE" -e "$FP_BIG_SIZE")
    # shellcheck disable=SC2046
    if [[ " $PARTS " == *" lat "* ]]; then
      fp lat_noinline GDR_VERBS_INLINE=0 $(lat_args) "${lat_imm[@]}"
      fp lat_noeager GDR_VERBS_EAGER=0 $(lat_args) "${lat_imm[@]}"
      fp lat_poll_noeager GDR_VERBS_EAGER=0 $(lat_args) "${lat_poll[@]}"
      fp lat_noyield GDR_VERBS_YIELD=0 $(lat_args) "${lat_imm[@]}"
      # mpirun --bind-to core (Open MPI's default for 2 ranks) against unbound
      OFF_BIND=core fp lat_imm_bound "" $(lat_args) "${lat_imm[@]}"
      OFF_BIND=core fp lat_poll_bound "" $(lat_args) "${lat_poll[@]}"
      # the other way to wait than imm's default (spin): sleep
      fp lat_event GDR_VERBS_WAIT=event $(lat_args) "${lat_imm[@]}"
    fi
    # shellcheck disable=SC2046
    if [[ " $PARTS " == *" bw "* ]]; then
      fp bw_write_signal_all GDR_VERBS_SIGNAL_EVERY=1 $(bw_args) "${bw_write[@]}"
      fp bw_write_nopostlist GDR_VERBS_POSTLIST=0 $(bw_args) "${bw_write[@]}"
      fp bw_imm_norecvbatch GDR_VERBS_RECV_BATCH=0 $(bw_args) "${bw_imm[@]}"
      fp bw_imm_noyield GDR_VERBS_YIELD=0 $(bw_args) "${bw_imm[@]}"
      # write on rxe sleeps by default: spinning instead
      fp bw_write_poll GDR_VERBS_WAIT=poll $(bw_args) "${bw_write[@]}"
      fp bw_write_big_poll GDR_VERBS_WAIT=poll $(bw_args) "${big_write[@]}"
      # perftest's footprint, one buffer a side written over and over (the
      # default: distinct slots within 4 MiB, every message checked)
      OFF_ARGS="--slots 1" fp bw_write_big_slots1 "" $(bw_args) "${big_write[@]}"
    fi
  fi
done
stamp "done (status $status)"
exit $status
