#!/bin/bash
# Guest side of jobs/bench_verbs_vs_perftest.sh: runs inside ONE Soft-RoCE
# guest (vm.sh) perftest's ib_write_bw / ib_write_lat and gdrbench's verbs bw /
# latency on the same devices and sizes, and leaves the raw outputs in OUT.
#
#   bench_guest.sh OUT GDRBENCH
#
# Settings come from the environment (the host script sets them):
#   BW_SIZES, LAT_SIZES   sizes in bytes, space separated (each list geometric
#                         with BW_FACTOR / LAT_FACTOR, so gdrbench's sweep
#                         -b FIRST -e LAST -f FACTOR gives the same sizes)
#   WINDOW                perftest --tx-depth and gdrbench --window (same value)
#   BW_ITERS              gdrbench bw iterations (perftest -n = BW_ITERS*WINDOW,
#                         the same number of messages)
#   LAT_ITERS             latency exchanges, both tools
#   SERVER_DEV CLIENT_DEV perftest server / client device; gdrbench rank 1 /
#                         rank 0, so the data flows CLIENT_DEV -> SERVER_DEV
#                         in both tools (rank 0 is the bw sender)
#   DIAG_SIZE             if set, also ib_write_bw at this size with a busy
#                         loop on the other vCPU (a receiver that spins, as
#                         gdrbench's does, while ib_write_bw's server sleeps)
#                         and ib_send_bw (its server polls its CQ)
# Files: perftest_{bw,lat}_SIZE.{client,server}.txt, gdr_{bw,lat}.{jsonl,h5,txt},
# diag_{write_bw_spin,send_bw}_SIZE.*.txt.
# perftest converts its rdtsc cycles with a CPU MHz it estimates; under
# emulation that estimate sometimes fails (inf/nan in the row): rerun then.
set -uo pipefail
out=$1 gdr=$2
: "${BW_SIZES:?}" "${LAT_SIZES:?}" "${BW_FACTOR:?}" "${LAT_FACTOR:?}"
: "${WINDOW:=64}" "${BW_ITERS:=10}" "${LAT_ITERS:=1000}"
: "${SERVER_DEV:=rxe0}" "${CLIENT_DEV:=rxe1}" "${WARMUP:=1}"
mkdir -p "$out"
port=18600
status=0
stamp() { echo "[$(date +%T)] $*"; }

# One perftest server/client pair, both in this guest, out-of-band TCP over
# 127.0.0.1. The client is retried until the server listens.
perftest_pair() {  # tool size file-stem args...
  local tool=$1 size=$2 stem=$3; shift 3
  port=$((port + 1))
  timeout 120 "$tool" -d "$SERVER_DEV" -x 0 -p "$port" -s "$size" "$@" \
    >"$stem.server.txt" 2>&1 &
  local spid=$! rc=1 try
  for try in $(seq 1 40); do
    sleep 0.5
    kill -0 "$spid" 2>/dev/null || break
    timeout 120 "$tool" -d "$CLIENT_DEV" -x 0 -p "$port" -s "$size" "$@" 127.0.0.1 \
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
    grep -E "^ +$2 +" "$3.client.txt" | grep -qiE "inf|nan" || return 0
    [[ $try == 3 ]] && return 0
    stamp "$1 -s $2: perftest's cycle-to-time conversion failed (inf/nan); rerun"
    mv "$3.client.txt" "$3.client.try$try.txt"
  done
}

first() { echo "$1"; }
last() { echo "${!#}"; }

stamp "perftest ib_write_lat: sizes $LAT_SIZES, -n $LAT_ITERS"
for s in $LAT_SIZES; do
  perftest ib_write_lat "$s" "$out/perftest_lat_$s" -n "$LAT_ITERS"
  grep -E "^ +$s +" "$out/perftest_lat_$s.client.txt" || true
done

# gdrbench: rank 0 on CLIENT_DEV (sender of bw, initiator of latency), rank 1
# on SERVER_DEV, one app context per rank (as run.sh --hcas does).
gdr_run() {  # stem args...
  local stem=$1; shift
  timeout 240 mpirun --allow-run-as-root \
    -np 1 env GDR_VERBS_HCA="$CLIENT_DEV" "$gdr" run "$@" --output "$stem.h5" --json "$stem.jsonl" : \
    -np 1 env GDR_VERBS_HCA="$SERVER_DEV" "$gdr" run "$@" --output "$stem.h5" --json "$stem.jsonl" \
    >"$stem.txt" 2>&1 || { stamp "FAILED: gdrbench $* (see $stem.txt)"; status=1; }
  cat "$stem.txt"
}
# shellcheck disable=SC2086
stamp "gdrbench latency: sizes $LAT_SIZES, -n $LAT_ITERS"
gdr_run "$out/gdr_lat" -T verbs -t latency --gid-index 0 --reference none \
  -b "$(first $LAT_SIZES)" -e "$(last $LAT_SIZES)" -f "$LAT_FACTOR" -n "$LAT_ITERS" -w 20
stamp "perftest ib_write_bw: sizes $BW_SIZES, -t $WINDOW, -n $((BW_ITERS * WINDOW))"
for s in $BW_SIZES; do
  perftest ib_write_bw "$s" "$out/perftest_bw_$s" -t "$WINDOW" -n "$((BW_ITERS * WINDOW))"
  grep -E "^ +$s +" "$out/perftest_bw_$s.client.txt" || true
done

# shellcheck disable=SC2086
stamp "gdrbench bw: sizes $BW_SIZES, --window $WINDOW, -n $BW_ITERS"
gdr_run "$out/gdr_bw" -T verbs -t bw --gid-index 0 --reference none --window "$WINDOW" \
  -b "$(first $BW_SIZES)" -e "$(last $BW_SIZES)" -f "$BW_FACTOR" -n "$BW_ITERS" -w "$WARMUP"
if [[ -n ${DIAG_SIZE:-} ]]; then
  stamp "diagnostic: ib_write_bw -s $DIAG_SIZE with a busy loop beside it; ib_send_bw -s $DIAG_SIZE"
  sh -c 'while :; do :; done' &
  spin=$!
  perftest ib_write_bw "$DIAG_SIZE" "$out/diag_write_bw_spin_$DIAG_SIZE" -t "$WINDOW" -n "$((BW_ITERS * WINDOW))"
  kill "$spin"; wait "$spin" 2>/dev/null
  grep -E "^ +$DIAG_SIZE +" "$out/diag_write_bw_spin_$DIAG_SIZE.client.txt" || true
  perftest ib_send_bw "$DIAG_SIZE" "$out/diag_send_bw_$DIAG_SIZE" -t "$WINDOW" -n "$((BW_ITERS * WINDOW))"
  grep -E "^ +$DIAG_SIZE +" "$out/diag_send_bw_$DIAG_SIZE.client.txt" || true
fi
stamp "done (status $status)"
exit $status
