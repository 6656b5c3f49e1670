#!/usr/bin/env bash
# The cost of scale, on one machine with oversubscribed ranks:
# for each NP, one `gdrbench run` per pattern, and from each file's scale.*
# facts (src/sweep/runner.cpp, src/commands/run_command.cpp, src/outputs/hdf5_sink.cpp): bootstrap
# (MPI_Init to ranks known), connection set-up per transport and the peers
# connected, process start to the first case, peak RSS per rank, HDF5 write
# time per case. Then a log-log fit of each against NP and the model to 4096.
#   jobs/bench_scale.sh [NP ...]        (default 2 4 8 16 32)
# Env: GDRBENCH (default build/gdrbench), OUT (default a temp dir, kept),
# PATTERNS (default "rounds neighbor"), TRANSPORTS (default mpi,ucx).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
exe=${GDRBENCH:-$top/build/gdrbench}
out=${OUT:-$(mktemp -d /tmp/gdr-scale-XXXXXX)}
mkdir -p "$out"
nps=("$@"); [ ${#nps[@]} -gt 0 ] || nps=(2 4 8 16 32)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) before; files in $out"
for np in "${nps[@]}"; do
  for pat in ${PATTERNS:-rounds neighbor}; do
    f=$out/np${np}_$pat.h5
    # One small size, few iterations: set-up is what is measured, not the wire.
    mpirun -q --oversubscribe -np "$np" "$exe" run -t bw -T "${TRANSPORTS:-mpi,ucx}" -b 8 -e 8 -n 2 -w 0 \
      --window 1 --pattern "$pat" --timeout 600 --output "$f" --force >"$out/np${np}_$pat.log" 2>&1 ||
      { echo "np $np $pat failed: see $out/np${np}_$pat.log"; exit 1; }
  done
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg) after"
PYTHONPATH=$top/results ${PYTHON:-/usr/bin/python3} "$top/jobs/scale_model.py" "$out"/*.h5
