#!/usr/bin/env bash
# jobs/gpu/make_bundle.sh makes a bundle that builds: every piece and
# MANIFEST line is there, fmt's CMake config gives a header-only fmt::fmt, and a
# program using fmt and hwloc from the bundle alone compiles,
# links the bundle's libhwloc.so.15 and runs. About 15 s on the 2-core machine.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/gdr-bundle.XXXXXX)
trap 'rm -rf "$work"' EXIT
dest=$work/gpu
fail() { echo "FAIL: $*"; exit 1; }

out=$("$root/jobs/gpu/make_bundle.sh" --no-ucx "$dest" 2>&1) || fail "make_bundle exit $?: $out"
echo "$out"
for f in include/CLI/CLI.hpp fmtinc/fmt/format.h cmake/fmt/fmt-config.cmake include/hwloc.h \
         lib/libhwloc.so.15 pkgconfig/hwloc.pc gtest/include/gtest/gtest.h gtest/lib/libgtest.a \
         include/nlohmann/json.hpp MANIFEST.txt; do
  [ -e "$dest/$f" ] || fail "no $f in the bundle"
done
for w in CLI11 fmt hwloc GoogleTest nlohmann-json; do
  grep -q "$w" "$dest/MANIFEST.txt" || fail "MANIFEST.txt does not name $w"
done

# fmt's config: an imported header-only target.
mkdir -p "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(bundle_check LANGUAGES NONE)
find_package(fmt REQUIRED)
get_target_property(defs fmt::fmt INTERFACE_COMPILE_DEFINITIONS)
get_target_property(inc fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
message(STATUS "fmt::fmt defs=${defs} inc=${inc}")
EOF
cm=$(cmake -S "$work/cm" -B "$work/cm/b" -Dfmt_DIR="$dest/cmake/fmt" 2>&1) || fail "cmake: $cm"
echo "$cm" | grep -q "defs=FMT_HEADER_ONLY=1 inc=$dest/cmake/fmt/../../fmtinc" || fail "fmt config: $cm"

# A program from the bundle's fmt and hwloc only (no -lfmt: header-only). CLI11 and
# nlohmann-json are plain header copies: their presence is checked above.
cat >"$work/t.cpp" <<'EOF'
#include <fmt/format.h>
#include <hwloc.h>
int main() { fmt::print("{{\"hwloc_api\": {}}}\n", hwloc_get_api_version()); }
EOF
export PKG_CONFIG_PATH=$dest/pkgconfig
g++ -std=c++20 -DFMT_HEADER_ONLY=1 -I"$dest/fmtinc" $(pkg-config --cflags hwloc) "$work/t.cpp" \
  -o "$work/t" $(pkg-config --libs hwloc) 2>&1 || fail "compile against the bundle"
run=$(LD_LIBRARY_PATH=$dest/lib "$work/t") || fail "the program did not run"
echo "$run" | grep -q '"hwloc_api"' || fail "unexpected output: $run"
LD_LIBRARY_PATH=$dest/lib ldd "$work/t" | grep -q "$dest/lib/libhwloc.so.15" || fail "not linked to the bundle's hwloc"
! ldd "$work/t" | grep -q libfmt || fail "linked libfmt: not header-only"
echo "PASS: $run"
