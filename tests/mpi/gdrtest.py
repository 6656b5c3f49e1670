"""Helpers for the tests that launch gdrbench for real under mpirun.

Run with /usr/bin/python3 (Debian's python3-h5py and python3-numpy)."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile

import h5py
import numpy as np

GDRBENCH = os.environ.get("GDRBENCH", "gdrbench")
DTYPES = ["float", "double", "int32", "int64", "half", "bfloat16"]
DTYPE_SIZE = {"float": 4, "double": 8, "int32": 4, "int64": 8, "half": 2, "bfloat16": 2}
MPI_REFERENCE_DTYPES = {"float", "double", "int32", "int64"}
OPS = ["sum", "prod", "min", "max"]


def env():
    e = dict(os.environ)
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    # A loaded 2-core CI machine: let ranks yield instead of spinning.
    e.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    return e


def mpirun(np_, args, timeout=240, extra_env=None, cwd=None):
    """Runs gdrbench under mpirun; returns CompletedProcess (text)."""
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np_), GDRBENCH] + list(args)
    e = env()
    e.update(extra_env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, cwd=cwd)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_cases(path):
    """(root attrs, list of (attrs dict, times array)) from a result file."""
    with h5py.File(path, "r") as f:
        root = dict(f.attrs)
        cases = [(dict(g.attrs), g["times"][()]) for _, g in sorted(f["cases"].items())]
        root["hosts"] = [h.decode() if isinstance(h, bytes) else h for h in f["ranks/host"][()]]
        root["local_rank"] = f["ranks/local_rank"][()]
    return root, cases


def check_case_consistency(attrs, times, ranks):
    """The stored summary must follow from the stored per-rank times."""
    check(times.shape == (ranks, attrs["iters"]), f"times shape {times.shape} != ({ranks}, {attrs['iters']})")
    slowest = np.nanmax(times, axis=0)
    check(np.all(np.isfinite(slowest)) and np.all(slowest > 0), f"slowest times not positive: {slowest}")
    mean_us = slowest.mean() * 1e6
    check(abs(mean_us - attrs["time_us_mean"]) <= 1e-6 * max(1.0, mean_us),
          f"time_us_mean {attrs['time_us_mean']} != mean of slowest {mean_us}")
    check(abs(slowest.min() * 1e6 - attrs["time_us_min"]) < 1e-6 * max(1.0, mean_us), "time_us_min")
    check(abs(slowest.max() * 1e6 - attrs["time_us_max"]) < 1e-6 * max(1.0, mean_us), "time_us_max")


def tmpdir():
    return tempfile.mkdtemp(prefix="gdrtest-")


@contextlib.contextmanager
def small_tmpfs(size):
    """A tmpfs of `size` (mount's size=, e.g. 600k) mounted on a fresh folder, unmounted after;
    None (the caller skips) where this machine cannot mount one."""
    mnt = os.path.join(tmpdir(), "small")
    os.mkdir(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"SKIP: cannot mount a tmpfs here ({r.stderr.strip()})")
        os.rmdir(mnt)
        yield None
        return
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", mnt])
        os.rmdir(mnt)


def main(fn):
    try:
        fn()
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print("PASS")


# --- processes of a launched job, for the fault-injection tests ----------

def job_pids(marker):
    """{pid: argv} of every live process (mpirun or a rank) whose command line
    holds `marker` (a unique output path). Zombies count as gone."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(marker in a for a in argv):
            out[int(d)] = argv
    return out


def kill_job(p, marker):
    """Leaves nothing of a test's job behind: the launcher's process group
    (p, a Popen started with start_new_session) and every process whose
    command line holds `marker`."""
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    for pid in job_pids(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def rank_pids(marker):
    """{rank: pid} of the job's gdrbench ranks (from OMPI_COMM_WORLD_RANK)."""
    ranks = {}
    for pid, argv in job_pids(marker).items():
        if not argv or not os.path.basename(argv[0]).startswith("gdrbench"):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                envs = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK" in envs:
            ranks[int(envs[b"OMPI_COMM_WORLD_RANK"])] = pid
    return ranks


def wait_gone(marker, seconds):
    """True once no process of the job is left (waits up to `seconds`)."""
    import time
    end = time.time() + seconds
    while time.time() < end:
        if not job_pids(marker):
            return True
        time.sleep(0.2)
    return not job_pids(marker)


class Job:
    """A launch in a session of its own (kill_job ends it whole), its stdout
    and stderr read into lists line by line as they come: for the tests that
    signal a job mid-sweep (test_faults.py, test_ctrl_c.py)."""

    def __init__(self, cmd, environ):
        import threading
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=environ, start_new_session=True)
        self.out, self.err = [], []

        def pump(stream, into):
            for line in stream:
                into.append(line)
        self.readers = [threading.Thread(target=pump, args=(self.p.stdout, self.out), daemon=True),
                        threading.Thread(target=pump, args=(self.p.stderr, self.err), daemon=True)]
        for t in self.readers:
            t.start()

    def rows(self):
        """The table's data rows shown so far."""
        return len(data_rows(self.out))

    def wait_rows(self, n, seconds):
        """Waits until n data rows are shown, the job ended or `seconds` passed; the rows shown."""
        import time
        t0 = time.time()
        while self.rows() < n and self.p.poll() is None and time.time() - t0 < seconds:
            time.sleep(0.05)
        return self.rows()

    def wait_end(self, what, seconds):
        """After `what` was sent: waits for the job to end, failing when it has not
        within `seconds`; (seconds it took, its whole stderr)."""
        import time
        t0 = time.time()
        try:
            self.p.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{what}: job still running after {seconds} s")
        took = time.time() - t0
        for t in self.readers:
            t.join(5)
        return took, "".join(self.err)


def data_rows(lines):
    """The table's data rows among a run's stdout lines."""
    return [l for l in lines if l.strip() and not l.startswith("#")]
