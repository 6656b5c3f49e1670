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


def shown(s) -> str:
    """A cell with a newline, a control byte or a byte that was not UTF-8 (a
    file name can hold any): bash's $'...' form, one line that pastes back."""
    s = str(s)
    if all(c.isprintable() and not 0xdc80 <= ord(c) <= 0xdcff for c in s):
        return s
    out = []
    for c in s:
        o = ord(c)
        if 0xdc80 <= o <= 0xdcff:            # surrogateescape: the raw byte
            out.append(f"\\x{o - 0xdc00:02x}")
        elif c in "\\'":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif not c.isprintable():
            out.append(f"\\x{o:02x}" if o < 256 else f"\\u{o:04x}")
        else:
            out.append(c)
    return "$'" + "".join(out) + "'"


def columns(hdr, rows, right=frozenset()) -> list:
    """Left-aligned text columns (right-aligned for the indices in `right`)."""
    rows = [tuple(shown(c) for c in r) for r in rows]
    widths = [max([len(str(h))] + [len(r[i]) for r in rows]) for i, h in enumerate(hdr)]

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(tuple(map(str, hdr)))] + [line(r) for r in rows]
