"""What a user relies on around the numbers: the default output name, a
wrong result turning the exit status to 1, and a stalled rank ending the
job with a message that names it instead of hanging."""
import os
import re
import signal
import subprocess
import time

from gdrtest import *  # noqa: F401,F403


def default_output():
    d = tmpdir()
    p = mpirun(3, ["run", "-t", "allreduce", "-T", "mpi", "-e", "1K", "-n", "2", "--reference", "none"], cwd=d)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    files = os.listdir(os.path.join(d, "results"))
    check(len(files) == 1 and re.fullmatch(r"\d{8}T\d{6}_.+_3r\.h5", files[0]), f"default name: {files}")
    root, cases = read_cases(os.path.join(d, "results", files[0]))
    check(root["ranks"] == 3 and len(cases) == 8, f"{root['ranks']} ranks, {len(cases)} cases")
    check("run -t allreduce" in root["command_line"], root["command_line"])
    check(root["start_utc"] <= root["end_utc"], "start after end")


def wrong_results_exit_1():
    d = tmpdir()
    js = os.path.join(d, "w.jsonl")
    p = mpirun(2, ["run", "-t", "allreduce", "-b", "64", "-e", "64", "-n", "3", "--json", js,
                   "--output", os.path.join(d, "w.h5")], extra_env={"GDR_SELFTEST_CORRUPT": "1"})
    check(p.returncode == 4, f"exit {p.returncode} with corrupted results\n{p.stderr}")
    check("NOT correct" in p.stderr, p.stderr)
    rows = read_jsonl(js)
    check(all(r["wrong"] == 1 for r in rows), f"each row should count the one spoiled element: {rows}")
    _, cases = read_cases(os.path.join(d, "w.h5"))
    check(all(a["wrong"] == 1 for a, _ in cases), "HDF5 wrong count")


def stalled_rank_times_out():
    """SIGSTOP one of 3 ranks mid-sweep: the others must give up after
    --timeout and name the stopped rank (the barrier's roll call: it alone
    does not answer)."""
    d = tmpdir()
    h5 = os.path.join(d, "t.h5")
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", "3", GDRBENCH, "run", "-t", "allreduce",
           "-b", "8", "-e", "8", "-n", "1000000", "-w", "0", "--timeout", "3", "--output", h5]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    # Stop a rank once both are running (the sweep then lasts tens of seconds).
    pids = []
    for _ in range(200):
        time.sleep(0.1)
        pids = subprocess.run(["pgrep", "-f", f"gdrbench run .*{h5}"], capture_output=True,
                              text=True).stdout.split()
        pids = [x for x in pids if rank_of(int(x)) is not None]
        if len(pids) >= 3:
            break
    check(len(pids) >= 3, f"ranks not found: {pids}")
    time.sleep(1.0)  # inside the timed loop, past start-up
    victim = sorted(int(x) for x in pids)[-1]
    victim_rank = rank_of(victim)
    os.kill(victim, signal.SIGSTOP)
    t0 = time.time()
    try:
        out, err = p.communicate(timeout=30)
    finally:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    took = time.time() - t0
    check(p.returncode != 0, "a stalled rank went unnoticed")
    check(took < 3 + 10, f"took {took:.1f} s to give up")
    check("timed out after 3 s" in err, f"no timeout message: {err}")
    check(f"rank {victim_rank} (" in err and "did not answer" in err,
          f"message does not name the stopped rank {victim_rank}: {err}")


def rank_of(pid):
    """The MPI rank of a process from its environment (Open MPI sets it)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for kv in f.read().split(b"\0"):
                if kv.startswith(b"OMPI_COMM_WORLD_RANK="):
                    return int(kv.split(b"=", 1)[1])
    except OSError:
        pass
    return None


def failing_rank_tells_rank_0():
    """A rank that fails mid-sweep: the job ends at once (not after
    --timeout), and rank 0's file keeps the finished case, marked failed,
    naming the rank."""
    d = tmpdir()
    h5 = os.path.join(d, "f.h5")
    t0 = time.time()
    p = mpirun(3, ["run", "-t", "allreduce", "-T", "mpi", "-b", "8", "-e", "64", "-n", "2",
                   "--reference", "none", "--timeout", "60", "--output", h5],
               extra_env={"GDR_SELFTEST_FAIL_RANK": "2"})
    took = time.time() - t0
    check(p.returncode != 0, "a failed rank went unnoticed")
    check(took < 30, f"took {took:.0f} s: the others waited instead of stopping")
    check("self-test failure" in p.stderr, p.stderr)
    root, cases = read_cases(h5)
    check(root["status"] == "failed", f"status {root['status']}")
    check(root["error"].startswith("rank 2 (") and "self-test failure" in root["error"], root["error"])
    check(root["cases_completed"] == 1 and len(cases) == 1, f"{len(cases)} cases kept")


def no_secrets_in_metadata():
    """Variables of the captured prefixes whose names suggest a secret, and any
    variable outside the prefixes, never reach the file; a plain one does."""
    import h5py
    d = tmpdir()
    h5 = os.path.join(d, "s.h5")
    secrets = {"UCX_IB_PASSWORD": "hunter2", "GDR_API_TOKEN": "tok-123", "NCCL_SECRET_KEY": "k3y",
               "MY_API_TOKEN": "tok-456", "OMPI_MCA_auth_cred": "cred"}
    p = mpirun(2, ["run", "-t", "allreduce", "-T", "mpi", "-e", "64", "-n", "1", "--reference", "none",
                   "--output", h5], extra_env=dict(secrets, UCX_LOG_LEVEL="warn"))
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    with h5py.File(h5, "r") as f:
        envs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["environment"].attrs.items()}
        blob = repr(envs) + repr(dict(f.attrs)) + repr(dict(f["facts"].attrs))
    check(envs.get("UCX_LOG_LEVEL") == "warn", f"UCX_LOG_LEVEL not kept: {sorted(envs)}")
    for k, v in secrets.items():
        check(k not in envs and v not in blob, f"{k} leaked into the file")


def run():
    no_secrets_in_metadata()
    failing_rank_tells_rank_0()
    default_output()
    wrong_results_exit_1()
    stalled_rank_times_out()


if __name__ == "__main__":
    main(run)
