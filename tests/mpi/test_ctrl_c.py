"""Ctrl-C under the launcher's default settings.

A terminal's Ctrl-C sends SIGINT to mpirun's process group; Open MPI 4.1
starts every rank in a process group of its own, so only mpirun gets it.
Measured here (a C program that logs every signal): mpirun then sends each
rank SIGCONT at once, SIGTERM 1.0 s later, SIGKILL 1.0 s after that
(odls_base_sigkill_timeout, default 1) -- and SIGKILLs the rest the moment
any rank exits. mpirun itself exits 1 whatever the ranks return.

--twice: Ctrl-C pressed twice, 0.1 s apart. Open MPI's mpirun then exits at
once without stopping its ranks (measured: rank 0 saw only SIGCONT), and the
ranks end ~1 s later inside the MPI library (exit 195) when they find the
launcher gone: gdrbench's own closing never runs. The file's watcher
(src/outputs/crash_sealer.h) closes it: `failed` or `interrupted`, never `running`,
with an error that says so (before: `running`, empty error, 3 of 3).

So: no OMPI_MCA_odls_base_sigkill_timeout here (removed from the
environment if set). --to-rank R sends SIGINT straight to rank R instead.

Then: the job ends within a few seconds with a status that does not claim
a wrong result (neither 0 nor 4); nothing is left running; the HDF5 file is
`interrupted`, names the signal, has its end time and the transport's facts
(ucx.*, mpi.*), and every finished case is there and consistent, as in the
JSON Lines file."""
import argparse
import os
import signal
import time

from gdrtest import *  # noqa: F401,F403

WRONG_RESULTS = 4  # README: exit status of run
SLACK = 15


def run(a):
    d = tmpdir()
    h5, jl = os.path.join(d, f"ctrlc-{a.transport}-np{a.np}.h5"), os.path.join(d, "ctrlc.jsonl")
    # A sweep up to 16 MiB (allreduce and bw, with MPI_Allreduce beside):
    # large messages keep rank 0 in long fills and checks when the signal lands.
    cmd = ["mpirun", "--oversubscribe", "-np", str(a.np), GDRBENCH, "run", "-t", "allreduce,bw",
           "-T", a.transport, "-b", "1K", "-e", "16M", "-n", "30", "-w", "2", "--timeout", "10",
           "--output", h5, "--json", jl]
    e = env()
    e.pop("OMPI_MCA_odls_base_sigkill_timeout", None)  # the launcher's default
    job = Job(cmd, e)
    p = job.p
    try:
        seen = job.wait_rows(3, 120)
        check(p.poll() is None and seen >= 3, f"the sweep did not get going: {seen} rows, {''.join(job.err)}")
        if a.twice:
            os.killpg(p.pid, signal.SIGINT)
            time.sleep(0.1)
            os.killpg(p.pid, signal.SIGINT)
            what = "Ctrl-C twice (SIGINT to mpirun's process group, 0.1 s apart)"
        elif a.to_rank is None:
            os.killpg(p.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
            what = "Ctrl-C (SIGINT to mpirun's process group)"
        else:
            os.kill(rank_pids(h5)[a.to_rank], signal.SIGINT)
            what = f"SIGINT to rank {a.to_rank}"
        took, stderr = job.wait_end(what, SLACK)
        print(f"{what}: ended after {took:.1f} s, exit status {p.returncode}, {seen} rows before\n{stderr}")
        check(p.returncode not in (0, WRONG_RESULTS), f"exit status {p.returncode} claims success or wrong results")
        check(wait_gone(h5, 10), f"left behind: {job_pids(h5)}")

        root, cases = read_cases(h5)
        import h5py
        with h5py.File(h5, "r") as f:
            facts = set(f["facts"].attrs)
        print(f"file: status {root['status']!r}, error {root['error']!r}, {len(cases)} cases")
        if a.twice:
            check(root["status"] in ("interrupted", "failed") and "rank 0" in root["error"],
                  f"status {root['status']!r}, error {root['error']!r}")
            check(not os.path.exists(h5 + ".lock"), "the lock file outlived the job")
        else:
            check(root["status"] == "interrupted", f"status {root['status']!r}, error {root['error']!r}")
            check("signal" in root["error"], f"error does not name the signal: {root['error']!r}")
        if a.to_rank:
            check(f"rank {a.to_rank} " in root["error"], f"error does not name rank {a.to_rank}: {root['error']!r}")
        check(root["end_utc"] != "", "no end_utc")
        check(a.twice or any(k.startswith(a.transport + ".") for k in facts), f"no {a.transport}.* facts: {sorted(facts)}")
        check(len(cases) == root["cases_completed"] and len(cases) >= seen - 1,
              f"{len(cases)} cases kept, cases_completed {root['cases_completed']}, {seen} shown")
        for attrs, times in cases:
            check_case_consistency(attrs, times, a.np)
        rows = read_jsonl(jl)
        check(len(rows) in (len(cases), len(cases) + 1), f"{len(rows)} JSON rows, {len(cases)} cases")
    finally:
        kill_job(p, h5)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--transport", "-T", default="mpi")
    ap.add_argument("--to-rank", type=int)
    ap.add_argument("--twice", action="store_true", help="Ctrl-C twice, 0.1 s apart")
    args = ap.parse_args()
    main(lambda: run(args))
