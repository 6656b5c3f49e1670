"""`gdrbench run`'s outputs against the paths they can be given, with real
runs (mpirun, host memory) and real files (docs/operators/outputs.md):

  --case links     a second run through a symbolic or a hard link to a
                   running run's file, --force included: one line, exit 2,
                   the first run ends `complete` over a readable file.
  --case kinds     --output or --json naming a folder, a FIFO (--output) or a
                   device node: one line, exit 2, the thing stays as it was.
  --case control   a control character (newline, tab) in --output or --json:
                   one line, exit 2, nothing created.
  --case nospace   too little free space for the lock's reserve and the first
                   case (a 600 KiB tmpfs): exit 3, one line, nothing written.
  --case stdout    the table into a full stdout (/dev/full, one rank run
                   without a launcher): one line, a non-zero status.
"""
import argparse
import os
import signal
import stat
import subprocess
import threading
import time

from gdrtest import *  # noqa: F401,F403


def small(out, *extra):
    return ["run", "-t", "allreduce", "-T", "mpi", "-b", "8", "-e", "64", "-n", "3", "--output", out, *extra]


def one_line(p, code, words, what):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    print(f"{what}: exit {p.returncode}: {lines}")
    check(p.returncode == code, f"{what}: exit {p.returncode}, want {code}\n{p.stderr}")
    check(len(lines) == 1 and words in lines[0], f"{what}: not one line saying '{words}': {lines}")


def own_ranks(out):
    """The pids of the gdrbench ranks writing `out` (a path unique to this test)."""
    pids = []
    for e in os.listdir("/proc"):
        try:
            argv = open(f"/proc/{e}/cmdline", "rb").read().split(b"\0")
        except (OSError, ValueError):
            continue
        if e.isdigit() and out.encode() in argv and any(a.endswith(b"gdrbench") for a in argv[:2]):
            pids.append(int(e))
    check(pids, f"no rank of the first run found writing {out}")
    return pids


def second_runs(np_, d, out):
    """Runs through a symbolic and a hard link to the first run's file, --force: refused."""
    os.symlink("first.h5", os.path.join(d, "soft.h5"))
    os.link(out, os.path.join(d, "hard.h5"))
    for name in ("soft.h5", "hard.h5"):
        check(os.path.exists(out + ".lock"), "the first run ended before the second began")
        size = os.path.getsize(out)
        p = mpirun(np_, small(os.path.join(d, name), "--force"), timeout=120)
        one_line(p, 2, "another run is writing", f"second run through {name}")
        check(os.path.getsize(out) >= size, f"the run through {name} shrank the first run's file")


def links(np_):
    d = tmpdir()
    out = os.path.join(d, "first.h5")
    res = {}
    first = threading.Thread(target=lambda: res.setdefault("p", mpirun(np_, [
        "run", "-t", "allreduce", "-T", "mpi", "-b", "1K", "-e", "256K", "-n", "600", "-w", "1", "--output", out],
        timeout=200)))
    first.start()
    t0 = time.time()
    while not os.path.exists(out + ".lock") and time.time() - t0 < 60:
        time.sleep(0.05)
    while not os.path.exists(out) and time.time() - t0 < 60:
        time.sleep(0.02)
    check(os.path.exists(out + ".lock") and os.path.exists(out), "the first run never took its output")
    # The first run's ranks (this test's own, found by its unique output path) stopped while the
    # second runs try: on a quiet machine its 600 iterations ended before the second link's try.
    ranks = own_ranks(out)
    for pid in ranks:
        os.kill(pid, signal.SIGSTOP)
    try:
        second_runs(np_, d, out)
    finally:
        for pid in ranks:
            os.kill(pid, signal.SIGCONT)
    first.join(200)
    check(res["p"].returncode == 0, f"first run: exit {res['p'].returncode}\n{res['p'].stderr[-2000:]}")
    root, cases = read_cases(out)
    check(root["status"] == "complete" and len(cases) == root["cases_completed"] > 0,
          f"first run's file: status {root['status']!r}, {len(cases)} cases")


def kinds(np_):
    d = tmpdir()
    folder, fifo, dev = os.path.join(d, "folder"), os.path.join(d, "fifo"), os.path.join(d, "device")
    os.mkdir(folder)
    os.mkfifo(fifo)
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers (root)
    out = os.path.join(d, "ok.h5")
    for opt, path, kind in (("--output", folder, "a folder"), ("--output", fifo, "a FIFO"),
                            ("--output", dev, "a device"), ("--json", folder, "a folder"), ("--json", dev, "a device")):
        args = small(path, "--force") if opt == "--output" else small(out, "--force", "--json", path)
        one_line(mpirun(np_, args, timeout=120), 2, f"is {kind}, not a regular file", f"{opt} {kind}")
        check(stat.S_ISCHR(os.lstat(dev).st_mode) and stat.S_ISFIFO(os.lstat(fifo).st_mode), "a node was replaced")
        check(not os.path.exists(out), "a file was written after a refusal")


def control(np_):
    d = tmpdir()
    for opt, name in (("--output", "two\nlines.h5"), ("--output", "tab\there.h5"), ("--json", "j\nl.jsonl")):
        path = os.path.join(d, name)
        args = small(path) if opt == "--output" else small(os.path.join(d, "ok.h5"), "--json", path)
        one_line(mpirun(np_, args, timeout=120), 2, "control character", f"{opt} {name!r}")
    check(os.listdir(d) == [], f"files written after a refusal: {os.listdir(d)}")


def nospace(np_):
    with small_tmpfs("600k") as mnt:
        if mnt is None:
            return
        # 8 B to 4 KiB, 20000 iterations: cases of ranks x 160 KB, with 4 MiB of reserve.
        p = mpirun(np_, ["run", "-t", "allreduce", "-T", "mpi", "-b", "8", "-e", "4K", "-n", "20000", "-w", "1",
                         "--output", os.path.join(mnt, "run.h5")], timeout=120)
        one_line(p, 3, "KiB free on its file system", "600 KiB free")
        check(os.listdir(mnt) == [], f"written before the check: {os.listdir(mnt)}")


def full_stdout(np_):
    out = os.path.join(tmpdir(), "run.h5")
    with open("/dev/full", "w") as full:
        p = subprocess.run([GDRBENCH, *small(out)], stdout=full, stderr=subprocess.PIPE, text=True, env=env(),
                           timeout=120)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    print(f"table into /dev/full: exit {p.returncode}: {lines}")
    check(p.returncode != 0, "exit 0 with the table lost")
    check(len(lines) == 1 and "No space left on device" in lines[0], f"not one line: {lines}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True, choices=("links", "kinds", "control", "nospace", "stdout"))
    ap.add_argument("--np", type=int, default=2)
    a = ap.parse_args()
    fn = {"links": links, "kinds": kinds, "control": control, "nospace": nospace, "stdout": full_stdout}[a.case]
    main(lambda: fn(a.np))
