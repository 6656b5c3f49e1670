#!/usr/bin/env bash
# One job script from jobs/ through sbatch --wait under the test Slurm.
#
#   sbatch-test.sh JOB_SCRIPT GDRBENCH STATE_DIR OUT_DIR
#
# Submits JOB_SCRIPT on one node with 2 tasks, host memory and small sizes
# (the script's GPU request is overridden with --gpus-per-node=0), waits for
# it, and checks the HDF5 file it wrote against the id sbatch returned.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -eq 4 ]] || { echo "usage: $0 JOB_SCRIPT GDRBENCH STATE_DIR OUT_DIR" >&2; exit 2; }
script=$1 gdr=$2 D=$3 out_dir=$4
# shellcheck disable=SC1091
source "$D/env.sh"
mkdir -p "$out_dir"
base=$(basename "$script" .sbatch)
h5=$out_dir/sbatch-$base.h5
rm -f "$h5" "$out_dir"/sbatch-"$base"-*.out

export GDRBENCH=$gdr GDR_OUTPUT=$h5 GDR_MEM=host GDR_MAXBYTES=64K GDR_STEP=4 GDR_ITERS=5 GDR_WARMUP=2
t0=$SECONDS
set +e
jobid=$(timeout 170 sbatch --parsable --wait -N 1 --ntasks-per-node=2 --gpus-per-node=0 \
          -t 3 -o "$out_dir/sbatch-$base-%j.out" "$script")
rc=$?
set -e
jobid=${jobid%%;*}
echo "sbatch-test: job ${jobid:-?} finished in $((SECONDS - t0)) s with rc $rc"
for f in "$out_dir"/sbatch-"$base"-*.out; do [[ -f $f ]] && { echo "==== $f"; cat "$f"; }; done
[[ $rc -eq 0 ]] || { echo "sbatch-test: job failed (rc $rc)" >&2; exit 1; }
[[ $jobid =~ ^[0-9]+$ ]] || { echo "sbatch-test: no job id from sbatch --parsable: '$jobid'" >&2; exit 1; }

/usr/bin/python3 "$here/check_h5.py" "$h5" --ranks 2 --jobid "$jobid" --host "$(hostname -s)" --partition test
echo "sbatch-test: ok ($script)"
