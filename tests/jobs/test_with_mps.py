#!/usr/bin/env python3
"""jobs/with_mps.sh: start, check, stop, refuse; and gdrbench's `cuda.mps` fact.

There is no GPU here, so the MPS daemon is the stand-in in mps_standin/ (a real
process named nvidia-cuda-mps-control with a real control socket); the helper,
its /proc scan, its stop-and-kill logic and gdrbench's own reading of MPS
(src/core/mps.cpp, through a real mpirun run read back from HDF5) are real.
"""
import os
import subprocess
import sys
import tempfile
import time

import h5py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HELPER = os.path.join(ROOT, "jobs", "with_mps.sh")
STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mps_standin")
GDRBENCH = os.environ.get("GDRBENCH", "gdrbench")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def daemons():
    """Pids whose argv[0] is nvidia-cuda-mps-control (as the helper sees them)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv0 = f.read().split(b"\0")[0].decode(errors="replace")
            except OSError:
                continue
            if os.path.basename(argv0) == "nvidia-cuda-mps-control":
                out.append(int(d))
    return out


def helper(args, extra=None, standin=True, timeout=120):
    e = dict(os.environ)
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    e.pop("CUDA_MPS_PIPE_DIRECTORY", None)
    e.pop("CUDA_MPS_LOG_DIRECTORY", None)
    if standin:
        e["PATH"] = STANDIN + ":" + e["PATH"]
    e.update(extra or {})
    return subprocess.run(["bash", HELPER] + args, capture_output=True, text=True, timeout=timeout, env=e)


def main():
    if daemons():
        print(f"SKIP: an nvidia-cuda-mps-control already runs here ({daemons()})")
        return 77
    # No MPS tool: refused, one line, exit 2.
    p = helper(["true"], standin=False)
    check(p.returncode == 2 and "no nvidia-cuda-mps-control" in p.stderr, f"no tool: {p.returncode} {p.stderr}")

    # Started, answers, the command sees it on, its status passes through, stopped after.
    p = helper(["bash", "-c", 'bash "$0" --status; exit 7', HELPER])
    check(p.returncode == 7, f"exit status not passed through: {p.returncode} {p.stderr}")
    check(p.stdout.startswith("on: nvidia-cuda-mps-control runs"), f"status inside: {p.stdout!r}")
    check("MPS started" in p.stderr and "MPS stopped" in p.stderr, f"start/stop not said: {p.stderr}")
    check(not daemons(), f"daemon left running: {daemons()}")
    p = helper(["--status"])
    check(p.stdout.startswith("off: "), f"status outside: {p.stdout!r}")

    # gdrbench records what it saw: on under the helper, off without it.
    work = tempfile.mkdtemp(prefix="gdr-mps-")
    for name, under in (("on", True), ("off", False)):
        out = os.path.join(work, f"{name}.h5")
        cmd = ["mpirun", "-q", "-np", "1", GDRBENCH, "run", "-T", "mpi", "-t", "allreduce", "-b", "8",
               "-e", "8", "-n", "5", "--output", out]
        p = helper(cmd) if under else subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                                                     env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                                              OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        check(p.returncode == 0, f"gdrbench {name}: exit {p.returncode} {p.stderr[-600:]}")
        if p.returncode == 0:
            with h5py.File(out, "r") as f:
                fact = f["facts"].attrs["cuda.mps"]
                fact = fact.decode() if isinstance(fact, bytes) else str(fact)
            check(fact.startswith(name + ": "), f"cuda.mps {name}: {fact}")
            print(f"cuda.mps ({name}):", fact)
    check(not daemons(), f"daemon left running after gdrbench: {daemons()}")

    # Someone else's daemon runs: refused, and theirs is left alone.
    pipes = os.path.join(work, "other")
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipes)
    subprocess.run([os.path.join(STANDIN, "nvidia-cuda-mps-control"), "-d"], env=env, check=True)
    for _ in range(50):
        if daemons() and os.path.exists(os.path.join(pipes, "control")):
            break
        time.sleep(0.1)
    other = daemons()
    p = helper(["true"])
    check(p.returncode == 2 and "already runs" in p.stderr, f"second daemon: {p.returncode} {p.stderr}")
    check(daemons() == other, "the other daemon was touched")
    subprocess.run([os.path.join(STANDIN, "nvidia-cuda-mps-control")], input="quit", text=True, env=env)
    for _ in range(50):
        if not daemons():
            break
        time.sleep(0.1)

    # SIGTERM to the helper while its command runs: the command ends, then MPS; exit 143.
    e = dict(os.environ, PATH=STANDIN + ":" + os.environ["PATH"])
    e.pop("CUDA_MPS_PIPE_DIRECTORY", None)
    h = subprocess.Popen(["bash", HELPER, "sleep", "60"], env=e, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if daemons():
            time.sleep(1)  # let it reach the command
            break
        time.sleep(0.1)
    h.terminate()
    try:
        rc = h.wait(timeout=20)
    except subprocess.TimeoutExpired:
        h.kill()
        rc = "no exit within 20 s"
    check(rc == 143, f"SIGTERM: exit {rc}, want 143: {h.stderr.read()[-400:]}")
    check(not daemons(), f"daemon left running after SIGTERM: {daemons()}")

    # A daemon that ignores quit is killed, and the helper says so (exit 3).
    p = helper(["true"], {"STANDIN_MPS_IGNORE_QUIT": "1", "MPS_STOP_S": "1"})
    check(p.returncode == 3 and "killing it" in p.stderr, f"hung daemon: {p.returncode} {p.stderr}")
    time.sleep(0.3)
    check(not daemons(), f"hung daemon left running: {daemons()}")
    for pid in daemons():  # never leave one behind, even when the test fails
        os.kill(pid, 9)
    print("PASS" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
