"""Per-host verdicts of `gdrbench validate` from a `suspects` report, and the
files it writes (JSON, JUnit XML).

A host is `failed` (it did not answer, died mid-run, or its doctor said not
ready where that matters), else `suspect` (a part of it was named: its NIC as
a sender or a receiver, one of its ranks, or a link that ends on it), else
`healthy`. The parts named are also given once each, as `findings`:
`host` (every rank of it or every link from/to it slow: its NIC or the host),
`nic-egress` / `nic-ingress` (one rank per host: its sending or receiving
side), `rank` (a rank among several on a host: its GPU, PCIe or CPU) and
`link` (two hosts, the direction(s) slow) and `link-down` (two hosts that both
answer but whose transfers to each other never complete). A link that ends on a host named
as a whole is explained by that host and is not listed again.
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

from .redaction import redact


@dataclasses.dataclass
class Finding:
    kind: str          # host, nic-egress, nic-ingress, rank, link
    hosts: tuple       # the host, or the link's two hosts (sorted: a set, see `directions`)
    what: str          # "gc3", "rank 5 on gc3", "gc1<->gc3" (both ways), "gc1->gc3" (one way)
    slower: float      # times slower than its peers (median over its outlier comparisons)
    evidence: str
    cls: str = "slow"  # slow, intermittent, lossy tail (factor_model.py, tails.py), configuration, lossy (TCP counts)
    side: str = ""     # a host's: send side, receive side, both sides
    directions: list = dataclasses.field(default_factory=list)  # a link's: [{"from": a, "to": b}]
    strength: int = 0  # the first phase's slow comparisons (sizes, steps, iterations) behind it
    max_z: float = float("nan")


@dataclasses.dataclass
class HostVerdict:
    host: str
    status: str        # healthy, suspect, failed
    why: str = ""
    doctor: str = ""


def _rank_findings(rep, run, named_hosts):
    """Ranks named as sender/receiver/rank, grouped per host."""
    per_host = {}
    for s in rep.suspects:
        if s.kind != "rank":
            continue
        r = int(s.what.split()[1])
        per_host.setdefault(run.host_of(r), []).append((r, s))
    out = []
    for h, items in sorted(per_host.items()):
        if h in named_hosts:
            continue
        nranks_h = sum(1 for r in range(run.nranks) if run.host_of(r) == h)
        for r, s in items:
            roles = set(s.as_)
            ev = f"outlier in {s.outlier_in}/{s.measured_in} comparisons, worst {s.worst}"
            if nranks_h == 1 and roles <= {"sender"}:
                out.append(Finding("nic-egress", (h,), h, s.median_ratio, "sends slow: " + ev))
            elif nranks_h == 1 and roles <= {"receiver"}:
                out.append(Finding("nic-ingress", (h,), h, s.median_ratio, "receives slow: " + ev))
            elif nranks_h == 1:
                out.append(Finding("host", (h,), h, s.median_ratio, f"slow as {','.join(sorted(roles))}: " + ev))
            else:
                out.append(Finding("rank", (h,), f"rank {r} on {h}", s.median_ratio,
                                   f"slow as {','.join(sorted(roles))}: " + ev))
    return out


def findings_of(rep, run) -> list:
    """The parts a suspects report names, each once (see the module doc)."""
    named_hosts = set(rep.hosts)
    found = []
    for h in sorted(named_hosts):
        ss = [s for s in rep.suspects if h in s.host.split("->")]
        ratio = max((s.median_ratio for s in ss), default=float("nan"))
        found.append(Finding("host", (h,), h, ratio, "every rank of it, or every link from/to it, is a suspect"))
    found += _rank_findings(rep, run, named_hosts)
    links = {}
    for s in rep.suspects:
        if s.kind not in ("link", "hostlink"):
            continue
        if s.kind == "link":
            a, b = (run.host_of(int(x)) for x in s.what.split(">"))
        else:
            a, b = s.what.split(">")
        if a == b or {a, b} & named_hosts:
            continue
        key = tuple(sorted((a, b)))
        prev = links.get(key)
        dirs = (prev[1] if prev else set()) | {f"{a}->{b}"}
        links[key] = (max(s.median_ratio, prev[0] if prev else 0.0), dirs)
    for (a, b), (ratio, dirs) in sorted(links.items()):
        what = f"{a}<->{b}" if len(dirs) == 2 else next(iter(dirs))
        found.append(Finding("link", (a, b), what, ratio, "slow direction(s): " + ", ".join(sorted(dirs)),
                             directions=[dict(zip(("from", "to"), d.split("->"))) for d in sorted(dirs)]))
    return found


KIND_OF_SIDE = {"send side": "nic-egress", "receive side": "nic-ingress", "both sides": "host"}


def model_findings(att, rep, run) -> list:
    """The parts the factor model (factor_model.attribute) names, each once: a host's side
    (slow, intermittent or lossy tail), a link with its slow directions; and, where a host has
    several ranks, the ranks `suspects` names on hosts the model did not name."""
    found = []
    for h, p in sorted(att.hosts.items()):
        found.append(Finding(KIND_OF_SIDE[p.side], (h,), h, p.slower, f"{p.cls}, {p.side}: {p.evidence}",
                             cls=p.cls, side=p.side, strength=p.outlier_in, max_z=p.max_z))
    pairs = {}
    for p in att.links:
        pairs.setdefault(tuple(sorted(p.hosts)), []).append(p)
    for (a, b), ps in sorted(pairs.items()):
        both = len(ps) == 2
        what = f"{a}<->{b}" if both else f"{ps[0].hosts[0]}->{ps[0].hosts[1]}"
        found.append(Finding("link", (a, b), what, max(p.slower for p in ps),
                             "; ".join(f"{p.side} {p.evidence}" for p in ps),
                             directions=[{"from": p.hosts[0], "to": p.hosts[1]} for p in ps],
                             strength=min(p.outlier_in for p in ps), max_z=max(p.max_z for p in ps)))
    if rep is not None:
        named = {h for f in found for h in f.hosts}
        found += [f for f in findings_of(rep, run) if f.kind == "rank" and f.hosts[0] not in named]
    return found


def model_verdict(run, rep, z, min_slowdown_pct, p0, shield=()):
    """(the model's attribution, its findings, its notes) of a judged run; `shield`: hosts named
    otherwise (TCP's counts), kept out of their peers' tails."""
    from .factor_model import attribute
    att = attribute(run, z=z, min_slowdown_pct=min_slowdown_pct, p0=p0, shield=shield)
    return att, model_findings(att, rep, run), model_notes(att)


def model_notes(att) -> list:
    """The step-wide slowdowns, which blame nobody."""
    if not att.steps:
        return []
    shown = ", ".join(f"{lab.split()[-2]} B step {k} {r:.2f}x" for lab, k, r in att.steps[:6])
    return [f"step-wide: {len(att.steps)} step(s) slowed as a whole ({shown}{', ...' if len(att.steps) > 6 else ''}):"
            " the fabric or the machines, no host or link blamed"]


SLOW_PROBE = re.compile(r"slow ([\d.]+)x")   # a retest round's evidence: "round 2: slow 1.31x with rank 4 (z 9.2)"


def _weaker(f, mine):
    """Why retests that cleared every part of `f` do not clear it, or "": they must be as strong
    as the first phase's evidence (as many fast rounds as it had slow comparisons), and they
    judge medians, so they never clear a lossy tail."""
    fast = min(v["evidence"].count(": fast ") for v, _, _ in mine)
    if f.cls == "lossy tail":
        return f"retest kept {f.kind} {f.what}: the retests judge medians, its evidence is its tail ({f.evidence})"
    if f.strength > fast:
        return (f"retest kept {f.kind} {f.what}: the first phase had {f.strength} slow comparisons"
                f"{f' (z up to {f.max_z:.0f})' if f.max_z == f.max_z else ''}, the retests only {fast} fast round(s)")
    return ""


def _part_ranks(v):
    """A retest verdict's part -> (kind, ranks): "rank 3 sending" -> ("send", (3,)), "link 1>4" -> ("link", (1, 4))."""
    w = v["what"].split()
    if w[0] == "link":
        return "link", tuple(int(x) for x in w[1].split(">"))
    return ("send" if w[2] == "sending" else "recv"), (int(w[1]),)


def _part_finding(kind, ranks, run, slower, evidence):
    """The finding a convicted part is, in findings_of's terms."""
    hosts = [run.host_of(r) for r in ranks]
    if kind == "link":
        a, b = hosts
        if a == b:
            return Finding("rank", (a,), f"rank {ranks[0]}>{ranks[1]} on {a}", slower, evidence)
        return Finding("link", tuple(sorted((a, b))), f"{a}->{b}", slower, evidence, directions=[{"from": a, "to": b}])
    h = hosts[0]
    if sum(1 for r in range(run.nranks) if run.host_of(r) == h) == 1:
        return Finding("nic-egress" if kind == "send" else "nic-ingress", (h,), h, slower, evidence)
    return Finding("rank", (h,), f"rank {ranks[0]} on {h}", slower, evidence)


def apply_retests(findings, retest, run):
    """The second phase's word on the first phase's findings (`validate --retest auto`).

    A finding is cleared when the retests probed parts on its host(s) and cleared every one
    of them; a part convicted that no finding names (as that part, or its host as a whole)
    is added. Unresolved parts leave a finding as it was. Returns (findings, notes)."""
    if not retest or not retest.get("verdicts"):
        return findings, []
    parts = [(v, *_part_ranks(v)) for v in retest["verdicts"]]
    notes, kept = [], []
    for f in findings:
        mine = [(v, k, rs) for v, k, rs in parts if all(run.host_of(r) in f.hosts for r in rs)]
        if mine and all(v["state"] == "cleared" for v, _, _ in mine):
            weaker = _weaker(f, mine)
            if weaker:
                notes.append(weaker)
                kept.append(f)
                continue
            notes.append(f"retest cleared {f.kind} {f.what}: " + "; ".join(f"{v['what']} ({v['evidence']})"
                                                                          for v, _, _ in mine))
            continue
        kept.append(f)
    for v, kind, ranks in parts:
        if v["state"] != "convicted":
            continue
        slow = [float(x) for x in SLOW_PROBE.findall(v["evidence"])]
        new = _part_finding(kind, ranks, run, max(slow, default=float("nan")),
                            f"convicted by the retests ({v['evidence']})")
        # Named already as that part, or its host as a whole (which explains its parts and links)?
        if any((f.kind, f.hosts) == (new.kind, new.hosts) or (f.kind == "host" and f.hosts[0] in new.hosts)
               for f in kept):
            notes.append(f"retest confirmed {v['what']} ({new.kind} {new.what}, named already)")
        else:
            kept.append(new)
            notes.append(f"retest convicted {v['what']}: {new.kind} {new.what}")
    return kept, notes


# Open MPI's TCP BTL when a peer cannot be reached at all (a route or a link that is gone).
NO_CONNECT = re.compile(r"from (\S+) to: (\S+) Unable to connect to the peer (\S+)")
LOST_PEER = re.compile(r"rank \d+ \(([^)\s]+)\): timed out after ([\d.]+) s waiting for an? (send|receive) "
                       r"of \d+ B (?:to|from) rank \d+ \(([^)\s]+)\)")


def down_links(err, hosts) -> list:
    """A run that timed out with every host answering its roll call: the host pairs whose
    transfers never completed ("rank 0 (a): timed out after 15 s waiting for a receive of
    4 B from rank 1 (b)") are links that carry nothing."""
    pairs = {}
    for m in LOST_PEER.finditer(err):
        a, b = m.group(1), m.group(4)
        if a != b and a in hosts and b in hosts:
            pairs.setdefault(tuple(sorted((a, b))), f"{a} timed out after {m.group(2)} s waiting for a "
                             f"{m.group(3)} {'to' if m.group(3) == 'send' else 'from'} {b}")
    for m in NO_CONNECT.finditer(err):
        a, b = m.group(1), m.group(2)
        if a != b and a in hosts and b in hosts:
            pairs.setdefault(tuple(sorted((a, b))), f"{a} could not connect to {b} ({m.group(3)})")
    return [Finding("link-down", k, f"{k[0]}<->{k[1]}", float("inf"), ev) for k, ev in sorted(pairs.items())]


def _describe(f) -> str:
    if f.kind == "configuration":   # unlike its peers (validate_config.drift)
        return f"configuration {f.what}: {f.evidence}"
    if f.kind == "link-down":
        return f"link {f.what} down ({f.evidence})"
    if f.cls in ("lossy tail", "lossy (TCP counts)"):
        return f"{f.kind} {f.what} {f.side}: {f.cls} ({f.evidence})"
    what = f"{f.what} {f.side}" if f.side else f.what
    return f"{f.kind} {what} {f.slower:.2f}x slower ({f.evidence})"


def host_verdicts(hosts, findings, failed, doctor, judged=True) -> list:
    """One verdict per host of the allocation, in its order; `unknown` where no run was judged."""
    out = []
    for h in hosts:
        if h in failed:
            out.append(HostVerdict(h, "failed", " ".join(str(failed[h]).split()), doctor.get(h, "")))
            continue
        mine = [f for f in findings if h in f.hosts]
        if mine:
            why = " ".join("; ".join(_describe(f) for f in mine).split())   # one line
            out.append(HostVerdict(h, "suspect", why, doctor.get(h, "")))
        elif judged:
            out.append(HostVerdict(h, "healthy", "", doctor.get(h, "")))
        else:
            out.append(HostVerdict(h, "unknown", "not measured: no run could be judged", doctor.get(h, "")))
    return out


def format_table(verdicts, findings, notes) -> str:
    w = max([len(v.host) for v in verdicts] + [4])
    lines = [f"{'host':<{w}}  {'verdict':<8}  {'doctor':<10}  why"]
    for v in verdicts:
        lines.append(f"{v.host:<{w}}  {v.status:<8}  {v.doctor or '-':<10}  {v.why or '-'}")
    for f in findings:
        lines.append(f"# finding: {_describe(f)}")
    lines += [f"# {n}" for n in notes]
    return "\n".join(lines)


def write_junit(path, verdicts, elapsed_s) -> None:
    """One testsuite, one testcase per host: failure for a suspect, error for a failed host."""
    suite = ET.Element("testsuite", name="gdrbench validate", tests=str(len(verdicts)),
                       failures=str(sum(v.status == "suspect" for v in verdicts)),
                       errors=str(sum(v.status == "failed" for v in verdicts)), time=f"{elapsed_s:.1f}")
    for v in verdicts:
        tc = ET.SubElement(suite, "testcase", classname="gdrbench.validate", name=v.host)
        if v.status == "suspect":
            ET.SubElement(tc, "failure", message="suspect", type="suspect").text = redact(v.why)
        elif v.status == "failed":
            ET.SubElement(tc, "error", message="failed", type="failed").text = redact(v.why)
        elif v.status == "unknown":
            ET.SubElement(tc, "skipped", message=redact(v.why))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
