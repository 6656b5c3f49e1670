#!/usr/bin/env bash
# ctest install.version_dist: a jobs/dist.sh tarball (no .git) configures with
# the commit of HEAD, and without its .git-commit says "unknown" and warns.
#   usage: test_version_dist.sh SOURCE_DIR
set -euo pipefail
src=$(realpath "$1")
git -C "$src" rev-parse --git-dir > /dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
work=$(mktemp -d /tmp/gdr-dist.XXXXXX); trap 'rm -rf "$work"' EXIT
want=$(git -C "$src" rev-parse --short=12 HEAD)
tarball=$(bash "$src/jobs/dist.sh" "$work" 2> /dev/null)
tar xzf "$tarball" -C "$work"
top=$(echo "$work"/gdrbench-*/)
configure() { cmake -S "$top" -B "$work/b$1" -DGDR_WITH_CUDA=OFF -DGDR_BUILD_TESTS=OFF "${@:2}" 2>&1; }
got=$(configure 1 | sed -n 's/^-- gdrbench .*, commit //p')
[ "$got" = "$want" ] || { echo "FAIL: tarball configured with commit '$got', want $want"; exit 1; }
got=$(configure 2 -DGDR_GIT_COMMIT=cafe1234 | sed -n 's/^-- gdrbench .*, commit //p')
[ "$got" = cafe1234 ] || { echo "FAIL: -DGDR_GIT_COMMIT=cafe1234 gave '$got'"; exit 1; }
rm "$top/.git-commit"
out=$(configure 3)
grep -q "commit unknown" <<< "$out" && grep -q "no git checkout and no .git-commit" <<< "$out" \
  || { echo "FAIL: without .git-commit: $out"; exit 1; }
echo "ok: tarball -> $want, -D wins, no file -> unknown with a warning"
