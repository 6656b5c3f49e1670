#!/usr/bin/env bash
# Installs the Debian packages of the lists named (a list NAME is the file debian-NAME.txt in jobs/deps/)
# (one package per line, '#' comments), with their dependencies:
#   jobs/install-deps.sh core analysis   # what building gdrbench, its main job
#                                        # and its analysis subcommands need
#                                        # (jobs/setup.sh, the first command)
#   jobs/install-deps.sh                 # every list, then the UCX wheel below
#                                        # (tests/run_all.sh, the test suite)
# An unknown NAME: one line naming the lists, exit 2. Idempotent and quiet
# when everything is already there. Needs root (or sudo).
# With no NAME, then a second UCX, 1.22 from PyPI's libucx-cu13 wheel
# (pinned), into /opt/gdrbench/ucx-1.22: tests/mpi/test_path.py runs gdrbench
# (built against Debian's 1.13) over it, so that CI sees UCX's newer protocols
# (v2) too: the path report once broke on them unnoticed. GDR_NO_UCX_WHEEL=1
# skips it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lists=()
for name in "$@"; do
  f=$here/deps/debian-$name.txt
  if [ ! -f "$f" ]; then
    known=$(cd "$here/deps" && ls debian-*.txt | sed 's/^debian-//; s/\.txt$//' | tr '\n' ' ')
    echo "install-deps: no list '$name' (jobs/deps/debian-$name.txt); lists: ${known% }" >&2
    exit 2
  fi
  lists+=("$f")
done
ucx_wheel() {
  local prefix=/opt/gdrbench/ucx-1.22
  [ "${GDR_NO_UCX_WHEEL:-0}" = 1 ] || [ -x "$prefix/libucx/bin/ucx_info" ] && return 0
  local s=""; [ "$(id -u)" -eq 0 ] || s="sudo"
  $s "$here/install_ucx_wheel.sh" "$prefix" >/dev/null && echo "install-deps: UCX 1.22 (libucx-cu13 wheel) in $prefix"
}
if [ ${#lists[@]} -eq 0 ]; then
  lists=("$here"/deps/debian-*.txt)
  trap ucx_wheel EXIT
fi
names=$(for f in "${lists[@]}"; do basename "$f" .txt; done | sed 's/^debian-//' | tr '\n' ' ')
mapfile -t wanted < <(cat "${lists[@]}" | sed 's/#.*//' | awk 'NF' | sort -u)
missing=()
for p in "${wanted[@]}"; do
  grep -q "install ok installed" <<< "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#wanted[@]} Debian packages present (${names% })"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${#missing[@]} packages (${names% }): ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
