#!/bin/bash
# Boots a Soft-RoCE guest under qemu (software emulation) and runs one command
# in it; prints the command's output and exits with its status.
#
#   vm.sh [--share DIR] [--cwd DIR] [--timeout S] [--mem MB] [--smp N]
#         [--node N --link LPORT:RPORT] [--env NAME=VALUE]... [--watch-pid PID]
#         -- COMMAND [ARG]...
#
# The guest sees the host's root read-only (with a tmpfs overlay on top, so
# writes vanish at power-off) and DIR read-write at /results; COMMAND runs in
# --cwd (default /results) as root with rdma_rxe devices rxe0/rxe1 on a veth
# pair. With --node N the guest is instead host nodeN of several: its eth0
# (virtio) is on a qemu UDP network between 127.0.0.1:LPORT (ours) and
# 127.0.0.1:RPORT (the other guest's), with rxe0 on eth0 and 169.254.67.N.
# Exit status: COMMAND's, 124 on timeout, 125 when the guest failed to run
# it. Control files are left in DIR/.vm (DIR/.vm-nodeN with --node: out, rc,
# guest.log, console.log). --watch-pid PID: stop the guest (exit 124) once
# PID is gone (guest.sh's shared guests watch the ctest that started them).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
share= cwd=/results timeout=600 mem=2048 smp=2 node= link= watch=
envs=()
usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 125; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --share) share=$2; shift 2 ;;
    --cwd) cwd=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --node) node=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --watch-pid) watch=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "vm.sh: unknown option $1" >&2; usage ;;
  esac
done
[[ $# -gt 0 ]] || usage

# The newest stock (non-cloud) Debian kernel whose modules include rdma_rxe.
find_kernel() {
  local k v
  for k in $(ls -1v /boot/vmlinuz-*-amd64 2>/dev/null | grep -v cloud | tac); do
    v=${k#/boot/vmlinuz-}
    if grep -q '/rdma_rxe\.ko' "/lib/modules/$v/modules.dep" 2>/dev/null; then
      echo "$v"; return 0
    fi
  done
  return 1
}
kver=$(find_kernel) || { echo "vm.sh: no /boot/vmlinuz-*-amd64 with rdma_rxe; install linux-image-amd64" >&2; exit 125; }
command -v qemu-system-x86_64 >/dev/null || { echo "vm.sh: install qemu-system-x86" >&2; exit 125; }

# The initramfs is cached per kernel and rebuilt when its script changes.
cache=${GDR_SOFTROCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gdrbench-softroce}
initrd=$cache/initramfs-$kver.cpio.gz
if [[ ! -f $initrd || $here/mkinitramfs.sh -nt $initrd ]]; then
  "$here/mkinitramfs.sh" "$kver" "$initrd"
fi

tmp_share=
if [[ -z $share ]]; then
  share=$(mktemp -d /tmp/softroce-share.XXXXXX); tmp_share=$share
fi
mkdir -p "$share"
share=$(cd "$share" && pwd)
jobname=.vm${node:+-node$node}
job=$share/$jobname
rm -rf "$job"; mkdir -p "$job"
{
  printf '%q ' "$@"; echo
} >"$job/cmd"
{
  printf 'export GDR_VM_CWD=%q\n' "$cwd"
  [[ -n $node ]] && printf 'export GDR_VM_NODE=%q\n' "$node"
  for e in "${envs[@]}"; do printf 'export %q\n' "$e"; done
} >"$job/env"
: >"$job/out"

qemu_pid=
cleanup() {
  [[ -n $qemu_pid ]] && kill "$qemu_pid" 2>/dev/null || true
  [[ -n $tmp_share ]] && rm -rf "$tmp_share" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

nic=(-nic none)
if [[ -n $node ]]; then
  [[ $node =~ ^[1-4]$ && $link =~ ^[0-9]+:[0-9]+$ ]] ||
    { echo "vm.sh: --node takes 1..4 and --link LPORT:RPORT" >&2; exit 125; }
  # A point-to-point UDP link on the host's loopback: nothing leaves the host.
  nic=(-netdev "socket,id=n0,udp=127.0.0.1:${link#*:},localaddr=127.0.0.1:${link%%:*}"
       -device "virtio-net-pci,netdev=n0,mac=52:54:00:67:64:0$node")
fi

start=$(date +%s.%N)
qemu-system-x86_64 \
  -accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem" \
  -display none -monitor none -serial "file:$job/console.log" \
  -no-reboot "${nic[@]}" \
  -kernel "/boot/vmlinuz-$kver" -initrd "$initrd" \
  -append "console=ttyS0 quiet panic=-1 gdr.init=$here/guest-init.sh gdr.job=$jobname" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$share,mount_tag=results,security_model=none,multidevs=remap" \
  </dev/null &
qemu_pid=$!

# Stream the command's output while the guest runs; stop at the deadline.
tail -n +1 -F --pid="$qemu_pid" "$job/out" 2>/dev/null &
tail_pid=$!
deadline=$(( $(date +%s) + ${timeout%.*} ))
while kill -0 "$qemu_pid" 2>/dev/null; do
  gone=
  [[ -n $watch ]] && ! kill -0 "$watch" 2>/dev/null && gone=1
  if [[ $(date +%s) -ge $deadline || -n $gone ]]; then
    if [[ -n $gone ]]; then echo "vm.sh: process $watch is gone; killing the guest" >&2
    else echo "vm.sh: timed out after ${timeout} s; killing the guest" >&2; fi
    kill "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=
    wait "$tail_pid" 2>/dev/null || true
    tail -n 20 "$job/console.log" >&2 || true
    exit 124
  fi
  sleep 0.2
done
wait "$qemu_pid" 2>/dev/null || true
qemu_pid=
wait "$tail_pid" 2>/dev/null || true
elapsed=$(echo "$(date +%s.%N) - $start" | bc)

if [[ ! -f $job/rc ]]; then
  echo "vm.sh: the guest stopped without running the command; its console:" >&2
  tail -n 30 "$job/console.log" >&2 || true
  cat "$job/guest.log" >&2 2>/dev/null || true
  exit 125
fi
rc=$(cat "$job/rc")
[[ $rc == 125 ]] && cat "$job/guest.log" >&2
printf 'vm.sh: guest exited %s after %.1f s\n' "$rc" "$elapsed" >&2
exit "$rc"
