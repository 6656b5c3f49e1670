#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the
# main job with this machine's defaults (host memory, every transport built
# in and usable here), printing the table and the HDF5 file's path.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/jobs/install-deps.sh"
"$top/jobs/build.sh"
cd "$top"
# mpirun refuses root unless told; harmless for other users.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun -q --oversubscribe -np "${NP:-2}" "$top/build/gdrbench" run "$@"
