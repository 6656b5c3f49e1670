"""A new windowed point-to-point test is its file plus one line: burst_test.cpp,
registered only in this test build (gdrbench_with_burst), runs under mpirun and
every reader takes it from its traits, none from its name: the table, the
ignored-options notes, the HDF5 attributes, the verdict, /links and the
analysis (schema, links)."""
import os
import sys
import tempfile

import h5py
import numpy as np

from gdrtest import GDRBENCH, check, mpirun

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results"))
from gdranalysis import links, schema  # noqa: E402

WINDOW_MEANS = "messages per iteration, one way, no ack"  # burst_test.cpp's traits


def main():
    with tempfile.TemporaryDirectory() as d:
        h5 = os.path.join(d, "burst.h5")
        r = mpirun(2, ["run", "-t", "burst", "-T", "mpi", "-m", "host", "-b", "8", "-e", "512", "-f", "8",
                       "-n", "3", "-w", "1", "--window", "8", "--pairs", "all", "--pattern", "pair,rounds",
                       "--output", h5, "--force"])
        check(r.returncode == 0, f"exit {r.returncode}:\n{r.stdout}\n{r.stderr}")
        # --window is read by burst (its traits have a window): no "ignored" note.
        check("--window" not in r.stderr, f"--window said ignored:\n{r.stderr}")
        check("--pattern rounds: burst runs one pair at a time only" in r.stdout, r.stdout)
        rows = [l for l in r.stdout.splitlines() if " burst:" in l]
        check(len(rows) == 6, f"want 6 burst rows (3 sizes x 2 pairs):\n{r.stdout}")
        check(all(l.split()[-2] == "0" for l in rows), f"#wrong not 0:\n{r.stdout}")
        with h5py.File(h5, "r") as f:
            cases = [dict(f["cases"][k].attrs) for k in sorted(f["cases"])]
            check(len(cases) == 6, f"{len(cases)} cases")
            for a in cases:
                want = {"test": "burst", "test_kind": "bandwidth", "directions": 1, "checks_data": 1,
                        "window": 8, "window_means": WINDOW_MEANS, "slots": 1, "wrong": 0}
                got = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in a.items() if k in want}
                check(got == want, f"case attributes {got}, want {want}")
                check("chunk_bytes" not in a and "pattern" not in a and a["checked_iters"] >= 1, str(a))
            verdict = f.attrs["verdict"]
            verdict = verdict.decode() if isinstance(verdict, bytes) else verdict
            check(verdict.startswith("mpi host direct: best ") and "(burst " in verdict, verdict)
            g = f["link_cells/burst_mpi_host_direct_pair"]
            check(g.attrs["test_kind"] in ("bandwidth", b"bandwidth") and g.attrs["directions"] == 1, dict(g.attrs))
        run = schema.load_run(h5)
        for c in run.cases:
            check(schema.uses_window(c.attrs) and not schema.uses_chunk(c.attrs), c.label())
            check(schema.test_kind(c.attrs) == "bandwidth" and schema.directions(c.attrs) == 1, c.label())
        (t,) = links.tables_from_cases(run)
        check(t.test == "burst" and t.test_kind == "bandwidth", t)
        check(np.isfinite(t.algbw_gbps[:, 0, 1]).all() and np.isfinite(t.algbw_gbps[:, 1, 0]).all(), t.algbw_gbps)
        # The writer's /links and the analysis' recomputation agree.
        (w,) = links.link_tables(run)
        check(np.allclose(w.algbw_gbps, t.algbw_gbps, equal_nan=True), (w.algbw_gbps, t.algbw_gbps))
    print("ok: burst, registered from one file, read by its traits everywhere")


if __name__ == "__main__":
    main()
