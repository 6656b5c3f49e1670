#!/usr/bin/env bash
# jobs/mpirun-hostfile.sh on this host: a hostfile naming localhost, 2 ranks,
# and the HDF5 file checked (2 ranks on this host, local ranks 0 and 1).
#
#   mpirun-hostfile-test.sh GDRBENCH OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -eq 2 ]] || { echo "usage: $0 GDRBENCH OUT_DIR" >&2; exit 2; }
out=$2/mpirun-hostfile
rm -rf "$out"; mkdir -p "$out"
printf '# test hostfile\nlocalhost slots=2   # comment\n\n' > "$out/hosts"
export GDRBENCH=$1 GDR_PPN=2 GDR_MPIRUN_ARGS=--oversubscribe
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 150 "$here/../../jobs/mpirun-hostfile.sh" "$out/hosts" \
  -t allreduce,latency -e 4K -f 4 -n 3 -w 1 --output "$out/run.h5"
/usr/bin/python3 "$here/check_h5.py" "$out/run.h5" --ranks 2 --no-slurm --host "$(hostname -s)"
