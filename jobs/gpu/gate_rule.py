"""The GPU gate's decision rule: a sequential sign test on paired rounds.

A gate target compares two tools, A and B, measured once each in every round (ABBA order), and
asks whether the ratio A / B (for latency: B / A, so that larger is always better) reaches a
target t, e.g. 0.97. Round i gives one paired ratio r_i. Rounds are added one at a time; after
each, the rule looks at r_1..r_n and says

  FAIL        the rounds show a gap: at most fail_bound(n) of the n ratios reach t,
  PASS        the rounds show the target met: at most pass_bound(n) of them are at or below t,
  UNRESOLVED  neither yet (more rounds, or the round cap or the time budget ends the gate).

Why a sign test: at 1-16 MiB each tool's rows jump between two levels from run to run, so the
ratios are far from normal (a t-interval of 3 bimodal rounds can be tight by chance). The sign
test assumes only that rounds are independent: if the median of the paired ratio is t or more,
each r_i reaches t with probability >= 1/2, whatever its distribution, and the count of ratios
reaching t is at least a Binomial(n, 1/2) random walk.

Why it holds under sequential looks: the bounds are fixed in advance, one per look n = 1, 2, ...,
and chosen greedily so that the exact probability that the walk EVER crosses the FAIL bound
(computed by dynamic programming over the walk, not by a union bound) stays <= ALPHA_FAIL (1 %)
for a ratio whose median is exactly on the target. A ratio above the target crosses less often;
stopping early (the target PASSed, every target resolved, the budget or the cap) only removes
looks. So a gate of any length FAILs a target it meets with probability <= 1 %. The PASS bound
is the mirror image at ALPHA_PASS (20 %): it only ends the sampling of a target early and
never fails the gate; a real gap read as PASS is at most that likely at the boundary, less below
it (the gate before this rule passed any median of 3 rounds at or above the target).

Cost of that guarantee: a FAIL needs at least 7 rounds (all 7 below: 2^-7 = 0.8 %); a PASS at
least 3 (all 3 above: 2^-3 = 12.5 %; later 5 of 6, 7 of 9, ...). Fewer rounds leave a target
UNRESOLVED, printed with its interval.

The interval printed is the one the decision reads: [L, U] with L the (pass_bound(n) + 1)-th
smallest ratio and U the (fail_bound(n) + 1)-th largest; PASS when L > t, FAIL when U < t.
An end with no bound yet is printed as '-'.

  gate_rule.py bounds [N]     the two bound sequences up to N (default 16) and their exact levels
"""
import sys

ALPHA_FAIL = 0.01
ALPHA_PASS = 0.20
_cache = {}


def _greedy_bounds(alpha, n_max):
    """Bounds c_1..c_n_max (-1 = no decision possible at that look): at each look the largest c
    such that the probability that a Binomial(1/2) walk of 'successes' is ever <= its bound,
    up to this look, stays <= alpha. Returns (bounds, exact level)."""
    bounds = []
    alive = {0: 1.0}  # successes so far -> probability, over walks not yet crossed
    spent = 0.0
    for n in range(1, n_max + 1):
        nxt = {}
        for s, p in alive.items():
            for step in (0, 1):
                nxt[s + step] = nxt.get(s + step, 0.0) + p / 2
        c, add = -1, 0.0
        while True:
            extra = nxt.get(c + 1, 0.0)
            if spent + add + extra > alpha + 1e-15:
                break
            c, add = c + 1, add + extra
        spent += add
        bounds.append(c)
        alive = {s: p for s, p in nxt.items() if s > c}
    return bounds, spent


def bounds(kind, n_max=64):
    """fail or pass bounds for looks 1..n_max (cached)."""
    key = (kind, n_max)
    if key not in _cache:
        _cache[key] = _greedy_bounds(ALPHA_FAIL if kind == "fail" else ALPHA_PASS, n_max)
    return _cache[key][0]


def level(kind, n_max):
    """The exact probability, at a median ratio on the target, that the walk crosses the bound
    within n_max looks."""
    return _greedy_bounds(ALPHA_FAIL if kind == "fail" else ALPHA_PASS, n_max)[1]


def paired(a, b):
    """Ratios a_i / b_i of the rounds where both tools have a value."""
    return [x / y for x, y in zip(a, b) if x is not None and y is not None and y > 0 and x > 0]


def decide(ratios, target):
    """Verdict of the rounds so far: (verdict, lo, hi, n) with verdict PASS, FAIL or UNRESOLVED
    and [lo, hi] the decision interval (None: no bound yet at this n)."""
    n = len(ratios)
    if n == 0:
        return "UNRESOLVED", None, None, 0
    r = sorted(ratios)
    cf = bounds("fail", max(64, n))[n - 1]
    cp = bounds("pass", max(64, n))[n - 1]
    hi = r[n - 1 - cf] if cf >= 0 else None
    lo = r[cp] if cp >= 0 else None
    reach = sum(1 for x in ratios if x >= target)
    at_or_below = sum(1 for x in ratios if x <= target)
    if reach <= cf:
        return "FAIL", lo, hi, n
    if at_or_below <= cp:
        return "PASS", lo, hi, n
    return "UNRESOLVED", lo, hi, n


def decide_sequential(ratios, target):
    """The verdict of the rounds taken one at a time: the first look that resolves stops the
    sampling (what the gate does). (verdict, lo, hi, rounds used)."""
    for k in range(1, len(ratios) + 1):
        v = decide(ratios[:k], target)
        if v[0] != "UNRESOLVED":
            return v
    return decide(ratios, target)


def fmt_interval(lo, hi):
    return f"[{'-' if lo is None else f'{lo:.3f}'}, {'-' if hi is None else f'{hi:.3f}'}]"


def median(xs):
    v = sorted(x for x in xs if x is not None)
    if not v:
        return None
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def main(argv):
    if argv[:1] == ["bounds"]:
        try:
            n = int(argv[1]) if len(argv) > 1 else 16
            assert n >= 1
        except (ValueError, AssertionError):
            print(f"gate_rule.py bounds: want a count of looks >= 1, not {argv[1]!r}", file=sys.stderr)
            return 2
        for kind in ("fail", "pass"):
            b = bounds(kind, n)
            print(f"{kind}: look n -> the most ratios {'reaching' if kind == 'fail' else 'at or below'} "
                  f"the target that still {kind.upper()}s (-1: none possible)")
            print("  " + " ".join(f"{i + 1}:{c}" for i, c in enumerate(b)))
            print(f"  exact level within {n} looks at a median on the target: {level(kind, n):.5f}")
        return 0
    print(__doc__)
    return 0 if argv[:1] in ([], ["-h"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
