#!/bin/bash
# One ctest case of finding the slow node or link: two Soft-RoCE guests, 2 ranks each, a run
# (softroce_test.sh: the run, then its HDF5 file checked on the host), then
# `gdrbench suspects` on that file checked by check_suspects.py.
#
#   suspects_2node.sh BUILD OUTDIR "CHECK_H5 ARGS" "CHECK_SUSPECTS ARGS" [run.sh options] -- <gdrbench run arguments>
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 out=$2 check_h5=$3 check_suspects=$4
shift 4
"$here/softroce_test.sh" "$build" "$out" 4 "$check_h5" --nodes 2 --per-node 2 "$@"
# shellcheck disable=SC2086
/usr/bin/python3 "$here/check_suspects.py" "$build/gdrbench" "$out/result.h5" $check_suspects
