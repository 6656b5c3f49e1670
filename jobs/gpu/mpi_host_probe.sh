#!/usr/bin/env bash
# One device call: `gdrbench -T mpi -m host` against the MPI's own loops on the
# same Open MPI (shared memory, 2 ranks on one host), ROUNDS (4) ABBA rounds:
#   bw at SIZES (1 MiB, 64 MiB): mpi_window_bw.c (osu_bw's loop) against
#     gdrbench's default row and two variants (--slots 1, --check none);
#   8 B latency: mpi_pingpong.c blocking (osu_latency's loop), polled, and a
#     blocking send with a polled receive (sendpoll),
#     against gdrbench's default row.
# Prints medians per round and the ratios to the MPI's own loops.
#   usage: [ROUNDS=4] [SIZES="1048576 67108864"] [PIN=none|0,1] [GDRBENCH=path] jobs/gpu/mpi_host_probe.sh
# GDRBENCH: a gdrbench already built (any machine with MPI: no GPU needed); else it is built here.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}/mpi-host; rm -rf "$out"; mkdir -p "$out"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
build=$root/build-device-${GDR_UCX:-wheel}
gdrbench=${GDRBENCH:-$build/gdrbench}
if [ -z "${DRY_RUN:-}" ] && [ -z "${GDRBENCH:-}" ]; then
  timeout 300 "$root/jobs/gpu/device_build.sh" "$build" >"$out/build.txt" 2>&1 || { tail -3 "$out/build.txt"; exit 1; }
  . "$root/jobs/gpu/ucx_env.sh" "$build"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for c in mpi_pingpong mpi_window_bw; do
  ${DRY_RUN:+echo} mpicc -O2 -I/usr/local/cuda/include "$root/jobs/gpu/$c.c" -L/usr/local/cuda/lib64 -lcudart \
    -o "$out/$c" || exit 1
done
x=(); [ -n "${LD_LIBRARY_PATH:-}" ] && x=(-x LD_LIBRARY_PATH)
# Both tools on the same CPUs: bound to cores 0 and 1 by default (PIN=none: unbound).
bind=(--bind-to core --map-by core); [ "${PIN:-0,1}" = none ] && bind=(--bind-to none)
mpi=(timeout 60 mpirun -q --oversubscribe "${bind[@]}" -np 2 "${x[@]}")
sizes=${SIZES:-"1048576 67108864"}
own() {  # the MPI's own loops
  for s in $sizes; do ${DRY_RUN:+echo} "${mpi[@]}" "$out/mpi_window_bw" "$s" >"$out/r$1_own_bw_$s.txt" 2>&1; done
  for m in block poll sendpoll; do ${DRY_RUN:+echo} "${mpi[@]}" "$out/mpi_pingpong" 8 10000 host $m >"$out/r$1_own_lat_$m.txt" 2>&1; done
}
gdr() {  # gdrbench: default rows, then each variant
  local gb=("$gdrbench" run -T mpi -m host --force)
  local s v f
  for s in $sizes; do
    for v in "bw" "slots1 --slots 1" "nocheck --check none"; do  # NAME FLAGS...
      f=$out/r$1_gdr_${v%% *}_$s
      # shellcheck disable=SC2086  # the variant's flags split on purpose
      ${DRY_RUN:+echo} "${mpi[@]}" "${gb[@]}" -t bw -b "$s" -e "$s" ${v#"${v%% *}"} --json "$f.jsonl" \
        --output "$f.h5" >"$f.txt" 2>&1
    done
  done
  ${DRY_RUN:+echo} "${mpi[@]}" "${gb[@]}" -t latency -b 8 -e 8 --json "$out/r$1_gdr_lat.jsonl" \
    --output "$out/r$1_gdr_lat.h5" >"$out/r$1_gdr_lat.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-4}"); do
  if (( r % 2 )); then own $r; gdr $r; else gdr $r; own $r; fi
  stamp "round $r"
done
[ -n "${DRY_RUN:-}" ] && exit 0
/usr/bin/env python3 "$root/jobs/gpu/mpi_host_table.py" "$out" "${ROUNDS:-4}" $sizes >"$out/summary.txt"
rc=$?
cat "$out/summary.txt"
tar czf "${OUT:-/tmp/gdr-out}/mpi_host_probe.tgz" -C "$out" --exclude='*.h5' . 2>/dev/null
stamp done
exit $rc
