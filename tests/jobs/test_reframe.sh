#!/usr/bin/env bash
# ctest jobs.reframe: the ReFrame checks (jobs/reframe) run for real under the
# pinned reframe-hpc (jobs/reframe/requirements.txt, a venv in the build folder),
# its local scheduler and mpirun launcher, allreduce over MPI on host memory:
#   1. pass: references made by make_references.py from an archived run;
#   2. performance failure: the same references x1000 (impossible);
#   3. sanity failure: a wrong element injected with GDR_SELFTEST_CORRUPT=1.
# Each outcome is read from ReFrame's JSON report (result and fail phase).
#   usage: test_reframe.sh SOURCE_DIR BUILD_DIR GDRBENCH
set -euo pipefail
src=$(realpath "$1"); build=$(realpath "$2"); gdr=$(realpath "$3")
venv=$build/reframe-venv
work=$(mktemp -d /tmp/gdr-reframe.XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { echo "== test_reframe: [${SECONDS}s] $*"; }
fail() { echo "test_reframe: FAIL: $*" >&2; exit 1; }
pin=$(grep -o 'reframe-hpc==[0-9.]*' "$src/jobs/reframe/requirements.txt")
if [ "$("$venv/bin/reframe" --version 2> /dev/null)" != "${pin#*==}" ]; then
  say "pip install $pin into $venv"
  rm -rf "$venv" && /usr/bin/python3 -m venv "$venv"
  timeout 300 "$venv/bin/pip" install -q --disable-pip-version-check -r "$src/jobs/reframe/requirements.txt" \
    || fail "pip install -r jobs/reframe/requirements.txt (PyPI reachable?)"
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
archive=$src/results/archive/20261129T150800_vm_2r_host-sweep.h5
check='GdrbenchCheck%test=allreduce%transport=mpi%mem=host%path=direct'

# rfm NAME [reframe args...]: run the one check, its JSON report in $work/NAME.json; echoes ReFrame's status.
rfm() {
  local name=$1; shift
  local rc=0
  TMPDIR=$work timeout 300 "$venv/bin/reframe" -C "$src/jobs/reframe/config_local.py" -c "$src/jobs/reframe/gdrbench_checks.py" \
    -n "$check" --prefix "$work/$name" --report-file "$work/$name.json" -S "gdrbench=$gdr" \
    -S minbytes=64K -S maxbytes=256K "$@" -r > "$work/$name.log" 2>&1 || rc=$?
  echo "$rc"
}
# outcome NAME: "result fail_phase" of the one test case in the report.
outcome() {
  /usr/bin/python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))["runs"][-1]["testcases"]
assert len(r)==1, [t["name"] for t in r]
t=r[0]
pv={k.split(":")[-1]: v[0] for k, v in (t.get("perfvalues") or {}).items()}
print(t["result"], t.get("fail_phase"), "|", t.get("fail_reason"), "|", json.dumps(pv))' "$work/$1.json"
}

say "references from $(basename "$archive")"
/usr/bin/python3 "$src/jobs/reframe/make_references.py" "$archive" --system 'local:default' --tolerance 0.95 \
  -o "$work/refs.json" || fail "make_references.py"
/usr/bin/python3 "$src/jobs/reframe/make_references.py" "$archive" --system 'local:default' --scale 1000 \
  -o "$work/impossible.json" || fail "make_references.py --scale"

say "1. pass"
rc=$(rfm pass -S "references_file=$work/refs.json")
got=$(outcome pass); echo "  $got"
[ "$rc" = 0 ] && [[ $got == "pass None"* ]] || { tail -30 "$work/pass.log"; fail "expected a pass (rc $rc): $got"; }
for v in busbw_65536 busbw_262144 time_us_65536 time_us_262144; do  # evaluated, with a value
  [[ $got =~ \"$v\":\ [0-9] ]] || fail "performance variable $v not evaluated: $got"
done
h5=$(find "$work/pass/output" -name gdrbench.h5 | sed -n 1p)
[ -n "$h5" ] || fail "the HDF5 file is not kept in ReFrame's output folder"
/usr/bin/python3 -c 'import h5py,sys; f=h5py.File(sys.argv[1]); assert f.attrs["status"] in ("complete", b"complete")' "$h5" \
  || fail "kept $h5 is not a complete result file"

say "2. performance failure (references x1000)"
rc=$(rfm perf -S "references_file=$work/impossible.json")
got=$(outcome perf); echo "  $got"
[ "$rc" != 0 ] && [[ $got == "fail performance"* ]] || { tail -30 "$work/perf.log"; fail "expected a performance failure (rc $rc): $got"; }

say "3. sanity failure (GDR_SELFTEST_CORRUPT=1)"
rc=$(GDR_SELFTEST_CORRUPT=1 rfm sanity -S "references_file=$work/refs.json")
got=$(outcome sanity); echo "  $got"
[ "$rc" != 0 ] && [[ $got == "fail sanity"* ]] && [[ $got == *"wrong elements"* ]] \
  || { tail -30 "$work/sanity.log"; fail "expected a sanity failure on wrong elements (rc $rc): $got"; }
say "ok"
