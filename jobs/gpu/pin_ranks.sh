#!/usr/bin/env bash
# Runs COMMAND on one CPU chosen by this process's local MPI rank, so that two tools compared
# in one job (gdrbench's ranks, ucx_perftest's server and client) sit on the same CPUs.
#   mpirun -x PIN_CPUS ... jobs/gpu/pin_ranks.sh COMMAND [ARGS...]
#   PIN_CPUS="0,8": local rank 0 on CPU 0, rank 1 on CPU 8, ...; empty or "none": unpinned.
#   PIN_RANK overrides the rank (for processes that are not MPI ranks, such as ucx_perftest's).
set -u
cpus=${PIN_CPUS:-none}
[ "$cpus" = none ] && exec "$@"
IFS=, read -ra list <<<"$cpus"
rank=${PIN_RANK:-${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}}
cpu=${list[$(( rank % ${#list[@]} ))]}
exec taskset -c "$cpu" "$@"
