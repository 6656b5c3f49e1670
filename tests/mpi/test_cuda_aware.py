#!/usr/bin/env python3
"""The mpi transport's CUDA-awareness probe on this machine's Open MPI.

Debian's Open MPI is built without CUDA, so:
- `gdrbench list` says in one line that mpi is "not CUDA-aware" and why;
- `-T mpi -m cuda --path direct` is refused with exit 2 and that line, before
  anything else (here there is no GPU: the GPU refusal must not come first),
  with the active PML named (ob1 by default; with --mca pml ucx, that Debian's
  UCX has no CUDA transports);
- a host run records `mpi.cuda_aware` and `cuda.mps` in the file's facts.
"""
import os
import subprocess

import h5py

from gdrtest import GDRBENCH, check, env, main, mpirun, tmpdir

DIRECT = ["run", "-T", "mpi", "-m", "cuda", "--path", "direct", "-t", "bw", "-e", "64"]


def refusal(np_, extra_env=None):
    out = os.path.join(tmpdir(), "r.h5")
    p = mpirun(np_, DIRECT + ["--output", out], timeout=120, extra_env=extra_env)
    text = p.stdout + p.stderr
    check(p.returncode == 2, f"exit {p.returncode}, want 2:\n{text[-1500:]}")
    lines = [l for l in text.splitlines() if l.startswith("gdrbench:")]
    check(len(lines) == 1, f"want one gdrbench line, got {lines}\n{text[-1500:]}")
    line = lines[0]
    check("-T mpi -m cuda --path direct: not CUDA-aware:" in line, f"not the mpi refusal: {line}")
    check(not os.path.exists(out), "a refused run left a result file")
    return line


def test():
    # list alone answers from the headers; under mpirun it probes this launch.
    p = subprocess.run([GDRBENCH, "list"], capture_output=True, text=True, timeout=120, env=env())
    check(p.returncode == 0, f"list exit {p.returncode}: {p.stderr[-800:]}")
    lines = [l for l in p.stdout.splitlines() if "cuda memory, direct path" in l]
    check(lines and "not usable: not CUDA-aware unless MPI_Init picks pml ucx" in lines[0] and
          "MPIX_CUDA_AWARE_SUPPORT = 0" in lines[0], f"list says: {lines}\n{p.stdout}")
    print("list:", lines[0].strip())
    p = mpirun(1, ["list"], timeout=120)
    check(p.returncode == 0, f"mpirun list exit {p.returncode}: {p.stderr[-800:]}")
    lines = [l for l in p.stdout.splitlines() if "cuda memory, direct path" in l]
    check(lines and "not usable: not CUDA-aware: Open MPI built without CUDA "
          "(MPIX_Query_cuda_support() = 0) and its active PML is ob1" in lines[0], f"mpirun list says: {lines}")
    print("mpirun list:", lines[0].strip())

    line = refusal(2)
    check("active PML is ob1" in line and "--mca pml ucx" in line, f"default PML not named: {line}")
    print("default:", line)
    # pml ucx over Debian's UCX (no CUDA): the reason changes to the UCX's.
    line = refusal(2, {"OMPI_MCA_pml": "ucx", "OMPI_MCA_pml_ucx_tls": "any",
                       "OMPI_MCA_pml_ucx_devices": "any", "UCX_TLS": "self,sm,tcp"})
    check("pml ucx, but the UCX it loaded" in line and "no CUDA transports" in line,
          f"pml ucx case not told: {line}")
    print("pml ucx:", line)

    # With a UCX built with CUDA first (GDR_TEST_CUDA_UCX_LIB, e.g. the libucx-cu13 wheel's lib
    # from jobs/install_ucx_wheel.sh; not in CI), pml ucx makes mpi CUDA-aware: the mpi check
    # passes and the run stops at the GPU check instead (no GPU here).
    lib = os.environ.get("GDR_TEST_CUDA_UCX_LIB")
    if lib:
        e = {"LD_LIBRARY_PATH": lib + ":/usr/local/cuda/lib64", "OMPI_MCA_pml": "ucx",
             "OMPI_MCA_pml_ucx_tls": "any", "OMPI_MCA_pml_ucx_devices": "any", "UCX_TLS": "self,sm,tcp"}
        p = mpirun(1, ["list"], timeout=120, extra_env=e)
        lines = [l for l in p.stdout.splitlines() if "cuda memory, direct path" in l]
        check(lines and lines[0].strip().endswith("cuda memory, direct path: usable"), f"CUDA UCX list: {lines}")
        p = mpirun(2, DIRECT + ["--output", os.path.join(tmpdir(), "u.h5")], timeout=120, extra_env=e)
        check(p.returncode == 2 and "-m cuda:" in p.stderr and "not CUDA-aware" not in p.stderr,
              f"CUDA UCX run: exit {p.returncode}: {p.stderr[-600:]}")
        print("CUDA UCX:", lines[0].strip(), "|", p.stderr.strip().splitlines()[-1])
    else:
        print("(GDR_TEST_CUDA_UCX_LIB unset: the CUDA-aware branch is not exercised)")

    # Staged still runs over this MPI; a host run records the probe and MPS.
    out = os.path.join(tmpdir(), "h.h5")
    p = mpirun(2, ["run", "-T", "mpi", "-t", "latency", "-b", "8", "-e", "8", "-n", "5",
                   "--output", out], timeout=120)
    check(p.returncode == 0, f"host run exit {p.returncode}: {p.stderr[-800:]}")
    with h5py.File(out, "r") as f:
        facts = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f["facts"].attrs.items()}
    check(facts.get("mpi.cuda_aware", "").startswith("not CUDA-aware: Open MPI built without CUDA"),
          f"mpi.cuda_aware fact: {facts.get('mpi.cuda_aware')}")
    check(facts.get("cuda.mps", "").startswith("off: "), f"cuda.mps fact: {facts.get('cuda.mps')}")
    print("facts:", facts["mpi.cuda_aware"], "|", facts["cuda.mps"])


if __name__ == "__main__":
    main(test)
