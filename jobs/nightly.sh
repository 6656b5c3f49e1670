#!/usr/bin/env bash
# nightly.sh: run a fixed gdrbench configuration, archive the result, and
# compare it with the last archived run of the same configuration.
#
#   GDR_LABEL=ib-allreduce jobs/nightly.sh [-- gdrbench run options...]
#   jobs/nightly.sh --print-baseline          # which file the next run would be compared with
#
#   cron, no Slurm:   GDR_LAUNCH="mpirun --hostfile /etc/gdr-hosts -np 16" GDR_NP=16 \
#                     GDR_LABEL=16r-allreduce jobs/nightly.sh -- -t allreduce -m cuda
#   Slurm:            sbatch -N 2 --ntasks-per-node=8 --gpus-per-node=8 -t 1:00:00 \
#                       --export=ALL,GDR_LABEL=2n-allreduce jobs/nightly.sh -- -t allreduce -m cuda
#
# Steps: 1. run `gdrbench run <options> --output <tmp>` under the launcher;
# 2. move the file into the archive as <yyyymmddTHHMMSS>_<host>_<np>r_<label>.h5
# (UTC start time, this host's short name, ranks, label; a failed run is kept
# as ..._<label>.failed.h5 and never used as a baseline); 3. find the newest
# earlier archive file with the same label and rank count; 4. run
# `gdrbench compare BASE NEW`, keeping its report beside the new file as .compare.txt.
# A configuration is named by its label: change the options, change the label.
#
# Exit status: 0 no regression (or no earlier run: this one is the baseline),
# 1 regression (compare said so), 2 compare not available in this gdrbench,
# 3 the run or the comparison failed, 4 usage error.
#
# Environment (all optional):
#   GDRBENCH     the binary (default: gdrbench on PATH, else ../build/gdrbench next
#                to this script)
#   GDR_LABEL    configuration label, letters, digits and '-' (default: default)
#   GDR_ARCHIVE  archive folder (default: results/archive of this checkout)
#   GDR_NP       ranks (default: $SLURM_NTASKS in a Slurm job, else 2)
#   GDR_LAUNCH   launcher, word-split (default: "srun --mpi=pmix" in a Slurm job,
#                else "mpirun -np $GDR_NP")
#   GDR_COMPARE  compare command, word-split, called as CMD BASE NEW (default:
#                "$GDRBENCH compare")
# Without options after --, the run is: -t allreduce,latency,bw -e 64M.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

# ---- where this script really is (under sbatch it runs from a spool copy)
self=${BASH_SOURCE[0]}
if [[ -n ${SLURM_JOB_ID:-} ]] && command -v scontrol >/dev/null 2>&1; then
  c=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/^ *Command=\([^ ]*\).*/\1/p')
  [[ -f $c ]] && self=$c
fi
here=$(cd "$(dirname "$self")" && pwd)

print_baseline=0
run_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --print-baseline) print_baseline=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; run_args=("$@"); break ;;
    *) echo "nightly: unknown argument '$1' (gdrbench options go after --)" >&2; exit 4 ;;
  esac
done
[[ ${#run_args[@]} -gt 0 ]] || run_args=(-t "allreduce,latency,bw" -e 64M)

label=${GDR_LABEL:-default}
if [[ ! $label =~ ^[A-Za-z0-9-]+$ ]]; then
  echo "nightly: GDR_LABEL '$label': use letters, digits and '-' only" >&2; exit 4
fi
archive=${GDR_ARCHIVE:-$(cd "$here/.." && pwd)/results/archive}
if [[ -n ${SLURM_JOB_ID:-} ]]; then np=${GDR_NP:-${SLURM_NTASKS:-2}}; else np=${GDR_NP:-2}; fi
[[ $np =~ ^[0-9]+$ ]] || { echo "nightly: GDR_NP '$np' is not a number" >&2; exit 4; }

# latest_archived LABEL NP [EXCLUDE]: newest archive file of that label and
# rank count (names sort by their UTC timestamp), failed runs excluded.
latest_archived() {
  local want_label=$1 want_np=$2 exclude=${3:-} f name best=
  shopt -s nullglob
  for f in "$archive"/*.h5; do
    name=$(basename "$f")
    [[ $f == "$exclude" ]] && continue
    if [[ $name =~ ^([0-9]{8}T[0-9]{6})_([^_]+)_([0-9]+)r_([A-Za-z0-9-]+)\.h5$ ]] &&
       [[ ${BASH_REMATCH[3]} == "$want_np" && ${BASH_REMATCH[4]} == "$want_label" ]]; then
      [[ -z $best || $name > $(basename "$best") ]] && best=$f
    fi
  done
  shopt -u nullglob
  [[ -n $best ]] && echo "$best"
}

if [[ $print_baseline == 1 ]]; then
  latest_archived "$label" "$np"
  exit 0
fi

if [[ -n ${GDRBENCH:-} ]]; then gdr=$GDRBENCH
elif command -v gdrbench >/dev/null 2>&1; then gdr=$(command -v gdrbench)
elif [[ -x $here/../build/gdrbench ]]; then gdr=$(cd "$here/../build" && pwd)/gdrbench
else echo "nightly: gdrbench not found: set GDRBENCH=/path/to/gdrbench" >&2; exit 3
fi

if [[ -n ${GDR_LAUNCH:-} ]]; then
  read -r -a launch <<< "$GDR_LAUNCH"
elif [[ -n ${SLURM_JOB_ID:-} ]]; then
  launch=(srun --mpi=pmix -n "$np")
else
  launch=(mpirun -np "$np")
fi

mkdir -p "$archive" || exit 3
ts=$(date -u +%Y%m%dT%H%M%S)
host=$(hostname -s | tr '_' '-')
new=$archive/${ts}_${host}_${np}r_${label}.h5
[[ -e $new ]] && { echo "nightly: $new exists already (two runs in one second?)" >&2; exit 3; }
tmp=$archive/.${ts}_${host}_${np}r_${label}.running.h5

echo "nightly: label $label, $np ranks, archive $archive"
echo "+ ${launch[*]} $gdr run ${run_args[*]} --output $tmp"
"${launch[@]}" "$gdr" run "${run_args[@]}" --output "$tmp"
rc=$?
if [[ $rc -ne 0 ]]; then
  if [[ -f $tmp ]]; then
    mv -f "$tmp" "${new%.h5}.failed.h5"
    echo "nightly: run failed (rc $rc); kept as ${new%.h5}.failed.h5, not a baseline" >&2
  else
    echo "nightly: run failed (rc $rc) and wrote no file" >&2
  fi
  exit 3
fi
[[ -f $tmp ]] || { echo "nightly: the run wrote no $tmp" >&2; exit 3; }
mv -f "$tmp" "$new" || exit 3
echo "nightly: archived $new"

base=$(latest_archived "$label" "$np" "$new")
if [[ -z $base ]]; then
  echo "nightly: no earlier run labelled '$label' with $np ranks in $archive: this run is the baseline"
  exit 0
fi

if [[ -n ${GDR_COMPARE:-} ]]; then
  read -r -a compare <<< "$GDR_COMPARE"
else
  # `gdrbench --help` lists the subcommands this build has.
  # Captured first: under pipefail, `--help | grep -q` can fail on SIGPIPE.
  if ! grep -qE '^[[:space:]]+compare([[:space:]]|$)' <<< "$("$gdr" --help 2>/dev/null)"; then
    echo "nightly: 'gdrbench compare' is not available in $gdr (no such subcommand);" \
         "archived $new but did not compare it with $base." \
         "Update gdrbench, or set GDR_COMPARE to a compare command." >&2
    exit 2
  fi
  compare=("$gdr" compare)
fi

echo "+ ${compare[*]} $base $new"
report=${new%.h5}.compare.txt
"${compare[@]}" "$base" "$new" > "$report" 2>&1
rc=$?
cat "$report"
case $rc in
  0) echo "nightly: no regression against $(basename "$base")"; exit 0 ;;
  1) echo "nightly: REGRESSION against $(basename "$base") (report: $report)" >&2; exit 1 ;;
  *) echo "nightly: compare failed (rc $rc)" >&2; exit 3 ;;
esac
