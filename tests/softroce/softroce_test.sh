#!/bin/bash
# One ctest case: boots the Soft-RoCE guest, runs gdrbench under mpirun with
# the given arguments, then checks the HDF5 file back on the host.
#
#   softroce_test.sh BUILD OUTDIR RANKS "CHECK ARGS" [run.sh options] -- <gdrbench run arguments>
#
# With --expect-failure in CHECK ARGS the run must fail (but not time out).
# With --within S among the run.sh options the run must end at most S seconds
# after the file .cut appears in OUTDIR (a --before/--node2 command touches
# it when it breaks something; both times are the host's clock).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 out=$2 ranks=$3 check_args=$4
shift 4
run_opts=() within=
while [[ $# -gt 0 && $1 != -- ]]; do
  if [[ $1 == --within ]]; then within=$2; shift 2; continue; fi
  run_opts+=("$1"); shift
done
[[ ${1:-} == -- ]] && shift

# A python that has h5py (a pyenv shim may come first in PATH and lack it).
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import h5py' 2>/dev/null; then py=$p; break; fi
done
[[ -n $py ]] || { echo "softroce_test: no python3 with h5py (apt-get install python3-h5py)"; exit 1; }

run() {
  rm -rf "$out"; mkdir -p "$out"
  rc=0
  "$here/run.sh" --build "$build" --results "$out" --ranks "$ranks" --timeout 500 \
    "${run_opts[@]}" -- --output result.h5 "$@" || rc=$?
}
run "$@"
# A fault case whose run failed before the fault was injected met a stalled
# TCG guest, not the fault (README: "Flakes"): one more try, said aloud.
if [[ -n $within && $rc -ne 0 && ! -f $out/.cut ]]; then
  echo "softroce_test: the run failed (exit $rc) before anything was broken; the guests stalled? retrying once"
  run "$@"
fi
if [[ $check_args == *--expect-failure* ]]; then
  [[ $rc -ne 0 && $rc -ne 124 && $rc -ne 125 ]] ||
    { echo "softroce_test: expected the run to fail cleanly, got exit $rc"; exit 1; }
elif [[ $rc -ne 0 ]]; then
  echo "softroce_test: the run exited $rc"; exit 1
fi
if [[ -n $within ]]; then
  [[ -f $out/.cut ]] || { echo "softroce_test: nothing was broken (no $out/.cut)"; exit 1; }
  rcfile=$(ls -t "$out"/.vm*/rc | sed -n 1p)
  took=$(( $(stat -c %Y "$rcfile") - $(stat -c %Y "$out/.cut") ))
  echo "softroce_test: the run ended $took s after the break (limit $within s)"
  [[ $took -le $within ]] || { echo "softroce_test: too slow to notice the break"; exit 1; }
fi
# shellcheck disable=SC2086
"$py" "$here/check_h5.py" "$out/result.h5" --ranks "$ranks" $check_args
