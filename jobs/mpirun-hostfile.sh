#!/usr/bin/env bash
# mpirun-hostfile.sh: gdrbench on several nodes without Slurm, with mpirun
# and a hostfile. The same sweeps as the sbatch scripts, chosen by arguments.
#
#   jobs/mpirun-hostfile.sh HOSTFILE [gdrbench run options...]
#
#   jobs/mpirun-hostfile.sh hosts -t allreduce -m cuda -e 1G          # all GPUs
#   GDR_PPN=1 jobs/mpirun-hostfile.sh hosts -t latency,bw --pairs all # every node pair
#   GDR_PPN=8 GDR_NP=8 jobs/mpirun-hostfile.sh hosts -m cuda --path direct,staged
#
# HOSTFILE: one host per line (Open MPI's "host slots=N" is accepted; "#"
# starts a comment). Ranks are placed GDR_PPN per node, in hostfile order, so
# local rank = GPU. gdrbench needs the same path on every node (a shared
# file system, or the same install). Without options it runs the default sweep
# (allreduce, latency, bw; host memory).
#
# Environment (all optional):
#   GDRBENCH        the binary (default: gdrbench on PATH, else ../build/gdrbench
#                   next to this script); must exist at that path on every node
#   GDR_PPN         ranks per node = GPUs per node (default 8)
#   GDR_NP          total ranks (default: nodes in HOSTFILE x GDR_PPN)
#   GDR_GPU_BIND    local (default: gdrbench picks local rank mod GPU count),
#                   env (CUDA_VISIBLE_DEVICES = local rank, from
#                   OMPI_COMM_WORLD_LOCAL_RANK / MPI_LOCALRANKID), none
#   MPIRUN          the launcher (default mpirun): Open MPI or MPICH/Hydra
#   GDR_MPIRUN_ARGS extra launcher options, word-split (e.g. "--bind-to numa",
#                   "--mca btl_tcp_if_include ib0", "--oversubscribe")
#   DRY_RUN=1       print the command instead of running it
#
# Every variable named UCX_*, NCCL_*, GDR_*, CUDA_*, HCOLL_* or OMPI_* set here
# is passed to all ranks (Open MPI: -x NAME; Hydra passes the environment).
# Transport settings commonly needed:
#   export UCX_TLS=rc,cuda_copy,gdr_copy            # RDMA + GPU, no TCP fallback
#   export UCX_NET_DEVICES=mlx5_0:1                 # one HCA port
#   export NCCL_IB_HCA=mlx5_0,mlx5_1                # HCAs for NCCL reference rows
#   export OMPI_MCA_pml=ucx                         # Open MPI point-to-point over UCX
# As root, Open MPI also wants OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit 2
fi
hostfile=$1; shift
[[ -r $hostfile ]] || { echo "mpirun-hostfile: cannot read hostfile '$hostfile'" >&2; exit 2; }

if [[ -n ${GDRBENCH:-} ]]; then gdr=$GDRBENCH
elif command -v gdrbench >/dev/null 2>&1; then gdr=$(command -v gdrbench)
elif [[ -x $here/../build/gdrbench ]]; then gdr=$(cd "$here/../build" && pwd)/gdrbench
else echo "mpirun-hostfile: gdrbench not found: set GDRBENCH=/path/to/gdrbench" >&2; exit 2
fi

mapfile -t hosts < <(sed -e 's/#.*//' -e 's/[[:space:]].*//' -e '/^$/d' "$hostfile")
(( ${#hosts[@]} > 0 )) || { echo "mpirun-hostfile: no hosts in '$hostfile'" >&2; exit 2; }
ppn=${GDR_PPN:-8}
np=${GDR_NP:-$(( ${#hosts[@]} * ppn ))}
mpirun=${MPIRUN:-mpirun}

launch=("$gdr")
if [[ ${GDR_GPU_BIND:-local} == env ]]; then
  launch=(bash -c 'export CUDA_VISIBLE_DEVICES=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-0}}; exec "$@"' gdr-bind "$gdr")
fi
run_args=("$@")
[[ ${#run_args[@]} -gt 0 ]] || run_args=(-t "allreduce,latency,bw")

# shellcheck disable=SC2206
extra=(${GDR_MPIRUN_ARGS:-})
if grep -qi 'open mpi\|open-mpi\|openrte' <<< "$("$mpirun" --version 2>&1)"; then
  # Open MPI: slots per host from the hostfile as we rewrite it, ppr mapping.
  hf=$(mktemp "${TMPDIR:-/tmp}/gdr-hosts.XXXXXX")
  trap 'rm -f "$hf"' EXIT
  for h in "${hosts[@]}"; do echo "$h slots=$ppn"; done > "$hf"
  cmd=("$mpirun" -np "$np" --hostfile "$hf" --map-by "ppr:$ppn:node")
  while IFS='=' read -r name _; do
    [[ $name =~ ^(UCX_|NCCL_|GDR_|CUDA_|HCOLL_|OMPI_) ]] && cmd+=(-x "$name")
  done < <(env)
else
  # MPICH / Intel MPI (Hydra): host:ppn lines, environment passed by default.
  hf=$(mktemp "${TMPDIR:-/tmp}/gdr-hosts.XXXXXX")
  trap 'rm -f "$hf"' EXIT
  for h in "${hosts[@]}"; do echo "$h:$ppn"; done > "$hf"
  cmd=("$mpirun" -np "$np" -f "$hf" -ppn "$ppn")
fi
cmd+=("${extra[@]}" "${launch[@]}" run "${run_args[@]}")

echo "mpirun-hostfile: $np ranks on ${#hosts[@]} node(s) (${hosts[*]}), $ppn per node"
echo "+ ${cmd[*]}"
[[ ${DRY_RUN:-0} == 1 ]] && exit 0
"${cmd[@]}"
