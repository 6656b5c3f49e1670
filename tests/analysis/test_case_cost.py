"""scale.case_s.*: where a case's wall time went (src/sweep/case_wall_time.h), on a real
4-rank `bw --pattern rounds` run. The timed part is recomputed from the
file's own iteration times (the longest sum of one rank's times a case, the
median over cases), and every part is ordered as the parts of a case must be
(timed <= test <= total, gather <= total, median <= max)."""

import os
import unittest

import numpy as np

from gdrtest import TempDirCase, make_run

from gdranalysis.schema import load_run

PARTS = ("test", "timed", "gather", "record", "total", "beside_timed")


class CaseCost(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.file_run = load_run(make_run(os.path.join(cls.tmp, "cost.h5"), "-t", "bw", "-b", "4K", "-e", "16K",
                                    "-n", "7", "-w", "1", "--pattern", "rounds", np=4))
        cls.cost = {k[len("scale.case_s."):]: float(v) for k, v in cls.file_run.facts.items()
                    if k.startswith("scale.case_s.")}

    def test_every_part_has_a_median_and_a_max(self):
        self.assertEqual(sorted(self.cost), sorted(f"{p}_{s}" for p in PARTS for s in ("median", "max")))
        for p in PARTS:
            self.assertGreaterEqual(self.cost[f"{p}_max"], self.cost[f"{p}_median"], p)
            self.assertGreaterEqual(self.cost[f"{p}_median"], 0.0, p)

    def test_timed_is_the_files_own_iteration_times(self):
        per_case = [float(np.nanmax(np.nansum(c.times, axis=1))) for c in self.file_run.cases]
        self.assertEqual(len(per_case), 3 * 3 * 2)  # 3 sizes x 3 rounds x 2 directions over 4 ranks
        want = sorted(per_case)[len(per_case) // 2]  # the upper middle, as nth_element at n/2
        self.assertAlmostEqual(self.cost["timed_median"], want, delta=want * 1e-5)
        self.assertAlmostEqual(self.cost["timed_max"], max(per_case), delta=max(per_case) * 1e-5)

    def test_parts_are_ordered_as_within_a_case(self):
        c = self.cost
        self.assertLessEqual(c["timed_median"], c["test_median"])
        self.assertLessEqual(c["test_median"], c["total_median"])
        self.assertLessEqual(c["gather_median"], c["total_median"])
        self.assertLessEqual(c["beside_timed_median"], c["total_median"])


if __name__ == "__main__":
    unittest.main()
