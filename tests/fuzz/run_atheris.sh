#!/usr/bin/env bash
# Runs an atheris (Python libFuzzer) target for a bounded time:
#   run_atheris.sh TARGET.py CORPUS_DIR WORK_DIR [extra libFuzzer flags]
# Creates the venv $GDR_FUZZ_VENV (default WORK_DIR/../fuzz-venv) over
# Debian's /usr/bin/python3 with --system-site-packages (h5py, numpy from
# Debian) and installs tests/fuzz/requirements.txt (pinned) from PyPI once.
# Same bounds and artifacts as run_fuzzer.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=$1 corpus=$2 work=$3
shift 3
venv=${GDR_FUZZ_VENV:-$work/../fuzz-venv}
py=${GDR_PYTHON:-/usr/bin/python3}
if ! "$venv/bin/python" -c 'import atheris' 2>/dev/null ||
   ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
  rm -rf "$venv"
  "$py" -m venv --system-site-packages "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
mkdir -p "$work/corpus" "$work/artifacts"
set +e
"$venv/bin/python" "$target" -max_total_time="${GDR_FUZZ_SECONDS:-20}" \
  -timeout="${GDR_FUZZ_INPUT_TIMEOUT:-10}" -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "$corpus" 2>&1 | tail -n 60
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  echo "$(basename "$target"): FAILED (exit $rc); the input is in $work/artifacts/:" >&2
  ls -l "$work/artifacts/" >&2
  echo "reproduce: $venv/bin/python $target <that file>; once fixed, copy it into $corpus/" >&2
fi
exit "$rc"
