#!/bin/sh
# Open MPI's rsh agent for the emulated cluster (cluster.sh): instead of ssh
# to HOST, enter HOST's network and UTS namespaces and run the command there
# with the caller's environment. Use:
#   mpirun --mca plm_rsh_agent /path/rsh-agent.sh --hostfile $(cluster.sh hostfile) ...
# Open MPI calls it as `rsh-agent.sh [ssh options] HOST COMMAND...`; options
# (words starting with -) before HOST are ignored. Exit 255 (as ssh) when
# HOST is in no cluster that is up.
while [ $# -gt 0 ]; do
  case $1 in
    -[oiplFE]) shift 2 ;;   # ssh options that take a value
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
for uts in /run/gdrcluster/*/"$host".uts; do
  if [ -e "$uts" ] && [ -e "/run/netns/gdrc-$host" ]; then
    exec nsenter --net="/run/netns/gdrc-$host" --uts="$uts" /bin/sh -c "$*"
  fi
done
echo "rsh-agent.sh: no emulated host '$host' (cluster.sh up?)" >&2
exit 255
