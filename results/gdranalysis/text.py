"""Plain-text tables and number formats shared by the subcommands."""

import math


def fmt_us(x) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.3f}" if x < 10 else f"{x:.2f}" if x < 1000 else f"{x:.1f}"


def fmt_num(x, digits=3) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.{digits}f}"


def columns(hdr, rows, right=frozenset()) -> list:
    """Left-aligned text columns (right-aligned for the indices in `right`)."""
    rows = [tuple(str(c) for c in r) for r in rows]
    widths = [max([len(str(h))] + [len(r[i]) for r in rows]) for i, h in enumerate(hdr)]

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(tuple(map(str, hdr)))] + [line(r) for r in rows]
