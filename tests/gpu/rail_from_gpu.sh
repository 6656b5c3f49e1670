#!/usr/bin/env bash
# Rails of --pattern host-rounds from the GPU each rank really uses: 2 ranks as 2 hosts
# (tests/mpi/fake_host.sh), hwloc reading this machine as an XML made around the GPU's real
# PCI bus id (CUDA's), with one RDMA NIC beside the GPU on its root complex and one on
# another. The run must pair by that NIC (src/planning/schedule.cpp nic_near_gpu), not by local index.
# Exits 77 (skipped) with the reason where there is no usable GPU.
#   usage: rail_from_gpu.sh <gdrbench>
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
cuda=$("$bin" list 2>&1 | awk '/^memory kinds:/ {m=1; next} /^[a-z]/ {m=0} m && $1=="cuda" {$1=""; print}')
case $cuda in
  *" usable") ;;
  *) echo "SKIP: no usable GPU here (-m cuda:${cuda:- not built})"; exit 77 ;;
esac
# nvidia-smi: 00000000:00:06.0 -> hwloc's 0000:00:06.0, lower case
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 | tr 'A-F' 'a-f' | sed -E 's/^0*([0-9a-f]{4}):/\1:/')
[[ $bus =~ ^[0-9a-f]{4}:([0-9a-f]{2}):[0-9a-f]{2}\.[0-9a-f]$ ]] || { echo "FAIL: GPU bus id '$bus'"; exit 1; }
gbus=${BASH_REMATCH[1]}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pci() {  # bus id, name of its OpenFabrics device ("" for none)
  echo "<object type=\"PCIDev\" pci_busid=\"$1\" pci_type=\"${3:-0302 [10de:2335] [0000:0000] a1}\" pci_link_speed=\"31.5\">"
  [ -n "$2" ] && echo "<object type=\"OSDev\" name=\"$2\" subtype=\"OpenFabrics\" osdev_type=\"3\"/>"
  echo "</object>"
}
nic="0207 [15b3:1021] [0000:0000] a1"
cat >"$dir/topo.xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
<object type="Machine" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" allowed_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001">
<object type="Package" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001">
<object type="NUMANode" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" local_memory="1073741824"/>
<object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001">
<object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001"/>
</object>
<object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="${bus%%:*}:[$gbus-$gbus]">
$(pci "$bus" "")
$(pci "${bus%%:*}:$gbus:1f.0" "nicNearGpu" "$nic")
</object>
<object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="${bus%%:*}:[e0-e0]">
$(pci "${bus%%:*}:e0:00.0" "nicFar" "$nic")
</object>
</object>
</object>
</topology>
XML
out=$(timeout 120 mpirun -q --oversubscribe --bind-to none -np 2 -x GDR_FAKE_PER=1 -x "HWLOC_XMLFILE=$dir/topo.xml" \
  -x HWLOC_THISSYSTEM=1 "$here/../mpi/fake_host.sh" "$bin" run -t bw -T mpi -m cuda --path staged \
  --pattern host-rounds -b 1M -e 1M -n 3 -w 1 --reference none --json "$dir/run.jsonl" 2>&1)
rc=$?
want="rails by NIC (hwloc: the RDMA NIC nearest each rank's GPU in PCIe: nicNearGpu)"
if [ $rc -ne 0 ] || [[ $out != *"$want"* ]]; then
  echo "FAIL: exit $rc; want '$want' in:"; echo "$out" | tail -20; exit 1
fi
echo "PASS: GPU $bus, $want"
