# Sanitizer run-time options for the asan-ubsan build (sourced by
# tests/run_all.sh and tests/fuzz/run_fuzzer.sh; source it yourself to run
# build-asan/ binaries by hand). Anything already set in the environment wins.
#
# detect_leaks=0: Open MPI (libmpi, libopen-pal, PMIx, hwloc) and UCX keep
# allocations until the process ends by design (MPI_Finalize does not free
# everything; UCX's registration caches and memory hooks live to exit), so
# LeakSanitizer reports their "leaks" at every rank's exit (measured: a
# 2-rank `run -T mpi,ucx -t allreduce`, 37 reports, ~121 KB in ~3350
# allocations per rank, not one with a gdrbench frame), and a suppressions
# list of their internals would rot with every Debian update. ASan's use-after-free, double-free and overflow
# checks stay on; gdrbench owns its memory through RAII.
_gdr_sanitize_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:symbolize=1}"
: "${UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:suppressions=$_gdr_sanitize_dir/ubsan.supp}"
export ASAN_OPTIONS UBSAN_OPTIONS
# Readable stacks (llvm-14 from jobs/deps/debian-fuzz.txt).
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
fi
unset _gdr_sanitize_dir
