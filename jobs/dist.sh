#!/usr/bin/env bash
# Source tarball that knows its commit: git archive of HEAD plus a .git-commit
# file, which CMake reads where there is no .git (cmake/GdrVersion.cmake), so
# `gdrbench --version` and every result file name the commit.
#   usage: jobs/dist.sh [OUTDIR]    (default: the current folder)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath "${1:-.}")
cd "$top"
git rev-parse --git-dir > /dev/null 2>&1 || { echo "dist.sh: $top is not a git checkout" >&2; exit 1; }
version=$(sed -n 's/^project(gdrbench VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
commit=$(git rev-parse --short=12 HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || echo "dist.sh: warning: uncommitted changes are left out of the tarball" >&2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "$commit" > "$tmp/.git-commit"
name=gdrbench-$version-$commit
git archive --format=tar.gz --prefix="$name/" --add-file="$tmp/.git-commit" -o "$out/$name.tar.gz" HEAD
echo "$out/$name.tar.gz"
