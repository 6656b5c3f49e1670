"""Ring allreduce under a real mpirun: every datatype and op, awkward sizes,
results checked by gdrbench itself and the HDF5 file checked here."""
import argparse
import math
import os

from gdrtest import *  # noqa: F401,F403


def run(np_):
    d = tmpdir()
    h5, js = os.path.join(d, "r.h5"), os.path.join(d, "r.jsonl")
    # 2 B .. 68 KiB by x7: counts below, at and above the rank count; a 1 KiB
    # chunk makes the larger sizes pipeline through several chunks.
    p = mpirun(np_, ["run", "-t", "allreduce", "-T", "mpi", "-d", ",".join(DTYPES), "-o", ",".join(OPS),
                     "-b", "2", "-e", "70000", "-f", "7", "-n", "3", "-w", "1", "--chunk", "1K",
                     "--output", h5, "--json", js])
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    check(f"# results: {h5}" in p.stdout, "results path not printed")
    rows = read_jsonl(js)
    sizes = [2 * 7**k for k in range(6) if 2 * 7**k <= 70000]
    expected = 0
    for dt in DTYPES:
        for s in sizes:
            if s // DTYPE_SIZE[dt] == 0:
                continue
            expected += len(OPS) * (2 if dt in MPI_REFERENCE_DTYPES else 1)
    check(len(rows) == expected, f"{len(rows)} rows, expected {expected}")
    for r in rows:
        check(r["wrong"] == 0, f"wrong results: {r}")
        check(r["ranks"] == np_, f"ranks {r['ranks']}")
        check(r["count"] * DTYPE_SIZE[r["dtype"]] == r["bytes"], f"bytes/count: {r}")
        check(math.isclose(r["busbw_gbps"], r["algbw_gbps"] * 2 * (np_ - 1) / np_, rel_tol=1e-5),
              f"busbw factor: {r}")
        if r["reference"]:
            check(r["transport"] == "mpi" and r["dtype"] in MPI_REFERENCE_DTYPES, f"reference row: {r}")
    ours = [r for r in rows if not r["reference"]]
    check(len(ours) == sum(len(OPS) for dt in DTYPES for s in sizes if s // DTYPE_SIZE[dt]),
          "one row of ours per dtype x op x size")
    root, cases = read_cases(h5)
    check(root["schema_version"] == 2 and root["status"] == "complete", f"root attrs {root}")
    check(root["cases_completed"] == len(rows) == len(cases), "case count differs between JSON and HDF5")
    check(len(root["hosts"]) == np_ and sorted(root["local_rank"]) == list(range(np_)), "ranks group")
    for (attrs, times), r in zip(cases, rows):
        check(attrs["dtype"] == r["dtype"] and attrs["bytes"] == r["bytes"], "HDF5 order != JSON order")
        # --check after (the default): one untimed checked iteration after the timed ones.
        check(attrs["wrong"] == 0 and attrs["check"] == 2 and attrs["check_mode"] == "after"
              and attrs["checked_iters"] == 1 == r["checked_iters"], f"{attrs}")
        check_case_consistency(attrs, times, np_)


if __name__ == "__main__":
    a = argparse.ArgumentParser()
    a.add_argument("--np", type=int, required=True)
    main(lambda: run(a.parse_args().np))
