#!/usr/bin/python3
"""report.py: turns one bench/compare.sh run into docs/performance.md and its plots.

    report.py --csv results.csv --runs runs.csv --meta meta.txt --notes notes.txt --out DIR

Every number on the page comes from the CSV of that run; nothing is carried over from
earlier runs. Ratios are always "symmem time / other time" (for bandwidths and rates the
inverse ratio of the values), so below 1 means symmem is faster, above 1 slower. A value a
peer did not produce (timeout, crash, routine missing) has no ratio: it is shown as such
and never counted in symmem's favour."""
import argparse
import csv
import math
import statistics
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# (lib, config, label) per kind of program
COLUMNS = {
    "p2p": [("symmem", "default", "symmem"), ("oshmem", "default", "OSHMEM"),
            ("mpi", "default", "MPI"), ("mpi", "osc-sm", "MPI osc=sm")],
    "coll": [("symmem", "default", "symmem"), ("symmem", "active-set", "symmem 1.4 API"),
             ("oshmem", "default", "OSHMEM"),
             ("oshmem", "scoll-basic", "OSHMEM scoll=basic"), ("mpi", "default", "MPI")],
}
PEERS = {"oshmem": "OSHMEM", "mpi": "MPI"}

# bench: kind, title, metric (time / bw / rate), name in the MPI program, limit model
SPECS = {
    "put_lat": ("p2p", "put latency: putmem + quiet, one at a time", "time", "put_lat", "mem1"),
    "get_lat": ("p2p", "get latency: getmem, one at a time", "time", "get_lat", "mem1"),
    "put_pingpong": ("p2p", "put ping-pong: 8-byte p, the target waits and answers (half round trip)",
                     "time", "sendrecv_pingpong", "cl_mem1"),
    "signal_pingpong": ("p2p", "put-with-signal ping-pong: putmem_signal + signal_wait_until (half round trip)",
                        "time", "sendrecv_pingpong", "cl_mem1"),
    "fadd_lat": ("p2p", "atomic fetch-add latency (long)", "time", "fadd_lat", "cl"),
    "cswap_lat": ("p2p", "atomic compare-swap latency (long)", "time", "cswap_lat", "cl"),
    "add_rate": ("p2p", "atomic add rate: windows of 64 atomic_add + quiet", "rate", "add_rate", None),
    "put_mr": ("p2p", "put message rate: windows of 64 8-byte putmem + quiet", "rate", "put_mr", None),
    "put_bw": ("p2p", "put bandwidth: windows of putmem + quiet", "bw", "put_bw", "mem1"),
    "get_bw": ("p2p", "get bandwidth: windows of getmem", "bw", "get_bw", "mem1"),
    "barrier": ("coll", "barrier_all", "time", "barrier", "cl"),
    "bcast": ("coll", "broadcast of SIZE bytes from PE 0", "time", "bcast", "cl_mem1"),
    "fcollect": ("coll", "fcollect: SIZE bytes from every PE to every PE (MPI_Allgather)", "time",
                 "fcollect", "cl_mem2n"),
    "alltoall": ("coll", "alltoall: SIZE bytes per pair of PEs", "time", "alltoall", "cl_mem2n"),
    "reduce_sum": ("coll", "sum reduction of SIZE/8 doubles, result on every PE (MPI_Allreduce)",
                   "time", "reduce_sum", "cl_mem2"),
}
LIMIT_TEXT = {
    "mem1": "memcpy of SIZE, one stream",
    "cl_mem1": "max(one cache line between two cores, memcpy of SIZE)",
    "cl": "one cache line passed between two cores (one way)",
    "cl_mem2": "max(one cache line between two cores, memcpy of SIZE with two concurrent streams)",
    "cl_mem2n": "max(one cache line between two cores, memcpy of 2 x SIZE with two concurrent streams): "
                "every PE writes the 2 x SIZE bytes of its result",
}
UNITS = {"time": "us", "bw": "GB/s", "rate": "M/s"}


def fmt_size(s):
    s = int(s)
    if s == 0:
        return "-"
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return f"{s >> 20} MiB"
    if s >= 1024 and s % 1024 == 0:
        return f"{s >> 10} KiB"
    return f"{s} B"


def fmt(v):
    if v is None:
        return "—"
    if v == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(v)))))
    return f"{v:.{min(digits, 4)}f}"


def fmt_ratio(r):
    if r is None:
        return "—"
    return f"**{r:.2f}**" if r <= 1.0 else f"{r:.2f}"


class Data:
    def __init__(self, args):
        self.meta = {}
        with open(args.meta) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    self.meta[k] = v
        # (lib, config, npes, bench, size) -> (value, unit, status). With several rounds
        # (compare.sh --rounds) a key has one row per round: the value is their median, and
        # one wrong result makes the cell wrong.
        rows = defaultdict(list)
        # paired limits (bench_harness.h: rows NAME__line, NAME__copy measured beside NAME by
        # the same two processes): (lib, config, npes, bench, size) -> {round: {part: value}}
        self.paired = defaultdict(lambda: defaultdict(dict))
        # the rows themselves, round by round, for the paired ratios
        self.by_round = defaultdict(dict)
        with open(args.csv) as f:
            for r in csv.DictReader(f):
                # "R" or "R.K": round R, its K-th run of the row (compare.sh --repeat2)
                rnd = tuple(int(x) for x in (r.get("round") or "1").split("."))
                bench, _, part = r["bench"].partition("__")
                key = (r["lib"], r["config"], int(r["npes"]), bench, int(r["size"]))
                if part:
                    if r["status"] == "ok":
                        self.paired[key][rnd][part] = float(r["value"])
                    continue
                rows[key].append(r)
                if r["status"] == "ok":
                    self.by_round[key][rnd] = float(r["value"])
        self.val = {}
        for key, rs in rows.items():
            ok = [float(r["value"]) for r in rs if r["status"] == "ok"]
            wrong = any(r["status"] == "wrong" for r in rs)
            v = statistics.median(ok) if ok and not wrong else None
            self.val[key] = (v, rs[0]["unit"], "wrong" if wrong else "ok")
        self.rounds = max((len(rs) for rs in rows.values()), default=1)
        # a run's status over the rounds: the worst one
        worst = {"ok": 0, "crash-after-results": 1, "wrong": 2, "timeout": 3, "crash": 4}
        self.runs = {}
        self.run_rows = []
        with open(args.runs) as f:
            for r in csv.DictReader(f):
                key = (r["lib"], r["config"], r["kind"], int(r["npes"]))
                if worst.get(r["status"], 5) >= worst.get(self.runs.get(key, "ok"), 5):
                    self.runs[key] = r["status"]
                self.run_rows.append(r)
        # compare.sh runs each program once per group of benchmarks (--only): the Runs table
        # shows one line per program, configuration, PE count and round, its worst status
        # and the time of its runs together
        merged = {}
        for r in self.run_rows:
            key = (r.get("round") or "1", r["lib"], r["kind"], r["config"], r["npes"])
            m = merged.setdefault(key, dict(r, runs=0, seconds=0.0, why=""))
            m["runs"] += 1
            m["seconds"] += float(r["seconds"])
            if worst.get(r["status"], 5) > worst.get(m["status"], 5):
                m["status"], m["rc"] = r["status"], r["rc"]
            if r["status"] != "ok":
                what = (r.get("why") or "").strip()
                group = (r.get("benchmarks") or "").strip()
                m["why"] += ("; " if m["why"] else "") + (f"{group}: " if group and group != "all" else "") + what
        self.run_rows = list(merged.values())
        self.notes = defaultdict(set)  # (lib, config, kind) -> lines
        self.skipped = set()  # (lib, config, npes, bench)
        with open(args.notes) as f:
            for line in f:
                parts = line.rstrip("\n").split(",", 5)
                if len(parts) < 6:
                    continue
                lib, config, kind, npes, typ, text = parts
                if typ == "skipped":
                    self.skipped.add((lib, config, int(npes), text.split(":")[0]))
                self.notes[(lib, config, kind)].add(f"{typ} {text}")
        self.npes = sorted({k[2] for k in self.val if k[0] != "limit"} |
                           {k[3] for k in self.runs if k[0] != "limit"})
        # limits: best of the runs at the start and the end of the invocation
        self.cl = self._best("cacheline_pingpong", 64, min)
        self.mem1 = {s: self._best("memcpy_1stream", s, max) for s in self._sizes("memcpy_1stream")}
        self.mem2 = {s: self._best("memcpy_2stream", s, max) for s in self._sizes("memcpy_2stream")}

    def _sizes(self, bench):
        return sorted({k[4] for k in self.val if k[0] == "limit" and k[3] == bench})

    def _best(self, bench, size, pick):
        vs = [v[0] for k, v in self.val.items()
              if k[0] == "limit" and k[3] == bench and k[4] == size and v[0] is not None]
        return pick(vs) if vs else None

    def limit_for(self, bench, npes, size):
        """Limit in the benchmark's own unit (us, or GB/s for bandwidths); 2 PEs only."""
        model = SPECS[bench][4]
        if model is None or npes != 2:
            return None
        if SPECS[bench][2] == "bw":
            return self.mem1.get(size)

        def copy_us(table, nbytes=size):
            bw = table.get(nbytes)
            return nbytes / (bw * 1e3) if bw else None

        if model == "mem1":
            return copy_us(self.mem1)
        if model == "cl":
            return self.cl
        if model == "cl_mem2n":  # the result every PE writes: npes (= 2) blocks of SIZE
            parts = [self.cl, copy_us(self.mem2, npes * size)]
        else:
            parts = [self.cl, copy_us(self.mem1 if model == "cl_mem1" else self.mem2)]
        if size == 0:
            parts = parts[:1]
        return max(parts) if all(p is not None for p in parts) else None

    def paired_ratio(self, lib, config, npes, bench, size):
        """The row over its paired limit (the larger of the line and the copy for a time,
        the copy for a bandwidth), round by round, as a ratio like ratio(): the median over
        the rounds that have both. None when the run printed no paired limit."""
        name = bench if lib != "mpi" else SPECS[bench][3]
        key = (lib, config, npes, name, size)
        metric = SPECS[bench][2]
        if self.val.get(key, (None, None, "ok"))[2] == "wrong":
            return None
        rs = []
        for rnd, v in self.by_round.get(key, {}).items():
            parts = self.paired.get(key, {}).get(rnd)
            if not parts:
                continue
            limits = [parts[k] for k in ("line", "copy") if k in parts]
            if not limits:
                continue
            lim = parts.get("copy") if metric == "bw" else max(limits)
            r = ratio(metric, v, lim)
            if r is not None:
                rs.append(r)
        return statistics.median(rs) if rs else None

    def paired_part(self, lib, config, npes, bench, size, part):
        """A paired part over the paired line, round by round, median (e.g. "line2": the
        two-line floor of a put-with-signal ping-pong in units of one line)."""
        name = bench if lib != "mpi" else SPECS[bench][3]
        rs = [p[part] / p["line"] for p in self.paired.get((lib, config, npes, name, size), {}).values()
              if part in p and p.get("line")]
        return statistics.median(rs) if rs else None

    def limit_ratio(self, lib, config, npes, bench, size, value):
        """(ratio to the limit, paired?): the paired ratio where the run measured one, else
        the value over the invocation's limit (limits.c)."""
        r = self.paired_ratio(lib, config, npes, bench, size)
        if r is not None:
            return r, True
        return ratio(SPECS[bench][2], value, self.limit_for(bench, npes, size)), False

    def lookup(self, lib, config, npes, bench, size):
        """(value, display text) for one cell."""
        name = bench if lib != "mpi" else SPECS[bench][3]
        if lib == "mpi" and name == "sendrecv_pingpong" and bench == "put_pingpong" and size != 8:
            return None, "—"
        kind = SPECS[bench][0]
        hit = self.val.get((lib, config, npes, name, size))
        run = self.runs.get((lib, config, kind, npes))
        if hit:
            v, _, st = hit
            if st == "wrong":
                return None, "WRONG"
            mark = "†" if run == "crash-after-results" else ""
            return v, fmt(v) + mark
        if run is None:
            return None, "not run"
        if (lib, config, npes, name) in self.skipped:
            return None, "n/a"
        if run in ("timeout", "crash", "crash-after-results", "wrong"):
            return None, run if run != "crash-after-results" else "—"
        return None, "—"

    def sizes(self, bench):
        names = {bench, SPECS[bench][3]}
        return sorted({k[4] for k in self.val if k[3] in names and k[0] != "limit"})


def ratio(metric, sym, other):
    if sym is None or other is None or sym <= 0 or other <= 0:
        return None
    return sym / other if metric == "time" else other / sym


def fmt_limit_ratio(r, paired):
    """A ratio to the limit; * marks one against limits.c's limit (no paired limit)."""
    if r is None:
        return "—"
    return f"{r:.2f}" if paired else f"{r:.2f} *"


def best_paired(d, kind, npes, bench, size):
    """The peer configuration with the lowest ratio to its own paired limit: (ratio, label)."""
    best = None
    for lib, cfg, label in COLUMNS[kind]:
        if lib == "symmem":
            continue
        r = d.paired_ratio(lib, cfg, npes, bench, size)
        if r is not None and (best is None or r < best[0]):
            best = (r, label)
    return best


def best_of(d, lib, kind, npes, bench, size):
    """Best value over a peer's configurations, and which configuration gave it."""
    metric = SPECS[bench][2]
    best = None
    for lb, cfg, label in COLUMNS[kind]:
        if lb != lib:
            continue
        v, _ = d.lookup(lb, cfg, npes, bench, size)
        if v is None:
            continue
        if best is None or (v < best[0] if metric == "time" else v > best[0]):
            best = (v, label)
    return best


def table_for(d, bench):
    kind, title, metric, _, model = SPECS[bench]
    cols = COLUMNS[kind]
    unit = UNITS[metric]
    head = ["PEs", "size"] + [c[2] for c in cols] + ["limit"] + \
        [f"sym / {PEERS[p]} best" for p in PEERS] + ["sym / limit"]
    lines = [f"| {' | '.join(head)} |", "|" + "---|" * len(head)]
    for n in d.npes:
        for s in d.sizes(bench):
            cells = []
            vals = {}
            for lib, cfg, label in cols:
                v, text = d.lookup(lib, cfg, n, bench, s)
                vals[(lib, cfg)] = v
                cells.append(text)
            if all(c in ("—", "not run") for c in cells):
                continue
            lim = d.limit_for(bench, n, s)
            sym = vals[("symmem", "default")]
            rs = []
            for p in PEERS:
                b = best_of(d, p, kind, n, bench, s)
                rs.append(fmt_ratio(ratio(metric, sym, b[0] if b else None)))
            rl, paired = d.limit_ratio("symmem", "default", n, bench, s, sym)
            lines.append("| " + " | ".join([str(n), fmt_size(s)] + cells + [fmt(lim)] + rs +
                                           [fmt_limit_ratio(rl, paired)]) + " |")
    if len(lines) == 2:
        return ""
    out = [f"### {bench}: {title} ({unit})", ""]
    if model:
        out += [f"Limit (2 PEs): {LIMIT_TEXT[model] if metric != 'bw' else 'memcpy of SIZE, one stream'}.", ""]
    return "\n".join(out + lines) + "\n"


HEADLINES = [
    ("8-byte put latency (putmem + quiet)", "put_lat", 2, 8),
    ("8-byte put ping-pong (half round trip)", "put_pingpong", 2, 8),
    ("8-byte put-with-signal ping-pong (half round trip)", "signal_pingpong", 2, 8),
    ("fetch-add latency", "fadd_lat", 2, 8),
    ("compare-swap latency", "cswap_lat", 2, 8),
    ("barrier, 2 PEs", "barrier", 2, 0),
    ("barrier, 4 PEs (2 cores)", "barrier", 4, 0),
    ("barrier, 8 PEs (2 cores)", "barrier", 8, 0),
    ("16 MiB put bandwidth", "put_bw", 2, 16 << 20),
    ("1 MiB fcollect", "fcollect", 2, 1 << 20),
    ("1 MiB broadcast", "bcast", 2, 1 << 20),
    ("8 B sum reduction", "reduce_sum", 2, 8),
    ("16 MiB sum reduction", "reduce_sum", 2, 16 << 20),
]


def headline_table(d):
    head = ["figure", "PEs", "unit", "symmem", "OSHMEM", "OSHMEM scoll=basic", "MPI", "MPI osc=sm",
            "limit", "sym / best peer", "sym / limit"]
    lines = [f"| {' | '.join(head)} |", "|" + "---|" * len(head)]
    for title, bench, n, s in HEADLINES:
        if n not in d.npes:
            continue
        kind, _, metric, _, _ = SPECS[bench]
        cells = []
        sym = None
        for lib, cfg in [("symmem", "default"), ("oshmem", "default"), ("oshmem", "scoll-basic"),
                         ("mpi", "default"), ("mpi", "osc-sm")]:
            if not any(c[0] == lib and c[1] == cfg for c in COLUMNS[kind]):
                cells.append("·")
                continue
            v, text = d.lookup(lib, cfg, n, bench, s)
            if lib == "symmem":
                sym = v
            cells.append(text)
        peers = [b for b in (best_of(d, p, kind, n, bench, s) for p in PEERS) if b]
        best = None
        for b in peers:
            if best is None or (b[0] < best[0] if metric == "time" else b[0] > best[0]):
                best = b
        r = ratio(metric, sym, best[0] if best else None)
        lim = d.limit_for(bench, n, s)
        rl, paired = d.limit_ratio("symmem", "default", n, bench, s, sym)
        lines.append("| " + " | ".join(
            [title, str(n), UNITS[metric]] + cells + [fmt(lim),
             (fmt_ratio(r) + f" ({best[1]})") if r else "—", fmt_limit_ratio(rl, paired)]) + " |")
    return "\n".join(lines) + "\n"


# The issues' targets (issues 3 and 4), checked on this run. Each: text, bench, PEs, sizes
# (an int = every size >= it), bound on symmem / best peer, bound on symmem / limit (None =
# not part of the target). The peer bound is judged on the medians, the limit bound on the
# paired limit (targets_table).
TARGETS = [
    ("8-byte put-with-signal ping-pong: at least as fast as the faster peer, within 2x of the cache-line limit",
     "signal_pingpong", 2, [8], 1.0, 2.0),
    ("fetch-add: at least as fast as the faster peer, within 2x of the cache-line limit",
     "fadd_lat", 2, [8], 1.0, 2.0),
    ("put of 64 KiB and up: within 10% of memcpy", "put_bw", 2, 65536, None, 1.1),
    ("get of 64 KiB and up: within 10% of memcpy", "get_bw", 2, 65536, None, 1.1),
    ("barrier: at least as fast as the faster peer, within 2x of the cache-line limit",
     "barrier", 2, [0], 1.0, 2.0),
    ("sum reduction of 8 B: at least as fast as the faster peer, within 4x of the cache-line limit",
     "reduce_sum", 2, [8], 1.0, 4.0),
    ("fcollect of 1 MiB: within 1.3x of memcpy (two streams of the 2 MiB each PE writes), at least as fast as each peer's best",
     "fcollect", 2, [1 << 20], 1.0, 1.3),
    ("broadcast of 1 MiB: within 1.3x of memcpy, at least as fast as each peer's best",
     "bcast", 2, [1 << 20], 1.0, 1.3),
    ("sum reduction of 16 MiB: within 1.3x of two concurrent memcpy streams",
     "reduce_sum", 2, [16 << 20], None, 1.3),
    ("barrier at 4 PEs on 2 cores: at least 2x faster than both peers", "barrier", 4, [0], 0.5, None),
]


# The form of symmem a target row takes, fixed in advance (not the better of two measured
# values, which would pick noise): the team API, except where the team form does more work
# than the peers' calls. A team broadcast also fills the root's dest; OSHMEM 4.1's active-set
# shmem_broadcast64 and MPI_Bcast do not, nor does symmem's own active-set form.
TARGET_FORM = {"bcast": "active-set"}


# A collective must not get faster as its size grows: a misplaced algorithm threshold
# shows as a time above that of the next larger size in the sweep. An inversion is flagged
# when the smaller size's median exceeds the next one's by more than the noise: by more
# than INVERSION_TOL, or than the spread of either row's runs (max - min over the median)
# where that is larger.
INVERSION_TOL = 0.10


def spread(runs):
    vs = sorted(runs)
    if len(vs) < 2:
        return 0.0
    med = statistics.median(vs)
    return (vs[-1] - vs[0]) / med if med > 0 else 0.0


def inversions(val, by_round, benches):
    """Rows (lib, config, npes, bench, size, time, next size, its time, tolerance) where a
    time exceeds that of the next larger size. val: (lib, config, npes, bench, size) ->
    (median, unit, status); by_round: the same key -> {round: value}; benches: the names
    to check (time metrics)."""
    series = defaultdict(list)
    for (lib, config, npes, bench, size), (v, _, st) in val.items():
        if bench in benches and lib != "limit" and v is not None and st == "ok" and size > 0:
            series[(lib, config, npes, bench)].append(size)
    out = []
    for (lib, config, npes, bench), sizes in sorted(series.items()):
        sizes.sort()
        for a, b in zip(sizes, sizes[1:]):
            ka, kb = (lib, config, npes, bench, a), (lib, config, npes, bench, b)
            ta, tb = val[ka][0], val[kb][0]
            tol = max(INVERSION_TOL, spread(by_round.get(ka, {}).values()), spread(by_round.get(kb, {}).values()))
            if ta > tb * (1 + tol):
                out.append((lib, config, npes, bench, a, ta, b, tb, tol))
    return out


def inversions_section(d):
    names = {}
    for bench, spec in SPECS.items():
        if spec[0] == "coll" and spec[2] == "time":
            names[bench] = bench
            names[spec[3]] = bench  # MPI's name of it
    rows = inversions(d.val, d.by_round, set(names))
    text = ("A collective's time at a size above its time at the next larger size of the sweep, by "
            f"more than the noise (more than {INVERSION_TOL:.0%}, or than the spread of either size's "
            "runs where that is larger): the mark of an algorithm threshold in the wrong place. ")
    if not rows:
        return text + "None in this run.\n"
    lines = [text + f"{len(rows)} in this run:\n",
             "| library | configuration | PEs | benchmark | size | us | next size | us | ratio | tolerance |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for lib, config, npes, bench, a, ta, b, tb, tol in rows:
        lines.append(f"| {lib} | {config} | {npes} | {names.get(bench, bench)} | {fmt_size(a)} | {fmt(ta)} | "
                     f"{fmt_size(b)} | {fmt(tb)} | **{ta / tb:.2f}** | {tol:.0%} |")
    return "\n".join(lines) + "\n"


def targets_table(d):
    lines = ["| target | size (symmem's form when not the team API) | sym / best peer | sym / best peer, paired | sym / limit | met |",
             "|---|---|---|---|---|---|"]
    for text, bench, n, sizes, peer_bound, limit_bound in TARGETS:
        kind, _, metric = SPECS[bench][:3]
        if isinstance(sizes, int):
            sizes = [x for x in d.sizes(bench) if x >= sizes]
        for size in sizes:
            # symmem in the form that does the peers' work (TARGET_FORM), fixed in advance
            sym_cfg = TARGET_FORM.get(bench, "default")
            sym_label = next(lbl for lib, cfg, lbl in COLUMNS[kind] if lib == "symmem" and cfg == sym_cfg)
            sym, _ = d.lookup("symmem", sym_cfg, n, bench, size)
            peers = [b for b in (best_of(d, p, kind, n, bench, size) for p in PEERS) if b]
            best = None
            for b in peers:
                if best is None or (b[0] < best[0] if metric == "time" else b[0] > best[0]):
                    best = b
            rp = ratio(metric, sym, best[0] if best else None)
            # the same comparison with every library in units of its own paired limit
            sp = d.paired_ratio("symmem", sym_cfg, n, bench, size)
            bp = best_paired(d, kind, n, bench, size)
            rpp = sp / bp[0] if sp is not None and bp else None
            rl, paired = d.limit_ratio("symmem", sym_cfg, n, bench, size, sym)
            checks = []
            if peer_bound is not None:
                checks.append(None if rp is None else rp <= peer_bound)
            if limit_bound is not None:
                checks.append(None if rl is None else rl <= limit_bound)
            if sym is None:
                met = "not measured"
            elif None in checks:
                met = "incomplete"
            else:
                met = "yes" if all(checks) else "**no**"
            form = f" ({sym_label})" if sym_cfg != "default" else ""
            floor = d.paired_part("symmem", sym_cfg, n, bench, size, "line2")
            floor_text = f" (two-line floor: {floor:.2f})" if floor else ""
            lines.append(f"| {text} ({n} PEs) | {fmt_size(size)}{form} | "
                         f"{f'{rp:.2f}' if rp else '—'} | "
                         f"{f'{rpp:.2f} ({bp[1]})' if rpp is not None else '—'} | "
                         f"{fmt_limit_ratio(rl, paired)}{floor_text} | {met} |")
    return "\n".join(lines) + "\n"


STYLE = {
    ("symmem", "default"): dict(color="tab:blue", marker="o", lw=2.2),
    ("symmem", "active-set"): dict(color="tab:cyan", marker="o", lw=1.2, ls=":"),
    ("oshmem", "default"): dict(color="tab:red", marker="s"),
    ("oshmem", "scoll-basic"): dict(color="tab:orange", marker="D"),
    ("mpi", "default"): dict(color="tab:green", marker="^"),
    ("mpi", "osc-sm"): dict(color="tab:olive", marker="v"),
}


def plot_series(d, ax, bench, npes, ylabel):
    kind, title, metric = SPECS[bench][:3]
    any_line = False
    for lib, cfg, label in COLUMNS[kind]:
        xs, ys = [], []
        for s in d.sizes(bench):
            v, _ = d.lookup(lib, cfg, npes, bench, s)
            if v is not None and s > 0:
                xs.append(s)
                ys.append(v)
        if xs:
            ax.plot(xs, ys, label=label, ms=4, **STYLE[(lib, cfg)])
            any_line = True
    lx, ly = [], []
    for s in d.sizes(bench):
        lim = d.limit_for(bench, npes, s)
        if lim is not None and s > 0:
            lx.append(s)
            ly.append(lim)
    if lx:
        ax.plot(lx, ly, label="limit", color="black", ls="--", lw=1.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title(f"{bench}, {npes} PEs", fontsize=10)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    if any_line:
        ax.legend(fontsize=7)
    return any_line


def plots(d, out):
    made = []
    # point-to-point bandwidth and latency against size, 2 PEs
    for name, benches, ylabel in [("perf_p2p_bw.png", ["put_bw", "get_bw"], "GB/s"),
                                  ("perf_p2p_lat.png", ["put_lat", "get_lat", "signal_pingpong"], "us")]:
        if 2 not in d.npes:
            continue
        fig, axes = plt.subplots(1, len(benches), figsize=(5 * len(benches), 4))
        ok = [plot_series(d, ax, b, 2, ylabel) for ax, b in zip(axes, benches)]
        if any(ok):
            fig.tight_layout()
            fig.savefig(os.path.join(out, name), dpi=90)
            made.append((name, ", ".join(benches) + " at 2 PEs"))
        plt.close(fig)
    # collectives: time against size, one figure per PE count
    for n in d.npes:
        fig, axes = plt.subplots(2, 2, figsize=(10, 8))
        ok = [plot_series(d, ax, b, n, "us per operation")
              for ax, b in zip(axes.flat, ["bcast", "fcollect", "alltoall", "reduce_sum"])]
        if any(ok):
            fig.tight_layout()
            name = f"perf_coll_np{n}.png"
            fig.savefig(os.path.join(out, name), dpi=90)
            made.append((name, f"broadcast, fcollect, alltoall and sum reduction at {n} PEs"))
        plt.close(fig)
    # small-message latencies at each PE count
    small = [("put_pingpong", 8), ("signal_pingpong", 8), ("fadd_lat", 8), ("cswap_lat", 8),
             ("barrier", 0), ("reduce_sum", 8)]
    fig, axes = plt.subplots(1, len(d.npes), figsize=(5 * len(d.npes), 4), squeeze=False)
    shown = False
    for ax, n in zip(axes[0], d.npes):
        series = [("symmem", "default", "symmem"), ("oshmem", "default", "OSHMEM"),
                  ("oshmem", "scoll-basic", "OSHMEM scoll=basic"), ("mpi", "default", "MPI"),
                  ("mpi", "osc-sm", "MPI osc=sm")]
        width = 0.8 / (len(series) + 1)
        for i, (lib, cfg, label) in enumerate(series):
            ys = []
            for b, s in small:
                kind = SPECS[b][0]
                if any(c[0] == lib and c[1] == cfg for c in COLUMNS[kind]):
                    v, _ = d.lookup(lib, cfg, n, b, s)
                else:
                    v = None
                ys.append(v if v is not None else 0)
            if any(ys):
                shown = True
                ax.bar([k + i * width for k in range(len(small))], ys, width, label=label,
                       color=STYLE[(lib, cfg)]["color"])
        if n == 2:
            ls = [d.limit_for(b, 2, s) or 0 for b, s in small]
            ax.bar([k + len(series) * width for k in range(len(small))], ls, width, label="limit",
                   color="black")
        ax.set_yscale("log")
        ax.set_xticks([k + 0.4 for k in range(len(small))])
        ax.set_xticklabels([b.replace("_", "\n") for b, _ in small], fontsize=8)
        ax.set_ylabel("us")
        ax.set_title(f"small-message latency, {n} PEs", fontsize=10)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if shown:
        fig.tight_layout()
        fig.savefig(os.path.join(out, "perf_small_lat.png"), dpi=90)
        made.append(("perf_small_lat.png", "8-byte latencies and the barrier at each PE count"))
    plt.close(fig)
    return made


def page(d, made):
    m = d.meta
    L = []
    L.append("# symmem performance\n")
    L.append(f"Produced by `bench/compare.sh` ({m.get('mode', '?')} mode) on {m.get('date', '?')}. "
             "Every number on this page, in `performance.csv` and in the plots comes from that "
             "one invocation; rerun the command to reproduce it on your machine.\n")
    try:
        loads = [float(m[k].split()[0]) for k in ("load_start", "load_end") if k in m]
        cores = int(m.get("cores", "0").split()[0])
    except (ValueError, IndexError):
        loads, cores = [], 0
    # Only the load before the first run says whether other work was running: the one at
    # the end includes this invocation's own 4- and 8-PE runs on the cores.
    if loads and cores and loads[0] > cores + 0.5:
        L.append(f"> **Measured on a busy machine**: the 1-minute load average was "
                 f"{loads[0]:.1f} on {cores} cores when the invocation started, "
                 "because other work was running. Every figure below is perturbed by it, the "
                 "limits most (a pinned thread that loses its core makes the cache-line "
                 "ping-pong look slow); rerun `bench/compare.sh --wait-quiet 20` on an idle "
                 "machine for numbers to quote.\n")
    L.append("## Machine and versions\n")
    L.append("| | |\n|---|---|")
    for k, label in [("cpu", "CPU"), ("caches", "caches"), ("cores", "cores"), ("memory", "memory"), ("kernel", "kernel"),
                     ("symmem", "symmem (git)"), ("openmpi", "Open MPI (OSHMEM and MPI)"),
                     ("compiler", "compiler"), ("python", "plots"), ("npes", "PE counts"),
                     ("args", "benchmark arguments"), ("rounds", "rounds (whole sequence of runs)"),
                     ("repeat2", "runs of every 2-PE group per round, libraries alternating"),
                     ("timeout", "time limit per run (s)"),
                     ("load_start", "load average at start (1, 5, 15 min)"),
                     ("load_end", "load average at end (raised by the 4- and 8-PE runs themselves)")]:
        if k in m:
            L.append(f"| {label} | {m[k] or '(defaults)'} |")
    for k in ("peers",):
        if k in m:
            L.append(f"| peers | {m[k]} |")
    L.append("")
    L.append("## How to read it\n")
    L.append("""- **Ratios are symmem's time over the other's time**: below 1 (bold) symmem is faster,
  above 1 slower. For bandwidths and rates the ratio is the other's value over symmem's, so
  the reading is the same. "sym / best peer" uses each peer's best configuration for that
  row, named in brackets.
- **Peers**: Open MPI's OSHMEM (the same benchmark source built with `oshcc`, run with
  `oshrun`, `OMPI_MCA_osc=^rdma` because OSHMEM 4.1 crashes inside `shmem_finalize`
  without it) in its default configuration and, for collectives, with `--mca scoll basic`
  (its faster collectives, which spin when PEs outnumber cores); MPI (Open MPI, `mpirun`)
  with its defaults and, for one-sided operations, with `--mca osc sm` (the default
  osc/rdma crashes in `MPI_Compare_and_swap` here). MPI's counterpart of the ping-pongs is
  `MPI_Send`/`MPI_Recv`; of the other routines, see `bench/mpi_p2p.c` and `bench/mpi_coll.c`.
- **Limits** are measured by `bench/limits.c` in the same invocation, at its start and its
  end (the better of the two is used): one cache line passed between two pinned threads on
  two cores (one way), and `memcpy` at each size with one stream and with two concurrent
  streams on the two cores; each the median of samples taken as the benchmarks take theirs,
  so that a ratio compares like with like. fcollect and alltoall are compared with a copy of
  2 x SIZE, the bytes every PE writes into its result at 2 PEs. Limits are given for 2 PEs
  only: with more PEs than cores there is no clean hardware bound. The limit column says
  which one each table uses.
- **Paired limits, and the "sym / limit" ratios**: the speed of this shared 2-vCPU machine
  drifts within seconds (the cache line takes 0.03 us in one minute, 0.2 us in the next),
  so at 2 PEs every benchmark program also measures each row's limit itself, with no
  library, between its own two processes on the same CPUs, one limit sample right before
  each benchmark sample (`bench/bench_harness.h`): the cache line (rows up to 4 KiB) and
  the row's memcpy (from 4 KiB). "sym / limit" is symmem's row over that paired limit (the
  larger part for times), taken round by round, median of the rounds; a ratio marked `*`
  had no paired limit and uses the limit column. The limit column itself is limits.c's.
- **Values** are medians over 7 samples after a warm-up; a sample lasts about 10 ms
  (`--target-ms`, `--samples`; see the benchmark arguments above), and there are fewer
  samples (odd, at least one) when they would take more than half a second, as when a
  busy-waiting library runs oversubscribed. Collective times are the slowest PE's. At
  N > 2 PEs the point-to-point benchmarks run N/2 pairs at once and report PE 0's pair. Every result was validated
  while measured; a wrong one would show as WRONG and fail the run.
- **Missing values**: `n/a` = the library does not declare that routine (yet); `timeout`,
  `crash` = that run ended so (nothing after it was measured); `†` = printed before the
  program crashed in finalize (the value stands, the crash is recorded); `·` = no such
  configuration for that benchmark. None of these count for or against symmem in a ratio.
- 4 and 8 PEs run on 2 cores: that is oversubscription, where waiting strategies matter
  more than copy speed.
- **Placement**: at 2 PEs all three pin each PE to its own core (`mpirun` / `oshrun` by
  default, symmem by `SYMMEM_BIND`, on by default). Oversubscribed, `mpirun` / `oshrun`
  pin nothing, while symmem pins PEs round-robin over the cores.
- **APIs**: the collective programs call the team forms where the library has them
  (symmem: `shmem_broadcastmem`, `shmem_fcollectmem`, ...) and the active-set forms
  otherwise (OSHMEM 4.1: `shmem_broadcast64`, ...; the list is at the end of the page).
  The work is the same except for broadcast: the team form also fills the root's own
  dest (the standard says so), the active-set form and `MPI_Bcast` leave it alone, so
  symmem's broadcast copies SIZE bytes more, on the root, concurrently with the others.
  symmem also runs the same program through its 1.4 active-set routines (`bench_coll_as`,
  column "symmem 1.4 API"): the calls OSHMEM 4.1 makes, for a like-with-like comparison;
  the targets take that form for the broadcast (the same work as the peers' calls) and
  the team form everywhere else, fixed in advance.
- **Order**: the benchmarks run group by group (a program run per group, `--only`), every
  library on one group before the next, the first library rotating from group to group:
  the libraries' figures for a row were measured seconds apart.
- **Runs at 2 PEs**: where the targets are, every group runs `--repeat2` times per round
  (see the table above), the libraries alternating, so a 2-PE figure is the median of
  rounds x repeats runs: the VM's slow states last seconds, and one run of a library
  caught in one would otherwise decide a round.
- **Rounds**: the whole sequence of runs (limits, then every group at every PE count)
  is repeated `--rounds` times (see the table above) and each figure on the page is the
  median of its rounds, the limits included: on this shared 2-vCPU virtual machine one
  run can be caught by a noisy few seconds, and a single invocation's figures moved by
  10-30% from one invocation to the next (the cache-line limit more: how the host places
  the two vCPUs changes from minute to minute). The Runs table lists every run.
""")
    L.append("## Headline figures\n")
    L.append(headline_table(d))
    L.append("## The targets of issues 3 and 4\n")
    L.append("Checked on this run. \"sym / best peer\" divides the medians (the libraries "
             "ran one after another on the row's group of benchmarks, seconds apart), and a peer bound is judged on it, in the target's own "
             "terms. \"sym / best peer, paired\" compares every library in units of its own paired "
             "limit (measured by its own two processes in the same seconds as its row); it is shown, "
             "not judged: a time is overhead plus some line transfers, so its ratio to the line is "
             "lower in a slow-line second for every library, and the peers ran in other seconds. A "
             "limit bound is judged on the paired \"sym / limit\"; beside the put-with-signal ping-pong, its two-line floor in the same units: a data "
             "line and a signal line passed each way by the same two processes with no library, "
             "the data read after the signal (the paired `__line2` row). \"incomplete\" = a peer "
             "or the limit has no value to compare with.\n")
    L.append(targets_table(d))
    L.append("## Size inversions\n")
    L.append(inversions_section(d))
    if made:
        L.append("## Plots\n")
        for name, what in made:
            L.append(f"![{what}]({name})\n")
    L.append("## All results\n")
    for bench in SPECS:
        t = table_for(d, bench)
        if t:
            L.append(t)
    L.append("## Runs\n")
    L.append("Each program of the invocation, in order of its first run: compare.sh runs it once per "
             "group of benchmarks (`--only`), every library on a group before the next group, so that "
             "the libraries' figures for a row are measured seconds apart. The status is the worst of "
             "its runs in the round, the seconds are theirs together (starts included).\n")
    L.append("| round | program | configuration | PEs | runs | status | exit code | seconds | what went wrong |\n"
             "|---|---|---|---|---|---|---|---|---|")
    for r in d.run_rows:
        why = (r.get("why") or "").strip().replace("|", "/")
        L.append(f"| {r.get('round') or 1} | {r['lib']} {r['kind']} | {r['config']} | {r['npes']} | {r['runs']} | "
                 f"{r['status']} | {r['rc']} | {r['seconds']:.1f} | {why} |")
    L.append("")
    notes = []
    for (lib, cfg, kind), lines in sorted(d.notes.items()):
        for line in sorted(lines):
            if line.startswith("api ") and lib != "symmem" and cfg != "default":
                continue
            notes.append(f"- {lib} {kind} ({cfg}): {line}")
    if notes:
        L.append("## How each library ran each benchmark\n")
        L.append("Lines the programs printed (`# note`, `# api`, `# skipped`):\n")
        L += notes
        L.append("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser()
    for a in ("csv", "runs", "meta", "notes", "out"):
        ap.add_argument("--" + a, required=True)
    args = ap.parse_args()
    d = Data(args)
    os.makedirs(args.out, exist_ok=True)
    for old in os.listdir(args.out):  # plots of an earlier run must not outlive it
        if old.startswith("perf_") and old.endswith(".png"):
            os.remove(os.path.join(args.out, old))
    made = plots(d, args.out)
    with open(os.path.join(args.out, "performance.md"), "w") as f:
        f.write(page(d, made))


if __name__ == "__main__":
    main()
