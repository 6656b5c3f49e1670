#!/usr/bin/env bash
# srun direct launch of gdrbench under the test Slurm, with one PMI plugin.
#
#   srun-test.sh MPI_PLUGIN GDRBENCH STATE_DIR OUT_DIR
#
# Runs `srun --mpi=MPI_PLUGIN -n 2 gdrbench run ...` and checks the HDF5 file:
# 2 ranks on this host, SLURM_JOB_ID in /environment equal to the job id Slurm
# reports for the job (looked up by its unique name), then checks that the
# checker rejects the same file with a wrong job id. Exit 77 (skip) when the
# MPI library cannot be direct-launched through MPI_PLUGIN (Debian's Open MPI
# 4.1 has no PMI-2 client: no s1/s2 components).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -eq 4 ]] || { echo "usage: $0 MPI_PLUGIN GDRBENCH STATE_DIR OUT_DIR" >&2; exit 2; }
mpi=$1 gdr=$2 D=$3 out_dir=$4
# shellcheck disable=SC1091
source "$D/env.sh"
mkdir -p "$out_dir"

# Capture, then grep: under pipefail, `cmd | grep -q` fails when grep exits at
# its first match and the writer takes SIGPIPE (slurm.srun_pmi2 failed so in CI).
if ! grep -qw "$mpi" <<< "$(srun --mpi=list 2>&1)"; then
  echo "srun-test: this Slurm has no mpi/$mpi plugin (srun --mpi=list)"; exit 77
fi
if [[ $mpi == pmi2 ]] && command -v ompi_info >/dev/null &&
   grep -qE 'libmpi\.so\.4[0-9]' <<< "$(ldd "$gdr")"; then
  if ! grep -qE '^mca:(pmix|ess):(s2|pmi2):' <<< "$(ompi_info --parsable 2>/dev/null)"; then
    echo "srun-test: SKIP: this Open MPI ($(ompi_info --parsable | sed -n 's/^ompi:version:full://p')) has no PMI-2 client (no s2 component); srun --mpi=pmi2 cannot wire it up. Use --mpi=pmix."
    exit 77
  fi
fi

h5=$out_dir/srun-$mpi.h5
name=gdr-srun-$mpi-$$
rm -f "$h5"
t0=$SECONDS
timeout 150 srun --mpi="$mpi" -n 2 -J "$name" -t 3 --kill-on-bad-exit=1 \
  "$gdr" run -t allreduce,latency,bw -e 64K -f 4 -n 5 -w 2 --timeout 30 --output "$h5"
echo "srun-test: srun finished in $((SECONDS - t0)) s"

jobid=$(squeue -h -t all -n "$name" -o %i | sed -n 1p)
[[ -n $jobid ]] || { echo "srun-test: no job named $name in squeue -t all" >&2; exit 1; }
echo "srun-test: job id $jobid"
/usr/bin/python3 "$here/check_h5.py" "$h5" --ranks 2 --jobid "$jobid" --host "$(hostname -s)" --partition test

# The checker must be able to fail on this very file.
if /usr/bin/python3 "$here/check_h5.py" "$h5" --ranks 2 --jobid "$((jobid + 1000))" >/dev/null; then
  echo "srun-test: checker accepted a wrong job id" >&2; exit 1
fi
echo "srun-test: ok (srun --mpi=$mpi)"
