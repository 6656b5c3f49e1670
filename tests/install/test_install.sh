#!/usr/bin/env bash
# ctest install: deploys gdrbench three ways and checks each from outside the
# source tree with check_install.sh:
#   1. cmake --install into a prefix, copied elsewhere (relocatable), run with
#      the source and build folders hidden (unshare -m, tmpfs over them);
#   2. the Debian package (cpack -G DEB, dpkg -i, removed again by a trap);
#   3. the environment module: module use + module load puts gdrbench on PATH.
#   usage: test_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(realpath "$1"); build=$(realpath "$2")
work=$(mktemp -d /tmp/gdr-install.XXXXXX)
deb_installed=0
cleanup() {
  [ $deb_installed -eq 1 ] && { dpkg -r gdrbench > /dev/null || echo "test_install: dpkg -r gdrbench failed" >&2; }
  rm -rf "$work"
}
trap cleanup EXIT
say() { echo "== test_install: [${SECONDS}s] $*"; }
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }
# A PATH with nothing of the source or build folder on it.
clean_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset GDR_ANALYSIS_DIR PYTHONPATH

say "cmake --install into $work/p1, then copied to $work/moved"
cmake --install "$build" --prefix "$work/p1" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
cp -a "$work/p1" "$work/moved" && rm -rf "$work/p1"
p=$work/moved
for f in bin/gdrbench share/gdrbench/gdranalysis/__main__.py share/gdrbench/jobs/allreduce.sbatch \
         share/gdrbench/tests/check_install.sh share/modulefiles/gdrbench share/doc/gdrbench/schema-and-analysis.md; do
  [ -e "$p/$f" ] || fail "install tree lacks $f"
done
say "no source or build path in the installed binary"
for d in "$src" "$build"; do
  if grep -qaF "$d" "$p/bin/gdrbench"; then fail "bin/gdrbench contains $d"; fi
done
if ldd "$p/bin/gdrbench" | grep -E "/usr/local/cuda|not found"; then
  fail "bin/gdrbench needs a library from outside Debian's paths (above)"
fi

say "run from the moved prefix, source and build folders hidden"
run_hidden() {  # run "$@" with tmpfs over the source and build folders
  if unshare -m true 2> /dev/null; then
    unshare -m bash -c 'mount -t tmpfs none "$1" && mount -t tmpfs none "$2" 2>/dev/null
      [ ! -e "$1/CMakeLists.txt" ] || { echo "test_install: the source folder is still visible" >&2; exit 1; }
      shift 2; exec "$@"' \
      _ "$src" "$build" "$@"
  else
    echo "test_install: unshare -m not permitted here: source tree left visible (the grep above still holds)"
    "$@"
  fi
}
(cd "$work" && PATH=$p/bin:$clean_path run_hidden bash "$p/share/gdrbench/tests/check_install.sh" "$work/run-prefix") \
  || fail "check_install.sh from the install prefix"

say "environment module"
init=/usr/share/modules/init/bash
[ -r "$init" ] || fail "no $init: install environment-modules (jobs/deps/debian-install.txt)"
got=$(env -i HOME="$HOME" PATH=$clean_path bash -c ". $init && module use '$p/share/modulefiles' && module load gdrbench && command -v gdrbench && echo \"\$GDRBENCH_ROOT\"")
[ "$(sed -n 1p <<< "$got")" = "$p/bin/gdrbench" ] || fail "module load gdrbench: gdrbench on PATH is '$got', not $p/bin/gdrbench"
[ "$(echo "$got" | tail -1)" = "$p" ] || fail "module load gdrbench: GDRBENCH_ROOT is not $p"

say "Debian package"
if [ "$(id -u)" -ne 0 ]; then
  echo "test_install: skipped the .deb: dpkg -i needs root (the install prefix and the module passed)"
  exit 77
fi
if grep -q "ok installed" <<< "$(dpkg-query -W -f='${Status}' gdrbench 2> /dev/null)"; then
  fail "a gdrbench package is installed already; dpkg -r gdrbench first (this test installs and removes its own)"
fi
(cd "$build" && cpack -G DEB -B "$work/deb" > "$work/cpack.log") || { cat "$work/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$work"/deb/gdrbench_*.deb)
dpkg-deb -f "$deb" Depends
deb_installed=1
dpkg -i "$deb" > "$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i $deb"; }
(cd / && PATH=$clean_path run_hidden bash /usr/share/gdrbench/tests/check_install.sh "$work/run-deb") \
  || fail "check_install.sh from the .deb"
say "ok"
