#!/bin/sh
# mpirun ... fake_host.sh gdrbench run ...: each rank runs in its own UTS
# namespace named fh<rank / GDR_FAKE_PER> (default 2 ranks a host), as the
# emulated cluster's hosts are (jobs/cluster: a UTS namespace holds each
# host's name), so the bootstrap gathers several hostnames on one machine.
# Needs root (unshare --uts).
r=${OMPI_COMM_WORLD_RANK:?not under Open MPI}
exec unshare --uts sh -c "hostname fh$((r / ${GDR_FAKE_PER:-2})) && exec \"\$@\"" sh "$@"
