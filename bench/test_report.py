#!/usr/bin/python3
"""Unit test of report.py's size-inversion check on synthetic rows (CTest bench.report_inversions)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def rows(series, runs=None):
    """series: {(lib, config, npes, bench): {size: us}} -> val, by_round."""
    val, by_round = {}, {}
    for (lib, config, npes, bench), sizes in series.items():
        for size, v in sizes.items():
            key = (lib, config, npes, bench, size)
            val[key] = (v, "us", "ok")
            if runs and key in runs:
                by_round[key] = {(i + 1,): x for i, x in enumerate(runs[key])}
    return val, by_round


class Inversions(unittest.TestCase):
    def test_the_issue_cliff_is_flagged(self):
        # 2-PE sum: 0.91 us at 4 KiB, 1.8 us at 8 KiB, 0.73 us at 16 KiB
        val, by_round = rows({("symmem", "default", 2, "reduce_sum"): {4096: 0.91, 8192: 1.8, 16384: 0.73}})
        got = report.inversions(val, by_round, {"reduce_sum"})
        self.assertEqual([(g[3], g[4], g[6]) for g in got], [("reduce_sum", 8192, 16384)])  # 4 -> 8 KiB rises
        self.assertAlmostEqual(got[0][5] / got[0][7], 1.8 / 0.73)

    def test_monotone_and_noise_pass(self):
        val, by_round = rows({("symmem", "default", 2, "fcollect"): {8: 0.2, 64: 0.21, 512: 0.3, 4096: 0.9},
                              ("oshmem", "default", 2, "fcollect"): {8: 1.05, 64: 1.0}})  # 5%: noise
        self.assertEqual(report.inversions(val, by_round, {"fcollect"}), [])

    def test_spread_of_runs_widens_the_tolerance(self):
        key_a, key_b = ("symmem", "default", 4, "bcast", 512), ("symmem", "default", 4, "bcast", 4096)
        series = {("symmem", "default", 4, "bcast"): {512: 3.0, 4096: 2.5}}  # 20% above
        val, by_round = rows(series, {key_a: [2.0, 3.0, 4.0], key_b: [2.4, 2.5, 2.6]})  # runs spread 67%
        self.assertEqual(report.inversions(val, by_round, {"bcast"}), [])
        val, by_round = rows(series, {key_a: [2.9, 3.0, 3.1], key_b: [2.4, 2.5, 2.6]})
        self.assertEqual(len(report.inversions(val, by_round, {"bcast"})), 1)

    def test_only_named_benches_and_valid_values(self):
        val, by_round = rows({("symmem", "default", 2, "put_lat"): {8: 5.0, 64: 1.0},
                              ("limit", "default", 2, "reduce_sum"): {8: 5.0, 64: 1.0}})
        val[("symmem", "default", 2, "alltoall", 8)] = (9.0, "us", "ok")
        val[("symmem", "default", 2, "alltoall", 64)] = (None, "us", "wrong")
        self.assertEqual(report.inversions(val, by_round, {"reduce_sum", "alltoall"}), [])

    def test_page_section(self):
        class D:
            pass
        d = D()
        d.val, d.by_round = rows({("symmem", "default", 2, "reduce_sum"): {4096: 0.91, 8192: 1.8, 16384: 0.73}})
        text = report.inversions_section(d)
        self.assertIn("1 in this run", text)
        self.assertIn("| symmem | default | 2 | reduce_sum | 8 KiB | 1.80 | 16 KiB | 0.730 | **2.47** |", text)
        d.val, d.by_round = rows({("symmem", "default", 2, "reduce_sum"): {4096: 0.7, 8192: 0.72}})
        self.assertIn("None in this run", report.inversions_section(d))


if __name__ == "__main__":
    unittest.main()
