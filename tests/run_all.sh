#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, and runs the
# whole test suite (every ctest label: unit, mpi, jobs, staged, analysis,
# doctor, softroce, slurm; gpu tests report "skipped" without a GPU).
# Prints how long each part took. Exit status: ctest's.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
stamp() { echo "== $(($(date +%s) - start)) s: $*"; }
"$top/jobs/install-deps.sh" || exit 1
stamp "dependencies present"
"$top/jobs/build.sh" || exit 1
stamp "built"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$top/build"
ctest --output-on-failure --timeout 900 -j"${CTEST_JOBS:-1}" "$@"
rc=$?
stamp "tests done (ctest exit $rc)"
exit $rc
