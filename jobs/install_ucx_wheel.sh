#!/usr/bin/env bash
# Installs UCX with CUDA from PyPI's libucx-cu13 wheel (UCX 1.22.0 built with
# CUDA 13: libraries, headers, ucx_info, ucx_perftest) into PREFIX, where
# gdrbench's build finds it:
#
#   jobs/install_ucx_wheel.sh PREFIX [WHEEL]      # WHEEL: a local .whl; else pip downloads it
#   cmake -S . -B build -DUCX_ROOT=PREFIX/libucx  (or GDR_UCX=wheel jobs/gpu/device_build.sh)
#   export LD_LIBRARY_PATH=PREFIX/libucx/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
#
# The wheel's transports (ucx_info -d here, and on the H200): self, tcp, sysv,
# posix, cma, plus cuda_copy and cuda_ipc where a GPU and driver are (its module
# libuct_cuda). Configured --without-verbs --without-rdmacm and without gdrcopy:
# no InfiniBand/RoCE transport at all (no rc, ud, dc), so between nodes it moves
# data over TCP only. Use it within one node, or a UCX built --with-cuda and
# --with-verbs (HPC-X, MOFED's) across nodes. Its CUDA module needs the CUDA 13
# runtime at run time: put the toolkit's lib64 on LD_LIBRARY_PATH.
# The zip stores each shared library three times (.so, .so.0, .so.0.0.0); the
# copies become links again here (91 MB installed, 38 MB of it not static .a).
set -eu
[ $# -ge 1 ] || { echo "usage: jobs/install_ucx_wheel.sh PREFIX [WHEEL]" >&2; exit 2; }
prefix=$1 wheel=${2:-}
py=$(command -v python3)
if [ -z "$wheel" ]; then
  dl=$(mktemp -d)
  "$py" -m pip download --quiet --no-deps --only-binary=:all: -d "$dl" "libucx-cu13==1.22.0"
  wheel=$(ls "$dl"/libucx_cu13-*.whl)
fi
[ -f "$wheel" ] || { echo "install_ucx_wheel: no such wheel: $wheel" >&2; exit 2; }
rm -rf "$prefix/libucx"
mkdir -p "$prefix"
"$py" -m zipfile -e "$wheel" "$prefix"
[ -d "$prefix/libucx/lib" ] || { echo "install_ucx_wheel: $wheel holds no libucx/lib" >&2; exit 2; }
chmod +x "$prefix"/libucx/bin/* 2>/dev/null || true
# libX.so and libX.so.0 -> libX.so.0.0.0, as `make install` leaves them.
find "$prefix/libucx/lib" -name '*.so.*.*.*' | while read -r real; do
  base=${real%.so.*}.so
  for link in "$base" "$base.0"; do
    if [ -f "$link" ] && [ ! -L "$link" ] && cmp -s "$link" "$real"; then
      ln -sf "$(basename "$real")" "$link"
    fi
  done
done
echo "install_ucx_wheel: UCX $(basename "$wheel" | cut -d- -f2) in $prefix/libucx ($(du -sh "$prefix/libucx" | cut -f1)); build with -DUCX_ROOT=$prefix/libucx"
