# Sanitizer run-time options for the asan-ubsan build (sourced by
# tests/run_all.sh and tests/fuzz/run_fuzzer.sh; source it yourself to run
# build-asan/ binaries by hand). Anything already set in the environment wins.
#
# detect_leaks=0: Open MPI (libmpi, libopen-pal, PMIx, hwloc) and UCX keep
# allocations to the end of the process by design and never free them
# (MPI_Finalize does not release everything; UCX's memory hooks and
# registration caches live until exit), so LeakSanitizer reports dozens of
# their "leaks" at every rank's exit, none of them ours. Leaks in our own
# code are caught instead by ASan's use-after-free/double-free checks and
# by RAII everywhere. The fuzzers run leak detection themselves through
# libFuzzer (-detect_leaks) only when ASAN_OPTIONS asks; here it is off too
# because the option parser reaches libibverbs/UCX probing.
_gdr_sanitize_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:symbolize=1}"
: "${UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:suppressions=$_gdr_sanitize_dir/ubsan.supp}"
export ASAN_OPTIONS UBSAN_OPTIONS
unset _gdr_sanitize_dir
