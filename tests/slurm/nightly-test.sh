#!/usr/bin/env bash
# jobs/nightly.sh: baseline selection, archiving, and every exit path.
#
#   nightly-test.sh GDRBENCH OUT_DIR
#
# Runs with mpirun (no Slurm). The compare step is driven through a stub
# gdrbench that forwards `run` to the real binary and answers `compare` as
# told (absent, 0, 1), so the exit paths are tested whatever state the real
# `gdrbench compare` is in.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
nightly=$here/../../jobs/nightly.sh
[[ $# -eq 2 ]] || { echo "usage: $0 GDRBENCH OUT_DIR" >&2; exit 2; }
real=$1 out=$2
fails=0 passes=0
ok()  { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect_rc() { local want=$1 got=$2 what=$3; [[ $got == "$want" ]] && ok "$what (rc $got)" || bad "$what: rc $got, want $want"; }

rm -rf "$out/nightly"; mkdir -p "$out/nightly"

# ---- 1. baseline selection on a fake archive -----------------------------
A=$out/nightly/fake
mkdir -p "$A"
for n in 20260101T000000_nodeA_2r_lab 20260301T000000_nodeB_2r_lab 20260401T000000_nodeA_4r_lab \
         20260501T000000_nodeA_2r_other 20260701T000000_nodeA_2r_lab-x 20250101T000000_nodeZ_2r_lab; do
  : > "$A/$n.h5"
done
: > "$A/20260601T000000_nodeA_2r_lab.failed.h5"
: > "$A/20260601T000000_nodeA_2r_lab.compare.txt"
: > "$A/.20260801T000000_nodeA_2r_lab.running.h5"
got=$(GDR_ARCHIVE=$A GDR_LABEL=lab GDR_NP=2 "$nightly" --print-baseline)
[[ $got == "$A/20260301T000000_nodeB_2r_lab.h5" ]] && ok "baseline: newest of label and np" || bad "baseline for lab/2r is '$got'"
got=$(GDR_ARCHIVE=$A GDR_LABEL=lab GDR_NP=4 "$nightly" --print-baseline)
[[ $got == "$A/20260401T000000_nodeA_4r_lab.h5" ]] && ok "baseline: rank count is part of the key" || bad "baseline for lab/4r is '$got'"
got=$(GDR_ARCHIVE=$A GDR_LABEL=nothing GDR_NP=2 "$nightly" --print-baseline)
[[ -z $got ]] && ok "baseline: none for an unknown label" || bad "baseline for an unknown label is '$got'"
GDR_ARCHIVE=$A GDR_LABEL=bad_label "$nightly" --print-baseline >/dev/null 2>&1
expect_rc 4 $? "label with '_' refused"

# ---- 2. end to end through a stub gdrbench --------------------------------
stub=$out/nightly/gdrbench-stub
cat > "$stub" <<STUB
#!/usr/bin/env bash
case \${1:-} in
  --help) "$real" --help | grep -vE '^[[:space:]]+compare[[:space:]]'
          [[ \${STUB_COMPARE:-missing} == missing ]] || echo "  compare                     stub"; exit 0 ;;
  compare) [[ \${STUB_COMPARE:-missing} == missing ]] && { echo "The following argument was not expected: compare"; exit 109; }
           echo "\$2 \$3" >> "$out/nightly/compare.log"; echo "stub compare: \$STUB_COMPARE"; exit "\$STUB_COMPARE" ;;
  *) exec "$real" "\$@" ;;
esac
STUB
chmod +x "$stub"
A=$out/nightly/archive
export GDRBENCH=$stub GDR_ARCHIVE=$A GDR_LABEL=ci-smoke GDR_NP=2
export GDR_LAUNCH="mpirun --oversubscribe -np 2"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args=(-- -t allreduce -e 4K -f 4 -n 3 -w 1 --reference none)
count() { find "$A" -maxdepth 1 -name "*_2r_ci-smoke.h5" | wc -l; }
wait_next_second() { local t; t=$(date -u +%s); while [[ $(date -u +%s) == "$t" ]]; do sleep 0.1; done; }

STUB_COMPARE=0 "$nightly" "${args[@]}" > "$out/nightly/run1.log" 2>&1
expect_rc 0 $? "first run is the baseline"
grep -q "this run is the baseline" "$out/nightly/run1.log" && ok "first run says baseline" || bad "first run did not say baseline"
[[ $(count) == 1 ]] && ok "first run archived" || bad "archive has $(count) files after run 1"
/usr/bin/python3 "$here/check_h5.py" "$(ls "$A"/*_2r_ci-smoke.h5)" --ranks 2 --no-slurm >/dev/null &&
  ok "archived file is a complete 2-rank run" || bad "archived file fails check_h5"
first=$(ls "$A"/*_2r_ci-smoke.h5)

wait_next_second
STUB_COMPARE=missing "$nightly" "${args[@]}" > "$out/nightly/run2.log" 2>&1
expect_rc 2 $? "compare not available"
grep -q "'gdrbench compare' is not available" "$out/nightly/run2.log" && ok "says compare is not available" || bad "no clear message for a missing compare"
[[ $(count) == 2 ]] && ok "second run archived anyway" || bad "archive has $(count) files after run 2"
second=$(ls "$A"/*_2r_ci-smoke.h5 | sort | tail -n 1)

wait_next_second
STUB_COMPARE=1 "$nightly" "${args[@]}" > "$out/nightly/run3.log" 2>&1
expect_rc 1 $? "regression"
third=$(ls "$A"/*_2r_ci-smoke.h5 | sort | tail -n 1)
[[ $(tail -n 1 "$out/nightly/compare.log") == "$second $third" ]] &&
  ok "compared with the previous run of the label" || bad "compare got '$(tail -n 1 "$out/nightly/compare.log")', want '$second $third'"
[[ -s ${third%.h5}.compare.txt ]] && ok "compare report kept" || bad "no compare report beside $third"

wait_next_second
STUB_COMPARE=0 "$nightly" "${args[@]}" > "$out/nightly/run4.log" 2>&1
expect_rc 0 $? "no regression"

wait_next_second
STUB_COMPARE=0 "$nightly" -- -t no-such-test > "$out/nightly/run5.log" 2>&1
expect_rc 3 $? "a failing run"
[[ $(count) == 4 ]] && ok "a failing run adds no baseline" || bad "archive has $(count) files after a failing run"
[[ $(GDR_ARCHIVE=$A GDR_LABEL=ci-smoke GDR_NP=2 "$nightly" --print-baseline) == $(ls "$A"/*_2r_ci-smoke.h5 | sort | tail -n 1) ]] &&
  ok "baseline after a failure is the last good run" || bad "wrong baseline after a failure"
grep -q . <<< "$(GDR_LABEL=ci-smoke GDR_NP=3 "$nightly" --print-baseline)" && bad "3-rank baseline found" || ok "other rank count has no baseline"
[[ -n $first ]] || bad "no first file"

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
