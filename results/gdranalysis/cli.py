"""Command line: `python3 -m gdranalysis <compare|stragglers|suspects|report|history|baseline|export|validate|simulate> ...`,
which is what `gdrbench compare|stragglers|suspects|report|history|baseline|export|validate|simulate ...` runs.

Exit status: 0 success (compare: no regression), 1 compare found at least
one regression (stragglers with --fail: a straggler), 2 bad input or usage
(one line on stderr saying why), 3 internal error or missing Python package
(never 1, so that a crash is not read as a regression), 4 (compare, suspects,
history, baseline) a run read had wrong results or did not end `complete`: its figures
cannot vouch for anything, so a gate built on the command fails.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import SCHEMA_VERSION, __version__, numbers
from .jsonout import dump_json
from .inputs import file_name
from .schema import InputError

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_UNTRUSTED = 0, 1, 2, 3, 4
# report --read auto: a file above this is read as a summary (a 256 x 8 file of 364 MB took 1.9 GB whole)
REPORT_SUMMARY_ABOVE_BYTES = 10**9
PROG = "gdrbench"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, status 2, like the other bad-input errors.
        self.exit(EXIT_BAD_INPUT, _one_line(f"{self.prog}: error: {message} (see {self.prog} --help)") + "\n")


def _one_line(text) -> str:
    """An error line as printed: redacted (redaction.py), its control characters escaped (a
    newline in a value must not make two lines)."""
    from .redaction import redact
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in redact(str(text)))


def _untrusted(runs) -> list:
    """Why each run read cannot vouch for anything: wrong results, or not
    ended `complete` (the gate rule, README "Analysis")."""
    why = []
    for r in runs:
        r = getattr(r, "run", r)  # an api.RunResult holds the schema's Run
        if r.status != "complete":
            why.append(f"{r.path}: status '{r.status}', not complete")
        wrong = sum(1 for c in r.cases if (c.get("wrong") or 0) > 0)
        if wrong:
            why.append(f"{r.path}: {wrong} case(s) with wrong results")
    return why


def _some_cases(run):
    """The run, unless it holds no case (a run stopped before its first): then one line, exit 2,
    where a table of 0 cases, a page or an export would read as a result."""
    r = getattr(run, "run", run)
    if not r.cases:
        raise InputError(f"{r.path}: the run holds no case (status '{r.status}'): nothing to analyse")
    return run


def _gate(prog, runs, code) -> int:
    """`code`, unless a run read is untrusted: then EXIT_UNTRUSTED, one line each."""
    why = _untrusted(runs)
    for w in why:
        print(f"{prog}: untrusted input: {w} (exit {EXIT_UNTRUSTED})", file=sys.stderr)
    return EXIT_UNTRUSTED if why else code


def _warn(prog):
    return lambda msg: print(_one_line(f"{prog}: warning: {msg}"), file=sys.stderr)


# ---- subcommands ---------------------------------------------------------------

def cmd_compare(a) -> int:
    from .api import load_run
    from .compare import format_table
    base, new = load_run(a.base), load_run(a.new)
    cmp = base.compare(new, threshold_pct=a.threshold, confidence=a.confidence,
                       n_resamples=a.resamples, method=a.method, seed=a.seed, run_noise=a.run_noise)
    if a.json:
        dump_json(cmp.as_dict())
    else:
        print(format_table(cmp, show_same=not a.changes_only))
    return _gate(f"{PROG} compare", (base, new), EXIT_REGRESSION if cmp.regressions else EXIT_OK)


def cmd_stragglers(a) -> int:
    from .schema import load_run, parse_case_spec
    from .stragglers import analyze, format_table
    run = _some_cases(load_run(a.run))
    rep = analyze(run, a.threshold, parse_case_spec(a.case) if a.case else None)
    if a.json:
        dump_json(rep.as_dict())
    else:
        print(format_table(rep, show_all=a.all))
    return EXIT_REGRESSION if (a.fail and rep.flagged_cases) else EXIT_OK


def cmd_suspects(a) -> int:
    from .api import load_run
    from .suspects import format_table
    run = load_run(a.run, summary=True)
    rep = run.suspects(z=a.z, min_slowdown_pct=a.min_slowdown, case=a.case, p0=a.p0, alpha=a.alpha)
    if a.json:
        dump_json(rep.as_dict())
    else:
        print(format_table(rep))
    return _gate(f"{PROG} suspects", (run,), EXIT_REGRESSION if rep.suspects else EXIT_OK)


def cmd_report(a) -> int:
    from .compare import compare_runs
    from .report import write_report
    from .schema import load_run
    from . import outputs
    summary = a.read == "summary" or (a.read == "auto" and os.path.getsize(a.run) > REPORT_SUMMARY_ABOVE_BYTES
                                      if os.path.isfile(a.run) else False)
    if summary and a.baseline:
        raise InputError(f"--baseline compares every iteration, and {a.run} is read as a summary "
                         f"({'--read summary' if a.read == 'summary' else 'above 1 GB'}): give --read full, "
                         "or use gdrbench compare")
    inputs = (a.run, a.baseline)
    outputs.check(a.html, "--html", inputs, a.force)  # before the work, not after
    run = _some_cases(load_run(a.run, summary=summary))
    cmp = None
    if a.baseline:
        cmp = compare_runs(load_run(a.baseline), run, threshold_pct=a.threshold, seed=a.seed,
                           require_common=False)
    images = write_report(run, a.html, cmp, inputs, a.force, straggler_threshold=a.straggler_threshold,
                          title=a.title)
    print(f"{a.html}: {len(images)} plots ({', '.join(images)})")
    return EXIT_OK


def cmd_history(a) -> int:
    from .history import format_table, plot, trends
    from .schema import load_runs, parse_case_spec
    spec = parse_case_spec(a.case)
    if a.plot:
        from . import outputs
        outputs.check(a.plot, "--plot", a.files, a.force)
    skipped = []
    runs = load_runs(a.files, skip_bad=True, warn=skipped.append)
    if not runs:  # one line: the reasons go into it
        raise InputError("no readable result file among the arguments (" + "; ".join(skipped) + ")")
    for w in skipped:
        _warn(f"{PROG} history")(w)
    tr = trends(runs, spec)
    if not tr:
        raise InputError(f"no case matches --case '{a.case}' in {len(runs)} file(s)")
    if a.json:
        dump_json({"case": spec, "files": len(runs), "trends": [t.as_dict() for t in tr]})
    else:
        print(format_table(tr, len(runs)))
    if a.plot:
        plot(tr, a.plot)
        if not a.json:
            print(f"# plot: {a.plot}")
    return _gate(f"{PROG} history", runs, EXIT_OK)


def cmd_baseline(a) -> int:
    from .baseline import Params, analyze, format_table
    from .schema import load_runs
    skipped = []
    runs = load_runs(a.files, skip_bad=True, warn=skipped.append)
    if not runs:
        raise InputError("no readable result file among the arguments (" + "; ".join(skipped) + ")")
    for w in skipped:
        _warn(f"{PROG} baseline")(w)
    trusted = [r for r in runs if not _untrusted((r,))]  # the others vouch for nothing: no past
    if not trusted:
        return _gate(f"{PROG} baseline", runs, EXIT_UNTRUSTED)
    try:
        rep = analyze(trusted, Params(a.min_runs, a.k, a.h, a.clip, a.min_drop))
    except InputError as e:
        if len(trusted) == len(runs):
            raise
        print(f"{PROG} baseline: error: {e}", file=sys.stderr)  # the runs left out say why: exit 4
        return _gate(f"{PROG} baseline", runs, EXIT_UNTRUSTED)
    if a.json:
        dump_json(rep.as_dict())
    else:
        print(format_table(rep))
    return _gate(f"{PROG} baseline", runs, EXIT_REGRESSION if rep.changes else EXIT_OK)


def cmd_export(a) -> int:
    from . import openmetrics
    from .api import load_run
    from . import outputs
    if a.output:
        outputs.check(a.output, "-o", (a.run,), a.force)
    text = openmetrics.render(_some_cases(load_run(a.run)))
    if a.output:
        outputs.write(a.output, text, "-o", (a.run,), a.force)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="gdrbench result analysis (results/README.md, "
                f"schema_version <= {SCHEMA_VERSION})")
    p.add_argument("--analysis-version", action="version", version=f"gdranalysis {__version__}")
    sub = p.add_subparsers(dest="command",
                           metavar="{compare,stragglers,suspects,report,history,baseline,export,validate,simulate}",
                           parser_class=_Parser)
    sub.required = True
    _add_compare(sub)
    _add_stragglers(sub)
    _add_suspects(sub)
    _add_report(sub)
    _add_history(sub)
    _add_baseline(sub)
    _add_export(sub)
    from .simulate import add_parser as add_simulate
    add_simulate(sub)
    from .validate import add_parser as add_validate
    add_validate(sub, "Exit 0: every host healthy; 1: a suspect; 4: a host failed or the run's data were wrong; 2: bad input; "
                 "3: validate could not finish.")
    return p


def _add_compare(sub):
    """`compare BASE.h5 NEW.h5`: case by case, with a bootstrap interval."""
    c = sub.add_parser("compare", help="compare two runs case by case; exit 1 on a regression",
                       description="Match the cases of two runs and give, per case, the median time of "
                       "both, the ratio new/base with a bootstrap confidence interval, and a verdict. "
                       "Exit 0: no regression; 1: at least one; 2: bad input.")
    c.add_argument("base", type=file_name, metavar="BASE.h5")
    c.add_argument("new", type=file_name, metavar="NEW.h5")
    c.add_argument("--threshold", type=numbers.arg("compare --threshold"), default=5.0, metavar="PCT",
                   help="smallest change worth a verdict, percent (default 5)")
    c.add_argument("--json", action="store_true", help="write JSON to stdout instead of the table")
    c.add_argument("--changes-only", action="store_true", help="table: leave out the 'same' cases")
    c.add_argument("--confidence", type=numbers.arg("compare --confidence"), default=0.95,
                   help="confidence level, between 0 and 1 (default 0.95)")
    c.add_argument("--resamples", type=numbers.arg("compare --resamples"), default=9999,
                   help="bootstrap resamples, 100 to 1000000 (default 9999)")
    c.add_argument("--method", choices=("percentile", "basic", "BCa"), default="percentile",
                   help="scipy.stats.bootstrap interval method (default percentile)")
    c.add_argument("--seed", type=numbers.arg("compare --seed"), default=20240601, help="bootstrap seed (default fixed)")
    c.add_argument("--run-noise", default="auto", metavar="auto|off|PCT",
                   help="run-to-run noise added to each interval: estimated from the spread of all "
                   "cases (auto, default), none (off), or a given sd in percent")
    c.set_defaults(func=cmd_compare)


def _add_stragglers(sub):
    """`stragglers RUN.h5`: ranks and hosts slower than the median rank."""
    s = sub.add_parser("stragglers", help="per case, the ranks and hosts slower than the median rank",
                       description="For one run, per case: each rank's median time over the median of "
                       "the rank medians; ranks above 1 + threshold are flagged. Summaries per rank and host.")
    s.add_argument("run", type=file_name, metavar="RUN.h5")
    s.add_argument("--threshold", type=numbers.arg("stragglers --threshold"), default=10.0, metavar="PCT",
                   help="flag ranks this much slower than the median rank, percent (default 10)")
    s.add_argument("--case", metavar="SPEC", help="only cases matching key=value,... (as history)")
    s.add_argument("--all", action="store_true", help="table: every case, not only those with a straggler")
    s.add_argument("--json", action="store_true", help="write JSON to stdout instead of the table")
    s.add_argument("--fail", action="store_true", help="exit 1 when a straggler is found")
    s.set_defaults(func=cmd_stragglers)


def _add_suspects(sub):
    """`suspects RUN.h5`: links, ranks and hosts that are outliers."""
    u = sub.add_parser("suspects", help="the links, ranks and hosts that are outliers; exit 1 if any",
                       description="For one run: links (from --pattern rounds or --pairs all), sender and "
                       "receiver effects per rank, and ranks in incast/fanout/neighbor cases that are "
                       "robust outliers among comparable ones (results/README.md says how). Exit 0: no "
                       "suspect; 1: at least one; 2: bad input.")
    u.add_argument("run", type=file_name, metavar="RUN.h5")
    u.add_argument("--z", type=numbers.arg("suspects --z"), default=5.0,
                   help="outlier: this many robust sd above the median of its peers (default 5)")
    u.add_argument("--min-slowdown", type=numbers.arg("suspects --min-slowdown"), default=25.0, metavar="PCT",
                   help="and at least this much slower, percent (default 25)")
    u.add_argument("--p0", type=numbers.arg("suspects --p0"), default=0.02,
                   help="outliers per comparison in a healthy run (default 0.02, measured here)")
    u.add_argument("--alpha", type=numbers.arg("suspects --alpha"), default=1e-3,
                   help="suspect: more outliers than this chance under --p0 (default 1e-3)")
    u.add_argument("--case", metavar="SPEC", help="only cases matching key=value,... (as history)")
    u.add_argument("--json", action="store_true", help="write JSON to stdout instead of the table")
    u.set_defaults(func=cmd_suspects)


def _add_report(sub):
    """`report RUN.h5 --html OUT.html`: the HTML report."""
    r = sub.add_parser("report", help="self-contained HTML report with plots",
                       description="Write one HTML file (plots embedded as PNG) describing a run: bus "
                       "bandwidth and latency against message size, direct-over-staged speedup, per-rank "
                       "heat maps, stragglers, and the comparison with --baseline when given.")
    r.add_argument("run", type=file_name, metavar="RUN.h5")
    r.add_argument("--html", type=file_name, required=True, metavar="OUT.html", help="the page to write")
    r.add_argument("--force", action="store_true", help="replace an existing --html file")
    r.add_argument("--baseline", type=file_name, metavar="BASE.h5", help="compare against this run")
    r.add_argument("--threshold", type=numbers.arg("report --threshold"), default=5.0, metavar="PCT", help="comparison threshold (default 5)")
    r.add_argument("--straggler-threshold", type=numbers.arg("report --straggler-threshold"), default=10.0, metavar="PCT",
                   help="straggler threshold (default 10)")
    r.add_argument("--seed", type=numbers.arg("report --seed"), default=20240601, help=argparse.SUPPRESS)
    r.add_argument("--title", help="page title")
    r.add_argument("--read", choices=("auto", "full", "summary"), default="auto",
                   help="full: every iteration; summary: each rank's median only (a fleet's file: a 1,024 x 8 run "
                        "of every host pair is 5.8 GB, 24 GB and more to read whole); auto (default): summary "
                        "above 1 GB")
    r.set_defaults(func=cmd_report)


def _add_history(sub):
    """`history RUN.h5... --case SPEC`: one case across runs."""
    h = sub.add_parser("history", help="trend of one case across archived runs",
                       description="Print the trend of the case(s) matching --case across result files, "
                       "oldest run first (start_utc). Unreadable files are skipped with a warning.")
    h.add_argument("files", type=file_name, nargs="+", metavar="RUN.h5")
    h.add_argument("--case", required=True, metavar="SPEC",
                   help="key=value,... over test, transport, reference, mem, path, dtype, op, bytes "
                   "(K/M/G allowed), ranks, src, dst, iters, ...")
    h.add_argument("--json", action="store_true", help="write JSON to stdout instead of the table")
    h.add_argument("--plot", type=file_name, metavar="OUT.png", help="also draw the trend into a PNG")
    h.add_argument("--force", action="store_true", help="replace an existing --plot file")
    h.set_defaults(func=cmd_history)


def _add_baseline(sub):
    """`baseline RUN.h5...`: each link, GPU and host against its own past."""
    from . import baseline as bl
    b = sub.add_parser("baseline", help="each link, GPU and host against its own past runs; exit 1 on a change",
                       description="From result files with link matrices (--pattern rounds, --pairs), oldest "
                       "first: each link, GPU and host against its own past (robust median and sd), Page's CUSUM "
                       "per run; one line per item in a change at the last run. Exit 0: none; 1: at least one; "
                       "2: bad input; 4: a run read had wrong results or did not end complete (left out of the past).")
    b.add_argument("files", type=file_name, nargs="+", metavar="RUN.h5")
    b.add_argument("--min-runs", type=numbers.arg("baseline --min-runs"), default=bl.DEFAULT_MIN_RUNS,
                   help=f"past runs an item needs before it is judged (default {bl.DEFAULT_MIN_RUNS})")
    b.add_argument("--min-drop", type=numbers.arg("baseline --min-drop"), default=bl.DEFAULT_MIN_DROP_PCT, metavar="PCT",
                   help=f"report changes at least this much bandwidth below the past, percent (default {bl.DEFAULT_MIN_DROP_PCT:g})")
    b.add_argument("--k", type=numbers.arg("baseline --k"), default=bl.DEFAULT_K, help=f"CUSUM allowance, sd (default {bl.DEFAULT_K:g})")
    b.add_argument("--h", type=numbers.arg("baseline --h"), default=bl.DEFAULT_H,
                   help=f"CUSUM decision interval, sd (default {bl.DEFAULT_H:g})")
    b.add_argument("--clip", type=numbers.arg("baseline --clip"), default=bl.DEFAULT_CLIP,
                   help=f"largest z one run adds (default {bl.DEFAULT_CLIP:g}: one run is never enough)")
    b.add_argument("--json", action="store_true", help="write JSON to stdout instead of the table")
    b.set_defaults(func=cmd_baseline)


def _add_export(sub):
    """`export --openmetrics RUN.h5`: Prometheus metrics."""
    e = sub.add_parser("export", help="write a run as Prometheus metrics (node_exporter textfile collector)",
                       description="Write one run's results as Prometheus/OpenMetrics gauges: per sweep point "
                       "busbw, iteration time, %peak, wrong elements, direct/staged; per rank, host and suspect link the "
                       "suspect state (docs/prometheus.md says which series and how they stay bounded).")
    e.add_argument("--openmetrics", action="store_true", required=True,
                   help="the format (the only one so far): Prometheus text, textfile-collector ready")
    e.add_argument("run", type=file_name, metavar="RUN.h5")
    e.add_argument("-o", "--output", type=file_name, metavar="FILE",
                   help="write FILE atomically (temporary file, then rename) instead of stdout; "
                   "name it *.prom inside node_exporter's --collector.textfile.directory")
    e.add_argument("--force", action="store_true", help="replace an existing -o file")
    e.set_defaults(func=cmd_export)


def _drop_stdout():
    """After a failed write to stdout, what is still buffered would fail
    again at exit with a traceback: point stdout at /dev/null."""
    import os
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _no_list_values(parser, a):
    """argparse hands `--flag=--` over as [] without calling the flag's type:
    refuse it like any other bad value."""
    subs = [x for x in parser._actions if isinstance(x, argparse._SubParsersAction)]
    for sp in subs:
        for act in sp.choices[a.command]._actions:
            if act.type is not None and act.nargs is None and isinstance(getattr(a, act.dest, None), list):
                sp.choices[a.command].error(f"argument {'/'.join(act.option_strings)}: want one value")


def main(argv=None) -> int:
    parser = build_parser()
    try:
        a = parser.parse_args(argv)
    except OSError as e:     # --help into a full stdout
        print(f"{PROG}: error: writing the output failed ({e.strerror or e})", file=sys.stderr)
        _drop_stdout()
        return EXIT_BAD_INPUT
    _no_list_values(parser, a)
    prog = f"{PROG} {a.command}"
    from .redaction import RedactingStream
    stdout, sys.stdout = sys.stdout, RedactingStream(sys.stdout)  # the one redaction on all it prints
    try:
        code = a.func(a)
        sys.stdout.flush()  # a full disk under `> FILE` fails here, not silently at exit
        return code
    except InputError as e:
        print(_one_line(f"{prog}: error: {e}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except OSError as e:     # writing stdout failed (--html and --plot say their path above)
        print(f"{prog}: error: writing the output failed ({e.strerror or e})", file=sys.stderr)
        _drop_stdout()
        return EXIT_BAD_INPUT
    except ImportError as e:
        print(f"{prog}: error: {e}: install the packages in jobs/deps/debian-analysis.txt", file=sys.stderr)
        return EXIT_INTERNAL
    except Exception:        # never let a crash look like "regression" (1)
        import traceback
        traceback.print_exc()
        print(f"{prog}: internal error (a bug in gdranalysis; the traceback is above)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        try:
            sys.stdout.flush()
        except OSError:
            pass
        sys.stdout = stdout
