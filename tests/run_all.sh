#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, and runs the
# whole test suite (every ctest label: unit, contract, mpi, staged, ucx, jobs,
# analysis, softroce, slurm, cluster, fuzz, install, docs; gpu tests report
# "skipped" without a GPU; docs/developers/testing.md says what each holds).
# Then the sanitizer phase: builds the asan-ubsan preset (clang, ASan +
# UBSan, no CUDA) into build-asan/ and runs its labels unit, sanitize
# (real mpirun runs of mpi and ucx at 2 ranks) and fuzz (the libFuzzer
# targets, GDR_FUZZ_SECONDS each, two at a time). Without ctest arguments the
# main phase runs in two passes: the tests labelled `parallel` two at a time,
# then the rest one at a time. GDR_SANITIZERS=1 always runs that phase,
# 0 never; the default runs it only when no ctest arguments are given.
# Prints how long each part took. Exit status: 0 only when both phases pass.
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
if [ $# -eq 0 ]; then
  # Label `parallel`: Python analysis, the docs' claims, job-script checks and the
  # Python fuzzer; none judges a timing, holds a fixture or touches anything
  # machine-wide, so two share the 2 cores. The rest (Soft-RoCE guests, timing
  # verdicts, 4-rank mpirun, Slurm, namespaces) run alone, in declared order.
  ctest --output-on-failure --timeout 900 -j2 -L '^parallel$'
  rc=$?
  stamp "parallel tests done (ctest exit $rc)"
  ctest --output-on-failure --timeout 900 -j"${CTEST_JOBS:-1}" -LE '^parallel$'
  r=$?; [ $rc -eq 0 ] && rc=$r
else
  ctest --output-on-failure --timeout 900 -j"${CTEST_JOBS:-1}" "$@"
  rc=$?
fi
stamp "tests done (ctest exit $rc)"

sanitizers=${GDR_SANITIZERS:-auto}
[ "$sanitizers" = auto ] && { [ $# -eq 0 ] && sanitizers=1 || sanitizers=0; }
if [ "$sanitizers" = 1 ]; then
  cd "$top"
  if cmake --preset asan-ubsan >/dev/null && cmake --build --preset asan-ubsan -j"$(nproc)" >/dev/null; then
    stamp "asan-ubsan built (build-asan/)"
    . "$top/tests/sanitize/options.sh"
    ctest --test-dir "$top/build-asan" --output-on-failure --timeout 900 -L 'unit|sanitize'
    src=$?
    # The libFuzzer runs two at a time: each is one process on one core for
    # GDR_FUZZ_SECONDS, so on 2 cores each gets the inputs it gets alone, in
    # 3 slots of time instead of 5.
    ctest --test-dir "$top/build-asan" --output-on-failure --timeout 900 -L fuzz -j2 || src=1
    stamp "asan-ubsan tests done (ctest exit $src)"
  else
    src=1
    stamp "asan-ubsan build FAILED"
  fi
  [ $rc -eq 0 ] && rc=$src
fi
exit $rc
