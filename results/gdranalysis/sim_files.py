"""The result file that N hosts x G ranks would write under `--pattern rounds`
(bw, one case per step and size), in gdrbench's schema (results/README.md),
with link times drawn from a fitted NoiseModel and faults injected.

A fault multiplies the times of the links it touches by (1 + PCT/100), as
jobs/cluster/fault.sh defines a severity:
  link A B PCT        both directions between hosts A and B
  nic-egress H PCT    every link from H; nic-ingress: to H; nic-both: both
  rank R PCT          every link from or to rank R (a slow GPU, PCIe or CPU)
A host that is down answers no roll call: validate names it failed from the
launcher's output and judges the others on a run without it, so its file is
the file of the other hosts (see simulate.trial).

Faults in time, drawn per case (a case is one step of one size, in the order run):
  flap H PCT          every link from or to H is PCT % slower in the cases where the fault is
                      on: `period` cases a cycle, on for `duty` of it from `phase` (a NIC that
                      flaps, as fault.sh's bounded loop of rate changes)
  tail H PCT          each iteration of every link from or to H is, with probability PCT %,
                      1.5-9x slower (log-uniform): the retransmits of a lossy port, whose
                      medians hardly move
  stall PCT           every link of the cases in `steps` is PCT % slower: the fabric or the
                      machine, nobody's link
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from . import SCHEMA_VERSION, schedule


@dataclasses.dataclass
class Fault:
    cls: str            # healthy, link, nic-egress, nic-ingress, nic-both, rank, down
    pct: float = 0.0
    target: tuple = ()  # host names (link: two; nic/down: one); rank: (host, local rank)
    period: float = 0.0  # flap: cases a cycle (a time, not a count: it need not fit the schedule)
    duty: float = 0.0   # flap: the share of a cycle it is on
    phase: float = 0.0  # flap: when (in cases) its first on-time starts
    steps: tuple = ()   # stall: the cases (in the order run) slowed as a whole

    def case_log(self, hosts, ranks_per_host, k, src, dst):
        """The log multiplier of the links src[i] -> dst[i] in case k (flap, stall)."""
        m = np.zeros(np.shape(src))
        f = np.log1p(self.pct / 100.0)
        if self.cls == "stall" and k in self.steps:
            m[:] = f
        elif self.cls == "flap" and self.period and ((k - self.phase) % self.period) < self.duty * self.period:
            m[self._touches(hosts, ranks_per_host, src, dst)] = f
        return m

    def iter_mult(self, rng, hosts, ranks_per_host, s, d, n):
        """n iteration multipliers of link s -> d (tail: PCT % of them 1.5-9x)."""
        if self.cls != "tail" or not self._touches(hosts, ranks_per_host, np.array([s]), np.array([d]))[0]:
            return np.ones(n)
        hit = rng.random(n) < self.pct / 100.0
        return np.where(hit, np.exp(rng.uniform(np.log(1.5), np.log(9.0), n)), 1.0)

    def _touches(self, hosts, ranks_per_host, src, dst):
        h = hosts.index(self.target[0])
        return (np.asarray(src) // ranks_per_host == h) | (np.asarray(dst) // ranks_per_host == h)

    def factor(self, hosts, ranks_per_host):
        """[n, n] time multipliers (sender, receiver)."""
        n = len(hosts) * ranks_per_host
        s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        return self.factor_of(hosts, ranks_per_host, s, d)

    def factor_of(self, hosts, ranks_per_host, src, dst):
        """The time multipliers of the links src[i] -> dst[i] (rank arrays): a fleet's file
        without its [n, n] matrix."""
        hs, hd = np.asarray(src) // ranks_per_host, np.asarray(dst) // ranks_per_host
        m = np.ones(np.shape(src))
        f = 1.0 + self.pct / 100.0
        idx = {h: i for i, h in enumerate(hosts)}
        if self.cls == "link":
            a, b = idx[self.target[0]], idx[self.target[1]]
            m[((hs == a) & (hd == b)) | ((hs == b) & (hd == a))] = f
        elif self.cls.startswith("nic-"):
            h = idx[self.target[0]]
            if self.cls in ("nic-egress", "nic-both"):
                m[hs == h] *= f
            if self.cls in ("nic-ingress", "nic-both"):
                m[hd == h] *= f
        elif self.cls == "rank":
            r = idx[self.target[0]] * ranks_per_host + int(self.target[1])
            m[np.asarray(src) == r] *= f
            m[np.asarray(dst) == r] *= f
        return m


def rounds_flows(n, step):
    """collectives/patterns.cpp: bw rounds step `step` over n ranks (circle method, both directions)."""
    m = n + 1 if n % 2 else n
    r = step // 2
    pairs = []

    def add(a, b):
        if a < n and b < n:
            pairs.append((min(a, b), max(a, b)))
    add(r % (m - 1), m - 1)
    for k in range(1, m // 2):
        add((r + k) % (m - 1), (r - k + (m - 1)) % (m - 1))
    return [(b, a) if step % 2 else (a, b) for a, b in pairs]


def rounds_steps(n):
    return 2 * (n if n % 2 else n - 1)


def write_run(path, model, hosts, ranks_per_host, fault, rng, case_time=0.75):
    """Write the file; returns the [sizes, n, n] log link medians drawn (truth, for checks)."""
    import h5py
    n = len(hosts) * ranks_per_host
    links = [(s, d) for s in range(n) for d in range(n) if s != d]
    resid = model.draw_residuals(rng, len(links))
    mult = np.log(fault.factor(hosts, ranks_per_host))
    truth = np.full((len(model.bytes), n, n), np.nan)
    for i, (s, d) in enumerate(links):
        truth[:, s, d] = np.log(model.base_s) + resid[i] + mult[s, d]
    with h5py.File(path, "w") as f:
        _head(f, model, hosts, ranks_per_host, fault)
        cases = f.create_group("cases")
        k = 0
        for si, b in enumerate(model.bytes):
            iters = int(model.iters[si])
            for step in range(rounds_steps(n)):
                fl = rounds_flows(n, step)
                t = np.full((n, iters), np.nan)
                shift = fault.case_log(hosts, ranks_per_host, k, np.array([a for a, _ in fl]),
                                       np.array([b for _, b in fl]))
                for (s, d), x in zip(fl, shift):
                    t[s] = model.draw_iterations(rng, si, truth[si, s, d] + x, iters)
                    t[s] *= fault.iter_mult(rng, hosts, ranks_per_host, s, d, iters)
                    t[d] = t[s]
                _case(cases, k, b, n, iters, step, fl, t, case_time)
                k += 1
        f.attrs["cases_completed"] = k
        _links(f, model.bytes, truth)
    return truth


def _head(f, model, hosts, ranks_per_host, fault):
    """The file's attributes, /ranks, /facts and /environment."""
    import h5py
    n = len(hosts) * ranks_per_host
    rank_host = [h for h in hosts for _ in range(ranks_per_host)]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    f.attrs.update({"schema_version": SCHEMA_VERSION, "ranks": n, "status": "complete", "error": "",
                    "command_line": f"gdrbench simulate: {len(hosts)} hosts x {ranks_per_host}, "
                                    f"fault {fault.cls} {fault.pct:g}% {','.join(map(str, fault.target))}",
                    "gdrbench_version": "simulated", "git_commit": "simulated", "start_utc": now,
                    "end_utc": now, "cases_completed": 0, "verdict": "simulated"})
    r = f.create_group("ranks")
    r["host"] = np.array(rank_host, dtype=h5py.string_dtype())
    r["local_rank"] = np.array([i % ranks_per_host for i in range(n)], dtype=np.int32)
    for k in ("gpu", "hca"):  # host memory over mpi: none named, as gdrbench writes them
        r[k] = np.array([""] * n, dtype=h5py.string_dtype())
    f.create_group("facts").attrs["simulated.noise_sources"] = ",".join(model.sources)
    f.create_group("environment")


def host_rounds_flows(hosts, gpus, step):
    """collectives/host_rounds.cpp: one-way step `step` of host-rounds, rail g of host a to rail g
    of host b for every host pair of round step // 2 (b to a on odd steps), as (src, dst) arrays."""
    pairs = np.array(schedule.host_pairs(hosts, step // 2), dtype=np.int64).reshape(-1, 2)
    g = np.arange(gpus)
    a, b = (pairs[:, 0, None] * gpus + g).ravel(), (pairs[:, 1, None] * gpus + g).ravel()
    return (b, a) if step % 2 else (a, b)


def write_host_rounds_run(path, model, hosts, gpus, fault, rng, max_rounds=0, case_time=0.75):
    """The file of `--pattern host-rounds` over len(hosts) x gpus ranks (rails by local index),
    `--max-rounds` as gdrbench runs it, with the schedule facts a real run stores. Written round
    by round and never as [n, n] matrices, so a fleet's file (1,024 x 8) fits in memory."""
    import h5py
    H, n = len(hosts), len(hosts) * gpus
    rounds = schedule.rounds_run(H, max_rounds)
    cells = {k: [] for k in ("size", "src", "dst", "time_us")}
    with h5py.File(path, "w") as f:
        _head(f, model, hosts, gpus, fault)
        f["facts"].attrs.update({
            "schedule.patterns": "host-rounds", "schedule.host_rounds.hosts": ",".join(hosts),
            "schedule.host_rounds.rank_host": ",".join(str(r // gpus) for r in range(n)),
            "schedule.host_rounds.rank_rail": ",".join(str(r % gpus) for r in range(n)),
            "schedule.host_rounds.rails": "local index", "schedule.host_rounds.rounds": str(rounds),
            "schedule.host_rounds.host_pairs": "; ".join(" ".join(f"{a}-{b}" for a, b in schedule.host_pairs(H, r))
                                                         for r in range(rounds))})
        if max_rounds:
            f["facts"].attrs["schedule.max_rounds"] = str(max_rounds)
        cases = f.create_group("cases")
        for r in range(rounds):
            flows = [host_rounds_flows(H, gpus, 2 * r + k) for k in (0, 1)]
            src, dst = (np.concatenate([fl[i] for fl in flows]) for i in (0, 1))
            truth = (np.log(model.base_s) + model.draw_residuals(rng, src.size)
                     + np.log(fault.factor_of(hosts, gpus, src, dst))[:, None])   # [links, sizes]
            for si, b in enumerate(model.bytes):
                iters, half = int(model.iters[si]), src.size // 2
                for k in (0, 1):
                    sel = slice(k * half, (k + 1) * half)
                    t = np.full((n, iters), np.nan)
                    t[src[sel]] = _draw_many(model, rng, si, truth[sel, si], iters)
                    t[dst[sel]] = t[src[sel]]
                    step = 2 * r + k
                    _case(cases, si * 2 * rounds + step, b, n, iters, step,
                          np.stack([src[sel], dst[sel]], axis=1), t, case_time, pattern="host-rounds")
                cells["size"].append(np.full(src.size, si))
                cells["src"].append(src)
                cells["dst"].append(dst)
                cells["time_us"].append(np.exp(truth[:, si]) * 1e6)
        f.attrs["cases_completed"] = 2 * rounds * len(model.bytes)
        _link_cells(f, model.bytes, n, {k: np.concatenate(v) for k, v in cells.items()})


def _draw_many(model, rng, k, log_medians, n):
    """[links, n] iteration times, each row as model.draw_iterations draws one."""
    q = np.asarray(model.iter_q[k])
    x = np.interp(rng.random((log_medians.size, n)), np.linspace(0, 1, len(q)), q)
    return np.exp(log_medians[:, None] + x - np.median(x, axis=1, keepdims=True))


def _link_cells(f, sizes, n, c):
    g = f.create_group("link_cells").create_group("bw_mpi_host_direct_host-rounds")
    g.attrs.update({"test": "bw", "test_kind": "bandwidth", "directions": 1, "transport": "mpi", "mem": "host",
                    "path": "direct", "pattern": "host-rounds", "ranks": n})
    g["bytes"] = np.array(sizes, dtype=np.int64)
    for k in ("size", "src", "dst"):
        g[k] = c[k].astype(np.int32)
    g["time_us"] = c["time_us"]
    g["algbw_gbps"] = np.array(sizes, dtype=np.float64)[c["size"]] / (c["time_us"] * 1e-6) / 1e9


def _case(cases, k, nbytes, n, iters, step, flows, t, case_time, pattern="rounds"):
    g = cases.create_group(f"{k:05d}")
    g["times"] = t
    g["flows"] = np.array(flows, dtype=np.int32).reshape(-1, 2)
    us = t[np.isfinite(t)] * 1e6
    slowest = np.nanmax(t, axis=0)
    g.attrs.update({"test": "bw", "test_kind": "bandwidth", "directions": 1, "checks_data": 1,
                    "window_means": "messages in flight per iteration",
                    "transport": "mpi", "mem": "host", "path": "direct", "dtype": "byte",
                    "op": "none", "reference": 0, "ranks": n, "bytes": nbytes, "count": nbytes, "src": -1,
                    "dst": -1, "iters": iters, "iters_auto": 1, "warmup": 3, "window": 2, "slots": 2,
                    "check": 1, "wrong": 0, "pattern": pattern, "step": step, "case_time_s": case_time,
                    "via_host": 0, "time_us_mean": float(np.mean(slowest) * 1e6),
                    "time_us_median": float(np.median(slowest) * 1e6), "time_us_min": float(us.min()),
                    "time_us_max": float(us.max()), "time_us_p99": float(np.percentile(slowest * 1e6, 99)),
                    "algbw_gbps": float(nbytes / np.mean(slowest) / 1e9),
                    "busbw_gbps": float(nbytes / np.mean(slowest) / 1e9)})


def _links(f, sizes, truth):
    g = f.create_group("links").create_group("bw_mpi_host_direct_rounds")
    g.attrs.update({"test": "bw", "test_kind": "bandwidth", "directions": 1, "transport": "mpi", "mem": "host",
                    "path": "direct", "pattern": "rounds", "ranks": truth.shape[1]})
    g["bytes"] = np.array(sizes, dtype=np.int64)
    t = np.exp(truth)
    g["time_us"] = t * 1e6
    g["algbw_gbps"] = np.array(sizes, dtype=np.float64)[:, None, None] / t / 1e9
