#!/bin/bash
# Runs gdrbench under mpirun inside a Soft-RoCE guest (see vm.sh): the way to
# try the verbs transport for real without RDMA hardware.
#
#   run.sh [--ranks N] [--results DIR] [--build DIR] [--timeout S] [--install]
#          [--hcas rxe0,rxe1] [--before CMD] [--guest DIR]
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
# --guest DIR:   run in the guest(s) `guest.sh start DIR` keeps up (with
#                --nodes 2 a pair) instead of booting new ones; --results
#                must be a folder under DIR. With --nodes 2, node2's qdisc
#                on eth0 and any gdrbench or orted left there are removed
#                before and after the run (--node2-setup's netem does not
#                outlive the case); --node2 is refused.
# Example: run.sh --ranks 2 -- -t allreduce -T verbs -b 8 -e 64K
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
ranks=2 results= build=${GDRBENCH_BUILD:-} timeout=600 hcas= before= nodes=1 node2= setup= per_node=1
guest=
envs=()
usage() { sed -n '2,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 125; }
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
    --guest) guest=$2; shift 2 ;;
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
if [[ -n $guest ]]; then
  [[ -n $results ]] || { echo "run.sh: --guest needs --results DIR (a folder under the guest's)" >&2; exit 125; }
  if [[ $nodes == 2 ]]; then
    [[ -z $node2 ]] || { echo "run.sh: --node2 needs guests of its own (no --guest)" >&2; exit 125; }
    # node1 runs it: node2's setup through the relay (its status checked),
    # then mpirun across both; every rank gets the --env variables (-x).
    mpi_cmd=(mpirun --host "node1:$per_node,node2:$per_node" -np "$((2 * per_node))")
    for ((i = 1; i < ${#envs[@]}; i += 2)); do mpi_cmd+=(-x "${envs[i]%%=*}"); done
    mpi_cmd+=("$build/gdrbench" run "$@")
    # One line: the guest's dash reads the command as printf %q wrote it.
    # tidy: node2 as a fresh guest would be (no qdisc, nothing left of an
    # earlier case: its ranks would steal node2's CPU), before and after.
    script='relay=$1 setup=$2 before=$3; shift 3; tidy() { "$relay" node2 "tc qdisc del dev eth0 root 2>/dev/null; p=\$(pidof gdrbench orted); [ -z \"\$p\" ] || { echo \"run.sh: left on node2 ($1): \$p\"; kill -9 \$p; }; true" 2>&1; }; trap "tidy after; exit 143" TERM INT; tidy before; if [ -n "$setup" ]; then r=$("$relay" node2 "($setup) >&2; echo setup-exit=\$?" 2>&1); case $r in *setup-exit=0*) ;; *) echo "run.sh: node2 setup failed: $r"; tidy after; exit 125 ;; esac; fi; (eval "${before:-:}") & "$@"; rc=$?; tidy after; exit $rc'
    exec "$here/guest.sh" exec "$guest" "$results" --timeout "$timeout" "${envs[@]}" -- \
      sh -c "$script" sh "$here/relay.sh" "$setup" "$before" "${mpi_cmd[@]}"
  fi
  exec "$here/guest.sh" exec "$guest" "$results" --timeout "$timeout" "${envs[@]}" -- \
    sh -c "(${before:-:}) & exec \"\$@\"" sh "${mpi_cmd[@]}"
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
