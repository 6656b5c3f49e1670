#!/bin/sh
# The rsh agent of two-node Soft-RoCE guests (guest-init.sh sets
# OMPI_MCA_plm_rsh_agent to it): there is no ssh in the guests, so mpirun's
# "ssh HOST COMMAND..." becomes one line sent to HOST's relay port, where
# `busybox nc -ll -p 7067 -e relay.sh` runs it with sh, like sshd would, and
# streams its output back. Only inside the guests' private link.
#
#   relay.sh HOST COMMAND...     (client, as mpirun calls it)
#   relay.sh                     (server: one connection on stdin/stdout)
port=7067
if [ $# -eq 0 ]; then
  IFS= read -r line || exit 1
  exec sh -c "$line" </dev/null 2>&1
fi
host=$1
shift
printf '%s\n' "$*" | exec busybox nc "$host" "$port"
