# Sourced (never run) by the GPU scripts after jobs/gpu/device_build.sh BUILD:
# puts the UCX that gdrbench in BUILD was built against first on LD_LIBRARY_PATH
# (with the carried hwloc), and sets ucx_bin to that UCX's bin/ (ucx_perftest,
# ucx_info), so that gdrbench and the peer tool load the same UCX.
#   . "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
# Builds from before device_build.sh wrote ucx-root.txt used the tarball in /tmp/ucx.
_gdr_build=${1:?usage: . jobs/gpu/ucx_env.sh BUILD_DIR}
ucx_lib=$(cat "$_gdr_build/ucx-lib-path.txt" 2>/dev/null)
ucx_root=$(cat "$_gdr_build/ucx-root.txt" 2>/dev/null)
[ -n "$ucx_root" ] || { ucx_root=/tmp/ucx; ucx_lib=${ucx_lib:-/tmp/ucx/lib}; }
ucx_bin=$ucx_root/bin
_gdr_carried=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.device/gpu/lib
export LD_LIBRARY_PATH=${ucx_lib:+$ucx_lib:}$_gdr_carried${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset _gdr_build _gdr_carried
