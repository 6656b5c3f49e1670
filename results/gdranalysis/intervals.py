"""Confidence intervals of rates counted over trials (recall, false-positive rates)."""

from __future__ import annotations

import math


def wilson(k, n, z=1.96):
    """Wilson score interval of k successes in n trials (95 % at z 1.96); (nan, nan) for n 0."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))
