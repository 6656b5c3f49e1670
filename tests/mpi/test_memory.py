"""Memory use of a sweep, under a real address-space limit (ulimit -v) on
every rank of a real mpirun launch, over mpi and ucx:

- lanes give their buffers back after their last case: a sweep whose lanes
  together need more than the limit (3.3 GiB at 256 MiB: allreduce over two
  transports plus MPI_Allreduce, then latency and bw over both) runs to the
  end when each (test, memory, path) block alone fits (1.3 GiB);
- a block that does not fit is refused before any timing, exit 2, one line
  naming the size, the memory kind and the limit, and no result file.

Usage: test_memory.py [--np N]"""
import argparse
import os
import subprocess

from gdrtest import GDRBENCH, check, env, main, read_cases, read_jsonl, tmpdir

LIMIT_KIB = 2 * 1024 * 1024  # 2 GiB of address space per rank


def limited_run(np_, args, timeout=240):
    # The limit is set inside each rank, not on mpirun.
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np_), "bash", "-c",
           f'ulimit -v {LIMIT_KIB} && exec "$0" "$@"', GDRBENCH, "run"] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env())


def lanes_free_their_buffers(np_, d):
    out, js = os.path.join(d, "fits.h5"), os.path.join(d, "fits.jsonl")
    p = limited_run(np_, ["-T", "mpi,ucx", "-t", "allreduce,latency,bw", "-b", "256M", "-e", "256M",
                          "-n", "2", "-w", "0", "--output", out, "--json", js])
    check(p.returncode == 0, f"sweep under ulimit -v 2 GiB: exit {p.returncode}\n{p.stderr}")
    rows = read_jsonl(js)
    tests = sorted((r["test"], r["transport"]) for r in rows)
    check(len(rows) == 7, f"expected 7 rows (3 allreduce, 2 latency, 2 bw), got {tests}")
    check(all(r["wrong"] == 0 for r in rows), f"wrong elements: {rows}")
    root, cases = read_cases(out)
    check(root["status"] == "complete" and len(cases) == 7, f"file: {root['status']}, {len(cases)} cases")


def block_too_big_is_refused(np_, d):
    out = os.path.join(d, "refused.h5")
    p = limited_run(np_, ["-T", "mpi,ucx", "-t", "allreduce", "-b", "1G", "-e", "1G", "--output", out])
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 2, f"1 GiB allreduce under 2 GiB: exit {p.returncode}, wanted 2\n{p.stderr}")
    check(len(lines) == 1, f"wanted one line, got {lines}")
    for text in ("(1.0 GiB) needs", "of host memory per rank", "RLIMIT_AS"):
        check(text in lines[0], f"{text!r} not in {lines[0]!r}")
    check(not p.stdout.count("allreduce"), f"rows were timed before the refusal:\n{p.stdout}")
    check(not os.path.exists(out), "a result file was left for a refused run")


def run():
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, default=2)
    a = ap.parse_args()
    d = tmpdir()
    lanes_free_their_buffers(a.np, d)
    block_too_big_is_refused(a.np, d)


if __name__ == "__main__":
    main(run)
