#!/bin/sh
# Runs inside the Soft-RoCE guest (tests/softroce/vm.sh): `gdrbench doctor`
# on a real RDMA stack (rdma_rxe: rxe0/rxe1 over a veth pair), no GPU.
#   softroce_doctor.sh GDRBENCH CHECK_DOCTOR_PY
set -e
gdrbench=$1 check=$2
py=/usr/bin/python3
expect_rdma() {
  "$py" "$check" --expect-exit 4 --reports 1 \
    --expect-status gpu/driver=fail \
    --expect-status rdma/devices=pass \
    --expect-status rdma/memlock=pass \
    --expect-status "rdma/rxe0 port 1=pass" \
    --expect-status "rdma/rxe0 port 1 gid=pass" \
    --expect-status "rdma/rxe1 port 1=pass" \
    --expect-status "rdma/rxe1 port 1 gid=pass" \
    --expect-status versions/rdma-core=pass \
    "$@"
}
expect_rdma -- "$gdrbench" doctor --json
expect_rdma -- mpirun -np 2 "$gdrbench" doctor --json
"$gdrbench" doctor || [ $? -eq 4 ]  # the table, for the log
echo "doctor in the Soft-RoCE guest: ok"
