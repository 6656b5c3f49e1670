#!/usr/bin/env bash
# Configures and builds gdrbench into BUILD_DIR (default build/): every target,
# or only the targets named (jobs/build.sh gdrbench: the binary alone, as
# jobs/setup.sh does; the tests stay configured, GDR_BUILD_TESTS=ON, so a
# later plain jobs/build.sh in the same folder builds them). CUDA code is
# built when nvcc is found (/usr/local/cuda/bin is added to PATH), even
# without a GPU; it is skipped at run time there.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_EXTRA:-} >/dev/null
cmake --build "$build" -j"$(nproc)" ${1:+--target "$@"}
