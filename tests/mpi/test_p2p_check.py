"""Every point-to-point byte is checked: under a real mpirun over
a real transport, a clean run counts no wrong byte; GDR_SELFTEST_CORRUPT
flips one received byte per case in its first checked batch and every row
must count exactly that byte (table, JSON, HDF5) and exit 4, under the default
--check after (one untimed batch after the timed ones) and --check every (every
timed batch, each recorded); --check 0 verifies nothing and the file says so. Also the OSU shapes' defaults: the
window is 64 and --iters auto records each case's count."""
import argparse
import os

from gdrtest import *  # noqa: F401,F403

TESTS = ["latency", "bw", "bibw"]
SIZES = [1, 16, 256, 4096, 65536]


def run(np_, transport, pairs, extra, env_extra=None):
    d = tmpdir()
    h5, js = os.path.join(d, "p.h5"), os.path.join(d, "p.jsonl")
    args = ["run", "-t", ",".join(TESTS), "-T", transport, "-b", "1", "-e", "64K", "-f", "16",
            "--output", h5, "--json", js] + extra
    if pairs != "default":
        args += ["--pairs", pairs]
    p = mpirun(np_, args, extra_env=env_extra)
    return p, read_jsonl(js) if os.path.exists(js) else [], h5


def n_pairs(np_, pairs):
    return 1 if pairs == "default" else np_


def clean(np_, transport, pairs):
    # Fixed small counts with the default window: 64 messages per iteration.
    p, rows, h5 = run(np_, transport, pairs, ["-n", "3", "-w", "1"])
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    check(len(rows) == len(TESTS) * len(SIZES) * n_pairs(np_, pairs), f"{len(rows)} rows")
    check(all(r["wrong"] == 0 for r in rows), f"wrong bytes in a clean run: {rows}")
    _, cases = read_cases(h5)
    for attrs, times in cases:
        # after: one window (bw, bibw) or one batch of round trips (latency: all 3) checked.
        check(int(attrs["check"]) == 2 and attrs["check_mode"] == "after", f"check attribute {attrs['check']}")
        want = 3 if attrs["test"] == "latency" else 1
        check(int(attrs["checked_iters"]) == want, f"{attrs['test']}: checked_iters {attrs['checked_iters']}")
        if attrs["test"] != "latency":
            check(int(attrs["window"]) == 64, f"default window {attrs['window']}, not OSU's 64")
        check(int(attrs["iters"]) == 3 and int(attrs["iters_auto"]) == 0, f"iters {attrs['iters']}")


def corrupted(np_, transport, pairs, mode="after"):
    p, rows, h5 = run(np_, transport, pairs, ["-n", "3", "-w", "1", "--window", "8", "--check", mode],
                      {"GDR_SELFTEST_CORRUPT": "1"})
    check(p.returncode == 4, f"exit {p.returncode} with a corrupted byte per case\n{p.stderr}")
    check("NOT correct" in p.stderr, p.stderr)
    check(len(rows) == len(TESTS) * len(SIZES) * n_pairs(np_, pairs), f"{len(rows)} rows")
    bad = [r for r in rows if r["wrong"] != 1]
    check(not bad, f"each p2p row should count its one flipped byte: {bad}")
    _, cases = read_cases(h5)
    check(all(int(a["wrong"]) == 1 for a, _ in cases), "HDF5 wrong count")
    # every: every timed iteration checked (3), recorded as such.
    if mode == "every":
        check(all(int(a["check"]) == 1 and a["check_mode"] == "every" and int(a["checked_iters"]) == 3
                  for a, _ in cases), f"--check every: {[dict(a) for a, _ in cases][:2]}")
    table = [l for l in p.stdout.splitlines() if not l.startswith("#") and transport in l]
    check(table and all(l.split()[-2] == "1" for l in table), f"#wrong column:\n{p.stdout}")


def unchecked(np_, transport, pairs):
    p, rows, h5 = run(np_, transport, pairs, ["-n", "2", "-w", "0", "-c", "0", "--window", "4"],
                      {"GDR_SELFTEST_CORRUPT": "1"})
    check(p.returncode == 0, f"exit {p.returncode} with --check 0\n{p.stderr}")
    check(all(r["wrong"] == 0 for r in rows), f"{rows}")
    _, cases = read_cases(h5)
    check(all(int(a["check"]) == 0 and int(a["checked_iters"]) == 0 for a, _ in cases), "check attribute with -c 0")


def auto_iters(np_, transport):
    """--iters auto: OSU's counts cut to --case-time; recorded per case."""
    p, rows, h5 = run(np_, transport, "default", ["-b", "8", "-e", "8", "--case-time", "0.05"])
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stderr}")
    check("timed iterations per case: auto" in p.stdout, p.stdout)
    _, cases = read_cases(h5)
    for attrs, times in cases:
        n = int(attrs["iters"])
        cap = 10000 if attrs["test"] == "latency" else 100
        check(int(attrs["iters_auto"]) == 1 and 5 <= n <= cap and times.shape[1] == n,
              f"{attrs['test']}: {n} iterations, times {times.shape}")
        check(abs(float(attrs["case_time_s"]) - 0.05) < 1e-12, "case_time_s")


def auto_slots(np_, transport):
    """--slots auto: up to 64 distinct slots within 4 MiB per buffer on device
    memory (so the footprint stays in a GPU's L2 like the peers' single buffer,
    also with two ranks on one GPU under MPS), within 1 MiB on host memory (a
    core's L2): here, host memory, 4 slots of 256 KiB, 1 from 1 MiB; the check
    still counts a spoiled byte there."""
    d = tmpdir()
    h5 = os.path.join(d, "s.h5")
    p = mpirun(np_, ["run", "-t", "bw", "-T", transport, "-b", "256K", "-e", "16M", "-f", "4",
                     "-n", "2", "-w", "0", "--output", h5], extra_env={"GDR_SELFTEST_CORRUPT": "1"})
    check(p.returncode == 4, f"exit {p.returncode} with a corrupted byte per case\n{p.stderr}")
    _, cases = read_cases(h5)
    got = {int(a["bytes"]): (int(a["slots"]), int(a["wrong"])) for a, _ in cases if int(a["reference"]) == 0}
    want = {256 << 10: (4, 1), 1 << 20: (1, 1), 4 << 20: (1, 1), 16 << 20: (1, 1)}
    check(got == want, f"bytes -> (slots, wrong): {got}, expected {want}")
    # --slots N above what the buffers hold is cut, and said once per test (never silently).
    p = mpirun(np_, ["run", "-t", "bw", "-T", transport, "-b", "4M", "-e", "4M", "--slots", "64", "-n", "2",
                     "-w", "0", "--output", os.path.join(d, "c.h5")])
    check(p.returncode == 0, f"--slots 64: exit {p.returncode}\n{p.stderr}")
    check(p.stdout.count("# note: --slots 64: bw uses 16 from 4194304 B on") == 1, f"no cap note:\n{p.stdout}")


if __name__ == "__main__":
    a = argparse.ArgumentParser()
    a.add_argument("--np", type=int, required=True)
    a.add_argument("-T", dest="transport", required=True)
    a.add_argument("--pairs", default="default")
    args = a.parse_args()

    def all_checks():
        clean(args.np, args.transport, args.pairs)
        corrupted(args.np, args.transport, args.pairs)
        corrupted(args.np, args.transport, args.pairs, "every")
        unchecked(args.np, args.transport, args.pairs)
        if args.np == 2:
            auto_iters(args.np, args.transport)
            auto_slots(args.np, args.transport)
    main(all_checks)
