"""`gdrbench report RUN.h5 [--baseline BASE.h5] --html OUT.html`: one
self-contained HTML page (every plot a base64 PNG, no external file, script
or font) describing a run, and its comparison with a baseline when given."""

from __future__ import annotations

import base64
import html
import os
from datetime import datetime, timezone

import numpy as np

from .redaction import redact
from . import __version__, link_plots, links, plots
from . import stragglers as strag
from .compare import Comparison
from .schema import Run
from .text import fmt_num, fmt_us

MAX_STRAGGLER_ROWS = 40

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto;
       max-width: 1280px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; border-bottom: 1px solid #ddd;
     padding-bottom: 4px; margin-top: 32px; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.regression td { background: #fde0e0; } tr.improvement td { background: #e0f5e0; }
tr.flag td { background: #fff3d6; }
figure { margin: 12px 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
.note { background: #fff8e0; border-left: 4px solid #e0b000; padding: 6px 10px; font-size: 13px; }
.bad { background: #fde0e0; border-left: 4px solid #d62728; padding: 6px 10px; }
code { font-size: 12px; } details { margin: 8px 0; }
"""


def _e(x) -> str:
    """Every text the page shows: through the one redaction (redaction.py), then escaped."""
    return html.escape(redact(str(x)), quote=True)


def _img(png: bytes, ident: str, alt: str, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img id="{_e(ident)}" alt="{_e(alt)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def _kv_table(items) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in items)
    return f"<table>{rows}</table>"


def _metadata(run: Run) -> str:
    a = run.attrs
    hosts = {}
    for r, h in enumerate(run.hosts):
        hosts.setdefault(h, []).append(r)
    host_txt = "; ".join(f"{h}: ranks {','.join(map(str, rs))}" for h, rs in hosts.items())
    items = [("file", os.path.basename(run.path)), ("status", run.status),
             ("command line", a.get("command_line", "")),
             ("gdrbench", f"{a.get('gdrbench_version', '?')} ({a.get('git_commit', '?')})"),
             ("start / end (UTC)", f"{a.get('start_utc', '?')} / {a.get('end_utc', '?')}"),
             ("ranks", run.nranks), ("hosts", host_txt), ("cases", len(run.cases))]
    if a.get("error"):
        items.append(("error", a["error"]))
    out = _kv_table(items)
    if run.facts:
        out += "<details><summary>libraries and devices (/facts)</summary>" + _kv_table(sorted(run.facts.items())) + "</details>"
    if run.environment:
        out += ("<details><summary>environment (/environment)</summary>"
                + _kv_table(sorted(run.environment.items())) + "</details>")
    return out


def _cases_table(run: Run) -> str:
    head = ("case", "test", "transport", "mem", "path", "dtype", "op", "bytes", "iters",
            "median (us)", "min (us)", "max (us)", "busbw GB/s (median)", "wrong")
    rows = []
    for c in run.cases:
        a = c.attrs
        s = c.slowest()
        s = s[np.isfinite(s)] * 1e6
        if c.summarized:  # no iterations: the slowest rank's median, no min or max
            s = np.array([plots.median_us(c)])
        cells = [c.name, a["test"] + (f" {a['src']}>{a['dst']}" if a["src"] >= 0 else ""),
                 a["transport"] + ("*" if a["reference"] else ""), a["mem"], a["path"], a["dtype"], a["op"]]
        spread = s.size and not c.summarized
        nums = [a["bytes"], a.get("iters", s.size), fmt_us(float(np.median(s)) if s.size else float("nan")),
                fmt_us(float(s.min()) if spread else float("nan")), fmt_us(float(s.max()) if spread else float("nan")),
                fmt_num(plots.busbw_median(c), 3), a.get("wrong", 0)]
        cls = ' class="regression"' if (a.get("wrong") or 0) > 0 else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{_e(x)}</td>" for x in cells)
                    + "".join(f'<td class="num">{_e(x)}</td>' for x in nums) + "</tr>")
    return ("<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>")


def _comparison_table(cmp: Comparison, cases) -> str:
    head = ("case", "base (us)", "new (us)", "new/base", "CI low", "CI high", "verdict")
    order = {"regression": 0, "improvement": 1, "n/a": 2, "same": 3}
    rows = []
    for r in sorted(cases, key=lambda r: order.get(r.verdict, 9)):
        rows.append(f'<tr class="{_e(r.verdict.replace("/", ""))}"><td>{_e(r.label)}</td>'
                    + "".join(f'<td class="num">{_e(x)}</td>' for x in (
                        fmt_us(r.base_median_us), fmt_us(r.new_median_us), fmt_num(r.ratio),
                        fmt_num(r.ci_low), fmt_num(r.ci_high)))
                    + f"<td>{_e(r.verdict)}</td></tr>")
    out = "<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>"
    if cases is not cmp.cases:
        return out
    for title, lst in (("only in the baseline", cmp.only_base), ("only in this run", cmp.only_new)):
        if lst:
            out += f"<p><b>{_e(title)} ({len(lst)}):</b> " + _e("; ".join(d["label"] for d in lst)) + "</p>"
    return out


def _stragglers_html(rep) -> str:
    flagged = rep.flagged_cases
    out = (f"<p>{len(rep.cases)} cases with at least two ranks timed; {len(flagged)} with a rank more than "
           f"{rep.threshold_pct:g}% slower than the median rank.</p>")
    if flagged:
        shown = sorted(flagged, key=lambda c: -c.slowest_ratio)[:MAX_STRAGGLER_ROWS]
        if len(shown) < len(flagged):
            out += (f"<p>The {len(shown)} worst (<code>gdrbench stragglers</code> lists all "
                    f"{len(flagged)}):</p>")
        out += "<table><tr><th>case</th><th>median rank (us)</th><th>flagged rank (host): ratio</th></tr>"
        for c in shown:
            f = ", ".join(f"{r} ({rep.run.host_of(r)}): {c.ratio[r]:.2f}" for r in c.flagged)
            out += (f'<tr class="flag"><td>{_e(c.label)}</td><td class="num">{_e(fmt_us(c.median_rank_us))}</td>'
                    f"<td>{_e(f)}</td></tr>")
        out += "</table>"
    if rep.ranks:
        out += "<table><tr><th>rank</th><th>host</th><th>cases</th><th>flagged</th><th>median ratio</th><th>max ratio</th></tr>"
        for x in rep.ranks:
            out += (f"<tr><td>{x['rank']}</td><td>{_e(x['host'])}</td><td class='num'>{x['cases']}</td>"
                    f"<td class='num'>{x['flagged']}</td><td class='num'>{x['median_ratio']:.3f}</td>"
                    f"<td class='num'>{x['max_ratio']:.2f}</td></tr>")
        out += "</table>"
    return out


def _host_pair_matrices(run: Run, add, parts):
    """A fleet's link matrices: one cell per host pair (links.host_pair_tables)."""
    tables = links.host_pair_tables(run)
    if not tables:
        return
    parts.append("<h2>Link matrix (per host pair)</h2>")
    parts.append(f"<p class='sub'>{run.nranks} ranks on {len(set(run.hosts))} hosts: each cell is the median "
                 "over the links from one host's ranks to another's (per rank above "
                 f"{plots.MAX_RANK_COLUMNS} ranks is no picture; <code>gdrbench suspects</code> names the "
                 "links).</p>")
    for t, names in tables:
        for i in sorted({0, len(t.bytes) - 1}):
            add(link_plots.host_pair_heatmap(t, names, i), f"fig-links-{t.name}-{int(t.bytes[i])}",
                f"host-pair matrix {t.name} {int(t.bytes[i])} B",
                f"{t.name}: median per host pair (sender row, receiver column); grey: not measured.")


def _run_notes(run: Run, parts):
    """The run's warnings: its own, a summary read, wrong results."""
    for w in run.warnings:
        parts.append(f"<p class='note'>{_e(w)}</p>")
    if any(c.summarized for c in run.cases):
        parts.append("<p class='note'>Read as a summary (each rank's median, not its iterations): times are the "
                     "slowest rank's median, at most the median of each iteration's slowest rank that a whole "
                     "read shows, and no min or max per case.</p>")
    wrong = [c.label() for c in run.cases if (c.get("wrong") or 0) > 0]
    if wrong:
        parts.append(f"<p class='bad'>{len(wrong)} case(s) returned wrong results, e.g. {_e(wrong[0])}</p>")


def _baseline_section(cmp: Comparison, add, parts):
    """Against the baseline: the counts, the ratio plot, the cases not 'same'."""
    if not cmp.cases:
        parts.append("<h2>Against the baseline</h2>")
        parts.append(f"<p class='note'>The baseline <code>{_e(cmp.base.describe())}</code> has no case in "
                     "common with this run (cases match on test, transport, reference, mem, path, dtype, op, "
                     "bytes, ranks, src, dst): nothing to compare.</p>")
    else:
        s = cmp.as_dict()["summary"]
        parts.append("<h2>Against the baseline</h2>")
        parts.append(f"<p>Baseline: <code>{_e(cmp.base.describe())}</code><br>"
                     f"{s['compared']} common cases: <b>{s['regression']} regression</b>, "
                     f"{s['improvement']} improvement, {s['same']} same (threshold {cmp.threshold_pct:g}%, "
                     f"{cmp.confidence:.0%} bootstrap interval on the ratio of medians of per-iteration "
                     f"slowest-rank times, run-to-run noise sd {100 * cmp.run_noise_sd:.1f}% "
                     f"({_e(cmp.run_noise)})).</p>")
        for n in cmp.notes:
            parts.append(f"<p class='note'>{_e(n)}</p>")
        add(plots.comparison(cmp), "fig-compare", "ratio new/base per case",
            "Ratio of median times (this run / baseline) with its interval; grey band: the threshold.")
        changed = [r for r in cmp.cases if r.verdict != "same"]
        if changed:
            parts.append(f"<p><b>{len(changed)} case(s) not 'same':</b></p>" + _comparison_table(cmp, changed))
        parts.append("<details><summary>every common case</summary>" + _comparison_table(cmp, cmp.cases) + "</details>")


def _size_sections(run: Run, add, parts):
    """Bandwidth and latency against size; direct over staged."""
    parts.append("<h2>Bandwidth and latency</h2>")
    add(plots.metric_vs_size(run, "busbw"), "fig-busbw", "bus bandwidth vs message size",
        "Bus bandwidth (GB/s, 1e9 B; allreduce busbw = algbw x 2(n-1)/n) from the median time, log-log.")
    add(plots.metric_vs_size(run, "latency"), "fig-latency", "time vs message size",
        "Median over iterations of the slowest rank's time (latency: one way; bw/bibw: per message), log-log.")

    parts.append("<h2>Direct over staged</h2>")
    if not add(plots.speedup(run), "fig-speedup", "direct over staged speedup",
               "Staged time / direct time for every case run on both paths; above 1 the direct path wins."):
        parts.append("<p class='note'>No case ran on both the direct and the staged path "
                     "(run with <code>-m cuda</code> for both).</p>")


def _rank_section(run: Run, add, parts, straggler_threshold):
    """Per-rank heat maps and the stragglers."""
    parts.append("<h2>Per-rank times</h2>")
    rep = strag.analyze(run, straggler_threshold)
    any_heat = False
    for test in plots._tests(run.cases):
        any_heat |= add(plots.heatmap(run, test), f"fig-heatmap-{test}", f"per-rank heat map {test}",
                        f"{test}: each rank's median time over the case's median rank; hatched: the rank sat out.")
    if not any_heat:
        parts.append("<p class='note'>No case timed two or more ranks.</p>")
    parts.append(_stragglers_html(rep))


def _link_matrices(run: Run, add, parts):
    """Link matrices: per rank, or per host pair above plots.MAX_RANK_COLUMNS ranks."""
    if run.nranks > plots.MAX_RANK_COLUMNS:
        _host_pair_matrices(run, add, parts)
        tables = []
    else:
        tables = links.link_tables(run)
    if tables:
        parts.append("<h2>Link matrix</h2>")
        labels = link_plots.rank_labels(run)
        parts.append("<p class='sub'>Axes, per rank (rank host GPU/HCA, from /ranks): "
                     + _e("; ".join(labels)) + "</p>")
        for t in tables:
            for i in sorted({0, len(t.bytes) - 1}):
                add(link_plots.link_heatmap(t, run.hosts, i, labels), f"fig-links-{t.name}-{int(t.bytes[i])}",
                    f"link matrix {t.name} {int(t.bytes[i])} B",
                    f"{t.name}: median per link (sender row, receiver column) and per host pair; grey: not measured.")


def build_html(run: Run, cmp: Comparison | None = None, *, straggler_threshold=strag.DEFAULT_THRESHOLD_PCT,
               title: str | None = None) -> tuple[str, list]:
    """The page, and the ids of the images it embeds."""
    images = []
    parts = []

    def add(png, ident, alt, caption):
        if png:
            parts.append(_img(png, ident, alt, caption))
            images.append(ident)
            return True
        return False

    title = title or f"gdrbench run {os.path.basename(run.path)}"
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    parts.append(f"<h1>{_e(title)}</h1><p class='sub'>{_e(run.describe())}</p>")
    _run_notes(run, parts)
    if cmp is not None:
        _baseline_section(cmp, add, parts)
    _size_sections(run, add, parts)
    _rank_section(run, add, parts, straggler_threshold)
    _link_matrices(run, add, parts)

    parts.append("<h2>Run</h2>")
    parts.append(_metadata(run))
    parts.append("<details><summary>every case</summary>" + _cases_table(run) + "</details>")
    parts.append(f"<p class='sub'>gdranalysis {__version__}, generated {now}.</p>")
    page = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
    return page, images


def write_report(run: Run, out_path: str, cmp: Comparison | None = None, inputs=(), force=False, **kw) -> list:
    """The page, written whole over `out_path` (gdranalysis.outputs: never
    over an input, a device or a folder; an existing file only with force)."""
    from . import outputs
    outputs.check(out_path, "--html", inputs, force)
    page, images = build_html(run, cmp, **kw)
    outputs.write(out_path, page, "--html", inputs, force)
    return images
