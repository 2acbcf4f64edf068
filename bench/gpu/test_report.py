#!/usr/bin/python3
"""Unit test of bench/gpu/report.py on sample CSVs (CTest bench.gpu_report; no GPU)."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

MiB = 1 << 20
SIZES = report.REDUCE_SIZES


def csv_lines(put=None, limit=None, nv_put=None, ping=None, reduce=None, torch_reduce=None, ref=None,
              barrier=None):
    out = []
    for s, v in (limit or {}).items():
        out.append(f"limit,d2d_copy,{s},{v},GB/s")
    for s, v in (put or {}).items():
        out.append(f"symmem,put,{s},{v},GB/s")
    for s, v in (nv_put or {}).items():
        out.append(f"nvshmem,put,{s},{v},GB/s")
    if ping:
        out += [f"symmem,pingpong,8,{ping[0]},us", f"nvshmem,pingpong,8,{ping[1]},us"]
    for s, v in (reduce or {}).items():
        out.append(f"symmem,allreduce,{s},{v},us")
    for s, v in (torch_reduce or {}).items():
        out.append(f"torch,allreduce,{s},{v},us")
    for s, v in (ref or {}).items():
        out.append(f"limit,allreduce_ref,{s},{v},us")
    if barrier:
        out += [f"symmem,barrier,0,{barrier[0]},us", f"torch,barrier,0,{barrier[1]},us",
                f"nvshmem,barrier,0,{barrier[2]},us"]
    return "\n".join(out) + "\n"


GOOD = dict(limit={MiB: 900, 16 * MiB: 1500, 256 * MiB: 1600}, put={MiB: 700, 16 * MiB: 1400, 256 * MiB: 1550},
            nv_put={MiB: 650, 16 * MiB: 1380, 256 * MiB: 1500}, ping=(1.9, 2.1),
            reduce={s: 8.0 for s in SIZES}, torch_reduce={s: 9.0 for s in SIZES}, ref={s: 5.0 for s in SIZES},
            barrier=(4.0, 5.0, 6.0))


class Parse(unittest.TestCase):
    def test_lines_among_launcher_output(self):
        text = ("[pe 0] symmem,put,1024,12.5,GB/s\n"
                "symmem-run: job started\n"
                "torch,allreduce,4096,7.25,us\n"
                "# torch: torch 2.11.0+cu130, 2 ranks, NVIDIA H100 80GB HBM3\n"
                "symmem,put,2048,nan,GB/s\n"           # not a figure
                "garbage,put,1,2,us\n")
        vals, notes = report.parse_csv(text)
        self.assertEqual(vals, {("symmem", "put", 1024): 12.5, ("torch", "allreduce", 4096): 7.25})
        self.assertEqual(notes, ["torch: torch 2.11.0+cu130, 2 ranks, NVIDIA H100 80GB HBM3"])


class Verdicts(unittest.TestCase):
    def evaluate(self, **kw):
        args = dict(GOOD)
        args.update(kw)
        return report.evaluate(report.parse_csv(csv_lines(**args))[0])

    def test_all_met(self):
        res = self.evaluate()
        self.assertEqual({t: res[t][0] for t in report.ORDER},
                         {"put": "PASS", "pingpong": "PASS", "allreduce": "PASS", "barrier": "PASS"})
        put_rows = res["put"][2]
        self.assertEqual(put_rows[0], ["1 MiB", "700", "900", "0.78", "650", ""])  # below 16 MiB: no target
        self.assertEqual(put_rows[1][-1], "PASS")

    def test_put_under_90_percent_at_16_mib(self):
        res = self.evaluate(put={16 * MiB: 1340, 256 * MiB: 1550})  # 1340 / 1500 = 0.893
        self.assertEqual(res["put"][0], "MISS")
        by_size = {r[0]: r for r in res["put"][2]}
        self.assertEqual(by_size["16 MiB"][-1], "MISS")
        self.assertEqual(by_size["256 MiB"][-1], "PASS")
        self.assertEqual(by_size["1 MiB"][1:3], ["-", "900"])  # the limit alone: shown, no verdict

    def test_pingpong_slower_than_nvshmem(self):
        self.assertEqual(self.evaluate(ping=(2.2, 2.1))["pingpong"][0], "MISS")

    def test_allreduce_every_size_and_both_bars(self):
        red = dict(GOOD["reduce"])
        red[64 << 10] = 9.5   # slower than torch (9.0)
        red[4 << 20] = 10.5   # slower than torch too, and over 2x the sum (5.0)
        res = self.evaluate(reduce=red)
        self.assertEqual(res["allreduce"][0], "MISS")
        by_size = {r[0]: r[-1] for r in res["allreduce"][2]}
        self.assertEqual(by_size["64 KiB"], "MISS (slower than torch)")
        self.assertEqual(by_size["4 MiB"], "MISS (slower than torch, over 2x the one-process sum)")
        self.assertEqual(by_size["1 KiB"], "PASS")
        torch_slow = {s: 100.0 for s in SIZES}
        self.assertEqual(self.evaluate(reduce={s: 11.0 for s in SIZES}, torch_reduce=torch_slow)["allreduce"][0],
                         "MISS")  # 11 > 2 x 5 though faster than torch

    def test_barrier_must_beat_both(self):
        self.assertEqual(self.evaluate(barrier=(5.5, 5.0, 6.0))["barrier"][0], "MISS")
        self.assertEqual(self.evaluate(barrier=(5.5, 6.0, 5.0))["barrier"][0], "MISS")

    def test_missing_figures_are_not_measured_never_pass(self):
        res = report.evaluate(report.parse_csv(csv_lines(limit=GOOD["limit"], put=GOOD["put"]))[0])
        self.assertEqual(res["put"][0], "PASS")
        for t in ("pingpong", "allreduce", "barrier"):
            self.assertEqual(res[t][0], "not measured", t)
        # one size missing on symmem's side: that row is not measured, the others still count
        red = {s: 8.0 for s in SIZES if s != 1 << 20}
        res = self.evaluate(reduce=red)
        self.assertEqual({r[0]: r[-1] for r in res["allreduce"][2]}["1 MiB"], "not measured")
        self.assertEqual(res["allreduce"][0], "PASS")
        self.assertEqual(report.evaluate({})["put"][0], "not measured")


class Page(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpu-report-test-")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def test_page_and_summary(self):
        self.write("meta.txt", "card=NVIDIA H100 80GB HBM3\ndriver=580.65.06\ndate=2026-11-02T10:00:00Z\n"
                               "commit=abc1234\nmps=yes\nnvshmem=3.4.5 (compiled against 3.4.5)\ntorch=2.11.0\n")
        self.write("np2.csv", csv_lines(**GOOD) + "# symmem: 2 PEs, device heap 1024 MiB per PE\n")
        self.write("np4.csv", csv_lines(**dict(GOOD, ping=(3.0, 2.0))))
        self.write("functional.txt", "PASS probe_cuda_route\nFAIL api_np2_nomps (rc 1; see x.log)\n")
        self.write("steps.txt", "PASS symmem_np2 (rc 0, 12 s; gpu-check/symmem_np2.log)\nSKIP torch_np4 (no MPS)\n")
        meta, runs, functional = report.load(self.dir)
        text = report.page(meta, runs, functional)
        self.assertIn("| card | NVIDIA H100 80GB HBM3 |", text)
        self.assertIn("| MPS | yes |", text)
        self.assertIn("## 2 PEs (the targets)", text)
        self.assertIn("## 4 PEs", text)
        self.assertIn("| pingpong | PASS |", text)
        self.assertIn("| pingpong | MISS |", text)
        self.assertIn("| 16 MiB | 1400 | 1500 | 0.93 | 1380 | PASS |", text)
        self.assertIn("| 8 B | 1.9 | 2.1 | 0.90 | PASS |", text)
        self.assertIn("- symmem: 2 PEs, device heap 1024 MiB per PE", text)
        self.assertIn("FAIL api_np2_nomps", text)
        self.assertIn("SKIP torch_np4 (no MPS)", text)
        s = report.summary(meta, runs, functional)
        self.assertIn("2 PEs: put PASS, pingpong PASS, allreduce PASS, barrier PASS", s)
        self.assertIn("4 PEs: put PASS, pingpong MISS", s)
        self.assertIn("functional FAIL api_np2_nomps", s)

    def test_no_benchmark(self):
        meta, runs, functional = report.load(self.dir)
        self.assertIn("No benchmark ran: no figures.", report.page(meta, runs, functional))
        self.assertIn("no benchmark ran", report.summary(meta, runs, functional))


if __name__ == "__main__":
    unittest.main()
