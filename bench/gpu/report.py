#!/usr/bin/python3
"""report.py — docs/gpu.md from one GPU run of scripts/gpu-check.sh (bench/gpu/README.md).

    report.py DIR [--out docs/gpu.md]      prints the summary; writes the page with --out

DIR holds what gpu-check.sh wrote: meta.txt (key=value: card, driver, date, commit, mps,
...), np<P>.csv (the lines `lib,op,size,value,unit` of gpu_limit, gpu_symmem, gpu_nvshmem
and gpu_torch for P PEs; `# lib: text` lines are notes; anything else is ignored), and
functional.txt (tests/device/gpu_check.sh's summary). Verdicts against issue 36's targets,
all on the one GPU in the same run:
  put        symmem's put >= 90 % of cudaMemcpyAsync device-to-device at >= 16 MiB
  pingpong   symmem's put-with-signal ping-pong no slower than NVSHMEM's
  allreduce  symmem's all-reduce no slower than torch's one_shot_all_reduce at every size
             1 KiB .. 4 MiB, and within 2x of one process summing the same buffers
  barrier    symmem's barrier no slower than torch's and than NVSHMEM's
A figure that is missing is "not measured", never a pass.
"""
import argparse
import os
import re
import sys

LINE = re.compile(r"(?:^|[\s\]|:])(limit|symmem|nvshmem|torch),([a-z_0-9]+),(\d+),([-+0-9.eE]+|nan|inf),(\S+)\s*$")
NOTE = re.compile(r"(?:^|[\s\]|:])# (limit|symmem|nvshmem|torch): (.*)$")
PUT_MIN = 16 << 20
PUT_RATIO = 0.90
REF_FACTOR = 2.0
REDUCE_SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20]
PASS, MISS, NONE = "PASS", "MISS", "not measured"


def parse_csv(text):
    """-> ({(lib, op, size): value}, [notes])"""
    vals, notes = {}, []
    for raw in text.splitlines():
        line = raw.rstrip()
        m = LINE.search(line)
        if m:
            lib, op, size, value, _unit = m.groups()
            try:
                v = float(value)
            except ValueError:
                continue
            if v == v and v not in (float("inf"), float("-inf")):
                vals[(lib, op, int(size))] = v
            continue
        m = NOTE.search(line)
        if m:
            notes.append(f"{m.group(1)}: {m.group(2)}")
    return vals, notes


def read_meta(path):
    meta = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k.strip()] = v.strip()
    return meta


def size_name(n):
    if n == 0:
        return "-"
    for unit, b in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= b and n % b == 0:
            return f"{n // b} {unit}"
    return f"{n} B"


def fmt(v, digits=3):
    if v is None:
        return "-"
    return f"{v:.{digits}g}" if abs(v) < 1000 else f"{v:.0f}"


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}"


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def verdict_of(rows):
    """A target's verdict from its rows' verdicts: MISS if any, else PASS if any, else not measured."""
    vs = [r for r in rows if r in (PASS, MISS)]
    if MISS in vs:
        return MISS
    return PASS if vs else NONE


def evaluate(vals):
    """-> {target: (verdict, header, rows)} for one PE count."""
    g = vals.get
    out = {}

    rows, vs = [], []
    sizes = sorted({s for (lib, op, s) in vals if (lib, op) in (("symmem", "put"), ("limit", "d2d_copy"))})
    for s in sizes:
        sym, lim, nv = g(("symmem", "put", s)), g(("limit", "d2d_copy", s)), g(("nvshmem", "put", s))
        r = ratio(sym, lim)
        if s >= PUT_MIN:
            v = NONE if r is None else (PASS if r >= PUT_RATIO else MISS)
            vs.append(v)
        else:
            v = ""
        rows.append([size_name(s), fmt(sym), fmt(lim), fmt_ratio(r), fmt(nv), v])
    if not any(s >= PUT_MIN for s in sizes):
        vs.append(NONE)
    out["put"] = (verdict_of(vs), ["size", "symmem GB/s", "D2D copy GB/s", "symmem / copy", "NVSHMEM GB/s",
                                   f">= {PUT_RATIO:.0%} at >= 16 MiB"], rows)

    sym, nv = g(("symmem", "pingpong", 8)), g(("nvshmem", "pingpong", 8))
    r = ratio(sym, nv)
    v = NONE if r is None else (PASS if r <= 1.0 else MISS)
    out["pingpong"] = (v, ["size", "symmem us", "NVSHMEM us", "symmem / NVSHMEM", "no slower"],
                       [["8 B", fmt(sym), fmt(nv), fmt_ratio(r), v]])

    rows, vs = [], []
    for s in REDUCE_SIZES:
        sym, tor = g(("symmem", "allreduce", s)), g(("torch", "allreduce", s))
        ref, nv = g(("limit", "allreduce_ref", s)), g(("nvshmem", "allreduce", s))
        rt, rr = ratio(sym, tor), ratio(sym, ref)
        if rt is None or rr is None:
            v = NONE
        elif rt <= 1.0 and rr <= REF_FACTOR:
            v = PASS
        else:
            v = MISS + " (" + ", ".join(w for w, bad in (("slower than torch", rt > 1.0),
                                                         (f"over {REF_FACTOR:g}x the one-process sum", rr > REF_FACTOR))
                                        if bad) + ")"
        vs.append(MISS if v.startswith(MISS) else v)
        rows.append([size_name(s), fmt(sym), fmt(tor), fmt_ratio(rt), fmt(ref), fmt_ratio(rr), fmt(nv), v])
    out["allreduce"] = (verdict_of(vs), ["size per PE", "symmem us", "torch one-shot us", "symmem / torch",
                                         "one-process sum us", "symmem / sum", "NVSHMEM us",
                                         f"<= torch and <= {REF_FACTOR:g}x sum"], rows)

    sym, tor, nv = g(("symmem", "barrier", 0)), g(("torch", "barrier", 0)), g(("nvshmem", "barrier", 0))
    rt, rn = ratio(sym, tor), ratio(sym, nv)
    if rt is None or rn is None:
        v = NONE
    else:
        v = PASS if rt <= 1.0 and rn <= 1.0 else MISS
    out["barrier"] = (v, ["symmem us", "torch us", "NVSHMEM us", "symmem / torch", "symmem / NVSHMEM",
                          "<= torch and <= NVSHMEM"], [[fmt(sym), fmt(tor), fmt(nv), fmt_ratio(rt), fmt_ratio(rn), v]])
    return out


TITLES = {
    "put": "Put bandwidth (PE 0 -> PE 1, putmem_block) against cudaMemcpyAsync device-to-device",
    "pingpong": "Put-with-signal ping-pong (8 B, one thread; half a round trip) against NVSHMEM",
    "allreduce": "All-reduce (fp32 sum, SHMEM_TEAM_WORLD) against torch's one_shot_all_reduce and one "
                 "process summing the same buffers",
    "barrier": "Barrier (on a stream) against torch's symm_mem barrier and NVSHMEM",
}
ORDER = ["put", "pingpong", "allreduce", "barrier"]


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def load(run_dir):
    meta = read_meta(os.path.join(run_dir, "meta.txt"))
    runs = {}
    for name in sorted(os.listdir(run_dir)):
        m = re.fullmatch(r"np(\d+)\.csv", name)
        if m:
            with open(os.path.join(run_dir, name)) as f:
                runs[int(m.group(1))] = parse_csv(f.read())
    functional = read_text(os.path.join(run_dir, "functional.txt"))
    meta["steps"] = read_text(os.path.join(run_dir, "steps.txt"))
    return meta, runs, functional


def read_text(path):
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return f.read().strip()


def page(meta, runs, functional):
    m = meta.get
    out = ["# symmem on a GPU: the benchmark against the anchors", "",
           "Written by `bench/gpu/report.py` from one run of `bash scripts/gpu-check.sh` on a GPU machine "
           "(issue 36); every figure below was measured in that run, on that card. Rerun the script to replace "
           "this page.", "",
           "| | |", "|---|---|",
           f"| card | {m('card', '?')} |",
           f"| driver | {m('driver', '?')} |",
           f"| date | {m('date', '?')} |",
           f"| commit | {m('commit', '?')} |",
           f"| MPS | {m('mps', '?')} |",
           f"| NVSHMEM | {m('nvshmem', '?')} |",
           f"| torch | {m('torch', '?')} |",
           f"| PEs | {', '.join(str(p) for p in sorted(runs)) or 'none'} (all on the one GPU) |", ""]
    out += ["## Functional tests (tests/device/gpu_check.sh)", "", "```", functional or "(not run)", "```", ""]
    if m("steps"):
        out += ["## Steps of this run (scripts/gpu-check.sh)", "", "```", m("steps"), "```", ""]
    if not runs:
        out += ["No benchmark ran: no figures.", ""]
    for p in sorted(runs):
        vals, notes = runs[p]
        res = evaluate(vals)
        out += [f"## {p} PEs" + (" (the targets)" if p == 2 else ""), ""]
        out += ["| target | verdict |", "|---|---|"] + [f"| {t} | {res[t][0]} |" for t in ORDER] + [""]
        for t in ORDER:
            verdict, header, rows = res[t]
            out += [f"### {TITLES[t]}: {verdict}", "", table(header, rows), ""]
        if notes:
            out += ["Notes printed by the programs:", ""] + [f"- {n}" for n in notes] + [""]
    out += ["## Method", "",
            "Times are medians of 5 timed runs (CUDA events around a loop of calls; the ping-pong with "
            "`%globaltimer` inside the kernel after 100 warm-up rounds), taken by PE 0. Every result is checked "
            "(the bytes of each put at the target, each ping-pong payload, stamps across each barrier, every sum); "
            "a wrong one fails the program and leaves no figure. All PEs share the one GPU, so these are not "
            "NVLink figures: compare only within this page. The one-process sum writes one output; a P-PE "
            "all-reduce does P times that work on the one GPU (`limit,allreduce_ref_all` in the CSVs).", ""]
    return "\n".join(out)


def summary(meta, runs, functional):
    lines = [f"gpu-check: {meta.get('card', '?')}, driver {meta.get('driver', '?')}, MPS {meta.get('mps', '?')}, "
             f"commit {meta.get('commit', '?')}"]
    for line in functional.splitlines():
        if line.startswith(("PASS", "FAIL", "SKIP")):
            lines.append("  functional " + line)
    for p in sorted(runs):
        res = evaluate(runs[p][0])
        lines.append(f"  {p} PEs: " + ", ".join(f"{t} {res[t][0]}" for t in ORDER))
    if not runs:
        lines.append("  no benchmark ran")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--out")
    args = ap.parse_args()
    meta, runs, functional = load(args.dir)
    if args.out:
        with open(args.out, "w") as f:
            f.write(page(meta, runs, functional))
    print(summary(meta, runs, functional))
    return 0


if __name__ == "__main__":
    sys.exit(main())
