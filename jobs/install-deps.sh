#!/usr/bin/env bash
# Installs every Debian package the build and the tests need: the union of
# jobs/deps/debian-*.txt (one package per line). Idempotent and quiet when
# everything is already there. Needs root (or sudo).
# Then a second UCX, 1.22 from PyPI's libucx-cu13 wheel (pinned), into
# /opt/gdrbench/ucx-1.22: tests/mpi/test_path.py runs gdrbench (built against
# Debian's 1.13) over it, so that CI sees UCX's newer protocols (v2) too: the
# path report once broke on them unnoticed. GDR_NO_UCX_WHEEL=1 skips it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ucx_wheel() {
  local prefix=/opt/gdrbench/ucx-1.22
  [ "${GDR_NO_UCX_WHEEL:-0}" = 1 ] || [ -x "$prefix/libucx/bin/ucx_info" ] && return 0
  local s=""; [ "$(id -u)" -eq 0 ] || s="sudo"
  $s "$here/install_ucx_wheel.sh" "$prefix" >/dev/null && echo "install-deps: UCX 1.22 (libucx-cu13 wheel) in $prefix"
}
trap ucx_wheel EXIT
mapfile -t wanted < <(cat "$here"/deps/debian-*.txt | sed 's/#.*//' | awk 'NF' | sort -u)
missing=()
for p in "${wanted[@]}"; do
  grep -q "install ok installed" <<< "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#wanted[@]} Debian packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
