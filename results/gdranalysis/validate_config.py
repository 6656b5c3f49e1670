"""What `gdrbench validate` reads beside the timings: each host's configuration and its NICs'
error counters, from `gdrbench doctor` (the `config` and `counters` of its JSON).

Configuration drift: for every value doctor records (MTU, link rate and width, driver and
firmware versions, PCIe link, GPU ECC, clocks and persistence), the hosts that hold it are
compared and a host whose value differs from the majority's is named, class `configuration`,
as NHC and ClusterKit do ("eth0 MTU 1000, its 3 peers 1500"). A value doctor could not read
("unknown") is left out of the comparison: it is never drift. A value held by half the hosts
or fewer (a container's veth) is not compared, and without a strict majority nobody is named.

Counters: doctor reads them when validate starts (doctor.json) and again after the run
(`doctor --counters`, counters-end.json); a port whose drops, errors or carrier changes moved
is named beside the host's timing verdict, as a second witness.

Loss by TCP's own counts: TCP resends a lost segment within a round trip, so loss of 1-2 %
hardly moves a transfer's time (docs/validate.md, the loss class). It does move the counts: a
host that loses what it sends resends (RetransSegs of OutSegs), a host that loses what it
receives gets segments out of order (TCPOFOQueue of InSegs). Each host's share on each side
is judged against its peers' median share as the tails are: named `lossy (TCP counts)` when
its count is beyond the peers' share by the binomial at P < ALPHA over 2 x hosts, the share is
at least LOSS_FOLD times the peers' and at least LOSS_MIN_SHARE. Only TCP's traffic counts:
the transports that bypass the kernel (verbs, UCX over RDMA) leave these counts alone.
"""

from __future__ import annotations

import collections
import json
import os
import time

from .model_parts import binom_p
from .validate_verdict import Finding

UNKNOWN = ("unknown", "")
LOSS_SIDES = (("send side", "tcp/RetransSegs", "tcp/OutSegs", "resent"),
              ("receive side", "tcp/TCPOFOQueue", "tcp/InSegs", "out of order"))
ALPHA = 1e-3
LOSS_FOLD = 3.0          # a named host's share at least this many times its peers' median
LOSS_MIN_SHARE = 0.002   # and at least this share of its segments (0.2 %)
LOSS_MIN_SEGMENTS = 1000
LABEL = {"mtu": "MTU", "speed_mbps": "speed (Mb/s)", "fw_ver": "firmware", "active_mtu": "active MTU",
         "ecc": "ECC", "pcie_width": "PCIe width", "pcie_speed": "PCIe speed",
         "pcie_max_width": "PCIe max width", "pcie_max_speed": "PCIe max speed"}


def read_doctor(path, launched=()) -> dict:
    """{host: report} of a gdrbench-doctor document; {} when it is missing or unreadable. Where
    the hosts call themselves otherwise than the allocation (FQDN, an address) and there is one
    report per host launched, the reports (in rank order: one rank per host, in launch order)
    are named after `launched`."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    reports = [r for r in doc.get("reports", []) if isinstance(r, dict) and r.get("host")]
    if launched and not {r["host"] for r in reports} <= set(launched) and len(reports) == len(launched):
        return dict(zip(launched, reports))
    return {r["host"]: r for r in reports}


def label(key) -> str:
    """"net/eth0/mtu" -> "eth0 MTU", "ib/mlx5_0/1/rate" -> "mlx5_0 port 1 rate", "gpu/0/ecc" -> "GPU 0 ECC"."""
    parts = key.split("/")
    field = LABEL.get(parts[-1], parts[-1].replace("_", " "))
    if parts[0] == "ib" and len(parts) == 4:
        return f"{parts[1]} port {parts[2]} {field}"
    if parts[0] == "gpu":
        return f"GPU {parts[1]} {field}" if len(parts) == 3 else f"GPU {field}"
    return f"{' '.join(parts[1:-1])} {field}"


def port_label(port) -> str:
    """"net/eth0" -> "eth0", "ib/mlx5_0/1" -> "mlx5_0 port 1"."""
    parts = port.split("/")
    return f"{parts[1]} port {parts[2]}" if parts[0] == "ib" and len(parts) == 3 else " ".join(parts[1:])


def drift(reports, hosts) -> list:
    """Configuration findings: one per host unlike the majority of its peers, its keys in one line."""
    hosts = [h for h in hosts if h in reports]
    odd = collections.defaultdict(list)
    keys = list(dict.fromkeys(k for h in hosts for k in (reports[h].get("config") or {})))
    for key in keys:
        known = {h: str(reports[h]["config"][key]) for h in hosts
                 if str((reports[h].get("config") or {}).get(key, "")) not in UNKNOWN}
        if len(known) * 2 <= len(hosts) or len(known) < 3:
            continue   # held by too few hosts to have a majority (2 hosts: which one is odd?)
        value, count = collections.Counter(known.values()).most_common(1)[0]
        if count * 2 <= len(known):
            continue   # no value is the majority's
        for h, v in known.items():
            if v != value:
                odd[h].append(f"{label(key)} {v}, its {count} peers {value}")
    return [Finding("configuration", (h,), h, float("nan"), "; ".join(odd[h]), cls="configuration") for h in hosts if h in odd]


def counters_after(rec, lau, hosts, deadline, out) -> dict:
    """`doctor --counters` on the hosts after the run, into counters-end.json: {host: report}."""
    path = os.path.join(out, "counters-end.json")
    if not hosts or deadline - time.monotonic() < 2:
        return {}
    rec.run(lau.cmd(hosts, 1, ["doctor", "--counters", "-o", path, "--force", "--timeout", "10"]), deadline,
            "doctor counters after the run")
    return read_doctor(path, hosts)


def moved(before, after, hosts) -> dict:
    """{host: "eth0 carrier_changes +2 (ended down), mlx5_0 port 1 symbol_error +12"} for the
    ports whose counters rose between the two reads; a counter that went backwards (a driver
    reloaded, a NIC reset) is said as such."""
    out = {}
    for h in hosts:
        b = (before.get(h) or {}).get("counters") or {}
        a = (after.get(h) or {}).get("counters") or {}
        said = []
        for key in b:
            if key not in a or a[key] == b[key] or key.startswith("tcp/"):
                continue   # TCP resends some on any busy fabric: judged against the peers by lossy()
            port, name = key.rsplit("/", 1)
            d = a[key] - b[key]
            txt = f"{port_label(port)} {name} {'+' if d > 0 else ''}{d}"
            if d < 0:
                txt += " (went back: reset or reloaded)"
            if name == "carrier_changes":
                up = a.get(port + "/carrier_up_count", 0) - b.get(port + "/carrier_up_count", 0)
                down = a.get(port + "/carrier_down_count", 0) - b.get(port + "/carrier_down_count", 0)
                txt += " (ended down)" if down > up else f" ({down} down, {up} up; time down not counted)"
            if name in ("carrier_up_count", "carrier_down_count"):
                continue   # said with carrier_changes
            said.append(txt)
        if said:
            out[h] = ", ".join(said)
    return out


def witness(verdicts, moved_by_host, notes) -> None:
    """Each host's moved counters beside its verdict (the status stays the timing's)."""
    for v in verdicts:
        m = moved_by_host.get(v.host)
        if m:
            v.why = (v.why + "; " if v.why else "") + "counters moved: " + m
    for h, m in sorted(moved_by_host.items()):
        notes.append(f"second witness: {h}: counters moved over the run: {m}")


def _delta(before, after, h, key):
    b = ((before.get(h) or {}).get("counters") or {}).get(key)
    a = ((after.get(h) or {}).get("counters") or {}).get(key)
    return a - b if isinstance(a, int) and isinstance(b, int) and a >= b else None


def lossy(before, after, hosts, named=()) -> list:
    """Findings of class `lossy (TCP counts)` (module doc); hosts in `named` (the timing named
    them) are left out of their peers' reference, as a host's own fault must not raise the bar."""
    shares = {}
    for side, num, den, word in LOSS_SIDES:
        for h in hosts:
            k, n = _delta(before, after, h, num), _delta(before, after, h, den)
            if k is not None and n and n >= LOSS_MIN_SEGMENTS:
                shares[(h, side)] = (k, n)
    out = {}
    for side, num, den, word in LOSS_SIDES:
        mine = {h: kn for (h, sd), kn in shares.items() if sd == side}
        for h, (k, n) in mine.items():
            peers = [kk / nn for o, (kk, nn) in mine.items() if o != h and o not in named]
            if len(peers) < 2:
                continue
            ref = max(sorted(peers)[len(peers) // 2], 1e-5)
            share = k / n
            p = binom_p(k, n, ref)
            if p < ALPHA / (2 * len(hosts)) and share >= LOSS_FOLD * ref and share >= LOSS_MIN_SHARE:
                out.setdefault(h, []).append((side, share, ref, k, n, word, p))
    found = []
    for h, sides in out.items():
        side = sides[0][0] if len(sides) == 1 else "both sides"
        ev = "; ".join(f"TCP {word}: {k} of {n} segments ({100 * sh:.2f} %, peers' median {100 * ref:.3f} %, "
                       f"P {p:.1g})" for _, sh, ref, k, n, word, p in sides)
        found.append(Finding("host", (h,), h, float("nan"), ev,   # no time ratio: a count
                             cls="lossy (TCP counts)", side=side, strength=len(sides)))
    return found
