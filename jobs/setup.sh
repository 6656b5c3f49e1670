#!/usr/bin/env bash
# The README's first command: install what is missing of what building and
# the main job need (jobs/deps/debian-core.txt, and debian-analysis.txt for
# the analysis subcommands; tests/run_all.sh installs the rest), build the
# gdrbench binary alone (not the tests), and run the main job with this
# machine's defaults (host memory, every transport built in and usable here),
# printing the table and the HDF5 file's path.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/jobs/install-deps.sh" core analysis
"$top/jobs/build.sh" gdrbench
cd "$top"
# mpirun refuses root unless told; harmless for other users.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun -q --oversubscribe -np "${NP:-2}" "$top/build/gdrbench" run "$@"
