#!/usr/bin/env bash
# Benchmark: gdrbench beside the libraries' own tools IN THE SAME JOB, same sizes,
# ratios per size (jobs/gpu/peers_table.py parses and prints).
#
#   cpu  host memory, 2 ranks: gdrbench -T ucx latency,bw vs ucx_perftest tag_lat/tag_bw
#        (the ucx_perftest of the UCX gdrbench uses), and the ring allreduce over mpi vs its
#        MPI_Allreduce row. A smoke test: asserts nothing about speed. Exit 0 when every tool
#        ran and parsed and #wrong is 0, 1 otherwise, 77 when ucx_perftest is missing.
#   gpu  the GPU gate (docs/gpu-gate.md), one device call: build (device_build.sh), then
#        without and with CUDA MPS (jobs/with_mps.sh), 2 ranks on GPU 0, paired ABBA rounds of
#        gdrbench -T ucx -m cuda --path direct bw (and -T mpi over the same UCX, host bw, 8 B
#        latency) against ucx_perftest -m cuda tag_bw/tag_lat of the UCX gdrbench was built
#        against, added one round at a time until every gate target is resolved
#        (jobs/gpu/gate_rule.py), ROUND_CAP rounds or the time budget; each round measures only
#        what is still open. With >= 2 GPUs also NCCL send/recv rows. Prints the table and the
#        targets; exit 1 only on a target shown missed, a device row without path or %peak, or
#        missing output. $OUT gets summary.txt and the same table and a tarball of every raw
#        output under a dated name for results/archive (DATE_GPU_gpu-gate-ucxNNN-COMMIT).
#   all  both (on the GPU machine).
#
# gdrbench runs with its defaults (window, iterations) apart from sizes; ucx_perftest with its
# defaults apart from -n/-w, whose defaults (10^6 / 10^4 messages) would take hours at 256 MiB:
# -n is the timed message count of gdrbench's row of that size (iterations x window), >= 100.
#
# env: WORK (raw outputs; default a new /tmp dir), GDRBENCH, UCX_PERFTEST, PERFTEST_PORT (13471),
#      BUDGET_S (command time the gpu half may use, build included, default 450), MAXBYTES (gpu:
#      268435456), ROUND_CAP (16 rounds per MPS variant), LAUNCHES (3: launches of each tool a
#      round at the open bw sizes up to LAUNCH_MAX, 16777216; the round's value is their mean), GATE_SPLIT (50: the % of the measuring
#      time no-mps may use; mps gets the rest), RESERVE_S (15 s kept for the table and tarball),
#      HOST_CPUS (the two CPUs both tools' host-row processes run on, default 0,1; none = unbound),
#      DRY_RUN=1 (print, run nothing; DRY_ROUND_S="90 40": simulated seconds of round 1, 2, ...,
#      the last repeating; DRY_BUILD_S=70: the build's; DRY_OPEN_ROUNDS=N: every target resolved
#      after N rounds),
#      NGPU (dry run: GPUs to assume). GDRBENCH and UCX_PERFTEST
#      set in gpu mode skip the build (a warm machine, or a rehearsal on host).
# usage: jobs/gpu/bench_vs_peers.sh [cpu|gpu|all]        (default cpu)
#        (gpu-variant NAME: internal, one variant of the gpu half, as with_mps.sh's command)
set -u
mode=${1:-cpu}
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${GDR_PYTHON:-/usr/bin/python3}
table=$root/jobs/gpu/peers_table.py
work=${WORK:-$(mktemp -d /tmp/bench_vs_peers.XXXXXX)}
mkdir -p "$work"
dry=${DRY_RUN:-}
t0=$(date +%s)
fake_now=$t0   # a dry run's clock: DRY_ROUND_S advances it by a round's simulated length
budget=${BUDGET_S:-450}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
now() { if [ -n "$dry" ]; then echo "$fake_now"; else date +%s; fi; }
stamp() { echo "[$(( $(now) - t0 )) s] $*"; }
sweep() { local s=$1 out=; while ((s <= $2)); do out+="$s "; s=$((s * $3)); done; echo "${out% }"; }

# Yama ptrace_scope >= 1 forbids process_vm_readv (UCX's cma) between sibling processes such
# as the two ucx_perftest processes or two ranks, unless root. Both tools then go without cma.
if [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 0 ] &&
   [ "$(id -u)" != 0 ] && [ -z "${UCX_TLS:-}" ]; then
  export UCX_TLS=^cma
fi

# step SECS LOG CMD...: run under timeout, capped by what is left of the budget, output to LOG.
step() {
  local secs=$1 log=$2; shift 2
  if [ -n "$dry" ]; then echo "+ timeout $secs $* > ${log#$work/}"; return 0; fi
  local left=$(( budget - ($(date +%s) - t0) ))
  if (( left < 10 )); then echo "skipped, out of time: $*" | tee "$log"; return 124; fi
  (( secs > left )) && secs=$left
  timeout "$secs" "$@" >"$log" 2>&1
}

# gdr DIR NAME SECS run-args...: one mpirun -np 2 gdrbench run, JSON Lines and HDF5 into DIR.
gdr() {
  local dir=$1 name=$2 secs=$3 x=() v; shift 3
  for v in LD_LIBRARY_PATH UCX_TLS CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY \
           CUDA_MPS_LOG_DIRECTORY NCCL_NVLS_ENABLE; do
    [ -n "${!v:-}" ] && x+=(-x "$v")
  done
  [ "${PIN_CPUS:-none}" != none ] && x+=(-x PIN_CPUS)
  step "$secs" "$dir/$name.txt" mpirun -q --oversubscribe --bind-to none -np 2 "${x[@]}" \
    "$root/jobs/gpu/pin_ranks.sh" "$bin" run "$@" --output "$dir/$name.h5" --json "$dir/$name.jsonl"
  local rc=$?
  stamp "gdrbench $name: exit $rc ($(cat "$dir/$name.jsonl" 2>/dev/null | grep -c .) rows)"
}

listening() {  # PORT: is a TCP socket listening on it (/proc: no ss/netstat needed)?
  awk -v p="$(printf ':%04X' "$1")" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
    END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# ucxpt DIR TEST SIZE MEM [COUNTS_DIR]: server in the background, client to 127.0.0.1, same port
# each time (a port left listening by someone else is skipped); the server is killed after the
# client. Message counts from gdrbench's rows in COUNTS_DIR (default DIR).
ucxpt() {  # ... [PREFIX [SUFFIX]]: host_ names the log ucxpt_host_..., counts from gdr_host; .l2: launch 2
  local dir=$1 test=$2 size=$3 mem=$4 cdir=${5:-$1} pre=${6:-} sfx=${7:-} gtest=bw src=gdr_p2p n w port=${PERFTEST_PORT:-13471} spid
  [ "$test" = tag_lat ] && gtest=latency
  [ "$pre" = host_ ] && src=gdr_host
  [ "$gtest" = latency ] && [ -s "$cdir/gdr_extra.jsonl" ] && src=gdr_extra
  [ -s "$cdir/gdr_lat8.jsonl" ] && grep -q "\"bytes\":$size," "$cdir/gdr_lat8.jsonl" && src=gdr_lat8
  n=$("$py" "$table" count "$cdir/$src.jsonl" "$gtest" "$size" 2>/dev/null)
  n=$(( ${n:-0} > 100 ? ${n:-0} : 100 )); w=$(( n / 4 > 10 ? n / 4 : 10 ))
  local log=$dir/ucxpt_${pre}${test}_${size}${sfx}.txt
  if [ -n "$dry" ]; then
    echo "+ ${PIN_CPUS:+PIN_CPUS=$PIN_CPUS }$perftest -p $port &;  timeout 60 $perftest 127.0.0.1 -p $port -t $test -s $size -m $mem -n $n -w $w > ${log#$work/}; kill server"
    return 0
  fi
  while listening "$port"; do port=$((port + 1)); done
  PIN_RANK=0 timeout 90 "$root/jobs/gpu/pin_ranks.sh" "$perftest" -p "$port" >"$log.server" 2>&1 &
  spid=$!
  for _ in $(seq 100); do listening "$port" && break; kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  PIN_RANK=1 step 60 "$log" "$root/jobs/gpu/pin_ranks.sh" "$perftest" 127.0.0.1 -p "$port" -t "$test" -s "$size" -m "$mem" -n "$n" -w "$w"
  local rc=$?
  kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
  [ $rc = 0 ] || stamp "ucx_perftest $test $size B: exit $rc ($(grep -m1 -i error "$log"))"
}

cpu_half() {
  local dir=$work/cpu s sizes lat8=8 ct=()
  rm -rf "$dir"; mkdir -p "$dir"   # gdrbench never overwrites an --output
  sizes=$(sweep 65536 4194304 4)   # 64K..4M: a few seconds in all on 2 cores
  bin=${bin:-${GDRBENCH:-$root/build/gdrbench}}
  perftest=${perftest:-${UCX_PERFTEST:-$(command -v ucx_perftest)}}
  if [ -z "$dry" ] && [ ! -x "${perftest:-/nonexistent}" ]; then
    echo "no ucx_perftest (apt-get install ucx-utils, or set UCX_PERFTEST): skipped"; return 77
  fi
  # Automatic iteration counts fill about --case-time per case (1 s): a quarter keeps the
  # smoke test short; the counts stay OSU's where that fits.
  "$bin" run --help 2>/dev/null | grep -q -- --case-time && ct=(--case-time 0.25)
  stamp "cpu half: $bin, $perftest, raw outputs in $dir"
  gdr "$dir" gdr_p2p 60 -T ucx -m host -t latency,bw -b 64K -e 4M -f 4 "${ct[@]}"
  gdr "$dir" gdr_lat8 30 -T ucx -m host -t latency -b $lat8 -e $lat8 "${ct[@]}"
  for s in $sizes; do ucxpt "$dir" tag_bw "$s" host; ucxpt "$dir" tag_lat "$s" host; done
  ucxpt "$dir" tag_lat $lat8 host
  stamp "ucx_perftest: $(ls "$dir"/ucxpt_*.txt 2>/dev/null | wc -l) runs"
  gdr "$dir" gdr_allreduce 60 -T mpi -t allreduce --reference mpi -b 64K -e 4M -f 4 "${ct[@]}"
  [ -n "$dry" ] && return 0
  "$py" "$table" cpu "$dir" --sizes $sizes --lat-sizes $lat8
}

# The gate's rounds. Each round measures what the gate targets still open need (the file
# DIR/open.txt of the variant: "piece size" lines from peers_table.py open): bw (gdrbench -T ucx
# bw and tag_bw at that size), mpi (-T ucx and -T mpi bw), host (64 MiB host bw, both tools),
# lat and mpilat (8 B latency under MPS: -T ucx and tag_lat; -T mpi and the MPI's ping-pongs).
# Round 1 measures everything, and once the informative rows that no target reads (gdr_extra:
# latency, bw, bibw and the copy-d2d ceiling per size; tag_lat runs at 8 B only).
is_open() { grep -qx "$1 ${2:-[0-9]*}" "$odir/open.txt"; }
open_sizes() { local s; for s in $gsizes; do { is_open "$1" "$s" || { [ -n "${2:-}" ] && is_open "$2" "$s"; }; } && echo "$s"; done; }
range() { [ -n "$1" ] && echo "-b $(echo $1 | awk '{print $1}') -e $(echo $1 | awk '{print $NF}')"; }

gdr_p2p_round() {  # DIR ROUND: gdrbench's rows of one round
  local bws mpis
  bws=$(open_sizes bw mpi) mpis=$(open_sizes mpi)
  [ "$2" = 1 ] && gdr "$1" gdr_extra 150 -T ucx -m cuda --path direct -t $gtests --reference copy-d2d \
    -b 1M -e "$gmax" -f "$gstep"
  # Each round's bw rows carry their own %peak: copy-d2d at the same sizes, in the same launch
  # (about 1 s a round on the H100; without --reference the run would add copy-d2h/h2d too).
  [ -n "$bws" ] && gdr "$1" gdr_p2p 150 -T ucx -m cuda --path direct -t bw $(range "$bws") -f "$gstep" \
    --reference copy-d2d
  { [ "$2" = 1 ] || is_open lat; } && gdr "$1" gdr_lat8 40 -T ucx -m cuda --path direct -t latency -b 8 -e 8
  # Open MPI's own use of the same UCX (pml ucx needs UCP >= 1.15); and host bw at 64 MiB.
  # Round 1 adds the host copies that let a device row's speed rule staging out, and copy-d2d
  # (its %peak); later rounds run bw alone (--reference none: the copies took 12 of its 17 s a
  # round on the H100), and peers_table.py holds their rows to round 1's path and speed.
  if [ "$mpi_rows" = 1 ]; then
    local mref=copy-d2h,copy-h2d,copy-d2d; [ "$2" = 1 ] || mref=none
    [ -n "$mpis" ] && OMPI_MCA_pml=ucx gdr "$1" gdr_mpi 150 -T mpi -m cuda --path direct -t bw $(range "$mpis") \
      -f "$gstep" --reference $mref
    if [ "$2" = 1 ] || is_open mpilat; then
      OMPI_MCA_pml=ucx gdr "$1" gdr_mpi_lat8 40 -T mpi -m cuda --path direct -t latency -b 8 -e 8
      # The MPI's own ping-pong (no gdrbench code), blocking as osu_latency and with the
      # non-blocking calls and polling gdrbench makes: the floors under -T mpi latency.
      for shape in block poll; do
        f=$1/mpi_pingpong_8.txt; [ $shape = poll ] && f=$1/mpi_pingpong_poll_8.txt
        [ -x "$pingpong" ] || [ -n "$dry" ] && step 40 "$f" mpirun -q --oversubscribe \
          --bind-to none -np 2 -x LD_LIBRARY_PATH ${CUDA_MPS_PIPE_DIRECTORY:+-x CUDA_MPS_PIPE_DIRECTORY} \
          --mca pml ucx "${pingpong:-mpi_pingpong}" 8 10000 device $shape
      done
    fi
  fi
  is_open host && PIN_CPUS=$host_cpus gdr "$1" gdr_host 40 -T ucx -m host -t bw -b 64M -e 64M
  return 0
}
ucxpt_round() {  # DIR COUNTS_DIR ROUND: ucx_perftest's rows of one round
  local s
  for s in $gsizes; do
    is_open bw "$s" && ucxpt "$1" tag_bw "$s" cuda "$2"
  done
  { [ "$3" = 1 ] || is_open lat; } && ucxpt "$1" tag_lat 8 cuda "$2"
  is_open host && PIN_CPUS=$host_cpus ucxpt "$1" tag_bw 67108864 host "$2" host_
  return 0
}

# Launches 2..LAUNCHES of a round, at the open sizes up to LAUNCH_MAX (16 MiB): there each
# launch of either tool lands on one of two levels 1.3-1.44 x apart, drawn per launch, whatever
# its iterations (results/archive/20261205_h100_two-levels-probe-43b9765.txt), so one launch a
# round makes each paired ratio a coin toss. peers_table.py takes the mean of a round's launches
# per tool. Interleaved, each pair in the round's order (odd: gdrbench first), as launch 1.
more_launches() {  # DIR ROUND
  local l bws mpis s
  bws=$(for s in $(open_sizes bw mpi); do (( s <= lmax )) && echo "$s"; done)
  mpis=$(for s in $(open_sizes mpi); do (( s <= lmax )) && echo "$s"; done)
  [ -z "$bws$mpis" ] && return 0
  for l in $(seq 2 "$launches"); do
    if (( $2 % 2 )); then launch_ours "$1" "$l" "$bws" "$mpis"; launch_theirs "$1" "$l"
    else launch_theirs "$1" "$l"; launch_ours "$1" "$l" "$bws" "$mpis"; fi
  done
}
launch_ours() {  # DIR LAUNCH BW_SIZES MPI_SIZES
  [ -n "$3" ] && gdr "$1" "gdr_p2p.l$2" 150 -T ucx -m cuda --path direct -t bw $(range "$3") -f "$gstep" \
    --reference copy-d2d
  [ -n "$4" ] && [ "$mpi_rows" = 1 ] && OMPI_MCA_pml=ucx gdr "$1" "gdr_mpi.l$2" 150 -T mpi -m cuda --path direct \
    -t bw $(range "$4") -f "$gstep" --reference none
  return 0
}
launch_theirs() {  # DIR LAUNCH
  local s
  for s in $gsizes; do
    (( s <= lmax )) && is_open bw "$s" && ucxpt "$1" tag_bw "$s" cuda "$odir/r1" "" ".l$2"
  done
  return 0
}

all_pieces() {  # VARIANT: every piece of the gate's targets (round 1 measures them all)
  local s
  for s in $gsizes; do echo "bw $s"; [ "$mpi_rows" = 1 ] && echo "mpi $s"; done
  echo "host 67108864"
  if [ "$1" = mps ]; then echo "lat 8"; [ "$mpi_rows" = 1 ] && echo "mpilat 8"; fi
  return 0
}

# NAME [DEADLINE]: one variant into $work/NAME, rounds r1, r2, ... in ABBA order (odd rounds:
# gdrbench then ucx_perftest; even: the other way), so that neither tool always runs first on a
# GPU whose clocks are still rising. After each round peers_table.py judges every gate target
# (jobs/gpu/gate_rule.py) and the next round measures only what is still open. It stops when
# nothing is open, at ROUND_CAP rounds, or when the last round's length (the next measures no
# more than it) would pass DEADLINE (epoch seconds; default: the end of BUDGET_S).
gpu_variant() {
  local dir=$work/$1 r deadline=${2:-$(( t0 + budget ))} t_round est=0 why="round cap ($round_cap)"
  local dsec; read -ra dsec <<<"${DRY_ROUND_S:-60}"
  rm -rf "$dir"; mkdir -p "$dir"; odir=$dir
  # 2 ranks on the one GPU (GPU 0 where there are more), as ucx_perftest's two processes.
  (( ngpu > 1 )) && export CUDA_VISIBLE_DEVICES=0
  all_pieces "$1" >"$dir/open.txt"
  for r in $(seq 1 "$round_cap"); do
    if (( r > 1 )); then
      if [ -n "$dry" ]; then
        echo "+ $py $table open ${dir#$work/} --sizes $gsizes --lat-sizes 8 > ${dir#$work/}/open.txt"
        [ -n "${DRY_OPEN_ROUNDS:-}" ] && (( r > DRY_OPEN_ROUNDS )) && : >"$dir/open.txt"
      else
        "$py" "$table" open "$dir" --sizes $gsizes --lat-sizes 8 >"$dir/open.txt" 2>"$dir/open-r$r.err" ||
          { stamp "$1: peers_table.py open failed ($(head -1 "$dir/open-r$r.err")): stopping"; why="judge failed"; break; }
      fi
      if [ ! -s "$dir/open.txt" ]; then why="every gate target resolved"; break; fi
      if (( $(now) + est > deadline )); then
        why="time budget (round $((r - 1)) took $est s, $(( deadline - $(now) )) s left)"; break
      fi
    fi
    echo "$1 round $r: measures $(tr '\n' ' ' <"$dir/open.txt" | sed 's/ $//')"
    t_round=$(now)
    mkdir -p "$dir/r$r"
    if (( r % 2 )); then gdr_p2p_round "$dir/r$r" "$r"; ucxpt_round "$dir/r$r" "$dir/r1" "$r"
    else ucxpt_round "$dir/r$r" "$dir/r1" "$r"; gdr_p2p_round "$dir/r$r" "$r"; fi
    more_launches "$dir/r$r" "$r"
    [ -n "$dry" ] && fake_now=$(( fake_now + ${dsec[r - 1]:-${dsec[${#dsec[@]} - 1]}} ))
    est=$(( ($(now) - t_round) * 11 / 10 ))
    stamp "$1: round $r done"
  done
  local n=$(ls -d "$dir"/r[0-9]* 2>/dev/null | wc -l)
  stamp "$1: $n rounds, stopped on: $why"
  echo "$1: $n rounds, stopped on: $why" >"$dir/stop.txt"
  if (( ngpu > 1 )); then
    export CUDA_VISIBLE_DEVICES=0,1 NCCL_NVLS_ENABLE=0   # NVLink multicast off (KINDS.md)
    gdr "$dir" gdr_nccl 150 -T ucx -m cuda --path direct -t latency,bw,bibw --reference nccl -b 1M -e "$gmax"
    unset NCCL_NVLS_ENABLE
  fi
  unset CUDA_VISIBLE_DEVICES
}

gpu_build() {  # device_build.sh says which CUDA UCX (with bin/ucx_perftest) it built against
  OUT=${OUT:-/tmp/gdr-out}; mkdir -p "$OUT"
  gbuild=${GDR_BUILD:-$root/build-device}
  if [ -z "$dry" ] && [ -z "${GDRBENCH:-}" ]; then
    timeout 300 "$root/jobs/gpu/device_build.sh" "$gbuild" || { echo "build failed"; return 1; }
    stamp "built"
  elif [ -n "$dry" ]; then
    echo "+ timeout 300 jobs/gpu/device_build.sh $gbuild"
    fake_now=$(( fake_now + ${DRY_BUILD_S:-70} )); stamp "built (simulated: DRY_BUILD_S)"
  fi
  [ -n "${GDRBENCH:-}" ] || . "$root/jobs/gpu/ucx_env.sh" "$gbuild"
  bin=${GDRBENCH:-$gbuild/gdrbench} perftest=${UCX_PERFTEST:-${ucx_bin:-/tmp/ucx/bin}/ucx_perftest}
}

gpu_sizes() {
  ngpu=${NGPU:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')}
  # Host rows: both tools' two processes on the same two CPUs (jobs/gpu/pin_ranks.sh). Unbound,
  # each tool's 64 MiB host bw swung 4.2-8.6 GB/s with where its processes landed, and a gate
  # read 0.91 from that alone (results/archive/20261204_h200_ucx113-host-probe.txt).
  host_cpus=${HOST_CPUS:-0,1}
  gmax=${MAXBYTES:-268435456} gstep=${STEP:-4} round_cap=${ROUND_CAP:-16} gtests=${GDR_TESTS:-latency,bw,bibw}
  launches=${LAUNCHES:-3} lmax=${LAUNCH_MAX:-16777216}
  gsizes=$(sweep 1048576 "$gmax" "$gstep")
  # Open MPI 4.1's pml ucx refuses a UCP older than 1.15 (it segfaults over 1.13.1).
  local v; v=$(ucx_version)
  mpi_rows=${MPI_ROWS:-$(awk -v v="${v:-0}" 'BEGIN { split(v, a, "."); print (a[1] > 1 || a[2] >= 15) ? 1 : 0 }')}
  pingpong=
  if [ "$mpi_rows" = 1 ] && [ -z "$dry" ]; then
    pingpong=$work/mpi_pingpong
    mpicc -O2 -I/usr/local/cuda/include "$root/jobs/gpu/mpi_pingpong.c" -L/usr/local/cuda/lib64 -lcudart \
      -o "$pingpong" >"$work/mpi_pingpong_build.txt" 2>&1 || { pingpong=; stamp "mpi_pingpong: build failed"; }
  fi
}

gpu_half() {
  gpu_sizes
  { nvidia-smi -L; "$(dirname "$perftest")/ucx_info" -v; } >"$work/env.txt" 2>&1
  stamp "$ngpu GPU(s); raw outputs in $work"
  [ -n "$dry" ] || [ -x "$perftest" ] || stamp "no $perftest: the ucx_perftest columns stay empty"
  # Both MPS variants in one call: the time left after the build (less RESERVE_S for the
  # table and the tarball) is split; no-mps may use GATE_SPLIT (50) % of it, mps gets all
  # that is left when no-mps stops, so time no-mps did not need goes to mps.
  local reserve=${RESERVE_S:-15} left no_mps_end
  left=$(( budget - ($(now) - t0) - reserve ))
  no_mps_end=$(( $(now) + left * ${GATE_SPLIT:-50} / 100 ))
  stamp "measuring: $left s; no-mps until +$(( no_mps_end - t0 )) s, mps the rest"
  # GATE_SPLIT=0: mps alone; 100: no-mps alone (a whole call for the variant left unresolved).
  [ "${GATE_SPLIT:-50}" != 0 ] && gpu_variant no-mps "$no_mps_end"
  # The mps variant is this script again inside jobs/with_mps.sh, which starts the daemon,
  # checks that it answers, and stops it however the variant ends (refused if one runs).
  left=$(( budget - ($(now) - t0) - reserve ))
  if [ "${GATE_SPLIT:-50}" = 100 ]; then :
  elif [ -n "$dry" ]; then
    echo "+ jobs/with_mps.sh $0 gpu-variant mps   (BUDGET_S=$left; its rounds, as a dry run here:)"
    gpu_variant mps "$(( $(now) + left ))"
  else
    WORK=$work GDRBENCH=$bin UCX_PERFTEST=$perftest NGPU=$ngpu BUDGET_S=$left \
      "$root/jobs/with_mps.sh" bash "$root/jobs/gpu/bench_vs_peers.sh" gpu-variant mps 2>&1 |
      tee "$work/mps-run.txt"
    stamp "mps variant: with_mps.sh exit ${PIPESTATUS[0]} (2: refused, 3: MPS did not start or stop)"
  fi
  local name; name=$(archive_name)
  if [ -n "$dry" ]; then
    echo "+ $py $table gpu no-mps mps --sizes $gsizes --lat-sizes 8 > \$OUT/$name.txt (and \$OUT/summary.txt)"
    echo "+ tar -czf \$OUT/$name.tgz $(basename "$work")"
    return 0
  fi
  {
    echo "# $(date -u '+%F %T') UTC, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)," \
      "commit ${GDR_COMMIT:-$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null)}, UCX $(ucx_version)," \
      "BUDGET_S=$budget ROUND_CAP=$round_cap GATE_SPLIT=${GATE_SPLIT:-50} MAXBYTES=$gmax"
    cat "$work"/*/stop.txt 2>/dev/null
  } >"$work/table.txt"
  "$py" "$table" gpu $(for v in no-mps mps; do [ -d "$work/$v" ] && echo "$work/$v"; done) \
    --sizes $gsizes --lat-sizes 8 >>"$work/table.txt" 2>&1
  local rc=$?
  echo "peers_table: exit $rc (1: a gate target shown missed, a device row without path or %peak, or some output missing)" >>"$work/table.txt"
  tar -C "$(dirname "$work")" -czf "$OUT/$name.tgz" "$(basename "$work")"
  cp "$work/table.txt" "$OUT/summary.txt"
  cp "$work/table.txt" "$OUT/$name.txt"
  stamp "details: \$OUT/$name.tgz; table: \$OUT/$name.txt (for results/archive) and \$OUT/summary.txt"
  cat "$work/table.txt"
  return $rc
}

ucx_version() { "$(dirname "$perftest")/ucx_info" -v 2>/dev/null | sed -n 's/^# \(Library version:\|Version\) \([0-9.]*\).*/\2/p' | head -1; }
# The name results/archive gives a gate's table: date, GPU, what ran, UCX, commit.
archive_name() {
  local gpu ucx commit
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -oiE 'h100|h200|a100|b200|gh200' | head -1)
  ucx=$(ucx_version | awk -F. '{print $1 $2}')
  commit=${GDR_COMMIT:-$(git -C "$root" rev-parse --short=7 HEAD 2>/dev/null)}
  echo "$(date -u +%Y%m%d)_${gpu:-gpu}_gpu-gate-ucx${ucx:-unknown}-${commit:-nocommit}" | tr 'A-Z' 'a-z'
}

case $mode in
  cpu) cpu_half ;;
  gpu) gpu_build && gpu_half ;;
  gpu-variant) bin=$GDRBENCH perftest=$UCX_PERFTEST; gpu_sizes; gpu_variant "${2:?variant name}" ;;
  all) gpu_build || exit 1; cpu_half; c=$?; gpu_half; g=$?; exit $(( g ? g : c )) ;;
  *) echo "usage: $0 [cpu|gpu|all]" >&2; exit 2 ;;
esac
