"""The short table full_sweep.sh prints last: per JSON Lines file, 8 B device latency per transport
and path, and from 64 MiB ucx direct bw against the copy-d2d ceiling, staged bw and allreduce busbw."""
import json
import sys


def rows(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def pick(rs, **kw):
    return [r for r in rs if all(r.get(k) == v for k, v in kw.items())]


for path in sys.argv[1:]:
    rs = rows(path)
    print(f"== {path.split('/')[-1]}: {len(rs)} rows, wrong total {sum(r['wrong'] for r in rs)}")
    lat = pick(rs, test="latency", mem="cuda", bytes=8)
    for r in lat:
        print(f"  latency 8 B cuda {r['transport']:>4} {r['path']:>6}: {r['time_us_mean']:.2f} us")
    for size in sorted({r["bytes"] for r in rs if r["bytes"] >= 64 << 20}):
        d2d = pick(rs, test="bw", transport="copy-d2d", bytes=size)
        ucx = pick(rs, test="bw", transport="ucx", mem="cuda", path="direct", bytes=size)
        st = pick(rs, test="bw", mem="cuda", path="staged", bytes=size)
        ar = pick(rs, test="allreduce", mem="cuda", bytes=size, reference=False)
        line = f"  {size >> 20:>5} MiB:"
        if ucx:
            line += f" ucx direct bw {ucx[0]['algbw_gbps']:.0f}"
            if d2d:
                line += f" / d2d {d2d[0]['algbw_gbps']:.0f} = {ucx[0]['algbw_gbps'] / d2d[0]['algbw_gbps']:.2f}"
        for s in st:
            line += f"; staged({s['transport']}) {s['algbw_gbps']:.1f}"
        for a in ar:
            line += f"; allreduce {a['transport']}/{a['path']} busbw {a['busbw_gbps']:.1f}"
        print(line)
