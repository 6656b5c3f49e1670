"""The schedule and budget model shared by `gdrbench validate`, the simulators and
`gdrbench run --budget` (src/schedule.h holds the same constants in C++;
tests/mpi/test_host_rounds.py checks that a run's stored budget decision is this one).

A case costs its timed work (--case-time) x OVERRUN (auto iterations overrun their
time a little) plus CASE_OVERHEAD_S (warm-up, check, HDF5; measured, docs/validate.md);
start-up costs START_S_PER_HOST a host plus START_SLACK_S.
"""

from __future__ import annotations

CASE_OVERHEAD_S = 0.35
OVERRUN = 1.15
START_S_PER_HOST = 0.25     # mpirun start-up and connections grow with the host count (README scaling table)
START_SLACK_S = 2.0
MIN_CASE_TIME_S = 0.2


def rounds(n):
    """Rounds of the circle method over n players (collectives/patterns.cpp rounds())."""
    return n if n % 2 else n - 1


def steps(pattern, n_ranks, hosts=1, directions=1):
    """Steps of `rounds` (over ranks) or `host-rounds` (over hosts) for one size: each round
    once per direction for one-way tests, once for bibw (directions=2)."""
    n = hosts if pattern == "host-rounds" else n_ranks
    return 0 if n < 2 else rounds(n) * (1 if directions == 2 else 2)


def start_s(hosts):
    return START_S_PER_HOST * hosts + START_SLACK_S


def case_time_s(budget_s, cases, hosts):
    """The --case-time that fits `cases` on `hosts` hosts into budget_s (src/schedule.cpp fit_budget)."""
    return ((budget_s - start_s(hosts)) / max(1, cases) - CASE_OVERHEAD_S) / OVERRUN


def min_budget_s(cases, hosts):
    """The smallest budget at which every case still gets MIN_CASE_TIME_S."""
    return start_s(hosts) + max(1, cases) * (CASE_OVERHEAD_S + OVERRUN * MIN_CASE_TIME_S)


def schedule_s(cases, case_time):
    """Seconds the cases take at case_time each (start-up left out)."""
    return cases * (case_time + CASE_OVERHEAD_S)
