#!/usr/bin/env python3
"""A memory kind that lives in its own folder only ("inverted", tests/memkind).

- `list` names it as usable, and says the mpi transport cannot move it direct;
- a real 2-rank run on it over the staged path (allreduce, latency, bw) checks
  out: every row says mem inverted, path staged, wrong 0, in JSON Lines and HDF5;
- `--path direct` is refused, exit 2, with the mpi transport's reason;
- with the kind broken (GDR_TEST_INVERTED_BROKEN: no inversion on the way to
  host memory) the same run reports wrong elements (exit 4): the rows above
  went through the kind's own operations.
"""
import os
import subprocess

import h5py

from gdrtest import GDRBENCH, check, env, main, mpirun, read_jsonl, tmpdir

COMMON = ["run", "-T", "mpi", "-m", "inverted", "-n", "3", "-w", "1", "--reference", "none", "--stage-chunk", "4K"]
RUN = COMMON + ["-t", "allreduce,latency,bw", "-b", "8", "-e", "16K", "-f", "2048"]  # 16K: 4 chunks


def test():
    p = subprocess.run([GDRBENCH, "list"], capture_output=True, text=True, timeout=120, env=env())
    check(p.returncode == 0, f"list exit {p.returncode}: {p.stderr[-800:]}")
    lines = p.stdout.splitlines()
    check(any(l.split() == ["inverted", "usable"] for l in lines), f"list lacks the kind:\n{p.stdout}")
    check(any("inverted memory, direct path: not usable: MPI takes host and cuda memory, not inverted" in l
              for l in lines), f"list lacks mpi's reason:\n{p.stdout}")

    d = tmpdir()
    out, js = os.path.join(d, "r.h5"), os.path.join(d, "r.jsonl")
    p = mpirun(2, RUN + ["--path", "staged", "--output", out, "--json", js], timeout=200)
    check(p.returncode == 0, f"staged run exit {p.returncode}:\n{(p.stdout + p.stderr)[-2000:]}")
    rows = [r for r in read_jsonl(js) if "test" in r]
    check({r["test"] for r in rows} == {"allreduce", "latency", "bw"}, f"tests run: {[r['test'] for r in rows]}")
    for r in rows:
        check(r["mem"] == "inverted" and r["path"] == "staged" and r["wrong"] == 0, f"row: {r}")
    with h5py.File(out, "r") as f:
        mems = {g.attrs["mem"] for g in f["cases"].values()}
        mems = {m.decode() if isinstance(m, bytes) else m for m in mems}
    check(mems == {"inverted"}, f"HDF5 mem attributes: {mems}")
    print(f"staged: {len(rows)} rows on inverted memory, 0 wrong")

    p = mpirun(2, RUN + ["--path", "direct", "--output", os.path.join(d, "direct.h5")], timeout=120)
    text = p.stdout + p.stderr
    check(p.returncode == 2, f"direct run exit {p.returncode}, want 2:\n{text[-1500:]}")
    check("gdrbench: -T mpi -m inverted --path direct: MPI takes host and cuda memory, not inverted" in text,
          f"direct refusal not told:\n{text[-1500:]}")

    p = mpirun(2, COMMON + ["-t", "allreduce", "-b", "16K", "-e", "16K", "--path", "staged",
                            "--output", os.path.join(d, "broken.h5")], timeout=200,
               extra_env={"GDR_TEST_INVERTED_BROKEN": "1"})
    text = p.stdout + p.stderr
    check(p.returncode == 4 and "wrong elements" in text, f"broken kind not caught: exit {p.returncode}\n{text[-1500:]}")
    print("broken kind: exit 4, wrong elements reported")


if __name__ == "__main__":
    main(test)
