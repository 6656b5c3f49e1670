#!/usr/bin/env bash
# One GPU test: runs `gdrbench run` under mpirun on CUDA memory and checks
# its JSON Lines: the exit status, at least one row on cuda memory (and of
# --want-transport / --want-reference when given), and #wrong == 0 in every
# row. Exits 77 (ctest: skipped) with the reason when this machine cannot
# run it: no GPU, or a transport this test needs is not usable here.
#
# usage: gpu_case.sh <gdrbench> <np> [--need-transport T] [--need-gpus N] [--want-reference R]
#                    [--want-established] -- <gdrbench run arguments>
# --want-established: every bw/bibw row of ours also has an established path and a %peak.
set -u
bin=$1; np=$2; shift 2
need=""; want_ref=""; gpus=1; established=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --need-transport) need=$2; shift 2 ;;
    --want-reference) want_ref=$2; shift 2 ;;
    --need-gpus) gpus=$2; shift 2 ;;
    --want-established) established=1; shift ;;
    *) echo "gpu_case.sh: unknown option $1"; exit 2 ;;
  esac
done
shift  # the --

listing=$("$bin" list 2>&1)
cuda=$(printf '%s\n' "$listing" | awk '/^memory kinds:/ {m=1; next} /^[a-z]/ {m=0} m && $1=="cuda" {$1=""; print}')
case $cuda in
  *" usable") ;;
  *) echo "SKIP: no usable GPU here (-m cuda:${cuda:- not built})"; exit 77 ;;
esac
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$have" -ge "$gpus" ] || { echo "SKIP: needs $gpus GPUs, this machine has $have"; exit 77; }
if [ -n "$need" ]; then
  line=$(printf '%s\n' "$listing" | awk -v t="$need" '/^transports:/ {m=1; next} /^[a-z]/ {m=0} m && $1==t')
  case $line in
    *"not usable"*|"") echo "SKIP: transport $need is not usable here: ${line:-not built}"; exit 77 ;;
  esac
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
launcher=(mpirun -np "$np")
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  launcher+=(--oversubscribe --bind-to none)
  [ "$(id -u)" = 0 ] && launcher+=(--allow-run-as-root)
fi
"${launcher[@]}" "$bin" run --timeout 30 "$@" --output "$dir/r.h5" --json "$dir/r.jsonl" >"$dir/out.txt" 2>&1
rc=$?
cat "$dir/out.txt"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -eq 0 ] || fail "gdrbench exited with status $rc"
[ -s "$dir/r.h5" ] || fail "no HDF5 file written"
rows=$(grep -c '"mem":"cuda"' "$dir/r.jsonl")
[ "$rows" -gt 0 ] || fail "no rows on cuda memory"
bad=$(grep -v '"wrong":0[,}]' "$dir/r.jsonl" | grep -c .)
[ "$bad" -eq 0 ] || fail "$bad rows with wrong elements: $(grep -v '"wrong":0[,}]' "$dir/r.jsonl" | head -3)"
if [ -n "$want_ref" ]; then
  grep -q "\"transport\":\"$want_ref\",\"reference\":true" "$dir/r.jsonl" || fail "no $want_ref reference row"
fi
if [ -n "$established" ]; then  # every bw/bibw row of ours: its path established and a %peak
  python3 - "$dir/r.jsonl" <<'PY' || fail "a device bw/bibw row without its verdict (above)"
import json, sys
bad = [r for r in map(json.loads, open(sys.argv[1])) if not r["reference"] and r["test"] in ("bw", "bibw")
       and (r.get("pct_peak") is None or r.get("path_unknown") or not r.get("path_taken"))]
for r in bad:
    print(f"{r['test']} {r['transport']} {r['bytes']} B: pct_peak {r.get('pct_peak')}, path {r.get('path_taken')!r}, "
          f"unknown {r.get('path_unknown')!r}")
sys.exit(1 if bad else 0)
PY
fi
echo "PASS: $rows rows on cuda memory, #wrong 0 in all"
