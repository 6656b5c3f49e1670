"""The numbers mean what the docs say, in every place they appear:
one real run at 3 ranks (allreduce, latency, bw, bibw; ring pairs) read back
from the table, the JSON Lines and the HDF5 file, and one at 1 rank.

- time_us_median and time_us_p99 exist in JSON and HDF5 and recompute from
  `times` (np.median, np.percentile(x, 99) of the per-iteration nanmax);
- algbw and busbw follow from the mean time as docs/analysts/output.md and
  results/README.md define them (bibw: 2 x bytes / time), and the table,
  JSON and HDF5 show the same numbers; the defining sentences are in the docs;
- p2p JSON rows carry src and dst (collectives: null);
- window / chunk_bytes only where they apply, check on every row;
- a size the datatype cannot divide is rounded down with a note;
- allreduce busbw at one rank is 0."""
import math
import os

import numpy as np

from gdrtest import *  # noqa: F401,F403

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The one sentence that defines bibw's algbw, word for word in both READMEs.
BIBW_SENTENCE = ("For `bibw`: algbw = 2 x bytes / time, both directions summed "
                 "(as osu_bibw: bytes x window x 2 / window time).")
ONE_RANK_SENTENCE = "with one rank busbw"
TABLE_HEADER = "bibw: algbw = 2 x bytes / time (both directions summed, as osu_bibw)"


def close(a, b, rel=1e-12):
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


def table_rows(stdout):
    """The table's result rows, split into columns."""
    return [line.split() for line in stdout.splitlines() if line.strip() and not line.startswith("#")]


def check_summary(attrs, times, row, where):
    x = np.nanmax(times, axis=0)
    x = x[np.isfinite(x)]
    want = {"time_us_mean": x.mean() * 1e6, "time_us_min": x.min() * 1e6,
            "time_us_max": x.max() * 1e6, "time_us_median": np.median(x) * 1e6,
            "time_us_p99": np.percentile(x, 99) * 1e6}
    for k, v in want.items():
        check(k in attrs, f"{where}: HDF5 attribute {k} missing")
        check(k in row, f"{where}: JSON key {k} missing")
        check(close(attrs[k], v), f"{where}: HDF5 {k} {attrs[k]!r} != recomputed {v!r}")
        check(row[k] == attrs[k], f"{where}: JSON {k} {row[k]!r} != HDF5 {attrs[k]!r}")


def check_bandwidth(attrs, row, cols, ranks, where):
    t = attrs["time_us_mean"] * 1e-6
    moved = 2 * attrs["bytes"] if attrs["test"] == "bibw" else attrs["bytes"]
    algbw = moved / t / 1e9
    busbw = algbw * (2 * (ranks - 1) / ranks if attrs["test"] == "allreduce" else 1.0)
    check(close(attrs["algbw_gbps"], algbw, 1e-9), f"{where}: algbw {attrs['algbw_gbps']} != {algbw}")
    check(close(attrs["busbw_gbps"], busbw, 1e-9) or busbw == attrs["busbw_gbps"] == 0,
          f"{where}: busbw {attrs['busbw_gbps']} != {busbw}")
    check(row["algbw_gbps"] == attrs["algbw_gbps"] and row["busbw_gbps"] == attrs["busbw_gbps"],
          f"{where}: JSON bandwidth {row} != HDF5")
    # The table: time(us), min, max, algbw, busbw are the same values, 2 decimals.
    shown = cols[8:13]
    want = [f"{attrs[k]:.2f}" for k in ("time_us_mean", "time_us_min", "time_us_max",
                                          "algbw_gbps", "busbw_gbps")]
    check(shown == want, f"{where}: table shows {shown}, the file {want}")


def check_params(attrs, row, cols, where):
    test, p2p = attrs["test"], attrs["dtype"] == "byte"
    check("check" in attrs, f"{where}: no check attribute")
    check(("window" in attrs) == (test in ("bw", "bibw")), f"{where}: window {attrs.get('window')}")
    check(("chunk_bytes" in attrs) == (test == "allreduce" and not attrs["reference"]),
          f"{where}: chunk_bytes {attrs.get('chunk_bytes')}")
    if p2p:
        check(row.get("src") == attrs["src"] >= 0 and row.get("dst") == attrs["dst"] >= 0,
              f"{where}: JSON pair {row.get('src')}>{row.get('dst')} != HDF5 {attrs['src']}>{attrs['dst']}")
        check(cols[4] == f"{test}:{attrs['src']}>{attrs['dst']}", f"{where}: table test {cols[4]}")
    else:
        check("src" in row and row["src"] is None and "dst" in row and row["dst"] is None,
              f"{where}: collective JSON row should have src/dst null: {row}")
    check(int(cols[0]) == row["bytes"] == attrs["bytes"], f"{where}: bytes differ")


def three_ranks():
    d = tmpdir()
    h5, js = os.path.join(d, "d.h5"), os.path.join(d, "d.jsonl")
    # -b 6: not a whole number of floats (rounded to 4 B for allreduce, kept for p2p).
    p = mpirun(3, ["run", "-t", "allreduce,latency,bw,bibw", "-T", "mpi", "-b", "6", "-e", "4K",
                   "-f", "8", "-n", "25", "-w", "2", "--window", "4", "--pairs", "ring",
                   "--output", h5, "--json", js])
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    check("# note: 6 B is not a whole number of float (4 B each): rounded down to 4 B" in p.stdout,
          f"no note about the rounded size:\n{p.stdout}")
    check(TABLE_HEADER in p.stdout, f"the table does not define bibw's algbw:\n{p.stdout[:600]}")
    rows, cols = read_jsonl(js), table_rows(p.stdout)
    root, cases = read_cases(h5)
    check(root["schema_version"] == 2, f"schema_version {root['schema_version']}")
    check(len(rows) == len(cases) == len(cols), f"{len(rows)} JSON rows, {len(cases)} cases, "
          f"{len(cols)} table rows")
    tests = set()
    for (attrs, times), row, c in zip(cases, rows, cols):
        where = f"{attrs['test']} {attrs['transport']} {attrs['bytes']} B {attrs['src']}>{attrs['dst']}"
        tests.add(attrs["test"])
        check(row["test"] == attrs["test"] and row["bytes"] == attrs["bytes"], f"{where}: order differs")
        check(attrs["bytes"] != 6 or attrs["dtype"] == "byte", f"{where}: 6 B kept for a float")
        check_summary(attrs, times, row, where)
        check_bandwidth(attrs, row, c, 3, where)
        check_params(attrs, row, c, where)
    check(tests == {"allreduce", "latency", "bw", "bibw"}, f"tests seen: {tests}")
    check(any(a["bytes"] == 4 and a["test"] == "allreduce" for a, _ in cases), "no 4 B allreduce")


def one_rank():
    d = tmpdir()
    h5, js = os.path.join(d, "one.h5"), os.path.join(d, "one.jsonl")
    p = mpirun(1, ["run", "-t", "allreduce", "-T", "mpi", "-b", "1K", "-e", "1K", "-n", "3",
                   "--output", h5, "--json", js])
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    rows = read_jsonl(js)
    _, cases = read_cases(h5)
    for (attrs, _), row, c in zip(cases, rows, table_rows(p.stdout)):
        check(attrs["algbw_gbps"] > 0 and attrs["busbw_gbps"] == 0 and row["busbw_gbps"] == 0
              and c[12] == "0.00", f"one rank: busbw should be 0: {row}")


def docs():
    for name in (os.path.join("docs", "analysts", "output.md"), os.path.join("results", "README.md")):
        with open(os.path.join(REPO, name)) as f:
            text = " ".join(f.read().split())  # line breaks do not matter
        check(BIBW_SENTENCE in text, f"{name} lacks the bibw definition: {BIBW_SENTENCE}")
        check(ONE_RANK_SENTENCE in text and "busbw is 0" in text,
              f"{name} does not say busbw is 0 at one rank")
        check("np.percentile(x, 99)" in text, f"{name} does not define p99")


def run():
    docs()
    three_ranks()
    one_rank()


if __name__ == "__main__":
    main(run)
