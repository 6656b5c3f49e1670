"""The result files against what can go wrong around them, with real parts:
real mpirun runs, files read back with h5py, a real FIFO, a real full
filesystem (a small tmpfs mounted here and removed), real environments.

  --case concurrent  a second run with the same --output (and --force) while
                     the first writes: it refuses in one line and touches
                     nothing; the first ends `complete` over a readable file.
  --case fifo        --json to a FIFO nobody reads: exit 2 at once; to a FIFO
                     whose reader stops reading: --timeout ends the run, the
                     file says why; a reader that goes away: EPIPE, not death.
  --case diskfull    the disk fills mid-run: the file ends `failed` with the
                     error, the cases written stay readable, and the analysis
                     commands read it (a note; compare's gate: exit 4).
  --case env         the environment at any size: one value of 128 KiB, 600
                     captured variables, odd bytes: no crash, bounded, counted.
"""
import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
import threading
import time

from gdrtest import *  # noqa: F401,F403

F_SETPIPE_SZ = 1031


def sweep(out, *extra, n="200", end="4M"):
    return ["run", "-t", "allreduce", "-T", "mpi", "-b", "1K", "-e", end, "-n", n, "-w", "1",
            "--output", out, *extra]


def status_of(path):
    root, cases = read_cases(path)
    return root, cases


def concurrent(np_):
    d = tmpdir()
    out, js = os.path.join(d, "same.h5"), os.path.join(d, "same.jsonl")
    res = {}
    # Long enough for three more launches while it writes (n 200 ended first on a quiet machine).
    first = threading.Thread(target=lambda: res.setdefault("p", mpirun(np_, sweep(out, "--json", js, n="1000"),
                                                                        timeout=200)))
    first.start()
    t0 = time.time()
    while not os.path.exists(out + ".lock") and time.time() - t0 < 60:
        time.sleep(0.05)
    check(os.path.exists(out + ".lock"), "the first run never took its output")
    time.sleep(0.5)
    size_before = os.path.getsize(out)
    for extra in (["--force"], ["--force", "--json", js], []):
        check(os.path.exists(out + ".lock"), f"the first run ended before the second run {extra} began: "
              "the test's first run is too short for this machine")
        p = mpirun(np_, sweep(out, *extra, end="4K", n="5"), timeout=120)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        print(f"second run {extra}: exit {p.returncode}: {lines}")
        check(p.returncode == 2, f"second run {extra}: exit {p.returncode}, want 2\n{p.stderr}")
        check(len(lines) == 1 and ("another run is writing it" in lines[0] or "file exists" in lines[0]),
              f"second run {extra}: not one clear line: {lines}")
    check(os.path.getsize(out) >= size_before, "the second run shrank the first run's file")
    first.join(200)
    p = res["p"]
    check(p.returncode == 0, f"first run: exit {p.returncode}\n{p.stderr[-2000:]}")
    root, cases = status_of(out)
    check(root["status"] == "complete" and len(cases) == root["cases_completed"] > 0,
          f"first run's file: status {root['status']!r}, {len(cases)} cases, {root['cases_completed']} completed")
    for a, t in cases:
        check_case_consistency(a, t, np_)
    check(len(read_jsonl(js)) == len(cases), "JSON rows != cases")
    check(not os.path.exists(out + ".lock"), "the lock file outlived the run")
    # Free again: a third run with --force replaces the finished file.
    p = mpirun(np_, sweep(out, "--force", end="1K", n="3"))
    check(p.returncode == 0 and len(status_of(out)[1]) == 2, f"after the first ended: exit {p.returncode}\n{p.stderr}")


@contextlib.contextmanager
def reader(path, pipe_bytes, seconds):
    """A FIFO reader that opens `path`, shrinks its buffer and never reads."""
    ready = threading.Event()
    state = {}

    def hold():
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        fcntl.fcntl(fd, F_SETPIPE_SZ, pipe_bytes)
        state["fd"] = fd
        ready.set()
        time.sleep(seconds)
        if state.pop("fd", None) is not None:
            os.close(fd)

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    ready.wait(10)
    try:
        yield
    finally:
        fd = state.pop("fd", None)
        if fd is not None:
            os.close(fd)


def fifo(np_):
    d = tmpdir()
    f = os.path.join(d, "rows.jsonl")
    os.mkfifo(f)
    # Nobody reads: refused at once (was: blocked forever in open()).
    t0 = time.time()
    p = mpirun(np_, sweep(os.path.join(d, "a.h5"), "--json", f, "--force", end="4K", n="5"), timeout=60)
    took = time.time() - t0
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    print(f"FIFO without a reader: exit {p.returncode} after {took:.1f} s: {lines}")
    check(p.returncode == 2 and len(lines) == 1 and "nothing reads" in lines[0], f"{p.returncode}: {lines}")
    check(not os.path.exists(os.path.join(d, "a.h5")), "a result file was created anyway")
    # A reader that stops reading (4 KiB pipe): --timeout 3 ends the run.
    out = os.path.join(d, "b.h5")
    with reader(f, 4096, 60):
        t0 = time.time()
        p = mpirun(np_, ["run", "-t", "allreduce", "-T", "mpi", "-b", "8", "-e", "64M", "-n", "20", "-w", "1",
                         "--timeout", "3", "--output", out, "--json", f, "--force"], timeout=120)
        took = time.time() - t0
    print(f"stalled FIFO reader: exit {p.returncode} after {took:.1f} s\n{p.stderr[-600:]}")
    check(p.returncode not in (0, 4) and took < 60, f"exit {p.returncode} after {took:.0f} s")
    root, cases = status_of(out)
    check(root["status"] == "failed" and "--json" in root["error"] and "--timeout" in root["error"],
          f"status {root['status']!r} error {root['error']!r}")
    check(len(cases) == root["cases_completed"] > 0, f"{len(cases)} cases")
    # A reader that goes away mid-run: EPIPE ends the run as failed, the
    # file is closed (was: rank 0 killed by SIGPIPE, the file left running).
    out = os.path.join(d, "c.h5")
    with reader(f, 4096, 2):
        p = mpirun(np_, ["run", "-t", "allreduce", "-T", "mpi", "-b", "8", "-e", "64M", "-n", "20", "-w", "1",
                         "--timeout", "20", "--output", out, "--json", f, "--force"], timeout=120)
    root, cases = status_of(out)
    print(f"reader gone: exit {p.returncode}, status {root['status']!r}, error {root['error']!r}")
    check(root["status"] == "failed" and "--json" in root["error"], f"{root['status']!r} {root['error']!r}")


def analysis(*args):
    return subprocess.run([GDRBENCH, *args], capture_output=True, text=True, timeout=300)


def diskfull(np_):
    with small_tmpfs("6m") as mnt:
        if mnt is None:
            return
        out = os.path.join(mnt, "full.h5")
        # 20 cases of ranks x 20000 x 8 B (320-480 KiB each) into 6 MiB, 4 of
        # them the file's reserve: the disk fills after a handful.
        p = mpirun(np_, ["run", "-t", "allreduce", "-T", "mpi", "-b", "8", "-e", "4K", "-n", "20000", "-w", "1",
                         "--output", out], timeout=200)
        print(f"full disk: exit {p.returncode}\n{p.stderr[-600:]}")
        check(p.returncode == 3, f"exit {p.returncode}, want 3 (a run-time failure)")
        root, cases = status_of(out)
        print(f"file: status {root['status']!r}, error {root['error']!r}, {len(cases)} cases")
        check(root["status"] == "failed" and "No space left on device" in root["error"],
              f"status {root['status']!r}, error {root['error']!r}")
        check(0 < len(cases) == root["cases_completed"] < 20, f"{len(cases)} cases, {root['cases_completed']} completed")
        for a, t in cases:
            check_case_consistency(a, t, np_)
        check(not os.path.exists(out + ".lock"), "the lock file (and its reserve) outlived the run")
        # The analysis reads it, with a note; as a gate, compare fails (4).
        s = analysis("stragglers", out)
        check(s.returncode == 0 and "failed" in s.stderr + s.stdout, f"stragglers: {s.returncode}\n{s.stderr}")
        c = analysis("compare", out, out, "--resamples", "100")
        print(f"compare on it: exit {c.returncode}: {c.stderr.strip()}")
        check(c.returncode == 4 and "not complete" in c.stderr, f"compare: exit {c.returncode}\n{c.stderr}")


def big_environment(np_):
    d = tmpdir()
    out = os.path.join(d, "env.h5")
    extra = {"UCX_BIG": "x" * 131000,                       # near Linux's 128 KiB per variable
             "UCX_ODD": "line1\nline2\t\xe9\x01",              # control bytes and non-ASCII
             "NCCL_SOCKET_IFNAME": "eth0",                      # kept as is
             "UCX_OPTS": "--mca foo --password hunter2",        # a flag inside a value
             "UCX_URL": "https://h/x?a=1&api_token=abcdefgh",  # a parameter inside a value
             "MY_CLOUD_THING": "abc"}                           # not in the allowlist
    extra.update({f"UCX_FILL_{i:03d}": "y" * 1500 for i in range(600)})  # 900 KB, 600 names
    p = mpirun(np_, ["run", "-t", "allreduce", "-T", "mpi", "-b", "8", "-e", "64", "-n", "3", "--output", out],
               extra_env=extra, timeout=120)
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stderr[-1500:]}")
    import h5py
    with h5py.File(out, "r") as f:
        env = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f["environment"].attrs.items()}
        left = f["facts"].attrs["environment.left_out"]
        left = left.decode() if isinstance(left, bytes) else left
        status = f.attrs["status"]
    print(f"{len(env)} variables stored; left out: {left}")
    check(status == "complete", status)
    check(len(env) <= 512, f"{len(env)} variables stored")
    check("over the first 512" in left and "outside the allowlist" in left and "value like a secret" in left, left)
    big = env.get("UCX_BIG", "")
    check(big.startswith("x" * 2048) and "bytes cut]" in big and len(big) < 2100, f"UCX_BIG stored as {len(big)} chars")
    check("UCX_OPTS" not in env and "UCX_URL" not in env, "a credential inside a value was stored")
    check("MY_CLOUD_THING" not in env, "a variable outside the allowlist was stored")
    odd = env.get("UCX_ODD")
    check(odd is not None and odd.startswith("$'") and "\\n" in odd, f"UCX_ODD stored as {odd!r}")


def names_and_notes(np_):
    """A name with quotes, a space and a byte that is not UTF-8 pastes back
    from command_line and the `# results:` line into bash and names the same
    file (a control character is refused: test_output_paths.py); options no
    chosen test reads are said, and stored."""
    d = tmpdir().encode()
    out = os.path.join(d, b"it's a \"run\" \xff.h5")
    cmd = [b"mpirun", b"-q", b"--oversubscribe", b"-np", str(np_).encode(), GDRBENCH.encode(), b"run", b"-T", b"mpi",
           b"-t", b"latency", b"--op", b"max", b"--window", b"8", b"-b", b"8", b"-e", b"64", b"-n", b"3",
           b"--output", out]
    p = subprocess.run(cmd, capture_output=True, env=env(), timeout=120)
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stderr[-1500:]}")
    err = p.stderr.decode(errors="replace")
    check("note: --window 8 applies only to -t bw and bibw" in err and "note: --op applies only" in err, err)
    res = [l for l in p.stdout.split(b"\n") if l.startswith(b"# results: ")]
    check(len(res) == 1, f"# results: lines: {res}")
    import h5py
    with h5py.File(out, "r") as f:
        cl = f.attrs["command_line"]
        ign = f["facts"].attrs["run.ignored_options"]
    cl = cl.encode("utf-8", "surrogateescape") if isinstance(cl, str) else cl
    check(b"\n" not in cl and b"\n" not in res[0], "a raw newline in command_line or # results:")
    check("--window 8" in (ign.decode() if isinstance(ign, bytes) else ign), ign)
    # bash itself reads both back: the file they name is the one written.
    for text in (res[0][len(b"# results: "):], cl):
        words = subprocess.run(["bash", "-c", 'eval "set -- $1"; printf "%s\\0" "$@"', "_", text],
                               capture_output=True, timeout=10).stdout.split(b"\0")
        check(out in words, f"bash reads {text!r} as {words}, not {out!r}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True, choices=("concurrent", "fifo", "diskfull", "env", "names"))
    ap.add_argument("--np", type=int, default=2)
    a = ap.parse_args()
    fn = {"concurrent": concurrent, "fifo": fifo, "diskfull": diskfull, "env": big_environment,
          "names": names_and_notes}[a.case]
    main(lambda: fn(a.np))
