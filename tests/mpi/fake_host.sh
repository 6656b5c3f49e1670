#!/bin/sh
# mpirun ... fake_host.sh gdrbench run ...: each rank runs in its own UTS
# namespace named fh<rank / GDR_FAKE_PER> (default 2 ranks a host), as the
# emulated cluster's hosts are (jobs/cluster: a UTS namespace holds each
# host's name), so the bootstrap gathers several hostnames on one machine.
# Needs root (unshare --uts).
# GDR_FAKE_NICS=n0,n1,...: rank r is bound to NIC n<r> (UCX_NET_DEVICES), as a
# rail-aligned launch binds each rank to its GPU's NIC.
# GDR_FAKE_NICS_BY=hca: the same NIC given as verbs' flag instead (--hca n<r>:1 appended
# to the command), as a launch that binds the verbs transport per rank does.
# GDR_FAKE_CPUS=c0,c1,...: rank r is bound to CPU c<r> (taskset), as a launch binds
# each rank near its GPU and NIC.
r=${OMPI_COMM_WORLD_RANK:?not under Open MPI}
if [ -n "${GDR_FAKE_NICS:-}" ]; then
  nic=$(echo "$GDR_FAKE_NICS" | cut -d, -f$((r + 1)))
  if [ "${GDR_FAKE_NICS_BY:-}" = hca ]; then
    set -- "$@" --hca "$nic:1"
  else
    UCX_NET_DEVICES=$nic:1
    export UCX_NET_DEVICES
  fi
fi
bind=""
if [ -n "${GDR_FAKE_CPUS:-}" ]; then
  bind="taskset -c $(echo "$GDR_FAKE_CPUS" | cut -d, -f$((r + 1)))"
fi
exec $bind unshare --uts sh -c "hostname fh$((r / ${GDR_FAKE_PER:-2})) && exec \"\$@\"" sh "$@"
