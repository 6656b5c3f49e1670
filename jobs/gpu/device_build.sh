#!/usr/bin/env bash
# Builds gdrbench on the lent GPU machine (Ubuntu 24.04, CUDA 13, system
# Open MPI and HDF5) with what is there plus what the checkout carries in
# .device/gpu, made on a developer machine by jobs/gpu/make_bundle.sh:
#   include/CLI, include/hwloc*, lib/libhwloc.so.15, pkgconfig/hwloc.pc,
#   fmtinc/fmt + cmake/fmt (header-only fmt), gtest/, include/nlohmann,
#   ucx-*-cuda-*.tgz, libucx_cu13-*-installed.tar.xz (the wheel installed, without static
#   libraries; a bare libucx_cu13-*.whl is installed here instead), MANIFEST.txt.
# Each carried piece is used only when the machine lacks it. Prints what it
# used; exits non-zero when gdrbench could not be built.
#
# usage: [GDR_COMMIT=sha] [GDR_UCX=wheel|tarball] [GDR_UCX_ROOT=prefix] jobs/gpu/device_build.sh [build-dir]
#   (default build-device). UCX: GDR_UCX_ROOT if set; else GDR_UCX=wheel (the default when
#   the bundle carries it): the libucx-cu13 wheel (UCX 1.22) installed into /tmp/ucx-wheel by
#   jobs/install_ucx_wheel.sh; else GDR_UCX=tarball: the carried UCX 1.13.1-cuda tarball,
#   unpacked to /tmp/ucx. Why the wheel by default (measured on the H200, results/archive/
#   20261201_h200_ucx113-vs-122-probe.txt and 20261201_h200_mpi-ucx113-vs-122.txt): device bw and bibw equal
#   within the run-to-run noise at 1-256 MiB, 8 B device latency under MPS 14.4 us against
#   16.4, and Open MPI 4.1.6's pml ucx there wants UCP >= 1.15 (1.13 gets "UCP API version is
#   incompatible"), so `-T mpi -m cuda` rows need it.
#   The UCX used ends up in $build/ucx-lib-path.txt (put it first on LD_LIBRARY_PATH) and its
#   prefix, whose bin/ holds ucx_perftest and ucx_info, in $build/ucx-root.txt.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
carried=$root/.device/gpu
build=${1:-$root/build-device}
log=${OUT:-/tmp}/build.log
export PATH=/usr/local/cuda/bin:$PATH
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90)
used=()

if [ ! -f "$carried/MANIFEST.txt" ]; then
  echo "device_build: no $carried/MANIFEST.txt: make the bundle on a developer machine with" \
       "jobs/gpu/make_bundle.sh and carry it (carry=[\".device/gpu\"]); trying with what is here"
fi

have_header() { echo "#include <$1>" | g++ -std=c++20 -E -x c++ - >/dev/null 2>&1; }

if ! have_header CLI/CLI.hpp; then
  export CPATH=$carried/include${CPATH:+:$CPATH}; used+=("CLI11 headers (carried)")
fi
if ! pkg-config --exists hwloc 2>/dev/null; then
  export PKG_CONFIG_PATH=$carried/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=$carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  used+=("hwloc 2.9 (carried)")
fi
if ! have_header fmt/format.h; then
  cmake_args+=(-Dfmt_DIR=$carried/cmake/fmt); used+=("fmt header-only (carried)")
fi
if ! have_header gtest/gtest.h; then
  cmake_args+=(-DGTEST_ROOT=$carried/gtest); used+=("GoogleTest (carried)")
fi
# UCX built with CUDA (shared/device), for the direct path of -T ucx;
# GDR_UCX_ROOT=<prefix> builds against another UCX instead (the 1.22 wheel).
ucx_tgz=$(ls "$carried"/ucx-*cuda*.tgz 2>/dev/null | head -1)
ucx_whl=$(ls "$carried"/libucx_cu13-*-installed.tar.xz "$carried"/libucx_cu13-*.whl 2>/dev/null | head -1)
ucx_lib= ucx_root=
ucx_pick=${GDR_UCX:-$([ -n "$ucx_whl" ] && echo wheel || echo tarball)}
case $ucx_pick in wheel|tarball) ;; *) echo "device_build: GDR_UCX=$ucx_pick: expected wheel or tarball"; exit 2 ;; esac
if [ -n "${GDR_UCX_ROOT:-}" ]; then
  cmake_args+=(-DUCX_ROOT=$GDR_UCX_ROOT); ucx_lib=$GDR_UCX_ROOT/lib ucx_root=$GDR_UCX_ROOT
  used+=("UCX at $GDR_UCX_ROOT")
elif [ "$ucx_pick" = wheel ]; then
  [ -n "$ucx_whl" ] || { echo "device_build: GDR_UCX=wheel but no $carried/libucx_cu13-*.whl"; exit 1; }
  if [ ! -d /tmp/ucx-wheel/libucx_cu13.libs ] && [[ $ucx_whl == *.tar.xz ]]; then
    rm -rf /tmp/ucx-wheel; mkdir -p /tmp/ucx-wheel && tar -C /tmp/ucx-wheel -xJf "$ucx_whl" ||
      { echo "device_build: unpacking $ucx_whl failed"; exit 1; }
  elif [ ! -d /tmp/ucx-wheel/libucx ]; then
    "$root/jobs/install_ucx_wheel.sh" /tmp/ucx-wheel "$ucx_whl" >>"$log" 2>&1 ||
      { echo "device_build: installing $ucx_whl failed (see build.log)"; exit 1; }
  fi
  cmake_args+=(-DUCX_ROOT=/tmp/ucx-wheel/libucx); ucx_lib=/tmp/ucx-wheel/libucx/lib:/usr/local/cuda/lib64
  ucx_root=/tmp/ucx-wheel/libucx
  used+=("UCX from $(basename "$ucx_whl") at /tmp/ucx-wheel/libucx")
elif [ -n "$ucx_tgz" ]; then
  if [ ! -d /tmp/ucx ]; then tar -C /tmp -xzf "$ucx_tgz"; fi
  cmake_args+=(-DUCX_ROOT=/tmp/ucx); ucx_lib=/tmp/ucx/lib ucx_root=/tmp/ucx
  used+=("UCX from $(basename "$ucx_tgz") at /tmp/ucx")
fi

# The device copy's .git is not the sending checkout's: its HEAD can be days
# old. GDR_COMMIT=<sha> (put in the run command by the sender) names the
# commit every result file will carry.
if [ -n "${GDR_COMMIT:-}" ]; then
  [[ $GDR_COMMIT =~ ^[0-9a-f]{7,40}(-dirty)?$ ]] ||
    { echo "device_build: GDR_COMMIT='$GDR_COMMIT': want a git commit id (7-40 hex digits, optional -dirty)"; exit 2; }
  cmake_args+=(-DGDR_GIT_COMMIT=$GDR_COMMIT); used+=("commit $GDR_COMMIT (GDR_COMMIT)")
else
  echo "device_build: GDR_COMMIT unset: files will carry the commit git shows in this copy" \
       "($(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)), maybe not the sender's"
fi
echo "device_build: ${used[*]:-nothing carried needed}"
configure() { cmake -S "$root" -B "$build" "${cmake_args[@]}" "$@" >>"$log" 2>&1; }
# Fall back step by step so that one broken optional part does not cost the
# whole device call.
if ! configure; then
  echo "device_build: configure failed (see build.log); retrying without UCX and verbs"
  rm -rf "$build"
  kept=(); for a in "${cmake_args[@]}"; do [[ $a == -DUCX_ROOT=* ]] || kept+=("$a"); done
  cmake_args=("${kept[@]}")
  configure -DGDR_WITH_UCX=OFF -DGDR_WITH_VERBS=OFF || { tail -30 "$log"; exit 1; }
fi
# Only what the GPU suite runs: device time is scarce, unit tests run in CI.
targets=${GDR_DEVICE_TARGETS:-gdrbench}
if ! cmake --build "$build" -j"$(nproc)" --target $targets >>"$log" 2>&1; then
  echo "device_build: build failed:"
  grep -E "error|Error" "$log" | head -20
fi
[ -x "$build/gdrbench" ] || { echo "device_build: no gdrbench"; tail -40 "$log"; exit 1; }
echo "$ucx_lib" >"$build/ucx-lib-path.txt"
echo "$ucx_root" >"$build/ucx-root.txt"
echo "device_build: ok ($build/gdrbench${ucx_lib:+; UCX libraries: $ucx_lib})"
