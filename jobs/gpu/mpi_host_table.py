"""The table of jobs/gpu/mpi_host_probe.sh: `gdrbench -T mpi -m host` against the MPI's own
loops (mpi_window_bw.c: osu_bw's; mpi_pingpong.c: osu_latency's blocking loop and a polled one),
per round and as medians of the rounds. bw: ratio gdrbench / own loop (>= 1: at or above it);
latency: ratio each shape's median / the blocking ping-pong's (<= 1.10 is issue 48's target).

  mpi_host_table.py DIR ROUNDS SIZE...

Exit 1 when any tool's figure of any round is missing or unparsed (the table says '-' there).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_table import best as med, load_jsonl, pick, pingpong_us, rate  # noqa: E402  one reading of each tool


def window_gbps(path):
    """mpi_window_bw's GB/s, or None."""
    if os.path.exists(path):
        m = re.search(r"GB/s: ([0-9.]+)", open(path, errors="replace").read())
        if m:
            return float(m.group(1))
    return None


def gdr_row(path, test, size):
    return pick(load_jsonl(path), test, "mpi", size)


def fmt(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}"


def bw_lines(d, rounds, size):
    own = [window_gbps(f"{d}/r{r}_own_bw_{size}.txt") for r in rounds]
    out = [f"bw {size} B, GB/s per round (median of rounds; ratio to osu_bw's loop)",
           f"  {'own window loop':24s} {[fmt(x) for x in own]}  median {fmt(med(own))}"]
    for v in ("bw", "slots1", "nocheck"):
        rows = [gdr_row(f"{d}/r{r}_gdr_{v}_{size}.jsonl", "bw", size) for r in rounds]
        by_median = [rate(x) for x in rows]                                # the row's figure (median time)
        by_mean = [x and x.get("algbw_gbps") for x in rows]                # all bytes / all time, as OSU
        for how, xs in (("median", by_median), ("mean", by_mean)):
            m, o = med(xs), med(own)
            out.append(f"  {'gdrbench ' + v + ' (' + how + ')':24s} {[fmt(x) for x in xs]}  median {fmt(m)}  "
                       f"ratio {fmt(m / o if m and o else None, 3)}")
    return out


def lat_lines(d, rounds):
    block = [pingpong_us(f"{d}/r{r}_own_lat_block.txt") for r in rounds]
    poll = [pingpong_us(f"{d}/r{r}_own_lat_poll.txt") for r in rounds]
    sendpoll = [pingpong_us(f"{d}/r{r}_own_lat_sendpoll.txt") for r in rounds]
    gdr = [(lambda x: x and x.get("time_us_median"))(gdr_row(f"{d}/r{r}_gdr_lat.jsonl", "latency", 8))
           for r in rounds]
    b = med(block)
    out = ["8 B latency, one-way us per round (median of rounds; ratio = x / blocking ping-pong)"]
    for name, xs in (("ping-pong blocking", block), ("ping-pong polled", poll), ("blocking send, polled recv", sendpoll),
                     ("gdrbench -T mpi", gdr)):
        m = med(xs)
        out.append(f"  {name:24s} {[fmt(x, 3) for x in xs]}  median {fmt(m, 3)}  ratio {fmt(m / b if m and b else None, 3)}")
    return out


def main(argv):
    d, n, sizes = argv[1], int(argv[2]), [int(s) for s in argv[3:]]
    rounds = list(range(1, n + 1))
    lines = [f"# gdrbench -T mpi -m host against the MPI's own loops, {n} ABBA rounds ({d})"]
    for s in sizes:
        lines += bw_lines(d, rounds, s)
    lines += lat_lines(d, rounds)
    print("\n".join(lines))
    missing = sum(line.count("'-'") for line in lines)
    if missing:
        print(f"mpi_host_table: {missing} figures missing or unparsed (see the files in {d})", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
