#!/usr/bin/env bash
# Does UCX's device API (GPU-initiated puts: a CUDA kernel calls ucp_device_put) run between
# two processes on the one lent GPU? One device call (kind nvidia-h200), about 1-4 minutes:
#
#   jobs/gpu/make_bundle.sh        # here: .device/gpu with the libucx-cu13 1.22 wheel installed
#   run(command="bash jobs/gpu/ucx_device_api_probe.sh", carry=[".device/gpu"])
#
# No gdrbench build: only the wheel's own ucx_perftest and ucx_info (UCX 1.22, unpacked to
# /tmp/ucx-wheel as device_build.sh does, so a later build in the same machine reuses it).
#
# What it runs, each try bounded by `timeout`, server and client on 127.0.0.1 (as
# bench_vs_peers.sh runs ucx_perftest), the client with `-a cuda` (that flag is what makes
# ucx_perftest launch its CUDA kernel instead of posting from the host; UCX's own CI passes
# it to the client only, the server takes the test from the client):
#   control the harness first, posting from the host (tag_lat and ucp_put_lat without -a), then
#          one device put at UCX_LOG_LEVEL=debug (where it stops, if it hangs);
#   core   every line of the wheel's share/ucx/perftest/test_types_ucp_device_cuda
#          (ucp_put_bw, ucp_put_lat at 8 B and 1 KiB; 1 thread, 32 threads, a warp);
#   extra  ucp_put_bw at 64 KiB, 1 MiB and 16 MiB; 32 threads x 4 blocks (-T 32:4); the block
#          level (-L block, which 1.22's perftest refuses: "Unsupported level"); no flow
#          control (-F 1); `-a cuda:0`; UCX_TLS=cuda_copy,cuda_ipc,sm,self; and the same
#          put_bw/put_lat without -a (host-initiated puts of device memory) for comparison.
# Phases: core without MPS, then core+extra under CUDA MPS (jobs/with_mps.sh), then extra
# without MPS, each to a deadline within BUDGET_S (240) so that the call ends well inside
# 300 s: a try that would start past it is skipped and said so. Without MPS every try runs
# -n NOMPS_ITERS (1000) iterations: the two processes' kernels take turns on the GPU there.
# Every try adds -w 100 (the default warm-up is 10^4 iterations).
#
# Also recorded: ucx_info -v, -d, -b; which UCX libraries export device endpoints
# (uct_*_ep_get_device_ep) and the device API headers; nvidia-smi; /proc/driver/nvidia/params;
# the GPU's PCI resource file (BAR1 length) and /sys/class/infiniband.
# $OUT: summary.txt (the table, printed last) and ucx_device_api_probe.tgz (every raw output).
#
# env: BUDGET_S (240), TRY_S (seconds per try, 25), NOMPS_ITERS (1000), PERFTEST_PORT (13571),
#      UCX_ROOT (a UCX prefix with bin/ucx_perftest: skips the wheel), UCX_DEVICE_TESTS (a
#      test_types file to read instead of the wheel's), DRY_RUN=1 (print the commands, run
#      nothing; any machine). Without a GPU (and without DRY_RUN) it stops at once, exit 1.
set -u
me=ucx_device_api_probe
root=$(cd "$(dirname "$0")/../.." && pwd)
self=$root/jobs/gpu/ucx_device_api_probe.sh
dry=${DRY_RUN:-}
budget=${BUDGET_S:-240}
try_s=${TRY_S:-25}
nomps_iters=${NOMPS_ITERS:-1000}
carried=$root/.device/gpu
fail() { echo "$me: $*" >&2; exit 1; }

# The device test list of UCX 1.22.0 (contrib/ucx_perftest_config/test_types_ucp_device_cuda),
# used only when neither UCX_DEVICE_TESTS nor the wheel's copy can be read.
builtin_core() {
  cat <<'EOF'
ucp_device_cuda_lat_8b_1thread               -t ucp_put_lat -m cuda -s 8 -n 10000
ucp_device_cuda_bw_1k_1thread                -t ucp_put_bw -m cuda -s 1024 -n 10000
ucp_device_cuda_lat_1k_1thread               -t ucp_put_lat -m cuda -s 1024 -n 10000
ucp_device_cuda_bw_1k_32threads              -t ucp_put_bw -m cuda -s 1024 -n 10000 -T 32
ucp_device_cuda_lat_1k_32threads             -t ucp_put_lat -m cuda -s 1024 -n 10000 -T 32
ucp_device_cuda_bw_1k_1warp                -t ucp_put_bw -m cuda -s 1024 -n 10000 -T 32 -L warp
ucp_device_cuda_lat_1k_1warp               -t ucp_put_lat -m cuda -s 1024 -n 10000 -T 32 -L warp
EOF
}
# The harness's own check, first in every phase: the same server and client posting from the
# host (no -a), a tag ping-pong and a put, so a device try that hangs is told from a harness
# that cannot connect. The last one asks UCX to say, at debug level, where a device put stops.
control_tries() {
  cat <<'EOF'
host_tag_lat_8b accel=none -- -t tag_lat -m cuda -s 8 -n 1000
host_put_lat_8b accel=none -- -t ucp_put_lat -m cuda -s 8 -n 1000
debug_lat_8b UCX_LOG_LEVEL=debug -- -t ucp_put_lat -m cuda -s 8 -n 100
EOF
}

# NAME [ENV=VALUE ...] -- ARGS: beyond UCX's list. "noaccel" means: without -a (host posts).
extra_tries() {
  cat <<'EOF'
bw_64k_1thread -- -t ucp_put_bw -m cuda -s 65536 -n 2000
bw_1m_1thread -- -t ucp_put_bw -m cuda -s 1048576 -n 1000
bw_16m_1thread -- -t ucp_put_bw -m cuda -s 16777216 -n 200
bw_1k_32x4blocks -- -t ucp_put_bw -m cuda -s 1024 -n 10000 -T 32:4
bw_1k_block -- -t ucp_put_bw -m cuda -s 1024 -n 10000 -T 32 -L block
bw_1k_nofc -- -t ucp_put_bw -m cuda -s 1024 -n 10000 -F 1
lat_8b_cuda0 accel=cuda:0 -- -t ucp_put_lat -m cuda -s 8 -n 10000
lat_8b_tls_ipc UCX_TLS=cuda_copy,cuda_ipc,sm,self -- -t ucp_put_lat -m cuda -s 8 -n 10000
bw_1k_tls_ipc UCX_TLS=cuda_copy,cuda_ipc,sm,self -- -t ucp_put_bw -m cuda -s 1024 -n 10000
host_lat_8b accel=none -- -t ucp_put_lat -m cuda -s 8 -n 10000
host_bw_1k accel=none -- -t ucp_put_bw -m cuda -s 1024 -n 10000
EOF
}

listening() {  # PORT: is a TCP socket listening on it (/proc: no ss/netstat needed)?
  awk -v p="$(printf ':%04X' "$1")" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
    END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# ---- one try: server in the background, client to 127.0.0.1 --------------------------------
# try_one WORK MPS NAME [ENV=VALUE|accel=X ...] -- ARGS...; appends a row to WORK/rows.tsv.
try_one() {
  local work=$1 mps=$2 name=$3 envs=() accel=cuda a; shift 3
  while [ "$1" != -- ]; do
    case $1 in accel=*) accel=${1#accel=} ;; *) envs+=("$1") ;; esac
    shift
  done
  shift
  a=()
  while [ $# -gt 0 ]; do  # without MPS: -n NOMPS_ITERS in place of the list's count
    if [ "$1" = -n ] && [ "$mps" = off ] && [ $# -ge 2 ] && (( $2 > nomps_iters )); then
      a+=(-n "$nomps_iters"); shift 2
    else
      a+=("$1"); shift
    fi
  done
  a+=(-w 100)
  [ "$accel" = none ] || a+=(-a "$accel")
  local tag=${name}_mps-$mps now left secs port=${PERFTEST_PORT:-13571} spid rc
  local log=$work/$tag
  now=$(date +%s); left=$(( deadline - now ))
  if [ -z "$dry" ] && (( left < 8 )); then
    printf '%s\t%s\t%s\tskipped: out of time (phase deadline)\n' "$name" "$mps" "${a[*]}" >>"$work/rows.tsv"
    return 0
  fi
  secs=$try_s; [ -n "$dry" ] || (( secs <= left - 3 )) || secs=$(( left - 3 ))
  local pre=${envs[*]:+env ${envs[*]} }
  if [ -n "$dry" ]; then
    echo "+ ${pre}timeout $((secs + 5)) $perftest -p $port > $tag.server.txt &"
    echo "+ ${pre}timeout $secs $perftest 127.0.0.1 -p $port ${a[*]} > $tag.client.txt"
    printf '%s\t%s\t%s\tdry run\n' "$name" "$mps" "${envs[*]:+${envs[*]} }${a[*]}" >>"$work/rows.tsv"
    return 0
  fi
  while listening "$port"; do port=$((port + 1)); done
  env "${envs[@]}" timeout $((secs + 5)) "$perftest" -p "$port" >"$log.server.txt" 2>&1 &
  spid=$!
  for _ in $(seq 100); do listening "$port" && break; kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  echo "${pre}$perftest 127.0.0.1 -p $port ${a[*]}" >"$log.client.txt"
  env "${envs[@]}" timeout "$secs" "$perftest" 127.0.0.1 -p "$port" "${a[@]}" >>"$log.client.txt" 2>&1
  rc=$?
  for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
  printf '%s\t%s\t%s\t%s\n' "$name" "$mps" "${envs[*]:+${envs[*]} }${a[*]}" "$(verdict "$log" "$rc" "$secs")" >>"$work/rows.tsv"
  echo "[$(( $(date +%s) - t0 )) s] $tag: exit $rc" >>"$work/steps.txt"
}

# verdict LOG RC SECS: the Final numbers, or the first error line.
verdict() {
  local log=$1 rc=$2 secs=$3 fin err
  fin=$(grep -h -m1 '^Final:' "$log.client.txt" "$log.server.txt" 2>/dev/null | head -n 1)
  if [ -n "$fin" ]; then
    # Final: iters, lat 50%ile / avg / overall (us), bw avg / overall (MB/s = MiB/s), msg/s avg / overall
    echo "$fin" | tr -d , | awk -v rc="$rc" '{ printf "ok: %d iters, lat %s us (50%%ile), bw %s MiB/s, %.3g Mmsg/s%s\n",
      $2, $3, $7, $9 / 1e6, (rc == 0 ? "" : " (exit " rc ")") }'
    return
  fi
  err=$(grep -h -m1 -i -E 'error|unsupported|failed|invalid|not supported|cannot|abort' \
        "$log.client.txt" "$log.server.txt" 2>/dev/null | head -n 1 | cut -c1-200)
  if [ "$rc" = 124 ]; then echo "TIMEOUT after ${secs} s${err:+: $err}"
  else echo "FAIL exit $rc${err:+: $err}"; fi
}

# ---- a phase: the tries of one MPS mode --------------------------------------------------
# run_phase WORK MPS SETS (core, extra or core,extra)
run_phase() {
  local work=$1 mps=$2 sets=$3 name rest line
  if [[ ,$sets, == *,control,* ]]; then
    while read -r line; do
      # shellcheck disable=SC2086
      try_one "$work" "$mps" $line
    done < <(control_tries)
  fi
  if [[ ,$sets, == *,core,* ]]; then
    while read -r name rest; do
      [ -n "$name" ] && [ "${name:0:1}" != "#" ] || continue
      # shellcheck disable=SC2086  # the file's arguments are words
      try_one "$work" "$mps" "$name" -- $rest
    done <"$work/core_tests.txt"
  fi
  if [[ ,$sets, == *,extra,* ]]; then
    while read -r line; do
      # shellcheck disable=SC2086
      try_one "$work" "$mps" $line
    done < <(extra_tries)
  fi
}

# Internal: the MPS phase as jobs/with_mps.sh's command (same script, same settings).
if [ "${1:-}" = --phase ]; then
  work=$2 mps=$3 sets=$4 deadline=$5 perftest=$6 t0=$7
  export LD_LIBRARY_PATH=${PHASE_LD_LIBRARY_PATH:-${LD_LIBRARY_PATH:-}}
  run_phase "$work" "$mps" "$sets"
  exit 0
fi

# ---- setup ----------------------------------------------------------------------------------
out=${OUT:-/tmp/gdr-out}
mkdir -p "$out"
t0=$(date +%s)
gpus=
if [ -z "$dry" ]; then
  gpus=$(timeout 20 nvidia-smi -L 2>&1) || fail "no GPU here (nvidia-smi -L: ${gpus%%$'\n'*}): run it on the GPU machine, or DRY_RUN=1 to see the commands"
fi
work=$(mktemp -d /tmp/ucx_device_probe.XXXXXX)
[ -z "$dry" ] || trap 'rm -rf "$work"' EXIT
echo "$gpus" >"$work/gpus.txt"

# UCX: UCX_ROOT, else the wheel (already unpacked, the bundle's installed tarball, or the .whl).
if [ -n "${UCX_ROOT:-}" ]; then
  ucx_root=$UCX_ROOT
elif [ -x /tmp/ucx-wheel/libucx/bin/ucx_perftest ]; then
  ucx_root=/tmp/ucx-wheel/libucx
else
  ucx_root=/tmp/ucx-wheel/libucx
  packed=$(ls "$carried"/libucx_cu13-*-installed.tar.xz 2>/dev/null | head -n 1)
  whl=$(ls "$carried"/libucx_cu13-*.whl /tmp/whl/libucx_cu13-*.whl 2>/dev/null | head -n 1)
  if [ -n "$dry" ]; then
    echo "+ tar -C /tmp/ucx-wheel -xJf ${packed:-$carried/libucx_cu13-1.22.0-installed.tar.xz}  (or jobs/install_ucx_wheel.sh /tmp/ucx-wheel WHEEL)"
  elif [ -n "$packed" ]; then
    rm -rf /tmp/ucx-wheel; mkdir -p /tmp/ucx-wheel
    tar -C /tmp/ucx-wheel -xJf "$packed" || fail "unpacking $packed failed"
  elif [ -n "$whl" ]; then
    "$root/jobs/install_ucx_wheel.sh" /tmp/ucx-wheel "$whl" >"$work/install.txt" 2>&1 ||
      fail "installing $whl failed: $(tail -n 1 "$work/install.txt")"
  else
    fail "no libucx_cu13 wheel in $carried (jobs/gpu/make_bundle.sh puts it there: GDR_FETCH_WHEEL=1 downloads it; carry .device/gpu)"
  fi
fi
perftest=$ucx_root/bin/ucx_perftest
[ -n "$dry" ] || [ -x "$perftest" ] || fail "no $perftest"
export LD_LIBRARY_PATH=$ucx_root/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

tests_file=${UCX_DEVICE_TESTS:-$ucx_root/share/ucx/perftest/test_types_ucp_device_cuda}
if [ -r "$tests_file" ]; then
  cp "$tests_file" "$work/core_tests.txt"
  echo "core tests: $tests_file" >>"$work/steps.txt"
else
  builtin_core >"$work/core_tests.txt"
  echo "core tests: UCX 1.22.0's list built into this script ($tests_file unreadable)" >>"$work/steps.txt"
fi
[ -z "$dry" ] || cat "$work/steps.txt"

# ---- what the UCX build and the node offer (no GPU work) --------------------------------------
record_node() {
  local f=$work/node.txt bdf lib
  {
    echo "== ucx_info -v"; timeout 20 "$ucx_root/bin/ucx_info" -v 2>&1
    echo "== ucx_info -b (build configuration, first 60 lines)"; timeout 20 "$ucx_root/bin/ucx_info" -b 2>&1 | sed -n 1,60p
    echo "== libraries exporting device endpoints (uct_*_ep_get_device_ep)"
    for lib in "$ucx_root"/lib/libuc*.so.0 "$ucx_root"/lib/ucx/libuct_*.so.0; do
      [ -e "$lib" ] || continue
      if command -v nm >/dev/null; then
        nm -D --defined-only "$lib" 2>/dev/null | grep -E 'get_device_ep|ucp_device_' | sed "s|^|$(basename "$lib"): |"
      else
        grep -a -o -E 'uct_[a-z0-9_]*_ep_get_device_ep' "$lib" | sort -u | sed "s|^|$(basename "$lib"): |"
      fi
    done
    echo "== device API headers"; (cd "$ucx_root/include" 2>/dev/null && find . -path '*device*' -name '*.h' -o -name '*.cuh' | sort)
    echo "== nvidia-smi"; timeout 20 nvidia-smi 2>&1
    echo "== nvidia-smi -q (BAR1)"; timeout 20 nvidia-smi -q 2>&1 | grep -A3 -i 'bar1'
    echo "== /proc/driver/nvidia/params"; cat /proc/driver/nvidia/params 2>&1
    echo "== /proc/driver/nvidia/version"; cat /proc/driver/nvidia/version 2>&1
    echo "== modules (nvidia, peermem, mlx5)"; grep -E '^(nvidia|nv_peer|mlx5|ib_)' /proc/modules 2>&1
    echo "== /sys/class/infiniband"; ls -l /sys/class/infiniband 2>&1
    for bdf in $(ls /sys/bus/pci/devices 2>/dev/null); do
      [ "$(cat /sys/bus/pci/devices/$bdf/vendor 2>/dev/null)" = 0x10de ] || continue
      case $(cat /sys/bus/pci/devices/$bdf/class 2>/dev/null) in 0x03*) ;; *) continue ;; esac
      echo "== $bdf resource (start end flags; line 2 is BAR1)"; cat /sys/bus/pci/devices/$bdf/resource 2>&1
      ls /sys/bus/pci/devices/$bdf/ | grep -E '^resource' | tr '\n' ' '; echo
    done
    echo "== kernel"; uname -a
  } >"$f" 2>&1
  timeout 30 "$ucx_root/bin/ucx_info" -d >"$work/ucx_info_d.txt" 2>&1
  echo "[$(( $(date +%s) - t0 )) s] node facts recorded" >>"$work/steps.txt"
}
if [ -n "$dry" ]; then
  echo "+ $ucx_root/bin/ucx_info -v; ucx_info -b; ucx_info -d; nm -D libuct_*.so; nvidia-smi; /proc/driver/nvidia/params; GPU resource files > node.txt, ucx_info_d.txt"
else
  record_node
fi

# ---- the three phases -----------------------------------------------------------------------
: >"$work/rows.tsv"
deadline=$(( t0 + budget * 35 / 100 ))
[ -n "$dry" ] && echo "# phase 1: core, without MPS"
run_phase "$work" off control,core
deadline=$(( t0 + budget * 80 / 100 ))
[ -n "$dry" ] && echo "# phase 2: core and extra, under MPS"
if [ -n "$dry" ]; then
  echo "+ jobs/with_mps.sh bash $self --phase WORK on control,core,extra DEADLINE ..."
  run_phase "$work" on control,core,extra
else
  PHASE_LD_LIBRARY_PATH=$LD_LIBRARY_PATH timeout $(( deadline - $(date +%s) + 20 )) \
    "$root/jobs/with_mps.sh" bash "$self" --phase "$work" on control,core,extra "$deadline" "$perftest" "$t0" \
    >"$work/mps_phase.txt" 2>&1
  rc=$?
  echo "[$(( $(date +%s) - t0 )) s] MPS phase: exit $rc ($(tr '\n' ' ' <"$work/mps_phase.txt" | cut -c1-300))" >>"$work/steps.txt"
fi
deadline=$(( t0 + budget ))
[ -n "$dry" ] && echo "# phase 3: extra, without MPS"
run_phase "$work" off extra

# ---- summary ------------------------------------------------------------------------------
{
  echo "UCX device API probe: ucx_perftest device tests (-a cuda) between two processes on one GPU"
  grep -m1 'Library version' "$work/node.txt" 2>/dev/null
  grep -m1 -i 'name\|GPU 0' "$work/gpus.txt" 2>/dev/null
  echo "device endpoints: $(grep -o -E 'uct_[a-z0-9_]*_ep_get_device_ep' "$work/node.txt" 2>/dev/null | sort -u | tr '\n' ' ')"
  echo "transports (ucx_info -d): $(grep -E '^#\s+Transport:' "$work/ucx_info_d.txt" 2>/dev/null | awk '{print $3}' | sort -u | tr '\n' ' ')"
  echo
  cat "$work/steps.txt"
  echo
  printf '%-34s %-11s %-9s %-11s %-4s %s\n' try test size threads MPS "result or error"
  while IFS=$'\t' read -r name mps args result; do
    set -f
    # shellcheck disable=SC2086
    set -- $args
    set +f
    local_t=- size=- th=1 lvl=thread
    while [ $# -gt 0 ]; do
      case $1 in -t) local_t=$2; shift ;; -s) size=$2; shift ;; -T) th=$2; shift ;; -L) lvl=$2; shift ;; esac
      shift
    done
    printf '%-34s %-11s %-9s %-11s %-4s %s\n' "$name" "$local_t" "$size" "$th/$lvl" "$mps" "$result"
  done <"$work/rows.tsv"
} >"$work/summary.txt"
if [ -z "$dry" ]; then
  cp "$work/summary.txt" "$out/summary.txt"
  tar -C "$work" -czf "$out/ucx_device_api_probe.tgz" . 2>/dev/null
fi
cat "$work/summary.txt"
