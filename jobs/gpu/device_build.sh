#!/usr/bin/env bash
# Builds gdrbench on the lent GPU machine (Ubuntu 24.04, CUDA 13, system
# Open MPI and HDF5) with what is there plus what the checkout carries in
# .device/gpu (prepared on a developer machine, see jobs/gpu/README.md):
#   include/CLI, include/hwloc*, lib/libhwloc.so.15, pkgconfig/hwloc.pc,
#   fmtinc/fmt + cmake/fmt (header-only fmt), gtest/, ucx-*-cuda-*.tgz.
# Each carried piece is used only when the machine lacks it. Prints what it
# used; exits non-zero when gdrbench could not be built.
#
# usage: [GDR_UCX_ROOT=prefix] jobs/gpu/device_build.sh [build-dir]     (default build-device)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
carried=$root/.device/gpu
build=${1:-$root/build-device}
log=${OUT:-/tmp}/build.log
export PATH=/usr/local/cuda/bin:$PATH
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90)
used=()

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
if [ -n "${GDR_UCX_ROOT:-}" ]; then
  cmake_args+=(-DUCX_ROOT=$GDR_UCX_ROOT)
  used+=("UCX at $GDR_UCX_ROOT")
elif [ -n "$ucx_tgz" ]; then
  if [ ! -d /tmp/ucx ]; then tar -C /tmp -xzf "$ucx_tgz"; fi
  cmake_args+=(-DUCX_ROOT=/tmp/ucx)
  used+=("UCX from $(basename "$ucx_tgz") at /tmp/ucx")
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
echo "device_build: ok ($build/gdrbench)"
