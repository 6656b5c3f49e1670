#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time:
#   run_fuzzer.sh FUZZER CORPUS_DIR WORK_DIR [extra libFuzzer flags]
# CORPUS_DIR (in the repository) is only read; inputs that reach new code go
# to WORK_DIR/corpus, a crash, leak or timeout to WORK_DIR/artifacts/ (and the
# test fails). GDR_FUZZ_SECONDS (default 20) bounds the run; one input may
# take at most GDR_FUZZ_INPUT_TIMEOUT seconds (default 10) before it counts
# as a hang.
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3
shift 3
mkdir -p "$work/corpus" "$work/artifacts"
name=$(basename "$fuzzer")
flags=(-max_total_time="${GDR_FUZZ_SECONDS:-20}" -timeout="${GDR_FUZZ_INPUT_TIMEOUT:-10}"
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/")
dict=$(dirname "$0")/$name.dict
[ -f "$dict" ] && flags+=(-dict="$dict")
# Sanitizers: the first report ends the run (the asan-ubsan preset builds
# with -fno-sanitize-recover=all too); see tests/sanitize/options.sh.
. "$(dirname "$0")/../sanitize/options.sh"
set +e
"$fuzzer" "${flags[@]}" "$@" "$work/corpus" "$corpus" 2>&1 | tail -n 60
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  echo "$name: FAILED (exit $rc); the input is in $work/artifacts/:" >&2
  ls -l "$work/artifacts/" >&2
  echo "reproduce: $fuzzer <that file>; once fixed, copy it into $corpus/ as a regression" >&2
fi
exit "$rc"
