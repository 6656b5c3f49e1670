#!/bin/bash
# One ctest case: boots the Soft-RoCE guest, runs gdrbench under mpirun with
# the given arguments, then checks the HDF5 file back on the host.
#
#   softroce_test.sh BUILD OUTDIR RANKS "CHECK ARGS" -- <gdrbench run arguments>
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 out=$2 ranks=$3 check_args=$4
shift 4
[[ ${1:-} == -- ]] && shift

# A python that has h5py (a pyenv shim may come first in PATH and lack it).
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import h5py' 2>/dev/null; then py=$p; break; fi
done
[[ -n $py ]] || { echo "softroce_test: no python3 with h5py (apt-get install python3-h5py)"; exit 1; }

rm -rf "$out"; mkdir -p "$out"
"$here/run.sh" --build "$build" --results "$out" --ranks "$ranks" --timeout 500 -- \
  --output /results/result.h5 "$@"
# shellcheck disable=SC2086
"$py" "$here/check_h5.py" "$out/result.h5" --ranks "$ranks" $check_args
