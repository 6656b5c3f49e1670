#!/usr/bin/python3
"""same_outputs.py OLD_BIN NEW_BIN [--allow-new a,b] [--ignore-lines RE] [--np N] [--keep DIR] [--compare DIR]

Proof that a refactor changed no behaviour: the same quick real runs
(mpirun, host memory, and device memory where `gdrbench list` says it is
usable) with both binaries, then every HDF5 attribute and dataset, every
JSON Lines row and the table text compared, apart from what differs between
any two runs (timings, times of day, run ids, the binary's own version).
Prints each difference; exit 1 on one, 0 when equal apart from attributes
named in --allow-new (present in NEW only), 2 on bad input.
Where h5py is missing (the lent GPU machine), the runs are kept in --keep DIR
and the script exits 3; `--compare DIR` compares such a folder elsewhere
(OLD_BIN and NEW_BIN are then the paths the runs used, masked in the outputs).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
except ImportError:  # runs can still be made and kept; compared elsewhere
    h5py = np = None

SMALL = ["-b", "8", "-e", "4K", "-f", "8", "-n", "3", "-w", "1"]
# name -> gdrbench run arguments; {T}: the transports usable here.
RUNS = {
    "p2p_allreduce": ["-t", "latency,bw,bibw,allreduce", "-T", "{T}", "-m", "host", "--pairs", "all",
                      "--reference", "mpi", "--window", "16", *SMALL],
    "patterns": ["-t", "latency,bw,bibw", "-T", "mpi", "-m", "host",
                 "--pattern", "pair,rounds,incast,fanout,neighbor", "-b", "8", "-e", "64", "-f", "8",
                 "-n", "3", "-w", "1"],
    "allreduce_types": ["-t", "allreduce", "-T", "mpi", "-m", "host", "-d", "float,int32,double",
                        "-o", "sum,max", "--chunk", "1K", "-b", "4K", "-e", "4K", "-n", "3", "-w", "1",
                        "--check", "every"],
    "cuda": ["-t", "latency,bw,bibw,allreduce", "-T", "{T}", "-m", "cuda", "--path", "direct,staged",
             "--reference", "copy", *SMALL],
    # The planner's decisions: a round limit, and a budget that paces the rounds (4 ranks: 3 rounds).
    "rounds_limited": ["-t", "latency,bw,bibw", "-T", "mpi", "-m", "host", "--pattern", "rounds,pair",
                       "--max-rounds", "2", "-b", "8", "-e", "64", "-f", "8", "-n", "3", "-w", "1"],
    "budget": ["-t", "bw", "-T", "mpi", "-m", "host", "--pattern", "rounds", "--budget", "40",
               "-b", "8", "-e", "64", "-f", "8", "-w", "1"],
}
# Runs that need more ranks than --np to show what they plan.
RANKS = {"rounds_limited": 4, "budget": 4}
# A budget paces each case's timed work by the time left (measured): its case time and
# iteration count follow the clock, so they are compared for presence and type only.
PACED = {"budget": re.compile(r"@(case_time_s|iters|times)$|^iters$|^case_time_s$")}
# Values that differ between any two runs: compared for presence and type only. `timer`
# too: --timer auto picks the TSC where a clock_gettime read measures slow, and a loaded
# machine reads it slow one run and fast the next.
# peak_gbps too: a ceiling may be this run's own copy row (the slowest copy link, measured).
TIMING = re.compile(r"^(time_us_\w+|algbw_gbps|busbw_gbps|pct_peak|peak_gbps|times|time_us|start_utc|end_utc|"
                    r"git_commit|gdrbench_version|timer|scale\..*|budget\.(elapsed_s|overhead_s|kept))$")
NUMBER = re.compile(r"\d+(\.\d+)?([eE][-+]?\d+)?")
HEX = re.compile(r"\b(?=[0-9]*[a-f])[0-9a-f]{7,40}\b")  # a commit id; a number of 7+ digits is a NUMBER


def mask(text: str) -> str:
    """Numbers and hex ids out; the verdict's picks (which test and size was best, a
    transport slower than mpi's in this run) hang on timings, so those go too."""
    text = re.sub(r"; bw at [^;]* the MPI's path", "", text)
    text = re.sub(r"\(\w+ \d+ B\b", "(T # B", text)
    text = re.sub(r"copy-\w+ row of this run", "copy-* row of this run", text)
    return re.sub(r"[ \t]+", " ", NUMBER.sub("#", HEX.sub("H", text)))


def usable(exe: str) -> tuple[list[str], bool]:
    """The usable transports and whether cuda memory is usable, from `gdrbench list`."""
    out = subprocess.run([exe, "list"], capture_output=True, text=True, timeout=60).stdout
    transports = re.findall(r"^  (\w+) +usable", out.split("memory kinds:")[0], re.M)
    cuda = re.search(r"^  cuda +usable", out, re.M) is not None
    return transports, cuda


def run_all(exe: str, out: str, np_: int, transports: list[str], cuda: bool) -> list[str]:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    # Both binaries run in one folder (its path lands in the environment), moved to OUT after.
    cwd = os.path.join(os.path.dirname(out), "run")
    os.makedirs(cwd, exist_ok=True)
    names = []
    for name, args in RUNS.items():
        if name == "cuda" and not cuda:
            print(f"# {name}: skipped, cuda memory not usable here")
            continue
        args = [a.replace("{T}", ",".join(transports)) for a in args]
        cmd = ["mpirun", "--oversubscribe", "-np", str(max(np_, RANKS.get(name, 0))), exe, "run", *args,
               "--json", f"{name}.jsonl", "--output", f"{name}.h5", "--force"]
        r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        with open(os.path.join(cwd, f"{name}.txt"), "w") as f:
            f.write(r.stdout.replace(exe, "BIN"))
        if r.returncode != 0:
            print(f"{exe} {name}: exit {r.returncode}\n{r.stderr[-1500:]}")
        names.append(name)
    os.rename(cwd, out)
    return names


def h5_items(path: str, exe: str) -> dict[str, object]:
    """Every attribute and dataset as {'/obj@attr' or '/dataset': comparable value}."""
    items: dict[str, object] = {}

    def value(where: str, key: str, v):
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        if isinstance(v, np.ndarray):
            v = (str(v.dtype), v.shape, None if TIMING.match(key) else v.tolist())
        elif TIMING.match(key):
            v = type(v).__name__
        elif isinstance(v, str):
            v = v.replace(exe, "BIN")
            if where.startswith("/environment"):  # OMPI_COMMAND: the binary's own name
                v = mask(v.replace(os.path.basename(exe), "BIN"))
            elif key in ("verdict", "timer", "peak_source"):
                v = mask(v)
        elif isinstance(v, np.generic):
            v = v.item()
        items[f"{where}@{key}" if key != where else where] = v

    def visit(name, obj):
        where = "/" + name
        for k, v in obj.attrs.items():
            value(where, k, v)
        if isinstance(obj, h5py.Dataset):
            value(where, name.rsplit("/", 1)[-1], obj[()])

    with h5py.File(path, "r") as f:
        for k, v in f.attrs.items():
            value("/", k, v)
        f.visititems(visit)
    return items


def json_rows(path: str) -> list[dict]:
    def value(k, v):
        if TIMING.match(k):
            return type(v).__name__
        return mask(v) if k == "peak_source" and isinstance(v, str) else v
    with open(path) as f:
        return [{k: value(k, v) for k, v in json.loads(line).items()} for line in f if line.strip()]


def diff_dicts(label: str, old: dict, new: dict, allow: set[str]) -> list[str]:
    out = []
    for k in sorted(set(old) | set(new)):
        attr = k.rsplit("@", 1)[-1]
        if k not in new:
            out.append(f"{label}: {k} gone (old {old[k]!r})")
        elif k not in old:
            if attr not in allow:
                out.append(f"{label}: {k} new ({new[k]!r}); allow it with --allow-new {attr}")
        elif old[k] != new[k]:
            out.append(f"{label}: {k}: old {old[k]!r} new {new[k]!r}")
    return out


def compare(old_dir: str, new_dir: str, name: str, old_exe: str, new_exe: str, allow: set[str],
            ignore: re.Pattern | None = None) -> list[str]:
    d = []
    o, n = (os.path.join(x, name) for x in (old_dir, new_dir))
    if not (os.path.exists(o + ".h5") and os.path.exists(n + ".h5")):
        return [f"{name}: a run wrote no file (old {os.path.exists(o + '.h5')}, new {os.path.exists(n + '.h5')})"]
    paced = PACED.get(name)

    def unpaced(items: dict) -> dict:
        return {k: (type(v).__name__ if paced and paced.search(k) else v) for k, v in items.items()}
    d += diff_dicts(f"{name}.h5", unpaced(h5_items(o + ".h5", old_exe)), unpaced(h5_items(n + ".h5", new_exe)), allow)
    jo, jn = json_rows(o + ".jsonl"), json_rows(n + ".jsonl")
    if len(jo) != len(jn):
        d.append(f"{name}.jsonl: {len(jo)} rows old, {len(jn)} new")
    for i, (a, b) in enumerate(zip(jo, jn)):
        d += diff_dicts(f"{name}.jsonl row {i}", unpaced(a), unpaced(b), allow)
    to, tn = ([t for t in open(x + ".txt").read().splitlines() if not (ignore and ignore.search(t))]
              for x in (o, n))
    for i, (a, b) in enumerate(zip(to, tn)):
        if mask(a) != mask(b):
            d.append(f"{name}.txt line {i + 1}:\n  old: {a}\n  new: {b}")
    if len(to) != len(tn):
        d.append(f"{name}.txt: {len(to)} lines old, {len(tn)} new")
    return d


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--allow-new", default="", help="comma list of attribute/JSON names NEW may add")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--keep", help="write the runs under this folder (default: a temporary one, removed)")
    p.add_argument("--ignore-lines", metavar="REGEX",
                   help="table lines to leave out on both sides (a note of a feature newer than OLD)")
    p.add_argument("--compare", metavar="DIR", help="compare runs kept elsewhere in DIR; run nothing")
    a = p.parse_args()
    if a.compare:
        top, old, new = a.compare, a.old, a.new
        names = [n for n in RUNS if os.path.exists(os.path.join(top, "old", n + ".h5"))]
        if not names:
            print(f"same_outputs: no runs kept in {top}/old", file=sys.stderr)
            return 2
    else:
        for exe in (a.old, a.new):
            if not os.access(exe, os.X_OK):
                print(f"same_outputs: {exe} is not an executable", file=sys.stderr)
                return 2
        if h5py is None and not a.keep:
            print("same_outputs: no h5py here: give --keep DIR and compare it elsewhere", file=sys.stderr)
            return 2
        old, new = os.path.abspath(a.old), os.path.abspath(a.new)
        transports, cuda = usable(old)
        top = a.keep or tempfile.mkdtemp(prefix="same_outputs.")
        print(f"# transports {','.join(transports)}; cuda {'usable' if cuda else 'not usable'}; runs in {top}")
        names = run_all(old, os.path.join(top, "old"), a.np, transports, cuda)
        run_all(new, os.path.join(top, "new"), a.np, transports, cuda)
    if h5py is None:
        print(f"# no h5py here: runs kept in {top}; compare with --compare {top} {old} {new}")
        return 3
    allow = set(filter(None, a.allow_new.split(",")))
    ignore = re.compile(a.ignore_lines) if a.ignore_lines else None
    diffs = [x for n in names
             for x in compare(os.path.join(top, "old"), os.path.join(top, "new"), n, old, new, allow, ignore)]
    for x in diffs:
        print(x)
    if not a.keep and not a.compare:
        shutil.rmtree(top, ignore_errors=True)
    print(f"# {len(diffs)} difference(s) over {len(names)} runs")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
