"""`gdrbench compare BASE.h5 NEW.h5`: which cases got slower or faster.

A case's sample is its per-iteration time of the slowest rank (nanmax over
ranks of `times`). For every case present in both runs the estimate is
median(new) / median(base) and its confidence interval comes from
`scipy.stats.bootstrap` (independent resampling of both samples, seeded per
case so that the answer does not depend on order or on the day).

Verdict, with t = threshold / 100:
  regression   the whole interval lies above 1 + t
  improvement  the whole interval lies below 1 - t
  same         otherwise (including "maybe different, but not provably by t")
  n/a          too few iterations in a run to resample (fewer than 2)

Run-to-run noise. Iterations of one case run back to back, within
microseconds to milliseconds, so they share the machine's state of that
moment (process placement, other tenants' load, clock frequency, buffer
alignment). The bootstrap interval therefore describes the iteration
noise only, and two runs of the same configuration routinely differ by
more than it admits. With `--run-noise auto` (the default) the spread of
log(ratio) across all common cases (1.4826 x MAD, robust to a minority of
real changes) minus the typical iteration noise estimates a case-level
run-to-run standard deviation s; each case's interval is then widened in
log space to sqrt(h^2 + (z s)^2) on each side (h: the bootstrap half-width
on that side, z: the normal quantile of the confidence level), the way a
random-effects model adds between-study variance. A copy of a run, or runs
on a quiet machine, give s ~ 0 and the bootstrap interval unchanged.
`--run-noise off` keeps the bootstrap interval alone; `--run-noise PCT`
fixes s (e.g. from the archive's history of the case).
"""

from __future__ import annotations

import dataclasses
import warnings
import zlib

import numpy as np

from . import numbers
from .schema import Case, InputError, Run
from .text import columns, fmt_us

DEFAULT_THRESHOLD_PCT = 5.0
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 9999
DEFAULT_SEED = 20240601
METHODS = ("percentile", "basic", "BCa")
DEFAULT_METHOD = "percentile"
MIN_CASES_FOR_NOISE = 8   # fewer common cases: no run-to-run estimate (s = 0)


@dataclasses.dataclass
class CaseComparison:
    key: dict
    label: str
    base_case: str
    new_case: str
    n_base: int
    n_new: int
    base_median_us: float
    new_median_us: float
    ratio: float
    ci_low: float             # the interval the verdict uses
    ci_high: float
    boot_low: float           # bootstrap interval from the iterations alone
    boot_high: float
    verdict: str

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Comparison:
    base: Run
    new: Run
    threshold_pct: float
    confidence: float
    method: str
    n_resamples: int
    seed: int
    cases: list
    only_base: list
    only_new: list
    notes: list
    run_noise: str = "auto"       # "auto", "off" or a percentage
    run_noise_sd: float = 0.0     # s, as a fraction (0.03 = 3 %)

    def count(self, verdict):
        return sum(1 for c in self.cases if c.verdict == verdict)

    @property
    def regressions(self):
        return [c for c in self.cases if c.verdict == "regression"]

    def as_dict(self):
        return {
            "base": self.base.path,
            "new": self.new.path,
            "threshold_pct": self.threshold_pct,
            "confidence": self.confidence,
            "method": f"scipy.stats.bootstrap ({self.method}), ratio of medians of per-iteration slowest-rank times",
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "run_noise": self.run_noise,
            "run_noise_sd_pct": 100.0 * self.run_noise_sd,
            "summary": {v: self.count(v) for v in ("regression", "improvement", "same", "n/a")}
            | {"compared": len(self.cases), "only_base": len(self.only_base),
               "only_new": len(self.only_new)},
            "cases": [c.as_dict() for c in self.cases],
            "only_base": self.only_base,
            "only_new": self.only_new,
            "notes": self.notes,
        }


def _ratio_of_medians(base, new, axis=-1):
    return np.median(new, axis=axis) / np.median(base, axis=axis)


def case_seed(seed: int, key: tuple) -> list:
    """A seed for one case: the user's seed and a stable hash of the key."""
    return [int(seed), zlib.crc32(repr(key).encode())]


def ratio_ci(base: np.ndarray, new: np.ndarray, *, confidence=DEFAULT_CONFIDENCE,
             n_resamples=DEFAULT_RESAMPLES, method=DEFAULT_METHOD, seed=(DEFAULT_SEED,)):
    """Point estimate and bootstrap interval of median(new)/median(base)."""
    from scipy import stats

    base = np.asarray(base, dtype=np.float64)
    new = np.asarray(new, dtype=np.float64)
    ratio = float(np.median(new) / np.median(base))
    if base.size < 2 or new.size < 2:
        return ratio, float("nan"), float("nan")
    if np.ptp(base) == 0 and np.ptp(new) == 0:
        return ratio, ratio, ratio   # no spread at all: the interval is the point
    rng = np.random.default_rng(seed)
    # Keep memory bounded for long runs: resample in batches of at most ~4M values.
    batch = max(1, min(n_resamples, 4_000_000 // max(1, base.size + new.size)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # BCa's degenerate-distribution warning: we check NaN below
        res = stats.bootstrap((base, new), _ratio_of_medians, n_resamples=n_resamples,
                              batch=batch, vectorized=True, paired=False, axis=-1,
                              confidence_level=confidence, method=method, random_state=rng)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (np.isfinite(lo) and np.isfinite(hi)) and method != "percentile":
        return ratio_ci(base, new, confidence=confidence, n_resamples=n_resamples,
                        method="percentile", seed=seed)
    return ratio, lo, hi


def verdict(lo: float, hi: float, threshold_pct: float) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "n/a"
    t = threshold_pct / 100.0
    if lo > 1.0 + t:
        return "regression"
    if hi < 1.0 - t:
        return "improvement"
    return "same"


def _compare_case(b: Case, n: Case, confidence, n_resamples, method, seed):
    """Bootstrap one case; the verdict is set later, once run noise is known."""
    sb, sn = b.slowest(), n.slowest()
    sb, sn = sb[np.isfinite(sb) & (sb > 0)], sn[np.isfinite(sn) & (sn > 0)]
    if sb.size == 0 or sn.size == 0:
        ratio = lo = hi = float("nan")
    else:
        ratio, lo, hi = ratio_ci(sb, sn, confidence=confidence, n_resamples=n_resamples,
                                 method=method, seed=case_seed(seed, b.key))
    return CaseComparison(
        key=b.key_dict(), label=b.label(), base_case=b.name, new_case=n.name,
        n_base=int(sb.size), n_new=int(sn.size),
        base_median_us=float(np.median(sb) * 1e6) if sb.size else float("nan"),
        new_median_us=float(np.median(sn) * 1e6) if sn.size else float("nan"),
        ratio=ratio, ci_low=lo, ci_high=hi, boot_low=lo, boot_high=hi, verdict="n/a")


def _z(confidence):
    from scipy import stats
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def estimate_run_noise(rows, confidence) -> float | None:
    """Case-level run-to-run sd of log(ratio), or None with too few cases."""
    ok = [r for r in rows if np.isfinite(r.ratio) and np.isfinite(r.boot_low)
          and np.isfinite(r.boot_high) and r.ratio > 0 and r.boot_low > 0]
    if len(ok) < MIN_CASES_FOR_NOISE:
        return None
    d = np.log([r.ratio for r in ok])
    total = 1.4826 * float(np.median(np.abs(d - np.median(d))))
    within = (np.log([r.boot_high for r in ok]) - np.log([r.boot_low for r in ok])) / (2 * _z(confidence))
    return float(np.sqrt(max(0.0, total ** 2 - float(np.median(within ** 2)))))


def widen(ratio, lo, hi, s, z):
    """Add a run-to-run sd s (log scale) to an interval, side by side, in quadrature."""
    if s <= 0 or not (np.isfinite(lo) and np.isfinite(hi) and ratio > 0 and lo > 0):
        return lo, hi
    p, l, h = np.log(ratio), np.log(lo), np.log(hi)
    return (float(np.exp(p - np.hypot(p - l, z * s))), float(np.exp(p + np.hypot(h - p, z * s))))


def _differences(base: Run, new: Run) -> list:
    """Notes on set-up differences a reader should know about."""
    notes = []
    for r in (base, new):
        notes += r.warnings
    if sorted(set(base.hosts)) != sorted(set(new.hosts)):
        notes.append(f"hosts differ: {','.join(sorted(set(base.hosts)))} vs "
                     f"{','.join(sorted(set(new.hosts)))}")
    for field in ("iters", "warmup", "window", "chunk_bytes"):
        vb = sorted({c.get(field) for c in base.cases if c.get(field) is not None})
        vn = sorted({c.get(field) for c in new.cases if c.get(field) is not None})
        if vb and vn and vb != vn:
            notes.append(f"{field} differ: {','.join(map(str, vb))} vs {','.join(map(str, vn))}")
    for r in (base, new):
        bad = [c.label() for c in r.cases if (c.get("wrong") or 0) > 0]
        if bad:
            notes.append(f"{r.path}: {len(bad)} case(s) with wrong results, e.g. {bad[0]}")
    return notes


def parse_run_noise(v) -> str:
    v = str(v).strip().lower().rstrip("%")
    if v in ("auto", "off"):
        return v
    x = numbers.check(v, "compare --run-noise", source="--run-noise (auto, off or a percentage)")
    return f"{x:g}"


def compare_runs(base: Run, new: Run, *, threshold_pct=DEFAULT_THRESHOLD_PCT,
                 confidence=DEFAULT_CONFIDENCE, n_resamples=DEFAULT_RESAMPLES,
                 method=DEFAULT_METHOD, seed=DEFAULT_SEED, run_noise="auto",
                 require_common=True) -> Comparison:
    if threshold_pct < 0:
        raise InputError(f"--threshold {threshold_pct}: must be >= 0")
    if not 0 < confidence < 1:
        raise InputError(f"--confidence {confidence}: must lie between 0 and 1")
    if n_resamples < 100:
        raise InputError(f"--resamples {n_resamples}: use at least 100")
    run_noise = parse_run_noise(run_noise)
    bk, nk = base.by_key(), new.by_key()
    common = [c for c in base.cases if c.key in nk]
    if require_common and not common:
        raise InputError(f"no common cases between {base.path} ({len(base.cases)} cases) "
                         f"and {new.path} ({len(new.cases)} cases)")
    rows = [_compare_case(c, nk[c.key], confidence, n_resamples, method, seed) for c in common]
    notes = _differences(base, new)
    if run_noise == "off":
        s = 0.0
    elif run_noise == "auto":
        est = estimate_run_noise(rows, confidence)
        if est is None:
            s = 0.0
            notes.append(f"run-to-run noise not estimated: fewer than {MIN_CASES_FOR_NOISE} "
                         "comparable cases; intervals are the bootstrap's alone")
        else:
            s = est
    else:
        s = float(run_noise) / 100.0
    z = _z(confidence)
    for r in rows:
        r.ci_low, r.ci_high = widen(r.ratio, r.boot_low, r.boot_high, s, z)
        r.verdict = verdict(r.ci_low, r.ci_high, threshold_pct)
    only_base = [dict(c.key_dict(), label=c.label(), case=c.name) for c in base.cases if c.key not in nk]
    only_new = [dict(c.key_dict(), label=c.label(), case=c.name) for c in new.cases if c.key not in bk]
    return Comparison(base=base, new=new, threshold_pct=threshold_pct, confidence=confidence,
                      method=method, n_resamples=n_resamples, seed=seed, cases=rows,
                      only_base=only_base, only_new=only_new, notes=notes,
                      run_noise=run_noise, run_noise_sd=s)


def format_table(cmp: Comparison, *, show_same=True) -> str:
    """The human view: one line per case, then the one-sided cases and a summary."""
    out = [f"# base: {cmp.base.describe()}", f"# new:  {cmp.new.describe()}"]
    for n in cmp.notes:
        out.append(f"# note: {n}")
    out.append(f"# time: median over iterations of the slowest rank's time, us; ratio = new/base; "
               f"{cmp.confidence:.0%} CI by bootstrap ({cmp.method}, {cmp.n_resamples} resamples, "
               f"seed {cmp.seed}); run-to-run noise {_noise_text(cmp)}; threshold {cmp.threshold_pct:g}%")
    hdr = ("test", "transport", "mem", "path", "dtype", "op", "bytes", "ranks",
           "base(us)", "new(us)", "ratio", "CI low", "CI high", "verdict")
    rows = []
    for c in cmp.cases:
        if not show_same and c.verdict == "same":
            continue
        k = c.key
        test = k["test"] + (f"{k['src']}>{k['dst']}" if k["src"] >= 0 else "")
        rows.append((test, k["transport"] + ("*" if k["reference"] else ""), k["mem"], k["path"],
                     k["dtype"], k["op"], str(k["bytes"]), str(k["ranks"]),
                     fmt_us(c.base_median_us), fmt_us(c.new_median_us),
                     f"{c.ratio:.3f}" if np.isfinite(c.ratio) else "-",
                     f"{c.ci_low:.3f}" if np.isfinite(c.ci_low) else "-",
                     f"{c.ci_high:.3f}" if np.isfinite(c.ci_high) else "-",
                     c.verdict.upper() if c.verdict == "regression" else c.verdict))
    out += columns(hdr, rows, right={6, 7, 8, 9, 10, 11, 12})
    for title, lst in (("only in base", cmp.only_base), ("only in new", cmp.only_new)):
        if lst:
            out.append(f"# {title} ({len(lst)}): " + "; ".join(d["label"] for d in lst))
    s = cmp.as_dict()["summary"]
    out.append(f"# {s['compared']} cases compared: {s['regression']} regression, "
               f"{s['improvement']} improvement, {s['same']} same"
               + (f", {s['n/a']} n/a" if s["n/a"] else "")
               + f"; {s['only_base']} only in base, {s['only_new']} only in new")
    return "\n".join(out)


def _noise_text(cmp):
    if cmp.run_noise == "off":
        return "off (iteration noise only)"
    how = "estimated" if cmp.run_noise == "auto" else "given"
    return f"{how} sd {100 * cmp.run_noise_sd:.1f}%"
