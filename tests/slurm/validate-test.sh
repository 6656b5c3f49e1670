#!/usr/bin/env bash
# gdrbench validate --slurm under the test Slurm (one node): salloc -N1 -n4,
# validate launches the doctor and the rounds pattern with srun --mpi=pmix,
# 4 ranks on the node (--ranks-per-host 4). Checks: exit 0 or 1 (the ranks of
# one host are compared, a busy machine may make one a suspect), the node is
# judged, validate.json says launcher slurm, every command it ran was srun
# --mpi=pmix, the run file holds 4 ranks with this job's SLURM_JOB_ID, the
# JUnit file has one testcase, the budget was kept.
#
#   validate-test.sh GDRBENCH STATE_DIR OUT_DIR
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 GDRBENCH STATE_DIR OUT_DIR" >&2; exit 2; }
gdr=$1 D=$2 out=$3/validate
# shellcheck disable=SC1091
source "$D/env.sh"
rm -rf "$out"
set +e
timeout 170 salloc -N1 -n4 -O -t 3 -J gdr-validate-$$ \
  "$gdr" validate --slurm --ranks-per-host 4 --budget 75 --min-bytes 64K --max-bytes 256K --window 8 \
  --no-report --out "$out"
rc=$?
set -e
echo "validate-test: exit $rc"
[[ $rc -eq 0 || $rc -eq 1 ]] || { cat "$out/commands.log" 2>/dev/null; exit 1; }
/usr/bin/python3 - "$out" "$rc" <<'PY'
import json, os, sys
import h5py
out, rc = sys.argv[1], int(sys.argv[2])
doc = json.load(open(os.path.join(out, "validate.json")))
def check(c, m):
    if not c:
        sys.exit(f"validate-test: FAIL: {m}")
check(doc["launcher"] == "slurm" and doc["exit"] == rc, f"launcher {doc['launcher']}, exit {doc['exit']}")
check(len(doc["verdicts"]) == 1 and doc["verdicts"][0]["status"] in ("healthy", "suspect"), f"{doc['verdicts']}")
cmds = [c for c in doc["commands"] if "cmd" in c]
check(cmds and all(c["cmd"][0] == "srun" and "--mpi=pmix" in c["cmd"] for c in cmds), f"commands {cmds}")
check(doc["elapsed_s"] <= doc["budget_s"], f"{doc['elapsed_s']} s of {doc['budget_s']}")
with h5py.File(doc["judged_file"], "r") as f:
    check(int(f.attrs["ranks"]) == 4, f"ranks {f.attrs['ranks']}")
    env = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f["environment"].attrs.items()} \
        if "environment" in f else {}
    job = env.get("SLURM_JOB_ID")
    check(job is not None, "no SLURM_JOB_ID in /environment")
check(open(os.path.join(out, "validate.xml")).read().count("<testcase") == 1, "JUnit testcases")
print(f"validate-test: PASS ({doc['elapsed_s']} s, job {job}, {doc['verdicts'][0]['status']})")
PY
# The gate rule: the same validate over ranks that spoil a received byte per
# case (GDR_SELFTEST_CORRUPT, passed by srun) vouches for no host: exit 4.
rm -rf "$out-wrong"
set +e
GDR_SELFTEST_CORRUPT=1 timeout 170 salloc -N1 -n4 -O -t 3 -J gdr-validate-wrong-$$ \
  "$gdr" validate --slurm --ranks-per-host 4 --budget 75 --min-bytes 64K --max-bytes 256K --window 8 \
  --no-report --out "$out-wrong" >"$out-wrong.txt" 2>&1
rc=$?
set -e
echo "validate-test: with wrong data, exit $rc"
[[ $rc -eq 4 ]] && grep -q "case(s) with wrong results" "$out-wrong/validate.json" ||
  { echo "validate-test: FAIL: wrong data should give exit 4 and a note"; cat "$out-wrong.txt"; exit 1; }
echo "validate-test: ok"
