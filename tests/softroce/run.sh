#!/bin/bash
# Runs gdrbench under mpirun inside a Soft-RoCE guest (see vm.sh): the way to
# try the verbs transport for real without RDMA hardware.
#
#   run.sh [--ranks N] [--results DIR] [--build DIR] [--timeout S] [--install]
#          [--hcas rxe0,rxe1] [--before CMD]
#          [--nodes 2 [--node2 CMD] [--node2-setup CMD] [--per-node N]]
#          -- <gdrbench run arguments>
#
# --results DIR: host folder the guest runs in (the HDF5 file lands there);
#                default a temporary folder, removed afterwards.
# --build DIR:   build tree holding gdrbench (default $GDRBENCH_BUILD, else
#                the first of build/, build-*/ next to this repository).
# --install:     apt-get install the packages of jobs/deps/debian-softroce.txt.
# --hcas LIST:   rank i uses device LIST[i % len] (GDR_VERBS_HCA), so traffic
#                crosses the veth pair between rxe0 and rxe1 instead of
#                looping back inside one device.
# --before CMD:  a shell command run in the guest before mpirun, in the
#                background (e.g. "sleep 20; ip link set veth1 down").
# --nodes 2:     two guests, node1 and node2, joined by a qemu UDP network on
#                127.0.0.1 (each with rxe0 on its eth0); mpirun in node1
#                starts one rank per node (--ranks is then the number of
#                nodes), node2's daemon through relay.sh.
# --node2 CMD:   with --nodes 2, a shell command run in node2 in the
#                background while the run goes (e.g. "ip link set eth0 down").
# --node2-setup CMD: with --nodes 2, a command node2 runs before mpirun
#                starts (e.g. "tc qdisc add dev eth0 root netem rate 8mbit").
# --per-node N:  with --nodes 2, N ranks per node (2N in all).
# --env N=V:     with --nodes 2, set N=V in both guests (every rank sees it).
# Example: run.sh --ranks 2 -- -t allreduce -T verbs -b 8 -e 64K
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
ranks=2 results= build=${GDRBENCH_BUILD:-} timeout=600 hcas= before= nodes=1 node2= setup= per_node=1
envs=()
usage() { sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 125; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --hcas) hcas=$2; shift 2 ;;
    --before) before=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --node2) node2=$2; shift 2 ;;
    --node2-setup) setup=$2; shift 2 ;;
    --per-node) per_node=$2; shift 2 ;;
    --env) envs+=(--env "$2"); shift 2 ;;
    --install)
      apt-get install -y -q $(cat "$repo/jobs/deps/debian-softroce.txt") >&2; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown option $1" >&2; usage ;;
  esac
done

if [[ -z $build ]]; then
  for d in "$repo"/build "$repo"/build-*; do
    [[ -x $d/gdrbench ]] && { build=$d; break; }
  done
fi
[[ -n $build && -x $build/gdrbench ]] ||
  { echo "run.sh: no gdrbench binary; build it or pass --build DIR" >&2; exit 125; }
build=$(cd "$build" && pwd)

share_args=()
[[ -n $results ]] && { mkdir -p "$results"; share_args=(--share "$results"); }

# One mpirun app context per rank when ranks get their own device.
mpi_cmd=(mpirun -np "$ranks" "$build/gdrbench" run "$@")
if [[ -n $hcas ]]; then
  IFS=, read -r -a devs <<<"$hcas"
  mpi_cmd=(mpirun)
  for ((r = 0; r < ranks; r++)); do
    ((r > 0)) && mpi_cmd+=(:)
    mpi_cmd+=(-np 1 env "GDR_VERBS_HCA=${devs[r % ${#devs[@]}]}" "$build/gdrbench" run "$@")
  done
fi
if [[ $nodes == 2 ]]; then
  exec "$here/two_nodes.sh" --build "$build" --results "$results" --timeout "$timeout" \
    --before "$before" --node2 "$node2" --node2-setup "$setup" --per-node "$per_node" "${envs[@]}" -- "$@"
fi
[[ $nodes == 1 ]] || { echo "run.sh: --nodes is 1 or 2" >&2; exit 125; }
if [[ -n $before ]]; then
  exec "$here/vm.sh" "${share_args[@]}" --timeout "$timeout" -- \
    sh -c "($before) & exec \"\$@\"" sh "${mpi_cmd[@]}"
fi
exec "$here/vm.sh" "${share_args[@]}" --timeout "$timeout" -- "${mpi_cmd[@]}"
