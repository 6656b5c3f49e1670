#!/bin/bash
# Two Soft-RoCE guests as two nodes (run.sh --nodes 2 calls this): node2
# boots, starts its relay and waits; node1 waits for node2, then runs
# `mpirun --host node1,node2 -np 2 gdrbench run ARGS` (one rank per node,
# verbs over rxe0 on each eth0, MPI over TCP on eth0). When node1's command
# ends node2 is told to stop. Both guests share the results folder.
#
#   two_nodes.sh --build DIR [--results DIR] [--timeout S] [--before CMD]
#                [--node2 CMD] [--node2-setup CMD] [--per-node N]
#                [--env NAME=VALUE]... [--command] -- <gdrbench run arguments>
#
# --before CMD runs in node1, --node2 CMD in node2, both in the background.
# --node2-setup CMD runs in node2 before mpirun starts (node1 waits for it:
# a fault that must be in place for the whole run, e.g. tc netem on eth0).
# --per-node N: N ranks per node (mpirun --host node1:N,node2:N -np 2N);
# ranks 0..N-1 on node1, N..2N-1 on node2 (mpirun's default by-slot map).
# --command: what follows -- is the command node1 runs instead of mpirun
# gdrbench (jobs/bench_verbs_vs_perftest.sh --nodes 2 runs its script so);
# it reaches node2 with relay.sh node2 CMD, as mpirun does.
# Exit status: node1's command's (gdrbench's), 124 on timeout, 125 when a
# guest could not run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build= results= timeout=600 before= node2= setup= per_node=1 command=0
envs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --before) before=$2; shift 2 ;;
    --node2) node2=$2; shift 2 ;;
    --node2-setup) setup=$2; shift 2 ;;
    --per-node) per_node=$2; shift 2 ;;
    --env) envs+=(--env "$2"); shift 2 ;;
    --command) command=1; shift ;;
    --) shift; break ;;
    *) echo "two_nodes.sh: unknown option $1" >&2; exit 125 ;;
  esac
done
[[ -n $build ]] || { echo "two_nodes.sh: --build DIR" >&2; exit 125; }

tmp_results=
if [[ -z $results ]]; then results=$(mktemp -d /tmp/softroce-share.XXXXXX); tmp_results=$results; fi
mkdir -p "$results"
results=$(cd "$results" && pwd)
rm -rf "$results/.stop" "$results/.setup-done" "$results/.setup-tmp" "$results/.vm-node1" "$results/.vm-node2"
[[ $per_node =~ ^[1-9][0-9]*$ ]] || { echo "two_nodes.sh: --per-node $per_node: a count >= 1" >&2; exit 125; }

. "$here/free_port.sh"
p1=$(free_port) p2=$((p1 + 1))

n2_pid=
cleanup() {
  : >"$results/.stop"
  if [[ -n $n2_pid ]]; then
    # node2 powers off within a second of .stop; then stop waiting.
    for _ in $(seq 1 100); do kill -0 "$n2_pid" 2>/dev/null || break; sleep 0.2; done
    kill "$n2_pid" 2>/dev/null || true
    wait "$n2_pid" 2>/dev/null || true
  fi
  [[ -n $tmp_results ]] && rm -rf "$tmp_results" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# node2: the relay answers (guest-init.sh), the setup runs (its output in
# node2's log, its status in .setup-done), CMD runs, and it waits for .stop.
"$here/vm.sh" "${envs[@]}" --share "$results" --node 2 --link "$p2:$p1" --timeout "$((timeout + 60))" -- \
  sh -c "(${setup:-:}); echo \$? >/results/.setup-tmp; mv /results/.setup-tmp /results/.setup-done; (${node2:-:}) & while [ ! -e /results/.stop ]; do sleep 0.3; done" \
  > >(sed -u 's/^/node2: /' >&2) 2>&1 &
n2_pid=$!

# node1 (one line: the guest runs it with dash): wait for node2's relay, then mpirun across both.
mpi_cmd=(mpirun --host "node1:$per_node,node2:$per_node" -np "$((2 * per_node))" "$build/gdrbench" run "$@")
[[ $command == 1 ]] && mpi_cmd=("$@")
rc=0
"$here/vm.sh" "${envs[@]}" --share "$results" --node 1 --link "$p1:$p2" --timeout "$timeout" -- \
  sh -c "n=0; until [ -e /results/.vm-node2/ready ] && [ -e /results/.setup-done ]; do n=\$((n + 1)); [ \$n -le 600 ] || { echo 'two_nodes: node2 not ready after 120 s'; exit 125; }; sleep 0.2; done; [ \"\$(cat /results/.setup-done)\" = 0 ] || { echo 'two_nodes: node2 setup failed'; exit 125; }; (${before:-:}) & exec \"\$@\"" \
  sh "${mpi_cmd[@]}" || rc=$?
exit "$rc"
