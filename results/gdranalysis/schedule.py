"""The schedule and budget model shared by `gdrbench validate`, the simulators and
`gdrbench run --budget` (src/planning/schedule.h holds the same constants in C++;
tests/mpi/test_host_rounds.py checks that a run's stored budget decision is this one).

A case costs its timed work (--case-time) x OVERRUN (auto iterations overrun their
time a little) plus CASE_OVERHEAD_S (warm-up, check, HDF5; measured, docs/validate.md);
start-up costs START_S_PER_HOST a host plus START_SLACK_S.

A budget too small for every round of `rounds` or `host-rounds` starts with the most rounds
the model fits (rounds_that_fit, `budget.model_rounds`); the run then decides at each round's
start how many fit at what a case has cost so far (src/planning/schedule.h RoundBudget), and stores what
ran (`budget.rounds_run`, `budget.max_rounds` when not every round).

The retests after rounds or host-rounds (`--retest auto`, opt-in; src/planning/retest.h) get their share
of the budget as cases: RETEST_ROUNDS rounds of at most RETEST_STEPS_PER_ROUND steps are
added to the planned cases before the case time is fitted (budget_cases), so both phases
run at the same case time; what the retests do not use is left as margin.
"""

from __future__ import annotations

import dataclasses

CASE_OVERHEAD_S = 0.35
OVERRUN = 1.15
START_S_PER_HOST = 0.25     # mpirun start-up and connections grow with the host count (README scaling table)
START_SLACK_S = 2.0
MIN_CASE_TIME_S = 0.2
RETEST_ROUNDS = 4             # --retest-rounds' default (src/planning/retest.h RetestSettings)
RETEST_STEPS_PER_ROUND = 3    # src/planning/retest.h kRetestStepsPerRound


def retest_cases(retest=False, rounds=RETEST_ROUNDS):
    """Cases --budget sets aside for the retests (0 with --retest off)."""
    return rounds * RETEST_STEPS_PER_ROUND if retest else 0


def budget_cases(planned, retest=False, rounds=RETEST_ROUNDS):
    """The cases a budget is fitted to: the planned ones and the retests' share."""
    return planned + retest_cases(retest, rounds)


def rounds(n):
    """Rounds of the circle method over n players (collectives/patterns.cpp rounds())."""
    return n if n % 2 else n - 1


def rounds_run(n, max_rounds=0):
    """Rounds a tournament over n players runs under --max-rounds (0: all; patterns.cpp rounds_run)."""
    return min(rounds(n), max_rounds) if max_rounds > 0 else rounds(n)


def steps(pattern, n_ranks, hosts=1, directions=1, max_rounds=0):
    """Steps of `rounds` (over ranks) or `host-rounds` (over hosts) for one size: each round
    once per direction for one-way tests, once for bibw (directions=2); --max-rounds caps
    the rounds."""
    n = hosts if pattern == "host-rounds" else n_ranks
    return 0 if n < 2 else rounds_run(n, max_rounds) * (1 if directions == 2 else 2)


def rounds_that_fit(budget_s, pattern, n_ranks, hosts, nsizes, retest=False, retest_rounds=RETEST_ROUNDS,
                    directions=1):
    """A budget too small for every round: the most rounds that fit by the model (`run --budget`
    starts with them, a sample; src/planning/schedule.cpp rounds_that_fit, then RoundBudget at run time);
    0 when not even one does."""
    n = hosts if pattern == "host-rounds" else n_ranks
    for k in range(rounds(n) - 1, 0, -1):
        cases = budget_cases(steps(pattern, n_ranks, hosts, directions, max_rounds=k) * nsizes, retest, retest_rounds)
        if case_time_s(budget_s, cases, hosts) >= MIN_CASE_TIME_S:
            return k
    return 0


def rounds_in_budget(budget_s, pattern, n_ranks, hosts, nsizes, case_s, retest=False, retest_rounds=RETEST_ROUNDS,
                     directions=1):
    """The rounds a calibrated `run --budget` settles on when every case costs case_s in all
    (src/planning/schedule.h RoundBudget at a steady cost: the most whole rounds whose cases, with the
    retests' share, fit the budget after the model's start-up); 1 at least, every round at most."""
    n = hosts if pattern == "host-rounds" else n_ranks
    left = budget_s - start_s(hosts)
    best = 1
    for k in range(2, rounds(n) + 1):
        if budget_cases(steps(pattern, n_ranks, hosts, directions, max_rounds=k) * nsizes, retest,
                        retest_rounds) * case_s > left:
            break
        best = k
    return best


def start_s(hosts):
    return START_S_PER_HOST * hosts + START_SLACK_S


def case_time_s(budget_s, cases, hosts):
    """The --case-time that fits `cases` on `hosts` hosts into budget_s (src/planning/schedule.cpp fit_budget)."""
    return ((budget_s - start_s(hosts)) / max(1, cases) - CASE_OVERHEAD_S) / OVERRUN


def min_budget_s(cases, hosts):
    """The smallest budget at which every case still gets MIN_CASE_TIME_S."""
    return start_s(hosts) + max(1, cases) * (CASE_OVERHEAD_S + OVERRUN * MIN_CASE_TIME_S)


def schedule_s(cases, case_time):
    """Seconds the cases take at case_time each (start-up left out)."""
    return cases * (case_time + CASE_OVERHEAD_S)


def host_pairs(hosts, r):
    """The host pairs (a < b) of round r: collectives/patterns.cpp tournament_round."""
    m = hosts + hosts % 2
    cand = [(r % (m - 1), m - 1)] + [((r + k) % (m - 1), (r - k + m - 1) % (m - 1)) for k in range(1, m // 2)]
    return [(min(a, b), max(a, b)) for a, b in cand if a < hosts and b < hosts]


@dataclasses.dataclass
class Recorded:
    """What a run scheduled and why, from its file's facts (src/planning/schedule.cpp)."""
    patterns: list
    hosts: list = dataclasses.field(default_factory=list)       # host-rounds: host index -> name
    rank_host: list = dataclasses.field(default_factory=list)   # rank -> host index
    rank_rail: list = dataclasses.field(default_factory=list)   # rank -> rail
    rails: str = ""
    rounds: list = dataclasses.field(default_factory=list)      # round -> [(a, b)] host indices (those run)
    max_rounds: int = 0                                          # --max-rounds (0: all)
    budget: dict = dataclasses.field(default_factory=dict)      # budget.* facts
    retest: dict = dataclasses.field(default_factory=dict)      # retest.* facts (src/planning/retest.cpp)

    def describe(self):
        s = f"schedule: {','.join(self.patterns)}"
        if self.hosts:
            per = len(self.rank_host) // max(1, len(self.hosts))
            why = "--budget" if "budget.max_rounds" in self.budget else "--max-rounds"
            part = f" of {rounds(len(self.hosts))} ({why})" if len(self.rounds) < rounds(len(self.hosts)) else ""
            s += (f"; host-rounds over {len(self.hosts)} hosts x {per} ranks, {len(self.rounds)} rounds{part} "
                  f"({'; '.join(' '.join(f'{a}-{b}' for a, b in r) for r in self.rounds)}), rails by {self.rails}")
        if self.budget:
            b = self.budget
            s += (f"; --budget {b['budget.s']} s: {b['budget.cases']} cases "
                  f"({b.get('budget.retest_cases', '0')} for the retests) of {b['budget.case_time_s']} s timed "
                  f"work planned, minimum {float(b['budget.min_s']):.0f} s")
            if "budget.elapsed_s" in b:
                s += f", took {float(b['budget.elapsed_s']):.1f} s ({'kept' if b['budget.kept'] == 'yes' else 'EXCEEDED'})"
        return s


def _ints(text):
    return [int(x) for x in str(text).split(",") if x != ""]


def recorded(run):
    """The file's schedule, or None for files written before it was stored."""
    f = run.facts
    if "schedule.patterns" not in f:
        return None
    rec = Recorded(patterns=str(f["schedule.patterns"]).split(","),
                   budget={k: str(v) for k, v in f.items() if k.startswith("budget.")},
                   retest={k: str(v) for k, v in f.items() if k.startswith("retest.")},
                   max_rounds=int(f.get("schedule.max_rounds", 0)))
    if "schedule.host_rounds.hosts" in f:
        rec.hosts = str(f["schedule.host_rounds.hosts"]).split(",")
        rec.rank_host = _ints(f["schedule.host_rounds.rank_host"])
        rec.rank_rail = _ints(f["schedule.host_rounds.rank_rail"])
        rec.rails = str(f["schedule.host_rounds.rails"])
        rec.rounds = [[tuple(int(x) for x in p.split("-")) for p in r.split()]
                      for r in str(f["schedule.host_rounds.host_pairs"]).split(";")]
    return rec


def _nic_mismatch(run, rec):
    """Rail partners whose recorded NICs (/ranks/hca, "mlx5_0:1") differ: the pairs were
    rail-aligned by local index while the topology put them on different rails."""
    hcas = list(getattr(run, "hcas", []) or [])
    if len(hcas) < len(rec.rank_host) or not all(hcas[:len(rec.rank_host)]):
        return []
    nic = [h.split(",")[0].split(":")[0] for h in hcas]
    by = {}
    for r, (h, rail) in enumerate(zip(rec.rank_host, rec.rank_rail)):
        by.setdefault(rail, []).append(r)
    bad = sorted({f"rail {rail}" for rail, rs in by.items() if len({nic[r] for r in rs}) > 1})
    return [f"{', '.join(bad)}: its ranks use different NICs ({rec.rails} pairing; /ranks/hca)"] if bad else []


def host_rounds_problems(run, rec):
    """Where the file disagrees with its recorded plan: the stored rounds against the circle
    method, each host-rounds case's flows against its round's host pairs and rails, and the
    rank -> host map against the ranks' hostnames. Empty when it all agrees."""
    from .schema import directions
    out = []
    H = len(rec.hosts)
    if rec.rounds != [host_pairs(H, r) for r in range(rounds_run(H, rec.max_rounds))]:
        out.append("the stored host rounds are not the circle method's"
                   + (f" first {rec.max_rounds} (--max-rounds)" if rec.max_rounds else ""))
    names = [rec.hosts[h] for h in rec.rank_host]
    if names != list(run.hosts[:len(names)]):
        out.append("the stored rank -> host map is not the ranks' hostnames")
    out += _nic_mismatch(run, rec)
    for c in run.cases:
        if c.pattern != "host-rounds" or c.flows is None:
            continue
        step = int(c.attrs["step"])
        r = step if directions(c.attrs) == 2 else step // 2
        want = set(rec.rounds[r]) if r < len(rec.rounds) else set()
        for s, d in c.links():
            hs, hd = rec.rank_host[s], rec.rank_host[d]
            if (min(hs, hd), max(hs, hd)) not in want or rec.rank_rail[s] != rec.rank_rail[d]:
                out.append(f"{c.name}: flow {s}>{d} is not in round {r} on one rail")
                break
    return out
