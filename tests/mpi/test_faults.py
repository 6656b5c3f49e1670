"""Faults injected into a real mpirun job mid-sweep, with real signals:

  --kill-rank R      SIGKILL rank R (0 included) after a few cases finished
  --signal INT|TERM  the signal to mpirun itself (a user's Ctrl-C, a scheduler)
  --recovery         mpirun --enable-recovery: mpirun leaves the survivors of a
                     dead rank running (as srun does by default), so gdrbench's
                     own --timeout must find the lost rank, name it and end the job

Without --recovery, Open MPI's mpirun stops the survivors itself (SIGTERM,
then SIGKILL about a second later) and names the dead rank ("mpirun noticed
that process rank 1 ... exited on signal 9"; -q would hide that line, so
these launches leave it out); rank 0 then closes the file `interrupted`,
naming the launcher as the sender.

Then: the job ends within --timeout plus a few seconds with a non-zero
status and a message naming the lost rank (or the signal); the HDF5 file
holds every case finished before, readable by h5py and consistent, and is
never marked complete (failed naming the rank, interrupted, or -- when rank
0 itself died -- closed `failed` by rank 0's watcher process, naming rank 0);
no rank and no mpirun is left behind."""
import argparse
import os
import signal

from gdrtest import *  # noqa: F401,F403

TIMEOUT = 4  # gdrbench --timeout, seconds
SLACK = 12   # "a few seconds" on a loaded 2-core machine
# Cases of a fraction of a second on a loaded 2-core machine (UCX polls: slower
# when ranks outnumber cores).
ITERS = {("mpi", False): 1000, ("mpi", True): 1000, ("ucx", False): 1500, ("ucx", True): 40}


class Missed(Exception):
    """The sweep ended before the fault landed (a quiet machine runs it fast)."""


def launch(np_, transport, h5, recovery, scale=1):
    # Many short cases (dtype x op at one size) so that the fault lands mid-sweep
    # with several cases already on disk.
    cmd = ["mpirun", "--oversubscribe"] + (["--enable-recovery"] if recovery else []) + [
           "-np", str(np_), GDRBENCH, "run", "-t", "allreduce",
           "-T", transport, "-b", "64", "-e", "512", "-d", ",".join(DTYPES), "-o", ",".join(OPS),
           "-n", str(ITERS[transport, np_ > 2] * scale), "-w", "2", "--reference", "none", "--timeout", str(TIMEOUT), "--output", h5]
    e = env()
    # mpirun sends SIGKILL 1 s after SIGTERM by default (and always waits that
    # long): on a machine loaded many times over, rank 0 may not be scheduled in
    # time to close the file (which then stays `running`, still readable). Give
    # it the grace README recommends.
    e.setdefault("OMPI_MCA_odls_base_sigkill_timeout", "3")
    return Job(cmd, e)


def run(a):
    # Iterations are sized for a loaded machine; where the whole sweep beat the
    # fault, run again with cases 8x longer (at most twice).
    for scale in (1, 8, 64):
        try:
            return attempt(a, scale)
        except Missed as e:
            print(f"missed at -n x{scale}: {e}; again with longer cases")
    raise AssertionError("the sweep finished before the fault three times")


def attempt(a, scale):
    d = tmpdir()
    h5 = os.path.join(d, f"fault-{a.transport}-np{a.np}-x{scale}.h5")
    job = launch(a.np, a.transport, h5, a.recovery, scale)
    p = job.p
    try:
        # Wait for two finished cases (the table is flushed row by row).
        seen = job.wait_rows(2, 60)
        if p.poll() is not None and p.returncode == 0:
            raise Missed(f"exit 0 after {seen} rows")
        check(p.poll() is None and seen >= 2, f"the sweep did not get going: {seen} rows, {''.join(job.err)}")
        total = len(DTYPES) * len(OPS) * 4
        if a.kill_rank is not None:
            pids = rank_pids(h5)
            check(len(pids) == a.np, f"ranks found: {pids}")
            os.kill(pids[a.kill_rank], signal.SIGKILL)
            what = f"SIGKILL to rank {a.kill_rank}"
        else:
            os.kill(p.pid, getattr(signal, "SIG" + a.signal))
            what = f"SIG{a.signal} to mpirun"
        took, stderr = job.wait_end(what, TIMEOUT + SLACK)
        if os.path.exists(h5) and read_cases(h5)[0]["status"] == "complete":
            raise Missed(f"{what} arrived after the last case ({seen} rows had been shown)")
        print(f"{what}: ended after {took:.1f} s with status {p.returncode}; {seen} rows before\n{stderr}")
        # mpirun --enable-recovery reports 0 even after MPI_Abort: only the default launcher's
        # status says anything.
        check(a.recovery or p.returncode != 0, f"{what}: exit status 0")
        check(seen < total, "the sweep finished before the fault")
        check(took < TIMEOUT + SLACK, f"took {took:.1f} s")
        # Nothing left behind: no rank, no mpirun.
        check(wait_gone(h5, 10), f"{what}: left behind: {job_pids(h5)}")

        # The file: readable, every finished case consistent, never `complete`.
        root, cases = read_cases(h5)
        status, error = root["status"], root["error"]
        print(f"file: status {status!r}, error {error!r}, {len(cases)} cases")
        check(len(cases) == root["cases_completed"], f"{len(cases)} groups, cases_completed {root['cases_completed']}")
        # A row reaches the table just before the file, so the kill may fall between.
        check(len(cases) >= seen - 1 and len(cases) < total, f"{len(cases)} cases kept, {seen} were shown")
        for attrs, times in cases:
            check_case_consistency(attrs, times, a.np)
        lost = f"rank {a.kill_rank}"
        if a.kill_rank == 0:
            # The writer died: its watcher (src/outputs/crash_sealer.h) closes the file as
            # `failed`, naming rank 0, with every flushed case (was: left `running`).
            check(status == "failed" and "rank 0" in error and "watcher" in error,
                  f"status {status!r}, error {error!r} after rank 0 was killed")
            check(not os.path.exists(h5 + ".lock"), "the lock file outlived the job")
        elif a.kill_rank is not None and a.recovery:
            # gdrbench's own timeout found it: the file is failed and names the lost rank.
            check(status == "failed", f"status {status!r}")
            # A transport wait names its peer; a collective one (a barrier) names the
            # ranks that did not answer its roll call.
            named = f"waiting for {lost} " in error or f"{lost} (" in error
            check(named, f"error does not name {lost}: {error!r}")
            check(lost in stderr, f"stderr does not name {lost}")
        elif a.kill_rank is not None:
            check(status == "interrupted" and "from the launcher" in error, f"status {status!r}, {error!r}")
            check(f"process {lost} " in stderr and "signal 9" in stderr, f"stderr does not name {lost}")
        else:
            check(status == "interrupted" and "signal" in error, f"status {status!r}, {error!r}")
            check(p.returncode != 0, "exit status 0")
    finally:
        kill_job(p, h5)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--transport", "-T", default="mpi")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--kill-rank", type=int)
    g.add_argument("--signal", choices=["INT", "TERM"])
    ap.add_argument("--recovery", action="store_true")
    args = ap.parse_args()
    main(lambda: run(args))
