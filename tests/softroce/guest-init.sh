#!/bin/sh
# PID 1 of a Soft-RoCE guest (started by the initramfs of mkinitramfs.sh).
# Sets up the guest, brings up rdma_rxe on a veth pair (rxe0 on veth0, rxe1
# on veth1, link-local IPv6 GIDs only), runs the job vm.sh left in the
# results share and writes its exit status there, then powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root

mount -t proc proc /proc
# vm.sh names the control folder (two guests may share one results folder).
job=/results/.vm
for arg in $(cat /proc/cmdline); do
  case $arg in gdr.job=*) job=/results/${arg#gdr.job=} ;; esac
done
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# /tmp stays the overlay (writable, tmpfs underneath): a tmpfs mounted over
# it would hide a checkout that lives under the host's /tmp (CI may put one there).
mount -t tmpfs tmpfs /run
mkdir -p /results
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results /results ||
  { echo "guest: cannot mount the results share"; poweroff -f; }

log() { echo "guest: $(cut -d' ' -f1 /proc/uptime) s: $*" >>"$job/guest.log"; }
finish() {
  echo "$1" >"$job/rc.tmp" && mv "$job/rc.tmp" "$job/rc"
  sync
  umount /results 2>/dev/null
  poweroff -f
}

. "$job/env"
ulimit -l unlimited
modprobe rdma_rxe || { log "modprobe rdma_rxe failed"; finish 125; }
ip link set lo up

if [ -n "${GDR_VM_NODE:-}" ]; then
  # One node of several guests joined by a qemu network on eth0: rxe0 on
  # eth0 (RoCE v2 over its IPv6 link-local GID), and an IPv4 link-local
  # address (169.254.67.N) for MPI's TCP and for the launch relay.
  hostname "node$GDR_VM_NODE"
  for i in 1 2 3 4; do echo "169.254.67.$i node$i" >>/etc/hosts; done
  ip link set eth0 up || { log "no eth0"; finish 125; }
  ip addr add "169.254.67.$GDR_VM_NODE/16" dev eth0
  rdma link add rxe0 type rxe netdev eth0 || { log "rdma link add rxe0 failed"; finish 125; }
  devs=rxe0
else
  hostname "${GDR_VM_HOSTNAME:-softroce}"
  echo "127.0.1.1 $(hostname)" >>/etc/hosts
  # rxe needs the netdevs up; IPv6 link-local addresses give GID index 0.
  modprobe veth || { log "modprobe veth failed"; finish 125; }
  ip link add veth0 type veth peer name veth1
  ip link set veth0 up
  ip link set veth1 up
  rdma link add rxe0 type rxe netdev veth0 || { log "rdma link add rxe0 failed"; finish 125; }
  rdma link add rxe1 type rxe netdev veth1 || { log "rdma link add rxe1 failed"; finish 125; }
  devs="rxe0 rxe1"
fi

# Wait until the ports are ACTIVE and GID 0 (link-local, after DAD) is set.
zero_gid=0000:0000:0000:0000:0000:0000:0000:0000
ready() {
  for d in $devs; do
    p=/sys/class/infiniband/$d/ports/1
    grep -q ACTIVE "$p/state" 2>/dev/null || return 1
    [ "$(cat "$p/gids/0" 2>/dev/null)" != "$zero_gid" ] || return 1
  done
}
n=0
until ready; do
  n=$((n + 1))
  [ $n -gt 300 ] && { log "rxe ports not ACTIVE with a GID after 30 s"; finish 125; }
  sleep 0.1
done
log "rxe ready: rxe0 gid0 $(cat /sys/class/infiniband/rxe0/ports/1/gids/0)"

# Open MPI: inside one guest shared memory and loopback TCP only (its UCX
# path over rxe with link-local GIDs does not work, see softroce-vm.md);
# across guests TCP on eth0, daemons started through relay.sh.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_osc=pt2pt
if [ -n "${GDR_VM_NODE:-}" ]; then
  export OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0
  # mpirun learns that a node's daemon is gone only from TCP: with the
  # default keepalive (300 s idle) it waits minutes for a node whose link
  # went down; probe after 2 s idle, every 1 s, give up after 3.
  export OMPI_MCA_oob_tcp_keepalive_time=2 OMPI_MCA_oob_tcp_keepalive_intvl=1
  export OMPI_MCA_oob_tcp_keepalive_probes=3
  # Keepalive only probes an idle connection: data already sent to the dead
  # node (mpirun's "kill your ranks" after an abort) is retransmitted
  # tcp_retries2 times, 15 by default (about 15 minutes); 5 is about 13 s.
  echo 5 >/proc/sys/net/ipv4/tcp_retries2
  export OMPI_MCA_plm_rsh_agent="$(dirname "$0")/relay.sh"
  # Every node answers relay.sh: one command per connection, run by sh.
  busybox nc -ll -p 7067 -e "$(dirname "$0")/relay.sh" &
else
  export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
fi

cd "${GDR_VM_CWD:-/results}" || finish 125
log "running: $(cat "$job/cmd")"
: >"$job/ready"  # the relay (if any) answers from now on
sh "$job/cmd" >>"$job/out" 2>&1 </dev/null
finish $?
