"""results/gdranalysis/schedule.py: the host rounds are the circle method's (every host
pair once, each round a matching), validate and the fleet simulator count steps and size
budgets with it, and a file's recorded schedule is checked against its cases and NICs.
Pure Python, under a second; the real run's file against it: tests/mpi/test_host_rounds.py."""

from __future__ import annotations

import types
import unittest

from gdranalysis import schedule, sim_fleet, validate


def fake_run(rank_hosts, hcas=(), cases=()):
    names = sorted(set(rank_hosts))
    facts = {"schedule.patterns": "host-rounds", "schedule.host_rounds.hosts": ",".join(names),
             "schedule.host_rounds.rank_host": ",".join(str(names.index(h)) for h in rank_hosts),
             "schedule.host_rounds.rank_rail": ",".join(str(rank_hosts[:r].count(h)) for r, h in enumerate(rank_hosts)),
             "schedule.host_rounds.rails": "local index",
             "schedule.host_rounds.host_pairs": "; ".join(
                 " ".join(f"{a}-{b}" for a, b in schedule.host_pairs(len(names), r))
                 for r in range(schedule.rounds(len(names)))),
             "budget.s": "60", "budget.cases": "12", "budget.case_time_s": "3.000", "budget.min_s": "9.7"}
    return types.SimpleNamespace(facts=facts, hosts=list(rank_hosts), hcas=list(hcas), cases=list(cases))


def case(step, flows):
    c = types.SimpleNamespace(pattern="host-rounds", flows=flows, name=f"{step:05d}",
                              attrs={"step": step, "test": "bw", "directions": 1})
    c.links = lambda: [tuple(f) for f in flows]
    return c


class ScheduleTest(unittest.TestCase):
    def test_every_host_pair_once_each_round_a_matching(self):
        for hosts in range(2, 21):
            met = []
            for r in range(schedule.rounds(hosts)):
                busy = [h for p in schedule.host_pairs(hosts, r) for h in p]
                self.assertEqual(len(busy), len(set(busy)))
                met += schedule.host_pairs(hosts, r)
            self.assertEqual(sorted(met), [(a, b) for a in range(hosts) for b in range(a + 1, hosts)])

    def test_steps_validate_and_the_fleet_simulator_agree(self):
        self.assertEqual(schedule.steps("host-rounds", 8 * 1024, 1024), 2046)
        self.assertEqual(schedule.steps("rounds", 8 * 1024, 1024), 16382)
        self.assertEqual(schedule.steps("host-rounds", 15, 5), 10)          # odd: one host rests a round
        self.assertEqual(schedule.steps("host-rounds", 8, 4, directions=2), 3)
        self.assertEqual(sim_fleet.host_rounds_s(5, 3, 0.5), 10 * 3 * (0.5 + schedule.CASE_OVERHEAD_S))
        cases, ct, _ = validate.plan(4, 2, 3, 60, 5, pattern="host-rounds")
        self.assertEqual(cases, 18)  # validate runs without the retests (opt-in, src/planning/retest.h)
        self.assertEqual(schedule.budget_cases(18, retest=True), 18 + 4 * 3)  # 4 rounds x 3 steps
        self.assertAlmostEqual(ct, schedule.case_time_s(60 - 5 - validate.ANALYSIS_S, 18, 4))
        self.assertLess(validate.min_budget(4, 2, 3, pattern="host-rounds"), validate.min_budget(4, 2, 3))
        # --max-rounds: the first N rounds, 2N steps a size; more than there are is all of them.
        self.assertEqual(schedule.steps("host-rounds", 8 * 1024, 1024, max_rounds=64), 128)
        self.assertEqual(schedule.steps("rounds", 8, 1, max_rounds=100), schedule.steps("rounds", 8, 1))
        self.assertEqual(validate.plan(16, 1, 3, 120, 5, pattern="host-rounds", max_rounds=5)[0], 2 * 5 * 3)
        self.assertEqual(sim_fleet.host_rounds_s(1024, 3, 0.1, 64), 128 * 3 * (0.1 + schedule.CASE_OVERHEAD_S))
        # A calibrated budget at a steady cost a case (src/planning/schedule.h RoundBudget): the C++ unit test's
        # 20 s at 1.0115 s a case, 6 cases a round, is 3 rounds; a 15-minute validate at 1,024 x 8 is
        # every round at 0.0572 s a case and 199 at 0.5251 s (docs/fleet-scale.md).
        self.assertEqual(schedule.rounds_in_budget(schedule.start_s(16) + 20, "host-rounds", 16, 16, 3, 1.0115), 3)
        self.assertEqual(schedule.rounds_in_budget(885, "host-rounds", 8192, 1024, 3, 0.0572), 1023)
        self.assertEqual(schedule.rounds_in_budget(885, "host-rounds", 8192, 1024, 3, 0.5251), 199)
        self.assertEqual(schedule.rounds_in_budget(1, "host-rounds", 8192, 1024, 3, 0.5251), 1)

    def test_recorded_schedule_checked_against_cases_and_nics(self):
        hosts = ["a", "a", "b", "b", "c", "c"]
        good = [case(0, [[2, 4], [3, 5]]), case(1, [[4, 2], [5, 3]])]
        run = fake_run(hosts, cases=good)
        rec = schedule.recorded(run)
        self.assertEqual(rec.rank_host, [0, 0, 1, 1, 2, 2])
        self.assertEqual(rec.rounds[0], [(1, 2)])
        self.assertIn("3 rounds (1-2; 0-2; 0-1)", rec.describe())
        self.assertEqual(schedule.host_rounds_problems(run, rec), [])
        off_rail = fake_run(hosts, cases=[case(0, [[2, 5], [3, 4]])])
        self.assertIn("not in round 0 on one rail", schedule.host_rounds_problems(off_rail, rec)[0])
        nics = fake_run(hosts, hcas=["mlx5_0:1", "mlx5_1:1", "mlx5_1:1", "mlx5_0:1", "mlx5_0:1", "mlx5_1:1"])
        self.assertIn("use different NICs", schedule.host_rounds_problems(nics, rec)[0])
        self.assertIsNone(schedule.recorded(types.SimpleNamespace(facts={})))


if __name__ == "__main__":
    unittest.main()
