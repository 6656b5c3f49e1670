"""Every bad input gives exit status 2 and exactly one line naming the
problem, at several rank counts, quickly (no hang)."""
import argparse
import concurrent.futures
import json
import os
import stat
import time

from gdrtest import *  # noqa: F401,F403

# (arguments after `run`, text the one line must contain)
CASES = [
    (["-b", "0"], "--minbytes '0'"),
    (["-b", "-8"], "--minbytes"),
    (["-e", "lots"], "--maxbytes 'lots'"),
    (["-b", "1M", "-e", "1K"], "larger than --maxbytes"),
    (["-f", "1"], "--stepfactor"),
    (["-f", "x"], "--stepfactor"),
    (["-n", "0"], "--iters"),
    (["-n", "many"], "--iters"),
    (["-w", "-1"], "--warmup"),
    (["-t", "alltoall"], "unknown value 'alltoall'"),
    (["-T", "pigeon"], "unknown value 'pigeon'"),
    (["-m", "disk"], "unknown memory kind 'disk'"),
    (["--path", "sideways"], "unknown path 'sideways'"),
    (["-d", "float8"], "unknown datatype 'float8'"),
    (["-o", "xor"], "unknown op 'xor'"),
    (["-c", "5"], "--check"),
    (["--reference", "gloo"], "unknown value 'gloo'"),
    (["--timeout", "0"], "--timeout"),
    (["--timeout", "-3"], "--timeout"),
    (["--timeout", "inf"], "--timeout"),
    (["--pairs", "star"], "--pairs"),
    (["--window", "0"], "--window"),
    (["--window", "auto"], "--window"),
    (["--slots", "0"], "--slots"),
    (["--slots", "some"], "--slots"),
    (["--case-time", "0"], "--case-time"),
    (["--case-time", "nan"], "--case-time"),
    (["-w", "soon"], "--warmup"),
    (["--chunk", "0"], "--chunk"),
    (["--device", "-5"], "--device"),
    (["--gid-index", "-2"], "--gid-index"),
    (["--hca", "mlx5_0:x"], "--hca 'mlx5_0:x'"),
    (["--hca", "mlx5_0:99999999999"], "--hca"),
    (["--stage-chunk", "0"], "--stage-chunk"),
    (["-m", "cuda"], "-m cuda"),
    (["--no-such-flag"], "--no-such-flag"),
    (["--output", "/nonexistent-dir/x.h5"], "does not exist"),
    (["--output", "/proc/x.h5"], "/proc/x.h5"),
    (["--json", "/nonexistent-dir/x.jsonl"], "--json"),
    # More than the host can hold: said before any timing, naming size and kind.
    (["-e", "1T"], "(1.0 TiB) needs"),
    (["-e", "1T"], "of host memory per rank"),
    (["-e", "64G", "-f", "1024"], "MemAvailable"),
    # The sweep stops below --maxbytes (512 GiB with -f 2): both are named.
    (["-e", "1000G"], "(512.0 GiB) under --maxbytes 1000G needs"),
    # Output collisions, every size skipped.
    (["--output", "same.h5", "--json", "same.h5"], "name the same file"),
    (["--output", "sub/../same2.h5", "--json", "./same2.h5"], "name the same file"),
    (["--output", "dev-full", "--force"], "--output dev-full"),
    (["-b", "3", "-e", "7", "-d", "double"], "no case to run: 3 B is smaller than one double"),
    (["-b", "1", "-e", "1", "-d", "half"], "no case to run"),
]

# Every environment variable gdrbench reads, as strictly as a flag:
# (variable, bad value, text the one line must contain).
ENV_CASES = [
    ("GDR_STAGE_CHUNK", "abc", "GDR_STAGE_CHUNK='abc'"),
    ("GDR_STAGE_CHUNK", "0", "GDR_STAGE_CHUNK"),
    ("GDR_STAGE_SLOTS", "x", "GDR_STAGE_SLOTS='x'"),
    ("GDR_STAGE_SLOTS", "1", "GDR_STAGE_SLOTS"),
    ("GDR_UCX_CUDA_MAX_SENDS", "-1", "GDR_UCX_CUDA_MAX_SENDS"),
    ("GDR_VERBS_HCA", "mlx5_0:x", "GDR_VERBS_HCA"),
    ("GDR_VERBS_GID_INDEX", "two", "GDR_VERBS_GID_INDEX"),
    ("GDR_VERBS_RETRY_CNT", "9", "GDR_VERBS_RETRY_CNT"),
    ("GDR_VERBS_QP_TIMEOUT", "32", "GDR_VERBS_QP_TIMEOUT"),
    ("GDR_SELFTEST_FAIL_RANK", "one", "GDR_SELFTEST_FAIL_RANK"),
    ("GDR_SELFTEST_CORRUPT", "yes", "GDR_SELFTEST_CORRUPT"),
]

# Every other subcommand, without a launcher: (argv, text the one line must contain).
OTHER = [
    ([], "A subcommand is required"),
    (["frobnicate"], "frobnicate"),
    (["--no-such-flag"], "--no-such-flag"),
    (["list", "--bogus"], "--bogus"),
    (["list", "extra"], "extra"),
    (["doctor", "--bogus"], "--bogus"),
    (["doctor", "--timeout", "0"], "--timeout"),
    (["doctor", "--timeout", "soon"], "--timeout"),
    (["doctor", "--local", "--timeout", "nan"], "--timeout 'nan': want a number above 0, at most 31536000"),
    (["doctor", "--local", "--timeout", "1e300"], "--timeout '1e300'"),
    (["doctor", "--local", "-o", "/nonexistent-dir/d.json"], "/nonexistent-dir/d.json"),
    (["doctor", "--local", "-o", "/etc/hostname"], "file exists; pass --force"),
    (["history", "/etc/hostname", "--case", "test=allreduce,test=bw"], "given twice"),
    (["compare", "a.h5", "b.h5", "--resamples", "1000000000000"], "--resamples"),
    (["compare", "a.h5", "b.h5", "--confidence", "nan"], "--confidence"),
    (["suspects", "r.h5", "--z", "nan"], "--z"),
    (["compare"], "BASE.h5"),
    (["compare", "a.h5"], "NEW.h5"),
    (["compare", "a.h5", "b.h5", "--threshold", "lots"], "--threshold"),
    (["compare", "a.h5", "b.h5", "--bogus"], "--bogus"),
    (["report"], "RUN.h5"),
    (["report", "/nonexistent-dir/r.h5", "--html", "x.html"], "/nonexistent-dir/r.h5"),
    (["report", "r.h5", "--html", "x.html", "--straggler-threshold", "-1"], "--straggler-threshold"),
    (["history", "/nonexistent-dir/r.h5"], "--case"),
    (["history", "/nonexistent-dir/r.h5", "--case", "test=allreduce"], "no readable result file"),
    (["stragglers", "/nonexistent-dir/r.h5"], "/nonexistent-dir/r.h5"),
    (["stragglers", "r.h5", "--threshold", "x"], "--threshold"),
]

# Analysis subcommands onto a full device (need a real result file: RUN),
# and the environment they read.
FULL_ANALYSIS = [
    (["report", "RUN", "--html", "dev-full"], "--html dev-full"),
    (["history", "RUN", "--case", "test=allreduce", "--plot", "dev-full"], "--plot dev-full"),
    (["compare", "RUN", "RUN", "--json"], "writing the output failed"),       # stdout > /dev/full
    (["stragglers", "RUN"], "writing the output failed"),
]
ANALYSIS_ENV = [
    ({"GDR_PYTHON": "/nonexistent/python3"}, "GDR_PYTHON"),
    ({"GDR_ANALYSIS_DIR": "/nonexistent-dir"}, "GDR_ANALYSIS_DIR"),
]


# Launches at once (GDR_BAD_INPUT_WORKERS). Each mostly waits: mpirun's
# start-up, and ranks other than 0 sleep 2 s after a usage error so that rank
# 0's line gets out first; about 0.1 s of CPU each. 8 instead of 4 took the
# np 1 2 3 table from 284/239 s to 220/229 s at load 10-12 (2026-12-03).
WORKERS = int(os.environ.get("GDR_BAD_INPUT_WORKERS", "8"))


def other(args, needle, cwd, code=2, extra_env=None, stdout=None):
    import subprocess
    e = env()
    e.update(extra_env or {})
    if stdout:  # stdout onto a device (/dev/full): only stderr comes back
        with open(stdout, "w") as out:
            q = subprocess.run([GDRBENCH] + args, stdout=out, stderr=subprocess.PIPE, text=True, timeout=60,
                               env=e, cwd=cwd)
        q.stdout = ""
    else:
        q = subprocess.run([GDRBENCH] + args, capture_output=True, text=True, timeout=60, env=e, cwd=cwd)
    lines = [l for l in (q.stdout + q.stderr).splitlines() if l.strip()]
    check(q.returncode == code, f"{args}: exit {q.returncode}, output {lines}")
    check(len(lines) == 1, f"{args}: expected one line, got {lines}")
    check(lines[0].startswith("gdrbench") and needle in lines[0], f"{args}: line {lines[0]!r} lacks {needle!r}")


def one(np_, args, needle, cwd, extra_env=None):
    t0 = time.time()
    p = mpirun(np_, ["run", "-t", "allreduce", "-T", "mpi", "-e", "64", "-n", "1", "-w", "0"] + args,
               timeout=60, cwd=cwd, extra_env=extra_env)
    lines = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
    check(p.returncode == 2, f"np={np_} {args}: exit {p.returncode}, output {lines}")
    check(len(lines) == 1, f"np={np_} {args}: expected one line, got {lines}")
    check(lines[0].startswith("gdrbench: ") and needle in lines[0],
          f"np={np_} {args}: line {lines[0]!r} lacks {needle!r}")
    check(time.time() - t0 < 45, f"np={np_} {args}: took {time.time() - t0:.0f} s")


def full_node(d):
    """dev-full in d: a device node of its own, the same device as /dev/full (char 1, 7), so a
    writer that wrongly replaces a device replaces this copy, never the machine's /dev/full."""
    path = os.path.join(d, "dev-full")
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except PermissionError:  # not root: the machine's node, which a non-root writer cannot replace
        os.symlink("/dev/full", path)


def run(nps):
    d = tmpdir()
    full_node(d)
    jobs = [(np_, args, needle) for np_ in nps for args, needle in CASES]
    jobs.append((1, ["-t", "bw"], "needs at least 2 ranks"))
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    if not os.path.isdir("/sys/class/infiniband") or not os.listdir("/sys/class/infiniband"):
        jobs += [(n, ["-T", "verbs"], "-T verbs: not usable here: no RDMA device") for n in nps]  # p2p tests need two ranks
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [pool.submit(one, np_, args, needle, d) for np_, args, needle in jobs]
        futures += [pool.submit(one, np_, [], needle, d, {var: value})
                    for np_ in nps for var, value, needle in ENV_CASES]
        for f in futures:
            f.result()
    check(not os.path.exists(os.path.join(d, "same.h5")), "a refused collision left a file")
    # An existing file is never replaced without --force, and stays intact.
    out = os.path.join(d, "exists.h5")
    with open(out, "w") as f:
        f.write("precious")
    one(nps[0], ["--output", out], "--force", d)
    check(open(out).read() == "precious", "existing file was modified")
    p = mpirun(2, ["run", "-t", "allreduce", "-e", "64", "-n", "1", "--output", out, "--force"], cwd=d)
    check(p.returncode == 0, f"--force run failed: {p.stderr}")
    root, cases = read_cases(out)
    check(root["status"] == "complete" and len(cases) > 0, "--force did not write a result file")
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for f in [pool.submit(other, args, needle, d) for args, needle in OTHER]:
            f.result()
    # Without a launcher, too.
    import subprocess
    q = subprocess.run([GDRBENCH, "run", "-b", "0"], capture_output=True, text=True, timeout=30, env=env())
    check(q.returncode == 2 and len(q.stderr.strip().splitlines()) == 1 and q.stdout == "",
          f"direct run: {q.returncode} {q.stderr!r}")
    full_devices(d)
    json_force(d)


def full_devices(d):
    """A full device: never a success. --json onto a full device (a node of its own, as /dev/full), is
    refused before anything is written (docs/operators/outputs.md): one line,
    exit 2, no result file."""
    h5 = os.path.join(d, "full.h5")
    p = mpirun(2, ["run", "-t", "allreduce", "-T", "mpi", "-e", "64", "-n", "1", "--output", h5,
                   "--json", "dev-full", "--force"], cwd=d)
    err = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 2, f"--json dev-full: exit {p.returncode}, {err}")
    check(len(err) == 1 and "--json dev-full: is a device" in err[0], f"stderr {err}")
    check(not os.path.exists(h5), "a result file was written after the refusal")
    # The analysis subcommands and doctor onto /dev/full, and their environment.
    run_file = os.path.join(d, "exists.h5")
    for args, needle in FULL_ANALYSIS:
        args = [run_file if a == "RUN" else a for a in args]
        other(args, needle, d, stdout="/dev/full" if "dev-full" not in args else "/dev/null")
    for extra, needle in ANALYSIS_ENV:
        other(["compare", run_file, run_file], needle, d, extra_env=extra)
    # doctor: a device as -o is refused (exit 2); a full stdout is exit 1 (its "could not check"), never 0.
    other(["doctor", "--local", "-o", "dev-full", "--force"], "-o dev-full: not a regular file", d, stdout="/dev/null")
    other(["doctor", "--local"], "stdout", d, code=1, stdout="/dev/full")
    # doctor -o through a symbolic link: the file it names is replaced whole (a temporary file
    # beside it, renamed), the link stays a link, no temporary file is left.
    import subprocess
    target, link = os.path.join(d, "doctor-target.json"), os.path.join(d, "doctor-link.json")
    with open(target, "w") as f:
        f.write("old")
    os.symlink("doctor-target.json", link)
    q = subprocess.run([GDRBENCH, "doctor", "--local", "-o", link, "--force"], capture_output=True, text=True,
                       timeout=60, env=env(), cwd=d)
    check(q.returncode in (0, 1, 4) and os.path.islink(link), f"doctor -o link: exit {q.returncode}, {q.stderr}")
    check(json.load(open(target))["schema"] == "gdrbench-doctor", "doctor -o link: the target is not the report")
    check(not [n for n in os.listdir(d) if n.endswith(".tmp")], f"doctor -o left {os.listdir(d)}")


def json_force(d):
    """--json, as --output, never replaces a file without --force."""
    jl = os.path.join(d, "kept.jsonl")
    with open(jl, "w") as f:
        f.write("precious")
    one(2, ["--json", jl], "--json", d)
    check(open(jl).read() == "precious", "existing --json file was modified")
    p = mpirun(2, ["run", "-t", "allreduce", "-T", "mpi", "-e", "64", "-n", "1", "--output",
                   os.path.join(d, "kept.h5"), "--json", jl, "--force"], cwd=d)
    check(p.returncode == 0 and len(read_jsonl(jl)) > 0, f"--json --force: {p.returncode} {p.stderr}")


if __name__ == "__main__":
    a = argparse.ArgumentParser()
    a.add_argument("--np", type=int, nargs="+", required=True)
    main(lambda: run(a.parse_args().np))
