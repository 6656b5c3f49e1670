#!/usr/bin/env bash
# Builds .device/gpu, what the lent GPU machine needs beside its own packages
# (jobs/gpu/device_build.sh uses each piece only where the machine lacks it),
# from this Debian 12 machine's packages, so a fresh checkout reaches a GPU run
# in two commands:
#
#   jobs/gpu/make_bundle.sh                                   # here
#   run(command="bash jobs/gpu/gpu_suite.sh all", carry=[".device/gpu"])
#
# What goes in (about 50 MB with both UCX builds):
#   include/CLI             CLI11 headers             (libcli11-dev)
#   fmtinc/fmt, cmake/fmt   fmt as header-only, with a CMake config saying so
#                           (libfmt-dev; Debian's libfmt.so would not match Ubuntu's)
#   include/hwloc*, lib/libhwloc.so.15, pkgconfig/hwloc.pc   (libhwloc-dev)
#   gtest/                  GoogleTest, static (libgtest-dev)
#   include/nlohmann        nlohmann-json headers     (nlohmann-json3-dev)
#   ucx-*-cuda-*.tgz        UCX 1.13.1 built with CUDA, when found (--ucx-tgz, else
#                           shared/device/ in the checkout, beside it, or beside the
#                           main worktree of a `git worktree`)
#   libucx_cu13-*.whl       UCX 1.22 with CUDA from PyPI, when found (--wheel, else
#                           /tmp/whl/, else `pip download` with GDR_FETCH_WHEEL=1)
#   MANIFEST.txt            every piece and its package version
#
# usage: jobs/gpu/make_bundle.sh [--wheel FILE] [--ucx-tgz FILE] [--no-ucx113] [--no-wheel] [--no-ucx] [DEST]
#   (DEST: .device/gpu). --no-ucx113 / --no-wheel leave out one UCX piece (the upload is
#   capped at 64 MiB: the wheel alone is 43 MB); --no-ucx: both (the test of this script,
#   tests/jobs/test_make_bundle.sh). The bundle's size is printed last.
# Exit 2 (one line) when a package is missing: jobs/install-deps.sh installs them.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
wheel= ucx_tgz= dest= no_ucx= no_tgz= no_whl=
while [ $# -gt 0 ]; do
  case $1 in
    --wheel) wheel=$2; shift 2 ;;
    --ucx-tgz) ucx_tgz=$2; shift 2 ;;
    --no-ucx) no_ucx=1; shift ;;
    --no-ucx113) no_tgz=1; shift ;;
    --no-wheel) no_whl=1; shift ;;
    -*) echo "make_bundle: unknown option $1 (use --wheel FILE, --ucx-tgz FILE, --no-ucx113, --no-wheel, --no-ucx, DEST)" >&2; exit 2 ;;
    *) dest=$1; shift ;;
  esac
done
dest=${dest:-$root/.device/gpu}
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$multiarch
pkgs=(libcli11-dev libfmt-dev libhwloc-dev libhwloc15 libgtest-dev nlohmann-json3-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "make_bundle: missing Debian packages: ${missing[*]} (sudo jobs/install-deps.sh installs them)" >&2
  exit 2
fi
for f in "$wheel" "$ucx_tgz"; do
  if [ -n "$f" ] && [ ! -f "$f" ]; then echo "make_bundle: no such file: $f" >&2; exit 2; fi
done

mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "${dest%/}.new.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{include,lib,pkgconfig,fmtinc,cmake/fmt,gtest/include,gtest/lib}
manifest=$tmp/MANIFEST.txt
ver() { dpkg-query -W -f='${Version}' "$1"; }
note() { echo "$*" >>"$manifest"; echo "make_bundle: $*"; }
echo "# .device/gpu, made by jobs/gpu/make_bundle.sh on $(hostname) at $(date -u +%FT%TZ)" >"$manifest"

cp -r /usr/include/CLI "$tmp/include/"
note "include/CLI: CLI11 $(ver libcli11-dev)"

cp -r /usr/include/fmt "$tmp/fmtinc/"
cat >"$tmp/cmake/fmt/fmt-config.cmake" <<'EOF'
# Header-only fmt carried to the GPU machine (jobs/gpu/make_bundle.sh, device_build.sh).
if(NOT TARGET fmt::fmt)
  add_library(fmt::fmt INTERFACE IMPORTED)
  set_target_properties(fmt::fmt PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CURRENT_LIST_DIR}/../../fmtinc"
    INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1")
endif()
set(fmt_FOUND TRUE)
EOF
note "fmtinc/fmt, cmake/fmt: fmt $(ver libfmt-dev), header-only (FMT_HEADER_ONLY)"

cp -r /usr/include/hwloc.h /usr/include/hwloc "$tmp/include/"
cp -L "$libdir/libhwloc.so.15" "$tmp/lib/"
ln -s libhwloc.so.15 "$tmp/lib/libhwloc.so"
hwloc_version=$(pkg-config --modversion hwloc)
cat >"$tmp/pkgconfig/hwloc.pc" <<EOF
prefix=\${pcfiledir}/..
exec_prefix=\${prefix}
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: hwloc
Description: Hardware locality detection and management library
Version: $hwloc_version
Requires.private:
Cflags: -I\${includedir}
Libs: -L\${libdir} -lhwloc
Libs.private: -lm  -ludev    -lpthread
EOF
note "include/hwloc*, lib/libhwloc.so.15, pkgconfig/hwloc.pc: hwloc $(ver libhwloc-dev)"

cp -r /usr/include/gtest "$tmp/gtest/include/"
cp "$libdir"/libgtest.a "$libdir"/libgtest_main.a "$tmp/gtest/lib/"
note "gtest/: GoogleTest $(ver libgtest-dev), static"

cp -r /usr/include/nlohmann "$tmp/include/"
note "include/nlohmann: nlohmann-json $(ver nlohmann-json3-dev)"

if [ -n "$no_ucx" ]; then
  note "no UCX pieces (--no-ucx)"
elif [ -z "$ucx_tgz" ]; then
  main_wt=$(git -C "$root" worktree list --porcelain 2>/dev/null | sed -n '1s/^worktree //p')
  ucx_tgz=$(ls "$root"/shared/device/ucx-*cuda*.tgz "$root"/../shared/device/ucx-*cuda*.tgz \
    ${main_wt:+"$main_wt"/../shared/device/ucx-*cuda*.tgz} "$dest"/ucx-*cuda*.tgz 2>/dev/null | head -1 || true)
fi
if [ -n "$no_ucx" ]; then :
elif [ -n "$no_tgz" ]; then
  note "no UCX 1.13.1-cuda tarball (--no-ucx113): GDR_UCX=tarball builds are not possible"
elif [ -n "$ucx_tgz" ]; then
  cp "$ucx_tgz" "$tmp/"
  note "$(basename "$ucx_tgz"): UCX built with CUDA (GDR_UCX=tarball jobs/gpu/device_build.sh; its default without the wheel)"
else
  note "no ucx-*-cuda-*.tgz: GDR_UCX=tarball builds are not possible"
fi

if [ -n "$no_ucx" ]; then :
elif [ -z "$wheel" ]; then
  wheel=$(ls /tmp/whl/libucx_cu13-*.whl "$dest"/libucx_cu13-*.whl 2>/dev/null | head -1 || true)
fi
if [ -z "$no_ucx$no_whl" ] && [ -z "$wheel" ] && [ "${GDR_FETCH_WHEEL:-0}" = 1 ]; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "libucx-cu13==1.22.0"
  wheel=$(ls "$tmp"/libucx_cu13-*.whl | head -1)
fi
if [ -n "$no_ucx" ]; then :
elif [ -n "$no_whl" ]; then
  note "no libucx_cu13 wheel (--no-wheel): device_build.sh uses the 1.13.1-cuda tarball"
elif [ -n "$wheel" ]; then
  # Installed here and packed without its static libraries: 7.5 MB instead of the
  # wheel's 43 (the upload's cap is 64 MiB with the tree).
  # libucx_cu13.libs holds what the wheel vendors (its own libcudart): without it UCX 1.22
  # cannot register device memory (ucp_mem_map: Invalid parameter).
  inst=$(mktemp -d)
  "$root/jobs/install_ucx_wheel.sh" "$inst" "$wheel" >/dev/null
  packed=$(basename "$wheel" | sed 's/^\(libucx_cu13-[0-9.]*\)-.*/\1/')-installed.tar.xz
  tar -C "$inst" --exclude='*.a' --exclude='*.la' -cJf "$tmp/$packed" libucx libucx_cu13.libs
  rm -rf "$inst"
  [ "$(dirname "$wheel")" != "$tmp" ] || rm -f "$wheel"
  note "$packed: UCX from PyPI's $(basename "$wheel"), installed, without static libraries (UCX 1.22: device_build.sh's default UCX)"
else
  note "no libucx_cu13 wheel: device_build.sh falls back to the 1.13.1-cuda tarball (GDR_FETCH_WHEEL=1 downloads it)"
fi

# Replace the old bundle only once the new one is whole.
rm -rf "$dest.old"
[ ! -e "$dest" ] || mv "$dest" "$dest.old"
mv "$tmp" "$dest"
trap - EXIT
rm -rf "$dest.old"
echo "make_bundle: $dest ready ($(du -sh "$dest" | cut -f1); the device upload is capped at 64 MiB with the tree); carry it: run(..., carry=[\".device/gpu\"])"
