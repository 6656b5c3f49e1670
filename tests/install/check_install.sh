#!/usr/bin/env bash
# Checks an installed gdrbench: the gdrbench on PATH (or $GDRBENCH) runs a small
# 2-rank job from an empty folder, and compare, report, history and stragglers
# read its files. Installed as PREFIX/share/gdrbench/tests/check_install.sh so a
# site can run it after deploying; tests/install/test_install.sh (ctest label
# install) runs it against an install prefix and the .deb.
#   usage: check_install.sh [WORKDIR]     (default: a new temporary folder)
set -euo pipefail
gdr=${GDRBENCH:-$(command -v gdrbench || true)}
[ -n "$gdr" ] || { echo "check_install: no gdrbench on PATH (set GDRBENCH)" >&2; exit 1; }
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step() { echo "check_install: $*"; }
fail() { echo "check_install: FAIL: $*" >&2; exit 1; }

step "$gdr --version"
ver=$("$gdr" --version) || fail "gdrbench --version"
echo "  $ver"
case $ver in *unknown*) fail "--version names no commit: $ver" ;; esac
commit=${ver##*(}; commit=${commit%)}

for n in a b; do
  step "mpirun -np 2 gdrbench run (file $n.h5)"
  mpirun -q -np 2 "$gdr" run -t allreduce -T mpi -e 1K -n 3 --reference none \
      --output "$work/$n.h5" > "$work/run_$n.txt" 2>&1 || { cat "$work/run_$n.txt" >&2; fail "run $n"; }
done
step "result file records commit $commit"
"${GDR_PYTHON:-/usr/bin/python3}" -c 'import h5py,sys; c=h5py.File(sys.argv[1],"r").attrs["git_commit"]; c=c.decode() if isinstance(c,bytes) else c; sys.exit(c!=sys.argv[2] and f"git_commit {c!r}")' "$work/a.h5" "$commit" \
  || fail "git_commit in a.h5 is not $commit"
step "compare";    "$gdr" compare a.h5 b.h5 > compare.txt || [ $? -eq 1 ] || fail "compare (see $work/compare.txt)"
step "report";     "$gdr" report a.h5 --html report.html > /dev/null || fail report
[ -s report.html ] || fail "report wrote no report.html"
step "history";    "$gdr" history a.h5 b.h5 --case test=allreduce,transport=mpi,bytes=1K > history.txt || fail history
step "stragglers"; "$gdr" stragglers a.h5 > stragglers.txt || fail stragglers
step "man page and bash completion"
GDRBENCH=$gdr bash "$(dirname "$(realpath "$0")")/check_docs.sh" "$(dirname "$(dirname "$(realpath "$gdr")")")" \
  || fail "man page or bash completion"
step "ok ($work)"
