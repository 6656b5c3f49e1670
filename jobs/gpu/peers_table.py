"""Parsing and ratio tables for jobs/gpu/bench_vs_peers.sh (gdrbench beside ucx_perftest,
MPI_Allreduce, NCCL and the copy engines, in one job).

  peers_table.py count JSONL TEST BYTES          timed messages of that gdrbench row
  peers_table.py cpu DIR --sizes S.. --lat-sizes S..      host table; exit 1 unless every
                                                  tool ran, parsed and #wrong is 0
  peers_table.py gpu DIR.. --sizes S.. --lat-sizes S..    cuda table and the issue's
                                                  targets (PASS/FAIL); exit 1 if data is missing
  peers_table.py open DIR --sizes S.. --lat-sizes S..      the gate targets of one variant's
                                                  rounds still open: "piece size" per line
  peers_table.py selftest

A DIR (or its rounds r1, r2, ...) holds gdr_p2p.jsonl (latency,bw[,bibw] and copy-d2d rows),
gdr_mpi.jsonl and gdr_mpi_lat8.jsonl (-T mpi over the same UCX), gdr_host.jsonl (host bw at
64 MiB, beside ucxpt_host_tag_bw_67108864.txt), gdr_lat8.jsonl (the small
latency sizes), gdr_allreduce.jsonl (cpu), gdr_nccl.jsonl (gpu, 2 GPUs), and
ucxpt_<tag_bw|tag_lat>_<bytes>.txt, ucx_perftest's client output.

Units: GB/s = 1e9 B/s everywhere. ucx_perftest prints MB/s = 2^20 B/s (libperf divides by
1024*1024), converted here. Latency is one way on both sides (gdrbench: round trip / 2;
ucx_perftest divides ping-pong times by 2). Medians where both have them: gdrbench's
time_us_median when the row carries it (else its mean), ucx_perftest's 50.0%ile latency.
ucx_perftest has no median bandwidth: its 'overall' column (all bytes / all time) is used.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gate_rule  # noqa: E402  the gate's sequential decision rule

MIB = 1 << 20


def load_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    if any("time_us_median" not in r for r in rows):
        add_h5_medians(rows, path[:-len(".jsonl")] + ".h5")
    return rows


def add_h5_medians(rows, h5path):
    """The HDF5 file beside the JSON has each case's median (of the slowest rank's
    per-iteration times) where the JSON may not yet: same cases, same order (both sinks get
    every case). Left as is without h5py or the file."""
    try:
        import h5py
        with h5py.File(h5path, "r") as fh:
            cases = [fh["cases"][k].attrs for k in sorted(fh["cases"])]
            meta = [(str(a["test"]), str(a["transport"]), int(a["bytes"]),
                     float(a["time_us_median"])) for a in cases]
    except Exception:  # noqa: BLE001
        return
    if len(meta) != len(rows):
        return
    for r, (test, tr, size, med) in zip(rows, meta):
        if (test, tr, size) != (r["test"], r["transport"], r["bytes"]):
            return
        r.setdefault("time_us_median", med)


def pick(rows, test, transport, size):
    """First row of that test, transport and size: the first pair (0>np/2) when there are
    several; transports of our own rows are direct-path only in these runs."""
    for r in rows:
        if r["test"] == test and r["transport"] == transport and r["bytes"] == size:
            return r
    return None


def t_us(r):
    m = r.get("time_us_median")
    return m if m is not None else r["time_us_mean"]


def rate(r, field="algbw_gbps"):
    """GB/s from the median time when present: the row's own figure (which counts both
    directions for bibw) rescaled from its mean time."""
    if r is None or r.get(field) is None or not r.get("time_us_mean"):
        return None
    return r[field] * r["time_us_mean"] / t_us(r)


def window(h5path, test, size):
    """The window of gdrbench's bw/bibw case, from its HDF5 file (the JSON has no such key);
    None without h5py or the file."""
    try:
        import h5py
        with h5py.File(h5path, "r") as fh:
            for g in fh["cases"].values():
                a = g.attrs
                if a["test"] == test and a["transport"] == "ucx" and int(a["bytes"]) == size:
                    return int(a["window"])
    except Exception:  # noqa: BLE001 - no h5py, no file: the caller falls back
        return None
    return None


def count(path, test, size):
    """Timed messages of gdrbench's row (iterations x window for bw): ucx_perftest -n gets
    the same, so that both time the same work. Window 64 (OSU's, gdrbench's default) when
    the HDF5 file beside the JSON cannot be read."""
    r = pick(load_jsonl(path), test, "ucx", size)
    if r is None:
        return None
    if test not in ("bw", "bibw"):
        return r["iters"]
    return r["iters"] * (window(path[:-len(".jsonl")] + ".h5", test, size) or 64)


def perftest(path):
    """ucx_perftest's 'Final:' line (client side): iterations, latency 50.0%ile / average /
    overall (us), bandwidth average / overall (MB/s = MiB/s), message rate average / overall.
    Returns {'lat_us': 50%ile, 'gbps': overall in 1e9 B/s} or None."""
    if not os.path.exists(path):
        return None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("Final:"):
                v = [float(x.replace(",", "")) for x in line.split()[1:9]]  # -N adds commas
                if len(v) == 8:
                    return {"iters": v[0], "lat_us": v[1], "gbps": v[5] * MIB / 1e9}
    return None


def f(x, w=8, p=2):
    return f"{'-':>{w}}" if x is None else f"{x:>{w}.{p}f}"


def mann_whitney_counts(m, n):
    """How many of the C(m+n, m) orderings give each Mann-Whitney U = 0..m*n (exact, by the
    recursion f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u))."""
    f = {(0, j): [1] for j in range(n + 1)}
    f.update({(i, 0): [1] for i in range(m + 1)})
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            a, b = f[(i - 1, j)], f[(i, j - 1)]
            f[(i, j)] = [(a[u - j] if 0 <= u - j < len(a) else 0) + (b[u] if u < len(b) else 0)
                         for u in range(i * j + 1)]
    return f[(m, n)]


def ratio_interval(a, b, conf=0.9):
    """A distribution-free interval for the ratio of a's level to b's (rounds of two tools):
    the k-th smallest and largest of all pairwise ratios a_i / b_j, k from the exact
    Mann-Whitney distribution (3 rounds each: the extremes, 90 %). (lo, hi, coverage) or None."""
    a, b = [x for x in a if x], [x for x in b if x]
    if not a or not b:
        return None
    r = sorted(x / y for x in a for y in b)
    counts = mann_whitney_counts(len(a), len(b))
    total, k, below = sum(counts), 1, counts[0]
    while k < len(counts) and below + counts[k] <= (1 - conf) / 2 * total:
        below += counts[k]
        k += 1
    return r[k - 1], r[-k], max(0.0, 1 - 2 * below / total)


def ratio(a, b):
    return a / b if a is not None and b else None


class Problems(list):
    def need(self, x, what):
        if x is None or (isinstance(x, float) and not math.isfinite(x)):
            self.append(f"missing or unparsed: {what}")
        return x


def launches(d, stem, ext):
    """One round's launches of a measurement: STEM.EXT, then STEM.l2.EXT, STEM.l3.EXT, ... while
    they exist. At 1-16 MiB each launch of either tool lands on one of two levels (1.3-1.44 x
    apart, drawn per launch: results/archive/20261205_h100_two-levels-probe-43b9765.txt), so the
    gate runs each tool several times a round there (bench_vs_peers.sh LAUNCHES)."""
    out, k = [os.path.join(d, f"{stem}.{ext}")], 2
    while os.path.exists(os.path.join(d, f"{stem}.l{k}.{ext}")):
        out.append(os.path.join(d, f"{stem}.l{k}.{ext}"))
        k += 1
    return out


def aligned(a_rounds, b_rounds):
    """Two tools' values as paired samples in time order, for gate_rule: round by round, and in
    a round launch k of one with launch k of the other (a scalar is a round of one launch).
    Launches are interleaved and each draws its level afresh, so a launch pair is as much an
    independent paired sample as a round; the gate's looks after each round are a subset of
    the looks gate_rule's bounds allow for."""
    from itertools import zip_longest
    A, B = [], []
    for a, b in zip_longest(a_rounds, b_rounds):
        a = a if isinstance(a, list) else [a]
        b = b if isinstance(b, list) else [b]
        for x, y in zip_longest(a, b):
            A.append(x)
            B.append(y)
    return A, B


def flat(rounds_values):
    """Every launch's value of a list of rounds (each a value or a list of launches)."""
    return [x for v in rounds_values for x in (v if isinstance(v, list) else [v])]


def launch_rates(d, stem, test, transport, size):
    """Each launch's rate of one gdrbench row (None where a launch lacks it)."""
    return [rate(pick(load_jsonl(p), test, transport, size)) for p in launches(d, stem, "jsonl")]


def launch_perftest(d, name):
    """Each launch's ucx_perftest bandwidth (GB/s) for ucxpt_NAME.txt, .l2.txt, ..."""
    return [(perftest(p) or {}).get("gbps") for p in launches(d, f"ucxpt_{name}", "txt")]


def wrong_rows(d):
    out = []
    for name in ("gdr_p2p", "gdr_extra", "gdr_lat8", "gdr_allreduce", "gdr_nccl", "gdr_mpi", "gdr_mpi_lat8", "gdr_host"):
        for r in (x for p in launches(d, name, "jsonl") for x in load_jsonl(p)):
            if r["wrong"]:
                ref = " (reference row)" if r["reference"] else ""
                out.append(f"{name}: {r['test']} {r['transport']}{ref} {r['bytes']} B "
                           f"#wrong {r['wrong']}")
    return out


NOTE = ("(gdrbench: median time of the slowest rank, else mean; ucx_perftest: bw 'overall', "
        "latency 50.0%ile; latency one way)")


def rounds(d):
    """The GPU half runs each tool in ABBA order over ROUNDS rounds (r1: gdrbench then
    ucx_perftest, r2: the other way, ...) into d/r1, d/r2, ..., so that neither tool always
    runs on a GPU that has just woken up; the CPU half runs once, into d."""
    rs = []
    while os.path.isdir(os.path.join(d, f"r{len(rs) + 1}")):
        rs.append(os.path.join(d, f"r{len(rs) + 1}"))
    return rs or [d]


def best(values, larger=True):
    """The median of the rounds' values (the issue's targets are on medians), None when none.
    `larger` is kept for the callers: a median needs no direction."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def p2p_round(d, sizes, lat_sizes):
    """One round of gdrbench ucx vs ucx_perftest per size: {size: {bw, pt_bw, lat, pt_lat,
    bibw, d2d}} (None where missing)."""
    p2p = load_jsonl(os.path.join(d, "gdr_p2p.jsonl"))
    # The gate's first round runs the informative rows (latency and bibw per size, the copy
    # ceiling) once, in gdr_extra; its rounds' gdr_p2p is bw alone. Older runs: all in gdr_p2p.
    extra = load_jsonl(os.path.join(d, "gdr_extra.jsonl")) or p2p
    small = load_jsonl(os.path.join(d, "gdr_lat8.jsonl"))
    res = {}
    for s in sorted(set(sizes) | set(lat_sizes)):
        x = res[s] = {"bw": None, "pt_bw": None, "bibw": None, "d2d": None}
        if s in sizes:  # one value a launch (several launches a round at 1-16 MiB)
            x["bw_l"] = launch_rates(d, "gdr_p2p", "bw", "ucx", s)
            x["pt_bw_l"] = launch_perftest(d, f"tag_bw_{s}")
            x["bw"], x["pt_bw"] = best(x["bw_l"]), best(x["pt_bw_l"])
            x["bibw"] = rate(pick(extra, "bibw", "ucx", s))
            x["d2d"] = rate(pick(extra, "bw", "copy-d2d", s))
        r = pick(extra, "latency", "ucx", s) or pick(small, "latency", "ucx", s)
        x["lat"] = r and t_us(r)
        pt = perftest(os.path.join(d, f"ucxpt_tag_lat_{s}.txt"))
        x["pt_lat"] = pt and pt["lat_us"]
    return res


def p2p_data(d, mem, sizes, lat_sizes, probs, want=("bw", "pt_bw", "lat", "pt_lat")):
    """gdrbench ucx vs ucx_perftest per size, the best of the rounds for each tool."""
    per = [p2p_round(r, sizes, lat_sizes) for r in rounds(d)]
    what = {"bw": "gdrbench bw", "pt_bw": "ucx_perftest tag_bw", "lat": "gdrbench latency",
            "pt_lat": "ucx_perftest tag_lat", "bibw": "gdrbench bibw", "d2d": "copy-d2d"}
    res = {}
    for s in per[0]:
        res[s] = {}
        for k in ("bw", "pt_bw", "bibw", "d2d", "lat", "pt_lat"):
            res[s][k + "_r"] = [p[s].get(k + "_l", p[s][k]) for p in per]  # per round: launches
            v = best(flat(res[s][k + "_r"]))
            if k in want and (s in lat_sizes if k in ("lat", "pt_lat") else s in sizes):
                probs.need(v, f"{what[k]} {mem} {s} B")
            res[s][k] = v
    return res


def cpu(d, sizes, lat_sizes):
    probs = Problems()
    print("== host memory, 2 ranks: gdrbench -T ucx vs ucx_perftest (same UCX); bw ratio > 1: "
          "gdrbench faster; latency ratio > 1: gdrbench slower ==")
    print(NOTE)
    print(f"{'size(B)':>10} | {'bw GB/s':>8} {'tag_bw':>8} {'ratio':>6} | "
          f"{'lat us':>8} {'tag_lat':>8} {'ratio':>6}")
    for s, x in p2p_data(d, "host", sizes, sorted(set(sizes) | set(lat_sizes)), probs).items():
        print(f"{s:>10} | {f(x['bw'])} {f(x['pt_bw'])} {f(ratio(x['bw'], x['pt_bw']), 6)} | "
              f"{f(x['lat'])} {f(x['pt_lat'])} {f(ratio(x['lat'], x['pt_lat']), 6)}")
    ar = load_jsonl(os.path.join(d, "gdr_allreduce.jsonl"))
    print("== host memory, 2 ranks: ring allreduce over mpi vs MPI_Allreduce (busbw GB/s) ==")
    print(f"{'size(B)':>10} | {'ours':>8} {'MPI':>8} {'ratio':>6}")
    for s in sizes:
        ours = [r for r in ar if r["bytes"] == s and not r["reference"]]
        ref = [r for r in ar if r["bytes"] == s and r["reference"]]
        o = probs.need(rate(ours[0] if ours else None, "busbw_gbps"), f"allreduce mpi {s} B")
        m = probs.need(rate(ref[0] if ref else None, "busbw_gbps"), f"MPI_Allreduce {s} B")
        print(f"{s:>10} | {f(o)} {f(m)} {f(ratio(o, m), 6)}")
    probs += wrong_rows(d)
    for p in probs:
        print("problem:", p)
    print("check:", "every tool ran and parsed, #wrong 0" if not probs else f"{len(probs)} problems")
    return 1 if probs else 0


def gpu_variant(d, sizes, lat_sizes):
    name = os.path.basename(os.path.normpath(d))
    probs = Problems()
    print(f"\n== {name}: cuda memory, 2 ranks on one GPU: gdrbench -T ucx --path direct vs "
          "ucx_perftest -m cuda (same UCX) ==")
    res = p2p_data(d, "cuda", sizes, lat_sizes, probs,
                   want=("bw", "pt_bw", "lat", "pt_lat", "bibw", "d2d"))
    if len(rounds(d)) > 1:
        print(f"({len(rounds(d))} ABBA rounds; the median of each tool's launches per size, several "
              "a round at 1-16 MiB; a gate target resolved in an earlier round was not measured again)")
    print(NOTE + "; bw, bibw, copy-d2d in GB/s")
    print(f"{'size(B)':>10} | {'bw':>7} {'tag_bw':>7} {'ratio':>6} | {'bibw/bw':>7} | "
          f"{'d2d/bw':>7} | {'lat us':>8} {'tag_lat':>8} {'ratio':>6}")
    for s, x in res.items():
        print(f"{s:>10} | {f(x['bw'], 7, 1)} {f(x['pt_bw'], 7, 1)} {f(ratio(x['bw'], x['pt_bw']), 6)}"
              f" | {f(ratio(x.get('bibw'), x['bw']), 7)} | {f(ratio(x.get('d2d'), x['bw']), 7)} | "
              f"{f(x['lat'])} {f(x['pt_lat'])} {f(ratio(x['lat'], x['pt_lat']), 6)}")
    nccl = load_jsonl(os.path.join(d, "gdr_nccl.jsonl"))
    if nccl:
        print("-- 2 GPUs, one rank each: gdrbench ucx direct vs NCCL send/recv (ratio: ucx/nccl "
              "for GB/s, nccl/ucx for latency; > 1: ours better) --")
        print(f"{'size(B)':>10} | {'bw ucx':>8} {'nccl':>8} {'ratio':>6} | {'bibw ucx':>8} "
              f"{'nccl':>8} {'ratio':>6} | {'lat ucx':>8} {'nccl':>8} {'ratio':>6}")
        for s in sorted({r["bytes"] for r in nccl}):
            cells = []
            for test in ("bw", "bibw", "latency"):
                u, n = pick(nccl, test, "ucx", s), pick(nccl, test, "nccl", s)
                if test == "latency":
                    u, n = u and t_us(u), n and t_us(n)
                    cells.append(f"{f(u)} {f(n)} {f(ratio(n, u), 6)}")
                else:
                    u, n = rate(u), rate(n)
                    cells.append(f"{f(u)} {f(n)} {f(ratio(u, n), 6)}")
            print(f"{s:>10} | " + " | ".join(cells))
    # The targets, from 1 MiB up.
    big = [s for s in sizes if s >= MIB]

    def target(label, pairs):
        return judge_target(name, label, pairs)[0]

    r = res
    ok = gate_targets(d, name, big, r, target)
    target("bibw >= bw (1-8 MiB), >= 0.85 x bw above (informative)",
           [(s, ratio(r[s]["bibw"], r[s]["bw"]), 1.0 if s <= 8 * MIB else 0.85) for s in big])
    target("copy-d2d >= bw (informative)", [(s, ratio(r[s]["d2d"], r[s]["bw"]), 1.0) for s in big])
    for r in rounds(d):
        probs += wrong_rows(r)
        probs += unestablished_rows(r, rounds(d)[0])
    for p in probs:
        print(f"problem [{name}]:", p)
    return 1 if probs or not ok else 0


def judge_target(name, label, pairs, out=print):
    """One target line. pairs: (size, value, needed[, (A rounds, B rounds)]), value a ratio of
    medians (larger is better). With the rounds (a gate target) each size is judged by
    gate_rule's sequential sign test on the paired ratios A_i / B_i, taken round by round in
    order (the first look that resolves is the verdict, as the gate stopped measuring there):
    FAIL only on a shown gap, UNRESOLVED printed with its interval and rounds. Without the
    rounds (informative lines) the median ratio is compared with `needed`. Missing data FAILs.
    Returns (ok, open sizes: those still UNRESOLVED or without data)."""
    missing = [p[0] for p in pairs if p[1] is None]
    if not any(len(p) > 3 for p in pairs):  # informative: the medians
        worst = min(((p[1] / p[2], p[1], p[2], p[0]) for p in pairs if p[1] is not None), default=None)
        ok = not missing and worst is not None and worst[0] >= 1.0
        detail = f"lowest {worst[1]:.3f} (needs {worst[2]}) at {worst[3]} B" if worst else "no data"
        if missing:
            detail += f"; missing at {missing}"
        if out:
            out(f"target [{name}] {label}: {'PASS' if ok else 'FAIL'} ({detail})")
        return ok, missing
    verdicts = []
    for p in pairs:
        if p[1] is None:
            continue
        rs = gate_rule.paired(*aligned(*p[3]))
        verdicts.append((p[0], p[2]) + gate_rule.decide_sequential(rs, p[2]) + (gate_rule.median(rs),))
    fails = [v for v in verdicts if v[2] == "FAIL"]
    opens = [v for v in verdicts if v[2] == "UNRESOLVED"]
    verdict = "FAIL" if fails or missing else "UNRESOLVED" if opens else "PASS"
    parts = []
    for sz, need, v, lo, hi, n, med in sorted(verdicts, key=lambda v: (v[2] == "PASS", v[0])):
        m = "-" if med is None else f"{med:.3f}"
        parts.append(f"{sz} B {v} {m} {gate_rule.fmt_interval(lo, hi)} {n} pairs" if v != "PASS"
                     else f"{sz} B PASS {m} ({n} pairs)")
    detail = f"needs {pairs[0][2]:.4g}; median paired ratio [decision interval]: " + "; ".join(parts)
    if missing:
        detail += f"; missing at {missing}"
    if out:
        out(f"target [{name}] {label}: {verdict} ({detail})")
    return not (fails or missing), sorted(missing + [v[0] for v in opens])


def gate_targets(d, name, big, res, target):
    """The targets that can fail the gate, each judged by `target(label, pairs)`."""
    r = res
    ok = target("ucx direct bw >= 0.97 x ucx_perftest tag_bw",
                [(s, ratio(r[s]["bw"], r[s]["pt_bw"]), 0.97, (r[s]["bw_r"], r[s]["pt_bw_r"])) for s in big])
    return gate_more(d, name, big, r, target) and ok


def piece_of(label):
    """Which of a round's measurements a gate target needs (bench_vs_peers.sh's names)."""
    if "host" in label:
        return "host"
    if label.startswith("8 B latency"):
        return "mpilat" if label.endswith("mpi") else "lat"
    return "mpi" if "-T mpi bw" in label else "bw"


def open_pieces(d, sizes, lat_sizes):
    """(piece, size) of every gate target of variant dir d still UNRESOLVED or without data
    after its rounds so far: what the next round must measure. [] when all are resolved."""
    import contextlib
    import io
    name = os.path.basename(os.path.normpath(d))
    found = []

    def rec(label, pairs):
        ok, opened = judge_target(name, label, pairs, out=None)
        found.extend((piece_of(label), s) for s in opened)
        return ok

    with contextlib.redirect_stdout(io.StringIO()):
        res = p2p_data(d, "cuda", sizes, lat_sizes, Problems(), want=())
        gate_targets(d, name, [s for s in sizes if s >= MIB], res, rec)
    return sorted(set(found))


def round_values(d, fname, test, size, transport):
    """One gdrbench row's rate (or median time for latency) in each round, None where missing."""
    vals = []
    for rd in rounds(d):
        if test == "latency":
            row = pick(load_jsonl(os.path.join(rd, fname + ".jsonl")), test, transport, size)
            vals.append(row and t_us(row))
        else:  # bw: each of the round's launches
            vals.append(launch_rates(rd, fname, test, transport, size))
    return vals


def round_rates(d, fname, test, size, transport):
    """The median over every round's launches of round_values."""
    return best(flat(round_values(d, fname, test, size, transport)))


def gate_more(d, name, big, res, target):
    """The gate's targets beyond tag_bw, each where its rows ran: ucx over the MPI's path on the
    same UCX (gdr_mpi), host bw against host tag_bw (gdr_host), and, under MPS, 8 B latency
    within 1.05 x tag_lat for both transports."""
    ok = True
    first = rounds(d)[0]
    if os.path.exists(os.path.join(first, "gdr_mpi.jsonl")):
        ok &= target("ucx direct bw >= 0.97 x -T mpi bw (same UCX)",
                     [(s, ratio(res[s]["bw"], round_rates(d, "gdr_mpi", "bw", s, "mpi")), 0.97,
                       (res[s]["bw_r"], round_values(d, "gdr_mpi", "bw", s, "mpi"))) for s in big])
    if os.path.exists(os.path.join(first, "gdr_host.jsonl")):
        s = 64 * MIB
        pts = [(perftest(os.path.join(rd, f"ucxpt_host_tag_bw_{s}.txt")) or {}).get("gbps") for rd in rounds(d)]
        ours = round_values(d, "gdr_host", "bw", s, "ucx")
        ok &= target("host ucx bw >= 0.97 x host tag_bw (64 MiB)",
                     [(s, ratio(best(flat(ours)), best(pts)), 0.97, (ours, pts))])
    if name == "mps":
        lat = res.get(8, {})
        ok &= target("8 B latency: tag_lat >= 1/1.05 x ucx", [(8, ratio(lat.get("pt_lat"), lat.get("lat")), 1 / 1.05,
                                                                (lat.get("pt_lat_r", []), lat.get("lat_r", [])))])
        if os.path.exists(os.path.join(first, "gdr_mpi.jsonl")):
            ok &= mpi_latency_target(d, lat.get("pt_lat"), target, lat.get("pt_lat_r", []))
    return ok


def pingpong_us(path):
    """mpi_pingpong's median one-way time (us), or None."""
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            if line.startswith("mpi_pingpong") and "median" in line:
                return float(line.split("median")[1].split()[0])
    return None


def mpi_latency_target(d, pt_lat, target, pt_lat_r=()):
    """-T mpi's 8 B latency within 1.05 x tag_lat, unless the MPI's own ping-pong (Open MPI over
    the same UCX, no gdrbench code) is itself slower than that: then tag_lat is out of reach for
    any MPI transport, the line says so with both figures, and -T mpi is held to 1.05 x the
    blocking ping-pong (osu_latency's loop; issue 48's target). The polled shape (MPI_Isend /
    MPI_Irecv with MPI_Test, the calls gdrbench makes: 1.07-1.11 x the blocking one under MPS,
    results/archive/20261203_h200_mpi-latency-probe.txt) is printed beside it, not held to."""
    ms = round_values(d, "gdr_mpi_lat8", "latency", 8, "mpi")
    m = best(ms)
    pps = [pingpong_us(os.path.join(rd, "mpi_pingpong_8.txt")) for rd in rounds(d)]
    polls = [pingpong_us(os.path.join(rd, "mpi_pingpong_poll_8.txt")) for rd in rounds(d)]
    pp, poll = best(pps), best(polls)
    if pp is None or pt_lat is None or pp <= 1.05 * pt_lat:
        return target("8 B latency: tag_lat >= 1/1.05 x mpi", [(8, ratio(pt_lat, m), 1 / 1.05, (list(pt_lat_r), ms))])
    print(f"out of reach: 8 B latency of the MPI's own ping-pong {pp:.2f} us is {pp / pt_lat:.2f} x "
          f"tag_lat {pt_lat:.2f} us (Open MPI's cost above UCX): -T mpi held to its ping-pong")
    if poll is not None:
        print(f"ping-pong shapes: blocking {pp:.2f} us, non-blocking polled {poll:.2f} us ({poll / pp:.2f} x); "
              f"-T mpi {m if m is None else round(m, 2)} us is held to the blocking one")
    return target("8 B latency: mpi_pingpong >= 1/1.05 x mpi", [(8, ratio(pp, m), 1 / 1.05, (pps, ms))])


def established(r):
    return bool(r.get("path_taken")) and not r.get("path_unknown") and r.get("pct_peak") is not None


def held_by_round_one(r, first):
    """A gdr_mpi row other than round 1's first launch, run without copy rows (--reference
    none), is accepted when round 1's gdr_mpi row of the same test, transport and size was established, and, where round
    1 measured the host copies of that size, this row's own speed still rules staging out (its
    per-direction rate above 1.1 x the slower host copy, as gdrbench's own path-by-speed rule)."""
    rows = load_jsonl(os.path.join(first, "gdr_mpi.jsonl"))
    same = [x for x in rows if not x["reference"] and x["test"] == r["test"] and x["transport"] == r["transport"]
            and x["bytes"] == r["bytes"] and x["mem"] == r["mem"] and x["path"] == r["path"]]
    if not same or not established(same[0]):
        return False
    host = [x["algbw_gbps"] for x in rows if x["reference"] and x["bytes"] == r["bytes"]
            and x["transport"] in ("copy-d2h", "copy-h2d")]
    per_dir = r["algbw_gbps"] / (2 if r["test"] == "bibw" else 1)
    return len(host) < 2 or per_dir > 1.1 * min(host)


def unestablished_rows(d, first=None):
    """Device rows of our transports that a gate cannot accept: bw/bibw rows without an
    established path or without %peak (the slip UCX 1.22 once caused silently). `first`: the
    variant's round 1, whose gdr_mpi rows establish later rounds' (held_by_round_one)."""
    out = []
    for name, path in ((n, p) for n in ("gdr_p2p", "gdr_extra", "gdr_mpi") for p in launches(d, n, "jsonl")):
        for r in load_jsonl(path):
            if r["reference"] or r["mem"] != "cuda" or r["path"] != "direct" or r["test"] not in ("bw", "bibw"):
                continue
            if name == "gdr_mpi" and first and held_by_round_one(r, first) and \
                    os.path.normpath(path) != os.path.normpath(os.path.join(first, "gdr_mpi.jsonl")):
                continue
            where = f"{os.path.basename(path)[:-len('.jsonl')]}: {r['test']} {r['transport']} {r['bytes']} B"
            if not r.get("path_taken") or r.get("path_unknown"):
                out.append(f"{where}: path not established ({r.get('path_unknown') or 'empty path_taken'})")
            if r.get("pct_peak") is None:
                out.append(f"{where}: no %peak")
    return out


def selftest_later_rounds(sd, row):
    """-T mpi rows of later rounds run without copy rows: held to round 1's path and speed."""
    mpi = dict(row, transport="mpi", path_taken="mpi ...; direct: 900.0 GB/s is above ...", pct_peak=60.0)
    copies = [dict(mpi, transport=t, reference=True, algbw_gbps=50.0) for t in ("copy-d2h", "copy-h2d")]
    bare = dict(mpi, path_taken="mpi ...", path_unknown="the MPI library does not report ...", pct_peak=None)
    for k, rs in ((1, [mpi] + copies), (2, [dict(bare, algbw_gbps=900.0)])):
        with open(os.path.join(sd, f"r{k}", "gdr_mpi.jsonl"), "w") as fo:
            fo.writelines(json.dumps(x) + "\n" for x in rs)
    first = os.path.join(sd, "r1")
    assert unestablished_rows(os.path.join(sd, "r2"), first) == []
    assert len(unestablished_rows(os.path.join(sd, "r2"))) == 2  # alone: no path, no %peak
    with open(os.path.join(sd, "r2", "gdr_mpi.jsonl"), "w") as fo:  # as slow as staging: refused
        fo.write(json.dumps(dict(bare, algbw_gbps=50.0)) + "\n")
    assert len(unestablished_rows(os.path.join(sd, "r2"), first)) == 2
    with open(os.path.join(first, "gdr_mpi.jsonl"), "w") as fo:  # round 1 itself unestablished
        fo.write(json.dumps(bare) + "\n")
    assert len(unestablished_rows(first, first)) == 2
    for k in (1, 2):
        os.remove(os.path.join(sd, f"r{k}", "gdr_mpi.jsonl"))


def selftest_launches(d, slow, rows):
    """Several launches a round: each launch pair is a paired sample (3 rounds of 3 launches
    at 0.9 x are 9 pairs: a shown gap), and a launch of gdr_mpi beyond round 1's first is held
    to round 1's row."""
    import shutil
    ld = os.path.join(d, "launches")
    for k in range(1, 4):
        rd = os.path.join(ld, f"r{k}")
        os.makedirs(rd)
        for sfx in ("", ".l2", ".l3"):
            shutil.copy(os.path.join(d, "ucxpt_tag_bw_1048576.txt"), os.path.join(rd, f"ucxpt_tag_bw_1048576{sfx}.txt"))
            with open(os.path.join(rd, f"gdr_p2p{sfx}.jsonl"), "w") as fo:
                fo.writelines(json.dumps(r) + "\n" for r in slow)
        shutil.copy(os.path.join(d, "ucxpt_tag_lat_1048576.txt"), rd)
        res = p2p_data(ld, "cuda", [MIB], [MIB], Problems())
        assert len(gate_rule.paired(*aligned(res[MIB]["bw_r"], res[MIB]["pt_bw_r"]))) == 3 * k
        assert gpu_variant(ld, [MIB], [MIB]) == (1 if k == 3 else 0), k
    assert aligned([[1, 2], 3], [[4], [5, 6]]) == ([1, 2, 3, None], [4, None, 5, 6])
    first = os.path.join(ld, "r1")
    mpi = dict(rows[0], transport="mpi", path_taken="mpi ...; direct: 900.0 GB/s", pct_peak=60.0)
    with open(os.path.join(first, "gdr_mpi.jsonl"), "w") as fo:
        fo.write(json.dumps(mpi) + "\n")
    with open(os.path.join(first, "gdr_mpi.l2.jsonl"), "w") as fo:  # --reference none: no %peak
        fo.write(json.dumps(dict(mpi, pct_peak=None, path_taken="mpi ...", path_unknown="...")) + "\n")
    assert unestablished_rows(first, first) == []
    assert len(unestablished_rows(first)) == 2  # not held: no path, no %peak, named by launch
    assert unestablished_rows(first)[0].startswith("gdr_mpi.l2:")


def selftest():
    import tempfile
    d = tempfile.mkdtemp()
    # ucx_perftest 1.13.1 client output, as printed here (Debian ucx-utils).
    open(os.path.join(d, "ucxpt_tag_bw_1048576.txt"), "w").write(
        "+--------------+\n|    Stage     | # iterations | 50.0%ile | average | overall |\n"
        "Final:                  1000      0.220   714.742   714.742     1399.11    1399.11"
        "        1399        1399\n")
    open(os.path.join(d, "ucxpt_tag_lat_1048576.txt"), "w").write(
        "Final:                 10000      0.552     9.159    59.579        0.83       0.13"
        "      109182       16784\n")
    pt = perftest(os.path.join(d, "ucxpt_tag_bw_1048576.txt"))
    assert abs(pt["gbps"] - 1399.11 * MIB / 1e9) < 1e-9 and pt["iters"] == 1000, pt
    assert perftest(os.path.join(d, "ucxpt_tag_lat_1048576.txt"))["lat_us"] == 0.552
    assert perftest(os.path.join(d, "nope.txt")) is None
    row = {"test": "bw", "transport": "ucx", "reference": False, "mem": "cuda", "path": "direct",
           "bytes": MIB, "iters": 20, "time_us_mean": 2.0, "algbw_gbps": 524.288, "wrong": 0}
    rows = [row, dict(row, test="bibw", time_us_mean=4.0, time_us_median=2.0, algbw_gbps=524.288),
            dict(row, transport="copy-d2d", reference=True, algbw_gbps=1048.576, time_us_mean=1.0),
            dict(row, test="latency", time_us_mean=3.0, time_us_median=2.5, algbw_gbps=0.3)]
    with open(os.path.join(d, "gdr_p2p.jsonl"), "w") as fo:
        fo.writelines(json.dumps(r) + "\n" for r in rows)
    assert rate(rows[1]) == 524.288 * 2  # bibw rescaled to its median time
    assert count(os.path.join(d, "gdr_p2p.jsonl"), "bw", MIB) == 20 * 64  # no .h5: 64
    assert count(os.path.join(d, "gdr_p2p.jsonl"), "latency", MIB) == 20
    assert gpu_variant(d, [MIB], [MIB]) == 1  # no path, no %peak: the gate refuses the rows
    rows = [dict(r, path_taken="ucx rendezvous zero-copy read from remote over cuda_ipc/cuda", pct_peak=50.0)
            for r in rows]
    with open(os.path.join(d, "gdr_p2p.jsonl"), "w") as fo:
        fo.writelines(json.dumps(r) + "\n" for r in rows)
    assert gpu_variant(d, [MIB], [MIB]) == 0
    # 0.9 x tag_bw in one round decides nothing; in 7 rounds of 7 it is a shown gap.
    import shutil
    slow = [dict(r, algbw_gbps=pt["gbps"] * 0.9) if r["test"] == "bw" else r for r in rows]
    sd = os.path.join(d, "slow")
    for k in range(1, 8):
        os.makedirs(os.path.join(sd, f"r{k}"))
        for fn in ("ucxpt_tag_bw_1048576.txt", "ucxpt_tag_lat_1048576.txt"):
            shutil.copy(os.path.join(d, fn), os.path.join(sd, f"r{k}", fn))
        with open(os.path.join(sd, f"r{k}", "gdr_p2p.jsonl"), "w") as fo:
            fo.writelines(json.dumps(r) + "\n" for r in slow)
        assert gpu_variant(sd, [MIB], [MIB]) == (1 if k == 7 else 0), k
    selftest_later_rounds(sd, row)
    selftest_launches(d, slow, rows)
    assert open_pieces(sd, [MIB], [MIB]) == []  # resolved: nothing left to measure
    shutil.rmtree(os.path.join(sd, "r7"))
    assert open_pieces(sd, [MIB], [MIB]) == [("bw", MIB)]
    os.remove(os.path.join(d, "ucxpt_tag_lat_1048576.txt"))
    assert gpu_variant(d, [MIB], [MIB]) == 1  # a missing tool output is a problem
    # -T mpi latency: held to tag_lat, or to the MPI's own ping-pong where that is slower itself.
    lat8 = dict(row, test="latency", transport="mpi", bytes=8, time_us_mean=16.0, time_us_median=16.0)
    with open(os.path.join(d, "gdr_mpi_lat8.jsonl"), "w") as fo:
        fo.write(json.dumps(lat8) + "\n")
    seen = []
    def judge(what, rows):
        seen.append(what)
        return all(p[1] is not None and p[1] >= p[2] for p in rows)
    assert not mpi_latency_target(d, 12.0, judge) and "tag_lat" in seen[-1]  # no ping-pong: tag_lat
    with open(os.path.join(d, "mpi_pingpong_8.txt"), "w") as fo:
        fo.write("mpi_pingpong 8 B one-way us: median 15.500 mean 15.9 (10000 round trips)\n")
    assert pingpong_us(os.path.join(d, "mpi_pingpong_8.txt")) == 15.5
    assert mpi_latency_target(d, 12.0, judge) and "mpi_pingpong" in seen[-1]  # 16.0 <= 1.05 x 15.5
    assert not mpi_latency_target(d, 15.0, judge) and "tag_lat" in seen[-1]  # ping-pong within reach
    with open(os.path.join(d, "mpi_pingpong_poll_8.txt"), "w") as fo:  # the non-blocking shape, slower
        fo.write("mpi_pingpong 8 B one-way us: median 14.000 mean 14.2 (10000 round trips, device memory, poll)\n")
    with open(os.path.join(d, "mpi_pingpong_8.txt"), "w") as fo:
        fo.write("mpi_pingpong 8 B one-way us: median 13.000 mean 13.2 (10000 round trips, device memory, block)\n")
    assert not mpi_latency_target(d, 12.0, judge) and seen[-1].startswith("8 B latency: mpi_pingpong ")
    lat8.update(time_us_mean=14.5, time_us_median=14.5)  # 14.5 <= 1.05 x 14 (the polled), > 1.05 x 13
    with open(os.path.join(d, "gdr_mpi_lat8.jsonl"), "w") as fo:
        fo.write(json.dumps(lat8) + "\n")
    assert not mpi_latency_target(d, 12.0, judge)  # held to the blocking one, not the polled
    lat8.update(time_us_mean=13.6, time_us_median=13.6)  # 13.6 <= 1.05 x 13
    with open(os.path.join(d, "gdr_mpi_lat8.jsonl"), "w") as fo:
        fo.write(json.dumps(lat8) + "\n")
    assert mpi_latency_target(d, 12.0, judge) and seen[-1].startswith("8 B latency: mpi_pingpong ")
    return selftest_intervals()


def selftest_intervals():
    """The interval that separates a shown gap from the rounds' spread."""
    assert sum(mann_whitney_counts(3, 3)) == 20 and mann_whitney_counts(1, 2) == [1, 1, 1]
    assert ratio_interval([90, 91, 92], [100, 101, 102]) == (90 / 102, 92 / 100, 0.9)  # a gap: hi < 0.97
    lo, hi, cover = ratio_interval([117, 150, 112], [119, 132, 147])  # the H200's 1 MiB MPS rounds
    assert lo < 0.97 <= hi and cover == 0.9
    assert ratio_interval([None], [1.0]) is None
    assert ratio_interval([96, 86], [172, 141])[1] < 0.97  # the UCX 1.22 slip of 2026-12-02: still FAIL
    print("selftest: ok")
    return 0


def parse_dirs_sizes(rest):
    dirs, sizes, lat_sizes, cur = [], [], [], None
    for a in rest:
        if a in ("--sizes", "--lat-sizes"):
            cur = sizes if a == "--sizes" else lat_sizes
        elif cur is None:
            dirs.append(a)
        else:
            cur.append(int(a))
    return dirs, sizes, lat_sizes


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "selftest":
        return selftest()
    if cmd == "open":  # open VARIANT_DIR --sizes .. --lat-sizes ..: "piece size" per line
        dirs, sizes, lat_sizes = parse_dirs_sizes(rest)
        for piece, size in open_pieces(dirs[0], sizes, lat_sizes):
            print(piece, size)
        return 0
    if cmd == "count":
        n = count(rest[0], rest[1], int(rest[2]))
        if n is not None:
            print(n)
        return 0
    dirs, sizes, lat_sizes = parse_dirs_sizes(rest)
    if cmd == "cpu":
        return cpu(dirs[0], sizes, lat_sizes)
    if cmd == "gpu":
        return max([gpu_variant(d, sizes, lat_sizes) for d in dirs] or [1])
    print(f"unknown command {cmd}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
