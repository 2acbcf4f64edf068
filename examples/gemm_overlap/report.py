#!/usr/bin/python3
"""Turns the CSV of examples/gemm_overlap/run.sh into docs/gemm-overlap.md, its CSV and plots.

Every figure is a ratio of medians measured in the same process run (one configuration of
one binary), so a load that changes between configurations changes no ratio by itself.
"""
import argparse
import csv
import os
import shutil
from collections import OrderedDict

FUSED = ["push", "pull", "store"]
COLOR = {"tiled": "C0", "bulk": "C1", "push": "C2", "pull": "C3", "store": "C4"}
S = "min_ms"  # the statistic the page uses (--stat)
MAIN_TILE = 0  # the tile of the K_loc / N_loc sweeps
MAIN_M = 0  # their rows
MIN_EXPOSED = 0.05  # hidden fractions only where bulk exceeds mono by this share


def load(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            for k in ("npes", "m", "n", "k", "tile", "tiles", "iters", "wrong"):
                r[k] = int(r[k])
            for k in ("min_ms", "med_ms", "p10_ms", "p90_ms", "gflops_pe", "preempted"):
                r[k] = float(r[k])
            rows.append(r)
    return rows


def groups(rows):
    """(impl, op, m, n, k, tile) -> {what: row}, in the order first seen."""
    g = OrderedDict()
    for r in rows:
        g.setdefault((r["impl"], r["op"], r["m"], r["n"], r["k"], r["tile"]), {})[r["what"]] = r
    return g


def hidden(t, bulk, mono):
    """Share of bulk's exposed communication (bulk - mono) that variant time t removes; not a
    number where bulk is within MIN_EXPOSED of mono (the difference of two times is noise)."""
    return (bulk - t) / (bulk - mono) if bulk > mono * (1 + MIN_EXPOSED) else float("nan")


def f2(x):
    return "—" if x != x else f"{x:.2f}"


def pct(x):
    return "—" if x != x else f"{100 * x:+.1f}%"


def frac(x):
    return "—" if x != x else f"{100 * x:.0f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stat", choices=["min", "med"], default="min")
    args = ap.parse_args()
    global S
    S = args.stat + "_ms"
    rows = load(args.csv)
    meta, notes = {}, []
    with open(args.meta) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                notes.append(line[1:].strip())
            elif "=" in line:
                k, v = line.split("=", 1)
                meta[k] = v
    g = groups(rows)
    global MAIN_TILE, MAIN_M
    tiles = [k[5] for k in g if k[1] in ("rs", "ag", "ar")]
    MAIN_TILE = max(set(tiles), key=tiles.count) if tiles else 0
    ms = [k[2] for k in g if k[1] in ("rs", "ag", "ar")]
    MAIN_M = max(set(ms), key=ms.count) if ms else 0
    sym = {key[1:]: v for key, v in g.items() if key[0] == "symmem"}
    mpi = {key[1:]: v for key, v in g.items() if key[0] == "mpi"}
    bad = [r for r in rows if r["check"] == "WRONG"]
    checked = sum(1 for r in rows if r["check"] == "ok")

    os.makedirs(args.out, exist_ok=True)
    if os.path.abspath(args.csv) != os.path.abspath(os.path.join(args.out, "gemm-overlap.csv")):
        shutil.copy(args.csv, os.path.join(args.out, "gemm-overlap.csv"))
    md = []
    w = md.append
    w("# GEMM fused with communication: `examples/gemm_overlap`")
    w("")
    w("A GEMM whose input is all-gathered (`ag`), whose partial products are reduce-scattered (`rs`) or")
    w("all-reduced (`ar`), and a two-stage pipeline (`pipe`: PE 0 computes H = ReLU6(X·W1) by row tiles,")
    w("PE 1 computes H·W2 per tile as tiles arrive), each as the non-fused `bulk` baseline (the")
    w("library's collective, then one GEMM, or the reverse) and three fused forms: `push` (finished")
    w("tiles sent with put-with-signal while the next one computes), and the two zero-copy forms a")
    w("shared-memory node allows: `pull` (the consumer's GEMM or add reads the peer's tile in place)")
    w("and `store` (the producer's GEMM writes into the owner's memory; for rs/ar the next contributor")
    w("accumulates onto it with beta = 1, the owner last, one GEMM call per owner block). Two PEs, one per core, single-threaded")
    w("OpenBLAS, pinned. Every result is compared element by element with a single-PE reference.")
    w("")
    w("```")
    w("cmake --build build --target gemm_overlap gemm_overlap_mpi symmem-run")
    w("examples/gemm_overlap/run.sh            # writes this page, gemm-overlap.csv and the plots")
    w("OPENBLAS_NUM_THREADS=1 build/tools/symmem-run/symmem-run -n 2 \\")
    w("    build/examples/gemm_overlap/gemm_overlap --op rs --m 512 --n 512 --k 512 --tile 64")
    w("```")
    w("")
    w("## This run")
    w("")
    w(f"- {meta.get('date', '?')}, commit {meta.get('commit', '?')}, `{meta.get('command', 'run.sh')}` "
      f"(BUDGET={meta.get('budget', '?')} s per variant and configuration, at least {meta.get('min_iters', '?')} "
      "timed iterations)")
    w(f"- {meta.get('cpu', '?')}")
    for n in notes:
        w(f"- {n}")
    w(f"- load average (1, 5, 15 min) before: {meta.get('load_before', '?')}, after: {meta.get('load_after', '?')}")
    w(f"- priority of the PEs: {meta.get('priority', '?')}")
    w(f"- results checked: {checked} rows equal to the reference, {len(bad)} wrong"
      + ("" if not bad else " (" + ", ".join(f"{r['impl']} {r['op']} {r['what']}" for r in bad) + ")"))
    w("")
    stat = {"min_ms": "the minimum", "med_ms": "the median"}[S]
    w(f"A time is {stat} over iterations of the per-iteration time (the slower PE's, from a common")
    w("barrier), the iterations of all variants of a configuration interleaved"
      + (": on a shared machine the least disturbed iteration is the best estimate of what the code"
         " costs (medians are in the CSV)." if S == "min_ms" else "."))
    w("Columns `×mono` are the variant's time over the monolithic GEMM alone in the same run;")
    w("*hidden* = (bulk − variant) / (bulk − mono), the share of the bulk baseline's exposed")
    w("communication (bulk − mono) that the variant removes: 100% = none left, negative = worse")
    w(f"than bulk, — where bulk is within {100 * MIN_EXPOSED:.0f}% of mono (nothing to hide, the ratio is noise);")
    w("above 100% the variant beats the monolithic GEMM itself (its tiles ran faster than one call);")
    w("*exposed* = variant − mono, the communication (and decomposition) the variant leaves visible;")
    w("*decomp.* = tiled / mono − 1, what cutting the GEMM into tiles costs before any communication;")
    w("*preempted*: the largest share, over the row's variants, of timed iterations in which a PE was")
    w("preempted by another process (involuntary context switches, getrusage).")
    w("")

    # ---------------------------------------------------------------- targets
    w("## Targets")
    w("")
    pre = sorted(r["preempted"] for r in rows if r["impl"] == "symmem")
    if pre and pre[len(pre) // 2] > 0.25:
        w(f"**This run was disturbed**: in half of the rows more than {frac(pre[len(pre) // 2])} of the timed")
        w("iterations had a PE preempted by another process (load above). A preempted PE stops its")
        w("half of every fused variant, so overlap and zero-copy gains read as noise or worse; the")
        w("verdicts below describe this run more than the code: rerun `run.sh` on a quiet machine, or")
        w("with `RT=1` (see the top of run.sh).")
        w("")
    def rows_keys(kk):  # rs at inner dimension kk with more rows than the K sweep, one tile per owner block
        return sorted((k for k in sym if k[0] == "rs" and k[3] == kk and k[4] * 2 == k[1] and k[1] > MAIN_M
                       and "store" in sym[k] and "tiled" in sym[k]), key=lambda k: k[1])

    rs_keys = sorted((k for k in sym if k[0] == "rs" and k[4] == MAIN_TILE), key=lambda k: k[3])
    if rs_keys:
        big = [k for k in rs_keys if k[3] // 2 >= 1024]
        lines = []
        for k in big:
            d = sym[k]
            if "store" in d and "mono" in d:
                r = d["store"][S] / d["mono"][S] - 1
                lines.append(f"K_loc {k[3] // 2}: {pct(r)}")
        if lines:
            worst = max(sym[k]["store"][S] / sym[k]["mono"][S] - 1 for k in big if "store" in sym[k])
            verdict = "met" if worst <= 0.03 else "not met"
            # rs store is one GEMM call per owner block whatever --tile says: the tile sweep's
            # rows at the largest K_loc are repeats of the same code, shown as such
            kmax = max(k[3] for k in big)
            m0 = big[0][1]
            rep = sorted((k for k in sym if k[0] == "rs" and k[3] == kmax and k[1] == m0 and k[4] != MAIN_TILE
                          and "store" in sym[k]),
                         key=lambda k: k[4])
            r_t = [sym[k]["store"][S] / sym[k]["mono"][S] - 1 for k in rep]
            w(f"- `rs store` within 3% of the monolithic GEMM at the large sizes: {verdict}"
              f" ({'; '.join(lines)}"
              + (f"; the same at K_loc {kmax // 2} in the tile sweep's {len(r_t)} runs: " + ", ".join(pct(r) for r in r_t)
                 if r_t else "")
              + "). `store` makes one GEMM call per owner block: the order between contributors is all it needs."
              + "".join(f" Cutting the GEMM into the owner blocks alone ({k[1] // k[4]} calls of {k[4]} rows per PE, no "
                        f"communication: the tile sweep's `tiled` at K_loc {k[3] // 2}) costs "
                        f"{pct(sym[k]['tiled'][S] / sym[k]['mono'][S] - 1)} here: `store`'s floor with OpenBLAS's calls."
                        for k in rep if k[4] * 2 == k[1] and "tiled" in sym[k] and verdict == "not met")
              + (" With more rows (K_loc " + str(kmax // 2) + ", one call per owner block): "
                 + "; ".join(f"m = {k[1]}: {pct(sym[k]['store'][S] / sym[k]['mono'][S] - 1)} (the split alone "
                             f"{pct(sym[k]['tiled'][S] / sym[k]['mono'][S] - 1)})" for k in rows_keys(kmax))
                 + "." if rows_keys(kmax) else ""))
    pipe_keys = sorted((k for k in sym if k[0] == "pipe"), key=lambda k: k[1] // k[4])
    if pipe_keys:
        parts, ok, fast_tiles, slow_tiles = [], True, [], []
        for k in pipe_keys:
            d = sym[k]
            nt = k[1] // k[4]
            if nt < 8 or "bulk" not in d:
                continue
            sps = {v: d["bulk"][S] / d[v][S] for v in FUSED if v in d}
            ok = ok and max(sps.values()) >= 1.5
            parts.append(f"{nt} tiles: " + ", ".join(f"{v} {sp:.2f}×" for v, sp in sps.items()))
            if max(sps.values()) < 1.5 and "tiled" in d:
                slow_tiles.append(f"{nt} tiles: decomp. {pct(d['tiled'][S] / d['mono'][S] - 1)}, bulk / tiled "
                                  f"{d['bulk'][S] / d['tiled'][S]:.2f}×")
            if "tiled" in d and d["tiled"][S] < 0.9 * d["mono"][S]:
                fast_tiles.append(f"{nt} tiles: decomp. {pct(d['tiled'][S] / d['mono'][S] - 1)}")
        if parts:
            w(f"- `pipe` at least 1.5× faster than bulk with 8 or more tiles (by its best variant): {'met' if ok else 'not met'}"
              f" ({'; '.join(parts)})"
              + (f"; where the stage cut into tiles ran faster than one call ({', '.join(fast_tiles)}), part of the "
                 "speed-up over `bulk` (one call per stage) is OpenBLAS's, not the pipeline's" if fast_tiles else "")
              + (f"; where it falls short, the stage cut into tiles alone, before any hand-over, is slower than one "
                 f"call ({', '.join(slow_tiles)}): no pipeline of such tiles beats bulk by more than bulk / tiled"
                 if slow_tiles else "")
              + ".")
    w("")

    # ---------------------------------------------------------------- sweeps
    def sweep_table(op, dim_name, dim_of):
        keys = sorted((k for k in sym if k[0] == op and k[4] == MAIN_TILE), key=dim_of)
        if not keys:
            return
        w(f"| {dim_name} | mono ms | GFLOP/s | decomp. | comm ms | bulk ×mono | push ×mono | pull ×mono | store ×mono "
          f"| exposed ms bulk / push / pull / store | hidden push / pull / store | MPI bulk ×its mono | preempted |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for k in keys:
            d = sym[k]
            mono, bulk = d["mono"][S], d["bulk"][S]
            hid = " / ".join(frac(hidden(d[v][S], bulk, mono)) for v in FUSED if v in d)
            m = mpi.get(k, {})
            mb = f2(m["bulk"][S] / m["mono"][S]) if "bulk" in m and "mono" in m else "—"
            w(f"| {dim_of(k)} | {mono:.2f} | {d['mono']['gflops_pe']:.1f} | {pct(d['tiled'][S] / mono - 1)} "
              f"| {d['comm'][S]:.2f} | {f2(bulk / mono)} | "
              + " | ".join(f2(d[v][S] / mono) if v in d else "—" for v in FUSED)
              + " | " + " / ".join(f"{d[v][S] - mono:+.2f}" for v in ["bulk"] + FUSED if v in d)
              + f" | {hid} | {mb} | {frac(max(r['preempted'] for r in d.values()))} |")
        w("")

    def shape(op, fixed):
        ks = [k for k in sym if k[0] == op and k[4] == MAIN_TILE]
        if not ks:
            return ""
        k = ks[0]
        return f"m = {k[1]}, " + fixed(k) + f", tiles of {k[4]} rows"

    w("## Reduce-scatter: Y = reduce_scatter(X_p · W_p), " + shape("rs", lambda k: f"n = {k[2]}"))
    w("")
    w("K_loc is each PE's share of the inner dimension: the GEMM's work per byte to reduce.")
    w("")
    sweep_table("rs", "K_loc", lambda k: k[3] // 2)
    w("## All-gather: Y = allgather(X) · W_p, " + shape("ag", lambda k: f"k = {k[3]}"))
    w("")
    w("N_loc is each PE's share of the output columns: the GEMM's work per byte gathered.")
    w("`pull` reads the peer's shard in place (ready since the iteration's barrier); `store` computes")
    w("the peer's rows of the peer's output, reading its W in place.")
    w("")
    sweep_table("ag", "N_loc", lambda k: k[2] // 2)
    w("## All-reduce: reduce-scatter, then every PE gets every finished tile, " + shape("ar", lambda k: f"n = {k[2]}"))
    w("")
    sweep_table("ar", "K_loc", lambda k: k[3] // 2)

    # tile sweeps: every rs inner dimension measured with 3 or more tile sizes
    tsweeps = []
    for kk in sorted({k[3] for k in sym if k[0] == "rs"}):
        ks = sorted((k for k in sym if k[0] == "rs" and k[3] == kk and k[1] == MAIN_M), key=lambda k: k[4])
        if len({k[4] for k in ks}) >= 3:
            tsweeps.append(ks)
    for tkeys in tsweeps:
        w(f"## Tile size (rs, K_loc = {tkeys[0][3] // 2}, m = {tkeys[0][1]}, n = {tkeys[0][2]})")
        w("")
        w("| tile rows | tiles per PE | decomp. | bulk ×mono | push ×mono | pull ×mono | store ×mono | hidden push / pull / store |")
        w("|---|---|---|---|---|---|---|---|")
        for k in tkeys:
            d = sym[k]
            mono, bulk = d["mono"][S], d["bulk"][S]
            w(f"| {k[4]} | {k[1] // k[4]} | {pct(d['tiled'][S] / mono - 1)} | {f2(bulk / mono)} | "
              + " | ".join(f2(d[v][S] / mono) for v in FUSED)
              + " | " + " / ".join(frac(hidden(d[v][S], bulk, mono)) for v in FUSED) + " |")
        w("")
    for kk in sorted({k[3] for k in sym if k[0] == "rs"}):
        rk = rows_keys(kk)
        if not rk:
            continue
        base = [k for k in sym if k[0] == "rs" and k[3] == kk and k[1] == MAIN_M and k[4] * 2 == k[1]]
        w(f"## Rows (rs, K_loc = {kk // 2}, n = {rk[0][2]}, one tile per owner block)")
        w("")
        w("`tiled` here is the split `store` makes (one GEMM call per owner block), without communication.")
        w("")
        w("| m | mono ms | GFLOP/s | split alone | bulk ×mono | store ×mono | preempted |")
        w("|---|---|---|---|---|---|---|")
        for k in base + rk:
            d = sym[k]
            mono = d["mono"][S]
            w(f"| {k[1]} | {mono:.2f} | {d['mono']['gflops_pe']:.1f} | {pct(d['tiled'][S] / mono - 1)} | "
              f"{f2(d['bulk'][S] / mono)} | {f2(d['store'][S] / mono)} | {frac(max(r['preempted'] for r in d.values()))} |")
        w("")
    if pipe_keys:
        k0 = pipe_keys[0]
        w(f"## Pipeline (pipe: m = {k0[1]}, k = {k0[3]}, n = {k0[2]}; each stage is one PE's GEMM)")
        w("")
        w("mono is one stage alone (both PEs computing their stage at once, no hand-over): the time")
        w("a perfect pipeline approaches. bulk waits for all of H, then computes: about twice that.")
        w("")
        w("| tiles | mono ms | decomp. | comm ms | bulk ×mono | push ×mono | pull ×mono | store ×mono | speed-up over bulk: push / pull / store |")
        w("|---|---|---|---|---|---|---|---|---|")
        for k in pipe_keys:
            d = sym[k]
            mono, bulk = d["mono"][S], d["bulk"][S]
            w(f"| {k[1] // k[4]} | {mono:.2f} | {pct(d['tiled'][S] / mono - 1)} | {d['comm'][S]:.2f} | "
              f"{f2(bulk / mono)} | " + " | ".join(f2(d[v][S] / mono) for v in FUSED)
              + " | " + " / ".join(f"{bulk / d[v][S]:.2f}×" for v in FUSED) + " |")
        w("")

    # ---------------------------------------------------------------- plots
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if plt is not None:
        fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
        for col, (op, label, dim) in enumerate([("rs", "K_loc", lambda k: k[3] // 2), ("ag", "N_loc", lambda k: k[2] // 2),
                                                ("ar", "K_loc", lambda k: k[3] // 2)]):
            keys = sorted((k for k in sym if k[0] == op and k[4] == MAIN_TILE), key=dim)
            if not keys:
                continue
            xs = [dim(k) for k in keys]
            ax = axes[0][col]
            for v in ["tiled", "bulk"] + FUSED:
                ax.plot(xs, [sym[k][v][S] / sym[k]["mono"][S] for k in keys], marker="o", label=v, color=COLOR[v])
            mk = [k for k in keys if k in mpi and "bulk" in mpi[k]]
            if mk:
                ax.plot([dim(k) for k in mk], [mpi[k]["bulk"][S] / mpi[k]["mono"][S] for k in mk],
                        marker="x", linestyle="--", color="black", label="MPI bulk")
            ax.axhline(1.0, color="gray", linewidth=1)
            ax.set_xscale("log", base=2)
            ax.set_title(f"{op}: time / monolithic GEMM")
            ax.set_xlabel(label)
            ax.legend(fontsize=8)
            ax = axes[1][col]
            shown, top = 0, 1.5
            for v in FUSED:
                ys = [hidden(sym[k][v][S], sym[k]["bulk"][S], sym[k]["mono"][S]) for k in keys]
                shown += sum(1 for y in ys if y is not None and y == y)
                top = max([top] + [min(y, 3.0) + 0.1 for y in ys if y is not None and y == y])
                ax.plot(xs, ys, marker="o", label=v, color=COLOR[v])
            if not shown:  # bulk within MIN_EXPOSED of mono everywhere: nothing to hide
                ax.text(0.5, 0.5, f"bulk within {100 * MIN_EXPOSED:.0f}% of mono\nat every size", ha="center",
                        transform=ax.transAxes)
            ax.axhline(1.0, color="gray", linewidth=1)
            ax.axhline(0.0, color="gray", linewidth=1)
            ax.set_xlim(min(xs) / 1.2, max(xs) * 1.2)  # positive limits for the log axis even with no point
            ax.set_xscale("log", base=2)
            ax.set_ylim(-1.5, top)  # above 1: the variant beat the monolithic GEMM
            ax.set_title(f"{op}: hidden fraction of bulk's exposed comm")
            ax.set_xlabel(label)
            ax.legend(fontsize=8)
        fig.suptitle(f"gemm_overlap, 2 PEs, {meta.get('date', '')}, load {meta.get('load_before', '?')}")
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "gemm_overlap_sweep.png"), dpi=80)
        plt.close(fig)
        fig, axes = plt.subplots(1, len(tsweeps) + 1, figsize=(5.5 * (len(tsweeps) + 1), 4), squeeze=False)
        axes = axes[0]
        for i, tkeys in enumerate(tsweeps):
            ax = axes[i]
            xs = [k[4] for k in tkeys]
            for v in ["tiled", "bulk"] + FUSED:
                ax.plot(xs, [sym[k][v][S] / sym[k]["mono"][S] for k in tkeys], marker="o", label=v, color=COLOR[v])
            ax.axhline(1.0, color="gray", linewidth=1)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("tile rows")
            ax.set_title(f"rs, K_loc {tkeys[0][3] // 2}: time / monolithic GEMM")
            ax.legend(fontsize=8)
        if pipe_keys:
            ax = axes[-1]
            xs = [k[1] // k[4] for k in pipe_keys]
            for v in ["bulk"] + FUSED:
                ax.plot(xs, [sym[k][v][S] / sym[k]["mono"][S] for k in pipe_keys], marker="o", label=v, color=COLOR[v])
            ax.plot(xs, [1 + 1 / x for x in xs], linestyle=":", color="black", label="ideal 1 + 1/tiles")
            ax.axhline(1.0, color="gray", linewidth=1)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("tiles")
            ax.set_title("pipe: time / one stage alone")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "gemm_overlap_tiles.png"), dpi=80)
        plt.close(fig)
        w("## Plots")
        w("")
        w("![time over the monolithic GEMM, and the hidden fraction, against K_loc / N_loc](gemm_overlap_sweep.png)")
        w("")
        w("![tile size (rs) and the pipeline's tile count](gemm_overlap_tiles.png)")
        w("")

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "notes.md")) as f:
        w(f.read().rstrip("\n"))
    w("")
    w("Raw rows: [gemm-overlap.csv](gemm-overlap.csv).")
    with open(os.path.join(args.out, "gemm-overlap.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
