"""The path taken, on host memory under a real mpirun: every row says what moved its
bytes (from the library: UCX's own endpoint report, the MPI's request) and
its ceiling or why there is none (bw rows: a memcpy measured in the run), in
the table, JSON Lines and HDF5; the verdict closes the table and is in the file.

Over UCX 1.22 too (jobs/install-deps.sh puts the libucx-cu13 wheel in
/opt/gdrbench/ucx-1.22; GDR_UCX_V2_LIB names another lib/ folder): the same
binary, loaded with that library, reads each send's protocol from UCX's
request query (protocols v2), where UCX 1.13's printout gives nothing.

usage: test_path.py   (GDRBENCH names the binary)"""
import os
import re
import sys
import tempfile

import h5py

from gdrtest import check, mpirun, read_cases, read_jsonl


def run(label, extra_env=None, transports="mpi,ucx", sizes=("8", "1M")):
    d = tempfile.mkdtemp(prefix=f"gdr-path-{label}-")
    h5, js = os.path.join(d, "p.h5"), os.path.join(d, "p.jsonl")
    p = mpirun(2, ["run", "-t", "latency,bw", "-T", transports, "-b", sizes[0], "-e", sizes[1], "-f", "131072",
                   "-n", "3", "-w", "1", "--window", "4", "--output", h5, "--json", js], extra_env=extra_env)
    check(p.returncode == 0, f"{label}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    root, cases = read_cases(h5)
    with h5py.File(h5, "r") as f:
        root["facts"] = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f["facts"].attrs.items()}
    return p, read_jsonl(js), root, cases


def default_run():
    p, rows, root, cases = run("default")
    check(len(rows) == len(cases) == 8, f"{len(rows)} rows")
    for row, (attrs, _) in zip(rows, cases):
        where = f"{row['test']} {row['transport']} {row['bytes']} B"
        check(row["path_taken"] == attrs["path_taken"] and row["path_taken"], f"{where}: path {row} / {attrs}")
        check(row["via_host"] is False and attrs["via_host"] == 0, f"{where}: host memory flagged as via host")
        if row["test"] == "bw":
            # Ranks on one host over shared memory: a bw row is bounded by a memcpy of its size
            # class measured in this run, named as its source; under half of it, a note says why.
            check(row["peak_gbps"] and row["pct_peak"] is not None and attrs["pct_peak"] == row["pct_peak"],
                  f"{where}: no %peak: {row} / {attrs}")
            src = attrs["peak_source"]
            check(re.match(r"memcpy \d+\.\d GB/s measured \((4096|1048576) B copies", src), f"{where}: {src!r}")
            check(row["pct_peak"] >= 50 or "under half its ceiling: " in src, f"{where}: under half, no why: {src!r}")
        else:
            # Latency over shared memory: no limit is read for it.
            check(row["peak_gbps"] is None and row["pct_peak"] is None and "peak_gbps" not in attrs
                  and "pct_peak" not in attrs, f"{where}: a peak for shared memory: {row} / {attrs}")
            check("host shared memory" in attrs["peak_source"], f"{where}: peak_source {attrs['peak_source']!r}")
        if row["transport"] == "mpi":
            check(row["path_taken"].startswith("mpi MPI_Isend/MPI_Irecv to a peer on the same host"),
                  f"{where}: {row['path_taken']}")
        else:
            # UCX's own report: eager below its rendezvous threshold, rendezvous above,
            # each over a lane UCX chose (one of the endpoint's lanes in /facts).
            lanes = root["facts"]["ucx.lanes"].split(",")
            m = re.fullmatch(r"ucx (egr/short|egr/bcopy|rndv zcopy) over (\S+)", row["path_taken"])
            check(m and m.group(2) in lanes, f"{where}: {row['path_taken']!r} (lanes {lanes})")
            check(m.group(1) == ("egr/short" if row["bytes"] == 8 else "rndv zcopy"), f"{where}: {m.group(1)}")
    table = [l for l in p.stdout.splitlines() if not l.startswith("#")]
    check(all((l.split()[13] == "-") == ("latency" in l.split()[4]) for l in table),
          f"%peak column should be '-' for latency rows only:\n{p.stdout}")
    check(re.search(r"^# note: %peak '-' for latency over mpi \(host memory\): no limit known for host shared "
                    r"memory", p.stdout, re.M), f"no note for the missing peak:\n{p.stdout}")
    verdict = [l[len("# verdict: "):] for l in p.stdout.splitlines() if l.startswith("# verdict: ")]
    check(len(verdict) == 2 and verdict[0].startswith("mpi host direct: best ")
          and verdict[1].startswith("ucx host direct: best ") and "smallest latency" in verdict[1],
          f"verdict lines: {verdict}")
    check(root["verdict"] == "\n".join(verdict), f"file verdict {root['verdict']!r}")


def thresholds_follow_ucx():
    """The size -> protocol split is UCX's: moving UCX's rendezvous threshold
    moves the rows' paths with it."""
    _, rows, _, _ = run("thresh", transports="ucx", sizes=("4K", "4K"))
    check(all(r["path_taken"].startswith("ucx egr/") for r in rows), f"default: {rows}")
    _, rows, _, _ = run("thresh-1k", {"UCX_RNDV_THRESH": "1024"}, transports="ucx", sizes=("4K", "4K"))
    check(all(r["path_taken"].startswith("ucx rndv") for r in rows), f"UCX_RNDV_THRESH=1024: {rows}")


def ucx_protocols_v2():
    lib = os.environ.get("GDR_UCX_V2_LIB", "/opt/gdrbench/ucx-1.22/libucx/lib")
    check(os.path.isdir(lib), f"no UCX 1.22 at {lib}: run jobs/install-deps.sh")
    env = {"LD_LIBRARY_PATH": lib + ":" + os.environ.get("LD_LIBRARY_PATH", "")}
    p, rows, root, cases = run("v2", env, transports="ucx")
    check(root["facts"]["ucx.version"].startswith("1.22"), f"ucx.version {root['facts']['ucx.version']}")
    lanes = root["facts"]["ucx.lanes"].split(",")
    want = {8: "eager short", 1 << 20: "rendezvous zero-copy read from remote"}
    for row in rows:
        m = re.fullmatch(r"ucx (.+) over (\S+)", row["path_taken"])
        where = f"{row['test']} {row['bytes']} B"
        check(m and m.group(1) == want[row["bytes"]] and m.group(2) in lanes,
              f"{where}: {row['path_taken']!r} (lanes {lanes})")
        check(row.get("path_unknown") is None, f"{where}: path unknown: {row.get('path_unknown')}")


def main():
    default_run()
    thresholds_follow_ucx()
    ucx_protocols_v2()
    print("test_path: ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
