"""`gdrbench validate`: the acceptance run of a cluster, within a time budget.

Given the launcher's allocation (an mpirun hostfile, or the Slurm allocation
it runs in), it runs `gdrbench doctor` on every host, then the `rounds`
pattern (every link, each direction, every NIC busy at once) sized to fit the
budget, judges the result with `suspects`, and prints one line per host:
healthy, suspect (what, how much slower, evidence) or failed (why). A host
that does not answer, or dies mid-run, is failed; the others are judged on a
second run without it when the budget allows, else on the cases finished.

Exit: 0 every host healthy; 1 a suspect; 4 a host failed or a link carries
nothing (as doctor's "not ready"); 2 bad input; 3 validate could not finish.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

from .redaction import redact
from . import inputs, numbers, outputs, schedule
from .env import env_value, executable, words
from .inputs import file_name
from .jsonout import dump_json
from .schema import InputError
from .validate_config import counters_after, drift, lossy, moved, read_doctor, witness
from .validate_verdict import apply_retests, down_links, format_table, host_verdicts, model_verdict, write_junit

EXIT_HEALTHY, EXIT_SUSPECT, EXIT_FAILED, EXIT_INTERNAL = 0, 1, 4, 3
ANALYSIS_S = 10.0           # suspects + report on 2 shared cores
FULL_READ_BYTES = 256 << 20  # a run file up to this is read with its iterations
HOSTFILE_MAX_BYTES = 16 << 20  # 16,384 hosts of long names and comments fit many times over


def read_hostfile(path) -> list:
    """Host names of an Open MPI hostfile (`host [slots=N] ...`, # comments), first-seen order."""
    lines = inputs.read_text(path, f"--hostfile {path}", HOSTFILE_MAX_BYTES).splitlines()
    hosts, firsts = [], {}
    for n, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if not re.fullmatch(r"[A-Za-z0-9_.:-]+", words[0]):
            raise InputError(f"--hostfile {path}:{n}: '{words[0]}' is not a host name")
        for w in words[1:]:   # validate places its own ranks; a host given no slot, or twice, is a mistake
            m = re.fullmatch(r"(?:max_)?slots=(.*)", w)
            if m and not (m.group(1).isdigit() and int(m.group(1)) > 0):
                raise InputError(f"--hostfile {path}:{n}: '{w}': want slots=N with N >= 1 (a host with no "
                                 "slot would be validated with no rank)")
        if words[0] in hosts:
            raise InputError(f"--hostfile {path}:{n}: host '{words[0]}' is given twice (first on line "
                             f"{firsts[words[0]]}): give each host once")
        hosts.append(words[0])
        firsts[words[0]] = n
    if not hosts:
        raise InputError(f"--hostfile {path}: no host in it")
    return hosts


def slurm_hosts() -> list:
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist:
        raise InputError("--slurm: not inside a Slurm allocation (SLURM_JOB_NODELIST is not set)")
    try:
        p = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InputError(f"--slurm: scontrol show hostnames {nodelist} failed ({e})") from e
    hosts = p.stdout.split()
    if p.returncode != 0 or not hosts:
        raise InputError(f"--slurm: scontrol show hostnames {nodelist}: exit {p.returncode} {p.stderr.strip()}")
    return hosts


class Launcher:
    """mpirun or srun, one line per way of naming hosts and ranks per host."""

    def __init__(self, kind, extra, gdrbench):
        self.kind, self.extra, self.gdrbench = kind, extra, gdrbench

    def cmd(self, hosts, ppn, argv) -> list:
        if self.kind == "slurm":
            return (["srun", "-N", str(len(hosts)), "-n", str(len(hosts) * ppn), f"--ntasks-per-node={ppn}",
                     "--nodelist=" + ",".join(hosts), "--mpi=pmix", "--kill-on-bad-exit=1"] + self.extra
                    + [self.gdrbench] + argv)
        return (["mpirun", "--host", ",".join(f"{h}:{ppn}" for h in hosts), "-np", str(len(hosts) * ppn),
                 "--map-by", f"ppr:{ppn}:node"] + self.extra + [self.gdrbench] + argv)


class Recorder:
    """Every command validate runs, with its exit status and seconds: commands.log in --out."""

    def __init__(self, out):
        self.path = os.path.join(out, "commands.log")
        self.entries = []

    def run(self, cmd, deadline, name, give_up=None):
        """Output goes to files, not pipes: a launcher killed at the deadline may leave remote
        daemons (their own sessions) holding its pipes. give_up: a regex; once stderr matches it
        (the run's own roll call found a rank gone), the launcher gets 5 s more, then is killed."""
        t0 = time.monotonic()
        base = os.path.join(os.path.dirname(self.path), re.sub(r"[^a-z0-9]+", "-", name.lower())[:40])
        with open(base + ".out", "w+", encoding="utf-8") as fo, open(base + ".err", "w+", encoding="utf-8") as fe:
            p = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True, start_new_session=True)
            timed_out, end = False, deadline
            while p.poll() is None:
                if time.monotonic() >= end:
                    os.killpg(p.pid, signal.SIGKILL)   # mpirun/srun and what they started here
                    p.wait()
                    timed_out = end == deadline
                    break
                if give_up is not None and end == deadline and give_up.search(_read(base + ".err")):
                    end = min(deadline, time.monotonic() + 5.0)
                time.sleep(0.2)
            out, err = _read(base + ".out"), _read(base + ".err")
        took = time.monotonic() - t0
        # What is stored goes through the one redaction (redaction.py): --launcher-args may hold a secret.
        self.entries.append({"step": name, "cmd": [redact(w) for w in cmd], "rc": p.returncode,
                             "timed_out": timed_out, "seconds": round(took, 2)})
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(redact(f"# {name}: exit {p.returncode}{' (deadline, killed)' if timed_out else ''}, {took:.1f} s\n"
                           f"{shlex.join(redact(w) for w in cmd)}\n"))
            if err.strip():
                f.write(redact("".join(f"#   {line}\n" for line in err.strip().splitlines()[-20:])))
        return p.returncode, out, err, timed_out


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def doctor_phase(rec, lau, hosts, deadline, out):
    """{host: doctor verdict}, {host: why failed} for hosts that could not run it."""
    path = os.path.join(out, "doctor.json")
    rc, _, err, to = rec.run(lau.cmd(hosts, 1, ["doctor", "-o", path, "--force", "--timeout", "20"]), deadline, "doctor")
    verdicts = {}
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            for node in doc.get("reports", [doc]):
                h = node.get("host") or node.get("hostname")
                if h:
                    verdicts[h] = node.get("verdict", "?")
        except (OSError, ValueError):
            pass
    failed = {}
    if to or rc not in (0, 3, 4) or not verdicts:
        failed = probe(rec, lau, hosts, min(deadline, time.monotonic() + 20))
        alive = [h for h in hosts if h not in failed]
        if failed and not verdicts and alive and deadline - time.monotonic() > 3:
            # One host that cannot start a process fails the whole launch: the others' reports
            # (their configurations and counters, compared later) come from a second one without it.
            return doctor_phase(rec, lau, alive, deadline, out)[0], failed
    return verdicts, failed


def first_line(text) -> str:
    """The first line of a launcher's message that says something (Open MPI frames its own in
    lines of dashes), cut to 120 characters: the per-host table keeps one line a host."""
    for line in text.splitlines():
        line = line.strip()
        if line and line.strip("-= *") and not line.startswith("#"):
            return line if len(line) <= 120 else line[:117] + "..."
    return "no message"


def probe(rec, lau, hosts, deadline):
    """Which hosts do not start a process within the deadline: one launch per host, all at once."""
    procs = {}
    for h in hosts:
        err = open(os.path.join(os.path.dirname(rec.path), f"probe-{h}.err"), "w+", encoding="utf-8")
        procs[h] = (subprocess.Popen(lau.cmd([h], 1, ["--version"]), stdout=subprocess.DEVNULL, stderr=err,
                                     text=True, start_new_session=True), err)
    failed = {}
    for h, (p, err) in procs.items():
        try:
            p.wait(timeout=max(0.5, deadline - time.monotonic()))
            if p.returncode != 0:
                err.seek(0)
                failed[h] = (f"could not start a process there (exit {p.returncode}: {first_line(err.read())}; "
                             f"full text in {err.name})")
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            failed[h] = "did not answer a launch within its deadline"
        err.close()
    rec.entries.append({"step": "probe", "hosts": hosts, "failed": sorted(failed)})
    return failed


def plan(nhosts, ppn, nsizes, budget_s, spent_s, pattern="rounds", max_rounds=0, retest_rounds=0):
    """Case count and time for bw over `pattern` on nhosts x ppn ranks within what is left of the budget."""
    left = budget_s - spent_s - ANALYSIS_S

    def cases_at(rounds):
        return schedule.budget_cases(schedule.steps(pattern, nhosts * ppn, nhosts, max_rounds=rounds) * nsizes,
                                     retest_rounds > 0, retest_rounds)
    cases = cases_at(max_rounds)
    if schedule.case_time_s(left, cases, nhosts) < schedule.MIN_CASE_TIME_S and not max_rounds:
        # `run --budget` starts with the rounds the model fits, a sample (schedule.rounds_that_fit),
        # then runs as many as fit at the fabric's own cost (src/planning/schedule.h RoundBudget)
        k = schedule.rounds_that_fit(left, pattern, nhosts * ppn, nhosts, nsizes, retest_rounds > 0, retest_rounds)
        cases = cases_at(k) if k else cases
    return cases, schedule.case_time_s(left, cases, nhosts), left - schedule.start_s(nhosts)


def _rounds_run(run, a, nhosts):
    """What the run's calibrated budget ran (src/planning/schedule.h RoundBudget), where the plan was the model's."""
    ran = run.facts.get("budget.rounds_run")
    if ran is None or a.pattern not in ("rounds", "host-rounds"):
        return []
    every = schedule.rounds(nhosts if a.pattern == "host-rounds" else nhosts * a.ranks_per_host)
    return [f"the run ran {ran} of the {every} rounds ({len(run.cases)} cases), as many as fit at what its cases "
            f"cost ({run.facts.get('budget.overhead_s', '?')} s each beside their timed work; the model's plan: "
            f"{run.facts.get('budget.model_rounds', 'every round')})"]


def bench(rec, lau, a, hosts, deadline, h5):
    """The run keeps to what is left of the budget itself (`run --budget`: the same model as
    plan(), then each case its share of what is left), so a slow start or slow cases shorten
    the cases after them instead of running into the deadline."""
    argv = ["run", "-t", "bw", "-T", a.transport, "-m", "host", "-b", str(a.min_bytes), "-e", str(a.max_bytes), "-f", "2", "--window",
            str(a.window), "--pattern", a.pattern, "-w", str(a.warmup),
            "--budget", f"{max(1.0, deadline - time.monotonic()):.1f}s",
            "--timeout", str(a.timeout), "--output", h5, "--force"]
    argv += ["--max-rounds", str(a.max_rounds)] if a.max_rounds else []
    # Live verdicts and the retests judge with validate's own threshold.
    argv += ["--live-min-slowdown", f"{a.min_slowdown:g}"]
    argv += ["--retest", "auto", "--retest-rounds", str(a.retest_rounds)] if a.retest == "auto" else []
    return rec.run(lau.cmd(hosts, a.ranks_per_host, argv), deadline, f"bench {len(hosts)} hosts",
                   give_up=re.compile(r"did not answer|timed out after"))


RANK_HOST = re.compile(r"rank (\d+) \(([^)\s]+)\)")


REPORTER = re.compile(r"rank \d+ \(([^)\s]+)\): timed out after")


def died_in(err, hosts):
    """Hosts the run's roll calls name as silent ("rank 2 (gc3), rank 5 (gc6) did not answer")
    that never reported a timeout themselves: a dead, frozen or cut-off host cannot, while the
    two ends of a link that carries nothing each name the other silent and both report."""
    reporters = {m.group(1) for m in REPORTER.finditer(err)}
    named = {}
    for line in err.splitlines():
        if "did not answer" not in line:
            continue
        head = line.split(" did not answer", 1)[0].rsplit(": ", 1)[-1]   # "...step 3): rank 1 (b), rank 4 (e)"
        for m in RANK_HOST.finditer(head):
            if m.group(2) in hosts and m.group(2) not in reporters:
                named.setdefault(m.group(2), f"rank {m.group(1)} did not answer mid-run (dead, stopped or stuck)")
    return named


def min_budget(nhosts, ppn, nsizes, doctor_s=5.0, pattern="rounds", max_rounds=0, retest_rounds=0):
    """The smallest budget at which every case still gets MIN_CASE_TIME_S."""
    steps = schedule.steps(pattern, nhosts * ppn, nhosts, max_rounds=max_rounds) * nsizes
    return doctor_s + ANALYSIS_S + schedule.min_budget_s(
        schedule.budget_cases(steps, retest_rounds > 0, retest_rounds), nhosts)


def default_budget(nhosts, ppn, nsizes, pattern="rounds", max_rounds=0, retest_rounds=0):
    """Without --budget: about four times the minimum, so that every case gets ~1 s."""
    return round(4 * min_budget(nhosts, ppn, nsizes, pattern=pattern, max_rounds=max_rounds,
                                retest_rounds=retest_rounds))


def _retest_rounds(a):
    """The retests' rounds the budget sets aside for (0: no retests)."""
    return a.retest_rounds if a.retest == "auto" else 0


def _judge(a, h5, ran_on, notes):
    from .schema import load_run
    from .suspects import analyze
    # With its iterations (the model's tail) where small enough, else the ranks' medians.
    run = load_run(h5, summary=os.path.getsize(h5) > FULL_READ_BYTES)
    if not run.cases:
        return run, None
    # The ranks' hostnames may differ from the allocation's names (FQDN, an address): the
    # launcher placed rank r on ran_on[r // ranks-per-host], so name them that way.
    ppn = a.ranks_per_host
    if not set(run.hosts[:run.nranks]) <= set(ran_on) and run.nranks == len(ran_on) * ppn:
        notes.append(f"the ranks' hostnames ({', '.join(sorted(set(run.hosts[:run.nranks])))}) are not the "
                     "allocation's: named by where the launcher placed each rank")
        run.hosts = [ran_on[r // ppn] for r in range(run.nranks)] + list(run.hosts[run.nranks:])
    rep = analyze(run, z=a.z, min_slowdown_pct=a.min_slowdown, p0=a.p0)
    return run, rep


def _sizes(a):
    from .schema import parse_bytes
    b, e = parse_bytes(a.min_bytes), parse_bytes(a.max_bytes)
    if b <= 0 or e < b:
        raise InputError(f"--min-bytes {a.min_bytes}, --max-bytes {a.max_bytes}: need 0 < min <= max")
    n = 1
    while b * 2 ** n <= e:
        n += 1
    return n


def validate(a) -> int:
    t0 = time.monotonic()
    hosts = slurm_hosts() if a.slurm else read_hostfile(a.hostfile)
    nsizes = _check_request(a, hosts)
    budget = _budget(a, len(hosts), nsizes)
    gdr = _gdrbench(a)
    outputs.prepare_folder(a.out, "--out", a.force, ("validate.json", "validate.xml", "report.html"))
    rec = Recorder(a.out)
    lau = Launcher("slurm" if a.slurm else "mpirun", _launcher_args(a), gdr)
    notes = []

    doctor, failed = doctor_phase(rec, lau, hosts, t0 + min(30.0, 0.2 * budget), a.out)
    if a.mem == "cuda":
        failed.update({h: f"doctor: {v}" for h, v in doctor.items() if v == "not ready" and h not in failed})
    h5_used, ran_on, down = _bench_runs(a, rec, lau, [h for h in hosts if h not in failed], failed,
                                        nsizes, budget, t0, notes)
    # The counters again, on the hosts that ran, from what is left of the analysis's share.
    before = read_doctor(os.path.join(a.out, "doctor.json"), [h for h in hosts if h not in failed])
    # Up to half the analysis's share before the budget's end, and at least that half: a lossy
    # host slows the launch itself (4.5 % loss both ways on one of 8 emulated hosts held one
    # launch past 5 s, and its TCP counts, the loss's best witness, went unread).
    asked = [h for h in hosts if h in before and h not in failed]
    after = counters_after(rec, lau, asked, min(t0 + budget, max(time.monotonic(), t0 + budget - ANALYSIS_S)
                                                + ANALYSIS_S / 2), a.out)
    if asked and len(after) < len(asked):
        notes.append(f"TCP's counts and the error counters after the run: no read from {len(asked) - len(after)} "
                     f"of {len(asked)} hosts before its deadline ({', '.join(sorted(set(asked) - set(after)))}); "
                     "their loss by TCP's counts is unjudged")
    # TCP's counts first: a host they call lossy is kept out of its peers' tails (the partner
    # whose flows with it are slow is not the lossy one).
    counted = lossy(before, after, [h for h in ran_on if h in after])
    run, rep, findings = _judge_runs(a, h5_used, ran_on, down, notes, shield={f.what for f in counted})
    findings += drift(before, [h for h in hosts if h not in failed])
    findings += _lossy_by_counts(counted, findings, notes)
    verdicts = host_verdicts(hosts, findings, failed, doctor, judged=rep is not None)
    counters = moved(before, after, hosts)
    witness(verdicts, counters, notes)
    unjudged = any(v.status == "unknown" for v in verdicts)
    if unjudged:
        notes.append("no run could be judged: the hosts not named failed are unknown")
    if run is not None and not a.no_report:
        from .report import write_report
        try:
            write_report(run, os.path.join(a.out, "report.html"), force=True, title="gdrbench validate")
        except Exception as e:  # the verdict stands without its page
            notes.append(f"report.html not written ({e})")
    elapsed = time.monotonic() - t0
    notes.append(f"{elapsed:.1f} s of a {budget:g} s budget ({'kept' if elapsed <= budget else 'EXCEEDED'})")
    code = _exit_code(run, h5_used, unjudged, failed, down, findings, notes)
    doc = {"hosts": hosts, "launcher": lau.kind, "budget_s": budget, "elapsed_s": round(elapsed, 2),
           "exit": code, "transport": a.transport, "min_slowdown_pct": a.min_slowdown, "z": a.z, "p0": a.p0,
           "verdicts": [v.__dict__ for v in verdicts], "findings": [dict(f.__dict__, hosts=list(f.hosts))
                                                                  for f in findings],
           "failed": failed, "doctor": doctor, "counters_moved": counters, "notes": notes, "judged_file": h5_used,
           "suspects": rep.as_dict() if rep else None, "commands": rec.entries,
           "model": rep.model.as_dict() if rep is not None and getattr(rep, "model", None) else None}
    _write_outputs(a, doc, verdicts, findings, notes, elapsed)
    return code


def _lossy_by_counts(counted, findings, notes) -> list:
    """The hosts TCP's own counts call lossy (validate_config.lossy): a finding where the timings
    named nothing on that host, a second witness beside its verdict where they did."""
    timed = {h for f in findings if f.kind != "configuration" for h in f.hosts}
    new = []
    for f in counted:
        if f.what in timed:
            notes.append(f"second witness: {f.what}: {f.evidence}")
        else:
            new.append(f)
    return new


def _check_request(a, hosts) -> int:
    """The hosts, ranks and round limits asked for, checked; the number of sizes."""
    numbers.check(len(hosts), "validate hosts", source="hosts")
    numbers.check(len(hosts) * a.ranks_per_host, "validate ranks", source="hosts x --ranks-per-host")
    if len(hosts) < 2 and a.ranks_per_host < 3:
        raise InputError(f"{len(hosts)} host: validate compares hosts (or, on one host, 3 or more ranks: "
                         "--ranks-per-host) with each other")
    return _sizes(a)


def _budget(a, nhosts, nsizes) -> float:
    """--budget or its default, refused below what one round (or every pair) needs."""
    need = min_budget(nhosts, a.ranks_per_host, nsizes, pattern=a.pattern, max_rounds=a.max_rounds,
                      retest_rounds=_retest_rounds(a))
    budget = a.budget if a.budget is not None else default_budget(nhosts, a.ranks_per_host, nsizes, a.pattern,
                                                                  a.max_rounds, _retest_rounds(a))
    # Below every round's minimum, the run starts with the rounds that fit (a sample); one round at least.
    sample = 0 if a.max_rounds or a.pattern not in ("rounds", "host-rounds") else min_budget(
        nhosts, a.ranks_per_host, nsizes, pattern=a.pattern, max_rounds=1, retest_rounds=_retest_rounds(a))
    if budget < need and not (sample and budget >= sample):
        least = f"{sample:.0f} s for one round, {need:.0f} s for every pair" if sample else f"{need:.0f} s"
        raise InputError(f"--budget {budget:g} s is too small for {nhosts} hosts x {a.ranks_per_host} ranks and "
                         f"{nsizes} sizes: it needs at least {least}")
    return budget


def _gdrbench(a) -> str:
    """The gdrbench binary: --gdrbench, GDR_GDRBENCH or PATH."""
    gdr = a.gdrbench or env_value("GDR_GDRBENCH", executable, "want the gdrbench binary (a path or a name on PATH)") \
        or shutil.which("gdrbench")
    if not gdr:
        raise InputError("cannot find the gdrbench binary: give --gdrbench PATH")
    return gdr


def _launcher_args(a) -> list:
    """--launcher-args, else GDR_VALIDATE_LAUNCHER_ARGS, as a shell splits them."""
    if a.launcher_args is None:
        return env_value("GDR_VALIDATE_LAUNCHER_ARGS", words, "want arguments as a shell splits them", [])
    try:
        return words(a.launcher_args)
    except ValueError:
        raise InputError(f"--launcher-args {a.launcher_args[:40]!r}: want arguments as a shell splits them") from None


def _bench_runs(a, rec, lau, alive, failed, nsizes, budget, t0, notes):
    """The benchmark on the hosts alive, a second time without the hosts a first
    run lost. Adds the hosts found dead to `failed`; returns the file to judge
    (or None), the hosts it ran on and the links found carrying nothing."""
    end = t0 + budget
    h5_used, ran_on, down = None, [], []
    for attempt in (1, 2):
        if len(alive) * a.ranks_per_host < 3 and len(alive) < 2:
            notes.append(f"{len(alive)} host(s) left: nothing to compare")
            break
        cases, case_time, _ = plan(len(alive), a.ranks_per_host, nsizes, budget, time.monotonic() - t0, a.pattern,
                                   a.max_rounds, _retest_rounds(a))
        if case_time < schedule.MIN_CASE_TIME_S:
            notes.append(f"run {attempt}: not enough budget left for {len(alive)} hosts ({case_time:.2f} s a case)")
            break
        h5 = os.path.join(a.out, f"run{attempt}.h5")
        ran_on = list(alive)
        rc, _, err, to = bench(rec, lau, a, alive, end - ANALYSIS_S, h5)
        notes.append(f"run {attempt}: {len(alive)} hosts, {cases} cases of about {case_time:.2f} s planned, "
                     f"exit {rc}{' (killed at the budget)' if to else ''}")
        if rc == 0 and not to:
            h5_used = h5
            break
        gone = died_in(err + _file_error(h5), alive)
        gone.update({h: w for h, w in probe(rec, lau, alive, min(end - ANALYSIS_S, time.monotonic() + 15)).items()
                     if h not in gone})
        if not gone:
            lost = down_links(err, alive)
            down += lost
            notes.append(f"run {attempt} failed and no host was found dead" +
                         (f"; links that carry nothing: {', '.join(f.what for f in lost)}" if lost
                          else f": {err.strip()[-300:]}"))
            h5_used = h5 if os.path.exists(h5) else None
            break
        failed.update(gone)
        alive = [h for h in alive if h not in failed]
        h5_used = h5 if os.path.exists(h5) else None   # the cases finished, if no second run fits
    return h5_used, ran_on, down


def _judge_runs(a, h5_used, ran_on, down, notes, shield=()):
    """The run judged (or None), its suspects report (or None) and the findings,
    retests applied and the links found down added."""
    run = rep = None
    if h5_used:
        try:
            run, rep = _judge(a, h5_used, ran_on, notes)
            notes += _rounds_run(run, a, len(ran_on))
        except InputError as e:
            notes.append(f"{h5_used}: not judged ({e})")
    findings, model = [], None
    if rep is not None:
        model, findings, more = model_verdict(run, rep, a.z, a.min_slowdown, a.p0, shield)
        notes += more
    if rep is not None and a.retest == "auto":
        findings, retest_notes = apply_retests(findings, rep.as_dict().get("retest"), run)
        notes += retest_notes
    findings += down
    if rep is not None:
        rep.model = model
    return run, rep, findings


def _exit_code(run, h5_used, unjudged, failed, down, findings, notes) -> int:
    code = (EXIT_INTERNAL if unjudged and not (failed or down) else EXIT_FAILED if failed or down
            else EXIT_SUSPECT if findings else EXIT_HEALTHY)
    # The gate rule of compare/suspects/history: a run whose data arrived wrong
    # vouches for no host (exit 4, as their untrusted-input code).
    wrong = sum(1 for c in run.cases if (c.get("wrong") or 0) > 0) if run is not None else 0
    if wrong:
        notes.append(f"untrusted input: {h5_used}: {wrong} case(s) with wrong results: no host is "
                     f"vouched for (exit {EXIT_FAILED})")
        code = EXIT_FAILED
    return code


def _write_outputs(a, doc, verdicts, findings, notes, elapsed):
    """validate.json, validate.xml, and the table (or the JSON) on stdout."""
    with outputs.atomic(os.path.join(a.out, "validate.json"), "--out") as f:
        dump_json(doc, f)
    write_junit(os.path.join(a.out, "validate.xml"), verdicts, elapsed)
    if a.json:
        dump_json(doc)
    else:
        print(format_table(verdicts, findings, notes + [f"files: {a.out}/validate.json, validate.xml, "
                                                        "report.html, commands.log, doctor.json, counters-end.json, run*.h5"]))


def _file_error(h5):
    try:
        import h5py
        with h5py.File(h5, "r") as f:
            e = f.attrs.get("error", "")
            return " " + (e.decode() if isinstance(e, bytes) else str(e))
    except Exception:  # no file, or a file the writer left open: nothing to add
        return ""


def add_parser(sub, exit_codes_doc):
    v = sub.add_parser("validate", help="acceptance run of a cluster: doctor, patterns, per-host verdict",
                       description=__doc__.split("\n\n")[1] + " " + exit_codes_doc)
    g = v.add_mutually_exclusive_group(required=True)
    g.add_argument("--hostfile", type=file_name, metavar="FILE", help="an Open MPI hostfile (host [slots=N] per line)")
    g.add_argument("--slurm", action="store_true", help="the Slurm allocation this runs in (srun --mpi=pmix)")
    v.add_argument("--budget", type=numbers.arg("validate --budget"), metavar="SECONDS",
                   help="wall-clock seconds for the whole validation (default: sized from the host count)")
    v.add_argument("--launcher-args", metavar="ARGS", default=None,
                   help="extra mpirun/srun arguments, one string (default $GDR_VALIDATE_LAUNCHER_ARGS)")
    v.add_argument("-T", "--transport", default="mpi", choices=("mpi", "ucx", "verbs"), help="default mpi")
    v.add_argument("--mem", default="host", choices=("host", "cuda"),
                   help="cuda: a host whose doctor says not ready fails (default host)")
    v.add_argument("--pattern", default="rounds", choices=("rounds", "host-rounds"),
                   help="rounds: every rank pair (O(ranks) steps, default); host-rounds: every host pair, "
                   "each rank with its rail partner (O(hosts) steps)")
    v.add_argument("--max-rounds", type=numbers.arg("validate --max-rounds"), default=0, metavar="N",
                   help="the pattern's first N rounds only (run --max-rounds): each host against N others, a "
                   "sample that finds slow hosts and NICs in 2N steps a size, not every slow link; default: all")
    v.add_argument("--retest", default="off", choices=("off", "auto"),
                   help="auto: after the pattern, retest what looked slow against healthy partners in the same "
                   "job (run --retest); a finding whose parts are all cleared is dropped, a part convicted is "
                   "named (default off)")
    v.add_argument("--retest-rounds", type=numbers.arg("validate --retest-rounds"), default=4, metavar="N",
                   help="the retests' rounds at most, 3 steps each, set aside in the budget (default 4)")
    v.add_argument("--ranks-per-host", type=numbers.arg("validate --ranks-per-host"), default=1, help="ranks on each host (default 1; one per GPU)")
    v.add_argument("--min-bytes", type=numbers.arg("validate --min-bytes"), default="1M", help="smallest message (default 1M)")
    v.add_argument("--max-bytes", type=numbers.arg("validate --max-bytes"), default="8M", help="largest message, sizes double (default 8M: 4 sizes)")
    v.add_argument("--window", type=numbers.arg("validate --window"), default=8, help="messages in flight per bw iteration (default 8)")
    v.add_argument("--warmup", type=numbers.arg("validate --warmup"), default=3, help="untimed iterations per case (default 3)")
    v.add_argument("--timeout", type=numbers.arg("validate --timeout"), default=15, help="longest single wait in the run, s (default 15)")
    v.add_argument("--min-slowdown", type=numbers.arg("validate --min-slowdown"), default=7.0, metavar="PCT",
                   help="a part must be this much slower than its peers, percent (default 7)")
    v.add_argument("--z", type=numbers.arg("validate --z"), default=5.0, help="and this many robust sd (default 5)")
    v.add_argument("--p0", type=numbers.arg("validate --p0"), default=0.01,
                   help="outliers per comparison in a healthy run (default 0.01: with one rank per host a link "
                   "is judged once per size, and 2 outliers of 3 sizes must be enough)")
    v.add_argument("--out", type=file_name, default=f"validate-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}",
                   help="folder for validate.json, validate.xml, report.html, commands.log, run*.h5")
    v.add_argument("--force", action="store_true", help="write into an --out folder that holds a validate.json")
    v.add_argument("--no-report", action="store_true", help="skip report.html (saves ~5 s)")
    v.add_argument("--gdrbench", type=file_name, metavar="PATH", help="the binary to launch (default: the one running this)")
    v.add_argument("--json", action="store_true", help="print validate.json instead of the table")
    v.set_defaults(func=validate)
