"""Reads the scale.* facts of jobs/bench_scale.sh's files: a table per
pattern and NP, then per quantity a least-squares fit of log(value) against
log(NP) (the exponent says O(1), O(n), O(n^2)) and the value it predicts
at 4096 ranks. Values are maxima over ranks (the slowest rank is what a
user waits for), except the HDF5 write and the case parts (scale.case_s.*),
which are rank 0's."""
import collections
import os
import re
import sys

import h5py
import numpy as np

KEYS = [("bootstrap_s", "scale.bootstrap_s"), ("first_case_s", "scale.first_case_start_s"),
        ("connect_mpi_s", "scale.connect_s.mpi.host.direct"), ("connect_ucx_s", "scale.connect_s.ucx.host.direct"),
        ("peers_ucx", "scale.peers_max.ucx.host.direct"), ("rss_MiB", "scale.vmhwm_kib_max"),
        ("h5_case_ms", "scale.hdf5_case_write_s_mean"), ("case_beside_ms", "scale.case_s.beside_timed_median"),
        ("case_gather_ms", "scale.case_s.gather_median")]
SCALE = {"rss_MiB": 1 / 1024, "h5_case_ms": 1e3, "case_beside_ms": 1e3, "case_gather_ms": 1e3}

rows = collections.defaultdict(dict)
for path in sys.argv[1:]:
    m = re.match(r"np(\d+)_(\w+)\.h5", os.path.basename(path))
    with h5py.File(path, "r") as f:
        facts = {k: v.decode() if isinstance(v, bytes) else v for k, v in f["facts"].attrs.items()}
        cases = len(f["cases"])
    vals = {name: float(facts[k]) * SCALE.get(name, 1) for name, k in KEYS if k in facts}
    vals["cases"] = cases
    rows[m.group(2)][int(m.group(1))] = vals

for pat, by_np in sorted(rows.items()):
    names = [n for n, _ in KEYS if any(n in v for v in by_np.values())] + ["cases"]
    print(f"\n## pattern {pat}")
    print("| np | " + " | ".join(names) + " |")
    print("| --- " * (len(names) + 1) + "|")
    for np_ in sorted(by_np):
        print(f"| {np_} | " + " | ".join(f"{by_np[np_].get(n, float('nan')):.4g}" for n in names) + " |")
    print(f"\n| fit ({pat}) | exponent b in value ~ a x np^b | predicted at 4096 ranks |")
    print("| --- | --- | --- |")
    for n in names:
        x = np.array([k for k in sorted(by_np) if n in by_np[k] and by_np[k][n] > 0], dtype=float)
        if len(x) < 3:
            continue
        y = np.array([by_np[int(k)][n] for k in x])
        b, a = np.polyfit(np.log(x), np.log(y), 1)
        print(f"| {n} | {b:.2f} | {np.exp(a) * 4096 ** b:.4g} |")
