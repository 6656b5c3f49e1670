"""What the factor model (factor_model.py) and the tail (tails.py) name, and the chance rule
both judge counts with: below both, so that neither imports the other's judging."""

from __future__ import annotations

import dataclasses

SIDE = {"send": "send side", "recv": "receive side"}


def binom_p(k, m, p0):
    """P(X >= k) for X binomial over m at p0; 1 below two (one outlier is never enough)."""
    from scipy.stats import binom
    return float(binom.sf(k - 1, m, p0)) if k >= 2 and m > 0 else 1.0


@dataclasses.dataclass
class Part:
    """A part the model names: a host's side, a link direction, or a step."""
    kind: str              # host, link, step
    cls: str               # slow, intermittent, lossy tail, step-wide
    side: str              # host: "send side", "receive side", "both sides"; link: "A->B"
    hosts: tuple           # host: (h,); link: (from, to); step: ()
    slower: float          # times slower (median over its outlier comparisons)
    outlier_in: int
    measured_in: int
    max_z: float
    p_value: float
    evidence: str
