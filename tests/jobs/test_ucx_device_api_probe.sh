#!/usr/bin/env bash
# jobs/gpu/ucx_device_api_probe.sh, on a machine without a GPU: its dry run prints the
# commands the lent GPU machine will run, and they are the ones meant (each line of the test
# list, without and with MPS, client with -a cuda to 127.0.0.1, every process under timeout,
# the iteration cap without MPS); without DRY_RUN and without a GPU it stops at once. < 2 s.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
probe=$root/jobs/gpu/ucx_device_api_probe.sh
work=$(mktemp -d /tmp/gdr-devprobe.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$work/tests.txt" <<'T'
# two lines in the format of UCX's test_types_ucp_device_cuda
lat_probe_8b     -t ucp_put_lat -m cuda -s 8 -n 10000
bw_probe_warp    -t ucp_put_bw -m cuda -s 1024 -n 500 -T 32 -L warp
T
out=$(DRY_RUN=1 UCX_ROOT=/opt/ucx UCX_DEVICE_TESTS=$work/tests.txt OUT=$work/out NOMPS_ITERS=1000 \
      bash "$probe" 2>&1) || fail "dry run exit $?: $out"
echo "$out" | sed -n '1,12p'
cmds=$(echo "$out" | grep '^+ .*ucx_perftest')
[ -n "$cmds" ] || fail "no ucx_perftest command printed"
# Every ucx_perftest process is bounded.
while read -r line; do
  [[ $line =~ ^\+\ (env\ [^ ]+\ )?timeout\ [0-9]+\ /opt/ucx/bin/ucx_perftest ]] || fail "unbounded: $line"
done <<<"$cmds"
client() {  # NAME MPS: the client command of that try
  echo "$cmds" | grep -F "> ${1}_mps-$2.client.txt"
}
server() { echo "$cmds" | grep -F "> ${1}_mps-$2.server.txt &"; }
for mps in off on; do
  for t in lat_probe_8b bw_probe_warp; do
    c=$(client $t $mps); s=$(server $t $mps)
    [ -n "$c" ] || fail "no client for $t (MPS $mps)"
    [ -n "$s" ] || fail "no server for $t (MPS $mps)"
    [[ $c == *" 127.0.0.1 -p "* ]] || fail "client not to 127.0.0.1: $c"
    [[ $c == *" -a cuda >"* ]] || fail "client without -a cuda: $c"
    [[ $s == *"ucx_perftest -p "* && $s != *" -t "* ]] || fail "server takes its test from the client: $s"
    [ "$(echo "$c" | grep -o ' -n [0-9]*' | wc -l)" = 1 ] || fail "-n given twice: $c"
  done
done
[[ $(client lat_probe_8b off) == *" -n 1000 -w 100 "* ]] || fail "no MPS: -n not capped at 1000: $(client lat_probe_8b off)"
[[ $(client lat_probe_8b on) == *" -n 10000 -w 100 "* ]] || fail "MPS: the list's -n not kept: $(client lat_probe_8b on)"
[[ $(client bw_probe_warp off) == *" -n 500 "*"-T 32 -L warp"* ]] || fail "a smaller -n must stay: $(client bw_probe_warp off)"
echo "$out" | grep -q 'jobs/with_mps.sh bash .*ucx_device_api_probe.sh --phase' || fail "the MPS phase is not run under with_mps.sh"
# The extras: host-initiated comparison without -a, the block level, several blocks, a TLS variant.
[[ $(client host_lat_8b on) != *" -a "* ]] || fail "host_lat_8b must run without -a"
[[ $(client bw_1k_block on) == *"-L block"*"-a cuda"* ]] || fail "no block-level try"
[[ $(client bw_1k_32x4blocks on) == *"-T 32:4"* ]] || fail "no multi-block try"
[[ $(client lat_8b_tls_ipc on) == "+ env UCX_TLS=cuda_copy,cuda_ipc,sm,self timeout"* ]] || fail "no TLS variant"
# The table: one row per try and MPS mode.
rows=$(echo "$out" | grep -c ' dry run$')
extras=$(echo "$out" | grep -c '_mps-on.client.txt$')
[ "$rows" = $(( 2 * extras )) ] || fail "table rows $rows, expected $(( 2 * extras ))"
echo "$out" | grep -q '^bw_probe_warp  *ucp_put_bw  *1024  *32/warp  *on  *dry run$' || fail "table row of bw_probe_warp"
[ ! -e "$work/out/summary.txt" ] || fail "a dry run wrote \$OUT"

# No list readable: UCX 1.22.0's seven tests, built in.
out=$(DRY_RUN=1 UCX_ROOT=/opt/ucx UCX_DEVICE_TESTS=$work/none OUT=$work/out bash "$probe" 2>&1) || fail "dry run exit $?"
echo "$out" | grep -q "built into this script" || fail "does not say the list is built in"
n=$(echo "$out" | grep -c '^ucp_device_cuda_.* on  *dry run$')
[ "$n" = 7 ] || fail "built-in list: $n tests under MPS, expected 7"

# Without a GPU and without DRY_RUN: stops at once, saying why.
if ! command -v nvidia-smi >/dev/null; then
  t0=$(date +%s)
  msg=$(OUT=$work/out bash "$probe" 2>&1); rc=$?
  [ "$rc" = 1 ] || fail "without a GPU: exit $rc, expected 1 ($msg)"
  [[ $msg == *"no GPU here"* ]] || fail "without a GPU: $msg"
  (( $(date +%s) - t0 <= 5 )) || fail "without a GPU it took $(( $(date +%s) - t0 )) s"
  echo "without a GPU: $msg"
fi
echo "PASS"
