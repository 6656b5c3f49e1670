"""How often the GPU gate's decision rule FAILs a tool compared with itself.

  gate_false_alarms.py [ARCHIVE_DIR] [--sims N] [--cap ROUNDS] [--seed S]

Reads every archived gate run (ARCHIVE_DIR, default results/archive: the *_gpu-gate-*.tgz
tarballs of jobs/gpu/bench_vs_peers.sh gpu, each with no-mps/ and mps/ rounds r1, r2, ...), and
pools each tool's per-launch values (one a round, or several at 1-16 MiB) by (UCX build, MPS
variant, measure, size): gdrbench -T ucx bw, ucx_perftest tag_bw, -T mpi bw, host bw of both tools, 8 B latency of -T ucx, tag_lat, -T mpi
and the MPI's blocking ping-pong. For every gate target and every tool it compares, it then plays
the gate many times with that tool against itself: two pseudo-tools drawn independently (with
replacement) from the tool's pooled launches, one paired sample at a time, judged after each
by jobs/gpu/gate_rule.py exactly as the gate judges (sequential sign test, stopping at the first
resolving look), up to --cap paired samples (the gate looks only after each round of
LAUNCHES pairs: a subset of these looks, so its rate is at most this one). A FAIL there is a
false alarm. Printed per target, size and tool:

  self      FAIL rate of the tool against itself (true ratio 1, the target below it)
  boundary  the same with one pseudo-tool scaled by the target (true median ratio exactly on
            the target: the rule's worst case, <= 1 % by design)
  old       the rule the gate had before (3 rounds, FAIL when the median ratio is below the
            target and the 90 % Mann-Whitney interval of the ratio too), against itself

and the mean rounds the rule took; then per target line (all its sizes) the chance that any size
FAILs. Pooling rounds across jobs draws from a wider spread than one
job's rounds (the two levels at 1-16 MiB differ from job to job too), so the rates are for a
noisier tool than one job sees. Deterministic for a given --seed. Exit 0; 2 on bad arguments.
"""
import glob
import os
import random
import re
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gate_rule  # noqa: E402
import peers_table as pt  # noqa: E402

MIB = 1 << 20
SIZES = [MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]

# target label, needed ratio, the tools it compares (series names below), variants it applies to
TARGETS = [
    ("ucx bw >= 0.97 x tag_bw", 0.97, ("gdr_bw", "tag_bw"), ("no-mps", "mps"), SIZES),
    ("ucx bw >= 0.97 x -T mpi bw", 0.97, ("gdr_bw", "mpi_bw"), ("no-mps", "mps"), SIZES),
    ("host ucx bw >= 0.97 x host tag_bw", 0.97, ("host_bw", "host_tag_bw"), ("no-mps", "mps"), [64 * MIB]),
    ("8 B latency <= 1.05 x tag_lat", 1 / 1.05, ("lat8", "tag_lat8"), ("mps",), [8]),
    ("8 B -T mpi latency <= 1.05 x blocking ping-pong", 1 / 1.05, ("mpi_lat8", "pingpong"), ("mps",), [8]),
]


def round_series(rd):
    """{(series, size): value, or a list of the round's launches} of one round directory."""
    out = {}
    p2p = pt.p2p_round(rd, SIZES, [8])
    for s in SIZES:
        out[("gdr_bw", s)] = p2p[s]["bw_l"]
        out[("tag_bw", s)] = p2p[s]["pt_bw_l"]
        out[("mpi_bw", s)] = pt.launch_rates(rd, "gdr_mpi", "bw", "mpi", s)
    out[("lat8", 8)] = p2p[8]["lat"]
    out[("tag_lat8", 8)] = p2p[8]["pt_lat"]
    row = pt.pick(pt.load_jsonl(os.path.join(rd, "gdr_host.jsonl")), "bw", "ucx", 64 * MIB)
    out[("host_bw", 64 * MIB)] = pt.rate(row) if row else None
    h = pt.perftest(os.path.join(rd, f"ucxpt_host_tag_bw_{64 * MIB}.txt"))
    out[("host_tag_bw", 64 * MIB)] = h and h["gbps"]
    row = pt.pick(pt.load_jsonl(os.path.join(rd, "gdr_mpi_lat8.jsonl")), "latency", "mpi", 8)
    out[("mpi_lat8", 8)] = pt.t_us(row) if row else None
    out[("pingpong", 8)] = pt.pingpong_us(os.path.join(rd, "mpi_pingpong_8.txt"))
    return out


def pools(archive):
    """{(machine-ucx, variant, series, size): [values]} and the list of tarballs read."""
    pool, read = {}, []
    for tgz in sorted(glob.glob(os.path.join(archive, "*_gpu-gate-ucx1*.tgz"))):
        # pooled per machine and UCX: an H100's rounds are not an H200's tool
        m = re.search(r"_(h\d00)_gpu-gate-(ucx1\d\d)", os.path.basename(tgz))
        ucx = f"{m.group(1)}-{m.group(2)}" if m else re.search(r"gpu-gate-(ucx1\d\d)", tgz).group(1)
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(tgz) as tf:
                tf.extractall(tmp, members=[m for m in tf.getmembers()
                                            if m.name.endswith((".jsonl", ".txt", ".h5", ".tgz")) or m.isdir()])
            for inner in glob.glob(os.path.join(tmp, "*", "bench_vs_peers.tgz")):  # a gate's $OUT
                with tarfile.open(inner) as tf:
                    tf.extractall(os.path.join(tmp, "inner"), members=[
                        m for m in tf.getmembers() if m.name.endswith((".jsonl", ".txt", ".h5")) or m.isdir()])
            n = 0
            for vdir in glob.glob(os.path.join(tmp, "*", "*")) + glob.glob(os.path.join(tmp, "inner", "*", "*")):
                variant = os.path.basename(vdir)
                if variant not in ("no-mps", "mps") or not os.path.isdir(os.path.join(vdir, "r1")):
                    continue
                for rd in pt.rounds(vdir):
                    n += 1
                    for (series, size), v in round_series(rd).items():  # a launch is a draw
                        for x in (v if isinstance(v, list) else [v]):
                            if x:
                                pool.setdefault((ucx, variant, series, size), []).append(x)
            read.append(f"{os.path.basename(tgz)} ({n} variant-rounds)")
    return pool, read


def old_rule_fails(a, b, need):
    """The gate's earlier rule on 3 rounds of each: median ratio below and the whole 90 %
    Mann-Whitney interval below."""
    med = gate_rule.median(a) / gate_rule.median(b)
    iv = pt.ratio_interval(a, b)
    return med < need and iv is not None and iv[1] < need


def play(values, need, scale, cap, rng):
    """One gate of a tool against itself: (verdict, rounds)."""
    a = [rng.choice(values) * scale for _ in range(cap)]
    b = [rng.choice(values) for _ in range(cap)]
    v = gate_rule.decide_sequential([x / y for x, y in zip(a, b)], need)
    return v[0], v[3]


def main(argv):
    archive, sims, cap, seed = "results/archive", 20000, 16, 1
    it = iter(argv)
    try:
        for a in it:
            if a == "--sims":
                sims = int(next(it))
            elif a == "--cap":
                cap = int(next(it))
            elif a == "--seed":
                seed = int(next(it))
            elif a.startswith("-"):
                raise ValueError(a)
            else:
                archive = a
    except (ValueError, StopIteration) as e:
        print(f"gate_false_alarms.py: bad arguments ({e}); see --help in the docstring", file=sys.stderr)
        return 2
    if not os.path.isdir(archive):
        print(f"gate_false_alarms.py: no such folder {archive}", file=sys.stderr)
        return 2
    pool, read = pools(archive)
    print(f"# gate_false_alarms.py --sims {sims} --cap {cap} --seed {seed}: the gate's rule "
          f"(jobs/gpu/gate_rule.py: FAIL at <= {gate_rule.ALPHA_FAIL:.0%} at the boundary, "
          f"PASS bound {gate_rule.ALPHA_PASS:.0%}) on each tool against itself")
    print(f"# rounds pooled from {len(read)} archived gates: " + ", ".join(read))
    print(f"{'ucx':12} {'variant':7} {'target':46} {'size':>9} {'tool':13} {'rounds':>6} {'spread':>6} | "
          f"{'self':>7} {'boundary':>8} {'old':>7} | {'mean n':>6} {'unres':>6}")
    worst_line = {}
    for label, need, tools, variants, sizes in TARGETS:
        for ucx in sorted({k[0] for k in pool}):
            for variant in variants:
                for size in sizes:
                    for tool in tools:
                        vals = pool.get((ucx, variant, tool, size), [])
                        if len(vals) < 3:
                            continue
                        rng = random.Random(f"{seed}/{ucx}/{variant}/{label}/{size}/{tool}")
                        fails = bfails = ofails = unres = 0
                        used = 0
                        for _ in range(sims):
                            v, n = play(vals, need, 1.0, cap, rng)
                            fails += v == "FAIL"
                            unres += v == "UNRESOLVED"
                            used += n
                            bfails += play(vals, need, need, cap, rng)[0] == "FAIL"
                            a3 = [rng.choice(vals) for _ in range(3)]
                            b3 = [rng.choice(vals) for _ in range(3)]
                            ofails += old_rule_fails(a3, b3, need)
                        key = (ucx, variant, label, tool)
                        worst_line[key] = 1 - (1 - worst_line.get(key, 0.0)) * (1 - fails / sims)
                        print(f"{ucx:12} {variant:7} {label:46} {size:>9} {tool:13} {len(vals):>6} "
                              f"{max(vals) / min(vals):>6.2f} | {fails / sims:>7.2%} {bfails / sims:>8.2%} "
                              f"{ofails / sims:>7.2%} | {used / sims:>6.1f} {unres / sims:>6.1%}")
    print("# self: FAIL rate, tool against itself; boundary: one side scaled by the target (the "
          "rule's worst case); old: the earlier 3-round rule; mean n: rounds the rule used (cap "
          f"{cap}); unres: share left UNRESOLVED at the cap; spread: max / min of the pooled rounds")
    print("# per target line (every size of it; sizes drawn independently: 1 - product of (1 - self)):")
    for (ucx, variant, label, tool), p in sorted(worst_line.items()):
        print(f"line {ucx:12} {variant:7} {label:46} {tool:13} {p:>7.2%}")
    top = max(worst_line.values(), default=0.0)
    print(f"# highest self FAIL rate of a target line: {top:.2%} (target: <= 1 % per target)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
