#!/usr/bin/python3
"""Turns the JSON reports of examples/weight_share/run.sh into docs/weight-share.md and a plot."""
import argparse
import glob
import json
import os
import platform
import subprocess

import numpy as np

MODES = ["private", "mmap", "fork", "symm", "symm-staged", "symm-prefetch", "update"]
MiB = 2**20


def load(res, mode, kind):
    """The run of `mode`-`kind` with the least load CPU, when run.sh repeated it (REPEAT)."""
    runs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(res, f"{mode}-{kind}.json")) +
                                               glob.glob(os.path.join(res, f"{mode}-{kind}.r*.json")))]
    return min(runs, key=lambda r: sum(w["load_cpu_s"] for w in r["per_worker"])) if runs else None


def runs_of(res, mode, kind):
    return {p.rsplit(".r", 1)[1][:-5]: json.load(open(p)) for p in glob.glob(os.path.join(res, f"{mode}-{kind}.r*.json"))}


def b1_rate(r):
    """Batch-1 tokens per second (span of all workers) and per CPU-second of one run."""
    ph = [x["phases"][0] for x in r["per_worker"] if x["serves"]]
    tok = sum(q["tokens"] for q in ph)
    return tok / (max(q["t1"] for q in ph) - min(q["t0"] for q in ph)), tok / sum(q["cpu_s"] for q in ph)


def ab1(res):
    """symm / private at batch 1 over the alternating pairs of run.sh's A/B: medians and ranges."""
    p, s = runs_of(res, "private", "ab1"), runs_of(res, "symm", "ab1")
    pairs = [(b1_rate(p[k]), b1_rate(s[k])) for k in sorted(p, key=int) if k in s]
    if not pairs:
        return None
    tps = [b[0] / a[0] for a, b in pairs]
    tpc = [b[1] / a[1] for a, b in pairs]
    req = next(iter(p.values()))
    return {"n": len(pairs), "tps": (float(np.median(tps)), min(tps), max(tps)),
            "tpc": (float(np.median(tpc)), min(tpc), max(tpc)),
            "p_tps": float(np.median([a[0] for a, _ in pairs])), "s_tps": float(np.median([b[0] for _, b in pairs])),
            "req": len(req["per_worker"][0]["phases"][0]["requests"]), "gen": req["gen"]}


def abload(res):
    """private / symm load CPU over the alternating warm pairs of run.sh's load A/B."""
    p, s = runs_of(res, "private", "abload"), runs_of(res, "symm", "abload")
    cpu = lambda r: sum(w["load_cpu_s"] for w in r["per_worker"])
    pairs = [(cpu(p[k]), cpu(s[k])) for k in sorted(p, key=int) if k in s]
    if not pairs:
        return None
    ratio = [a / b for a, b in pairs]
    return {"n": len(pairs), "ratio": (float(np.median(ratio)), min(ratio), max(ratio)),
            "p": float(np.median([a for a, _ in pairs])), "s": float(np.median([b for _, b in pairs]))}


def node_delta(r):
    n = r["node"]
    if n["cgroup_before"] >= 0:
        return (n["cgroup_after"] - n["cgroup_before"]) - (n["read_cache_after"] - n["read_cache_before"]), "cgroup"
    return n["used_after"] - n["used_before"], "meminfo"


def pct(xs, q):
    return float(np.percentile(xs, q)) if xs else float("nan")


def figures(c, w):
    f = {"n": c["workers"]}
    ws = c["per_worker"]
    srv = [x for x in ws if x["serves"]]
    f["pss"] = np.mean([x["mem_end"]["pss_kb"] for x in ws]) * 1024
    f["uss"] = np.mean([x["mem_end"]["uss_kb"] for x in ws]) * 1024
    f["sum_dpss"] = sum(x["mem_end"]["pss_kb"] - x["mem_start"]["pss_kb"] for x in ws) * 1024
    f["node"], f["node_src"] = node_delta(c)
    f["agree"] = abs(f["sum_dpss"] - f["node"]) / f["node"] if f["node"] > 0 else float("nan")
    f["private_bytes"] = sum(x["private_bytes"] for x in ws)
    f["load_wall_cold"] = c["load_wall_s"]
    f["load_cpu_cold"] = sum(x["load_cpu_s"] for x in ws)
    f["load_wall_warm"] = w["load_wall_s"] if w else float("nan")
    f["load_cpu_warm"] = sum(x["load_cpu_s"] for x in w["per_worker"]) if w else float("nan")
    for ph, key in ((0, "b1"), (1, "bB")):
        tok = sum(x["phases"][ph]["tokens"] for x in srv)
        # the phase's span over all workers (they start and end at different times)
        wall = max(x["phases"][ph]["t1"] for x in srv) - min(x["phases"][ph]["t0"] for x in srv)
        f[f"tps_{key}"] = tok / wall if wall > 0 else float("nan")
        cpu = sum(x["phases"][ph]["cpu_s"] for x in srv)
        f[f"tpc_{key}"] = tok / cpu if cpu > 0 else float("nan")  # tokens per CPU-second: robust to time-slicing
        lat = [r[0] for x in srv for r in x["phases"][ph]["requests"]]
        f[f"p50_{key}"], f[f"p99_{key}"], f[f"nlat_{key}"] = pct(lat, 50), pct(lat, 99), len(lat)
    # the load's phases, summed over the workers (cold run), and what other threads spent
    phs = ["alloc", "convert", "map", "stage"]
    f["lph"] = {k: sum(x.get("load_phases", {}).get(k, {}).get("cpu_s", 0.0) for x in ws) for k in phs}
    f["lph_t"] = {k: sum(x.get("load_phases", {}).get(k, {}).get("thread_cpu_s", 0.0) for x in ws) for k in phs}
    f["lph_wall"] = {k: np.mean([x.get("load_phases", {}).get(k, {}).get("wall_s", 0.0) for x in ws]) for k in phs}
    f["lph_flt"] = {k: np.mean([x.get("load_phases", {}).get(k, {}).get("minflt", 0.0) for x in ws]) for k in phs}
    f["lph_warm"] = ({k: sum(x.get("load_phases", {}).get(k, {}).get("cpu_s", 0.0) for x in w["per_worker"]) for k in phs}
                     if w else None)
    f["has_phases"] = all("load_phases" in x for x in ws)
    fb = sum(x["fetch_bytes"] for x in ws)
    f["fetch_s_per_gb"] = sum(x["fetch_s"] for x in ws) / (fb / 1e9) if fb else 0.0
    f["fetch_s"] = sum(x["fetch_s"] for x in ws)
    f["checksum"] = c["checksum"]
    f["serve_minflt"] = np.mean([x.get("serve_minflt", float("nan")) for x in srv])
    f["publishes"] = sum(x["publishes"] for x in ws)
    f["publish_s"] = sum(x["publish_s"] for x in ws)
    f["switches"] = sum(x["switches"] for x in srv)
    f["torn"] = sum(x["torn"] for x in srv)
    f["stall_max"] = max([x["stall_max_s"] for x in srv] or [0])
    nb = sum(x["boundaries"] for x in srv)
    f["stall_mean"] = sum(x["stall_sum_s"] for x in srv) / nb if nb else 0.0
    return f


def per_request(r):
    return {(x["pe"], ph, i): (q[1], q[2]) for x in r["per_worker"] if x["serves"]
            for ph, p in enumerate(x["phases"]) for i, q in enumerate(p["requests"])}


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("res")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="examples/weight_share/run.sh")
    ap.add_argument("--commit", default="")
    ap.add_argument("--seconds", type=int, default=0)
    a = ap.parse_args()
    F, R = {}, {}
    for m in MODES:
        c = load(a.res, m, "cold")
        if c:
            R[m] = c
            F[m] = figures(c, load(a.res, m, "warm"))
    base = R.get("private") or next(iter(R.values()))
    cfg, model = base["config"], base["model_f32_bytes"]
    huge = bool(base.get("heap_dir"))  # run.sh mounted a huge=always tmpfs for the heaps
    pgs = "2 MiB pages" if huge else "4 KiB pages"
    shm = "the heaps' huge-page tmpfs" if huge else "`/dev/shm`"
    n = base["workers"]
    LA = abload(a.res)  # the load A/B's pairs, when run.sh made them

    # Outputs: equal across modes; update's requests equal to private's for version A.
    ok = {}
    for m in F:
        if m == "update":
            pr = per_request(R["private"]) if "private" in R else {}
            same = [pr.get(k, (None,))[0] == v[0] for k, v in per_request(R[m]).items() if v[1] % 2 == 0 and k in pr]
            ok[m] = f"{sum(same)}/{len(same)} v-A requests = private"
        else:
            ok[m] = "= private" if F[m]["checksum"] == F.get("private", F[m])["checksum"] else "**differs**"

    up_cold = open(os.path.join(a.res, "uptime_before")).read().strip() if os.path.exists(os.path.join(a.res, "uptime_before")) else ""
    up_after = open(os.path.join(a.res, "uptime_after")).read().strip() if os.path.exists(os.path.join(a.res, "uptime_after")) else ""
    cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
    prf = os.path.join(a.res, "page_reporting")
    reporting = (f" Free page reporting (virtio-balloon) held off for the run ({open(prf).read().strip()}): with it, "
                 f"memory freed by one run goes back to the host and the next run's first touch of it costs ~10× more."
                 if os.path.exists(prf) else "")
    L = []
    L.append("# One copy of the weights for N inference workers (`examples/weight_share`)\n")
    L.append("N worker processes (one PE each) serve their own request streams with a LLaMA decoder "
             "(RMSNorm, grouped-query attention with a per-worker KV cache, SwiGLU MLP, tied LM head; "
             "single-threaded OpenBLAS) over one model, held seven ways. The weights are synthetic "
             "(seeded PRNG, safetensors, F16 on disk, generated at run time), so the generated text is "
             "meaningless; sizes, memory and bandwidth are those of a real model of the shape.\n")
    L.append("```\ncmake --build build --target weight_share symmem-run\nexamples/weight_share/run.sh\n```\n")
    L.append(f"**This page:** `{a.command}` at commit `{a.commit}`, {a.seconds} s. Model: {cfg['n_layers']} layers of "
             f"d={cfg['dim']}, {cfg['n_heads']} heads / {cfg['n_kv_heads']} KV heads, ffn {cfg['ffn_dim']}, vocab "
             f"{cfg['vocab']}: {model / MiB:.0f} MiB as F32 ({model / 2 / MiB:.0f} MiB F16 file). {n} workers; batch 1 "
             f"and batch {base['batch']} requests of {base['prompt']} prompt + {base['gen']} generated tokens.\n")
    L.append(f"**Machine:** {cpu}, {os.cpu_count()} cores, {int(sh('grep MemTotal /proc/meminfo').split()[1]) // 1024 // 1024} GiB, "
             f"Linux {platform.release()}, OpenBLAS core `{base.get('blas_core', '?')}`. **Load:** "
             f"`uptime` before: `{up_cold}`; after: `{up_after}`. "
             f"{n} workers on {os.cpu_count()} cores time-slice, so times are noisy; ratios within one run are what to read."
             f"{reporting} "
             + ("**Pages:** 2 MiB: the symmetric heaps on a tmpfs mounted with `huge=always` (`SYMMEM_HEAP_DIR`, "
                "docs/memory.md), the private copies in transparent huge pages (`madvise`); `HUGE=0 run.sh` gives "
                "4 KiB pages everywhere.\n" if huge else
                "**Pages:** 4 KiB (`HUGE=0`, or no tmpfs could be mounted).\n"))
    L.append("## Results\n")
    L.append("| mode | per-worker PSS | per-worker USS | Σ ΔPSS | node Δ | agree | load wall cold / warm | load CPU Σ cold / warm | tok/s b=1 | tok/CPU-s b=1 | p50 / p99 b=1 | tok/s b=" + str(base["batch"]) + " | tok/CPU-s b=" + str(base["batch"]) + " | p50 / p99 b=" + str(base["batch"]) + " | output |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in MODES:
        if m not in F:
            continue
        f = F[m]
        L.append(f"| `{m}` | {f['pss'] / MiB:.0f} MiB | {f['uss'] / MiB:.1f} MiB | {f['sum_dpss'] / MiB:.0f} MiB | "
                 f"{f['node'] / MiB:.0f} MiB | {100 * f['agree']:.1f} % | {f['load_wall_cold']:.2f} / {f['load_wall_warm']:.2f} s | "
                 f"{f['load_cpu_cold']:.2f} / {f['load_cpu_warm']:.2f} s | {f['tps_b1']:.2f} | {f['tpc_b1']:.2f} | "
                 f"{f['p50_b1']:.2f} / {f['p99_b1']:.2f} s | {f['tps_bB']:.1f} | {f['tpc_bB']:.1f} | {f['p50_bB']:.2f} / {f['p99_bB']:.2f} s | {ok[m]} |")
    src = F[next(iter(F))]["node_src"]
    L.append("")
    L.append("@PLOT@\n")
    L.append(f"PSS/USS from `/proc/<pid>/smaps_rollup` at the end of serving, all workers alive; Σ ΔPSS is the sum over "
             f"the job's processes of PSS at the end minus at the start; node Δ is the job's memory cgroup "
             f"(`{src}`) over the same interval, less the page cache of the F16 file it read (clean, unmapped, "
             f"reclaimable; measured with `mincore`). Load: from the start barrier until every worker can serve "
             f"with the weights resident (cold: the file's pages dropped first with `posix_fadvise(DONTNEED)`); "
             f"CPU is summed over the workers. Latency is per request ({F[next(iter(F))]['nlat_b1']} requests at "
             f"batch 1, so p99 is close to the maximum). tok/s counts generated tokens of all workers over the "
             f"phase's span (first worker's start to last worker's end); tok/CPU-s divides them by the CPU time the "
             f"workers spent serving, which time-slicing with other processes changes less (memory-bandwidth "
             f"contention still does). Every mode is ready with its pages mapped (mmap: `MAP_POPULATE`; symm: the "
             f"peers' parts faulted in at load, counted in load CPU); minor faults per worker while serving: "
             + ", ".join(f"{m} {F[m]['serve_minflt']:.0f}" for m in MODES if m in F) + ".\n")
    lm = [m for m in MODES if m in F and F[m]["has_phases"] and m != "fork"]
    if "symm" in lm and "private" in lm:
        L.append("**Where the load CPU goes** (summed over the workers; cold run, warm in brackets): *alloc* is the "
                 "symmetric allocation (a collective: two barriers and the commit of the part), *convert* the F16 "
                 "file, mapped read-only and read in place from the page cache, written as F32 (`private`: into its own "
                 "`malloc`ed copy, page faults included), *map* "
                 "faulting into this worker's page table what it will read (`mmap`: `MAP_POPULATE`; symm modes: the "
                 "peers' parts), *stage* the staging buffers; *other threads* is process CPU minus the main thread's "
                 "(the runtime's own threads).\n")
        L.append("| mode | alloc | convert | map | stage | total | other threads | map per worker | faults per worker in map |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for m in lm:
            f = F[m]
            tot = sum(f["lph"].values())
            wtot = sum(f["lph_warm"].values()) if f["lph_warm"] else float("nan")
            oth = max(0.0, tot - sum(f["lph_t"].values()))  # clocks read a few ns apart
            cell = lambda k: f"{f['lph'][k]:.2f} ({f['lph_warm'][k]:.2f})" if f["lph_warm"] else f"{f['lph'][k]:.2f}"
            L.append(f"| `{m}` | {cell('alloc')} | {cell('convert')} | {cell('map')} | {cell('stage')} | "
                     f"{tot:.2f} ({wtot:.2f}) s | {oth:.3f} s | {1e3 * f['lph']['map'] / f['n']:.1f} ms | {f['lph_flt']['map']:.0f} |")
        p_, s_ = F["private"], F["symm"]
        conv1 = p_["lph"]["convert"] / p_["n"]
        mapw = s_["lph"]["map"] / s_["n"]
        # N copies against one copy plus N mappings: what 4 KiB pages leave of the N-fold saving
        cap = lambda c: s_["n"] / (1 + s_["n"] * mapw / c) if c > 0 else float("nan")
        floor = cap(conv1)
        mm_map = (f"; `mmap` maps its {model / MiB:.0f} MiB file for {1e3 * F['mmap']['lph']['map'] / F['mmap']['n']:.1f} ms "
                  f"per worker ({F['mmap']['lph_flt']['map']:.0f} faults: the page cache of an ext4 file holds large folios, "
                  f"mapped many pages per fault" + (", as the heaps' 2 MiB pages are)" if huge else ", while `/dev/shm` here has 4 KiB pages only)")
                  if "mmap" in lm else "")
        L.append("")
        ab = {m: load(a.res, m, "ab2") for m in ("private", "symm")}
        ab_line, ab_alloc, ab_copy = "", None, None
        if ab["private"] and ab["symm"]:
            pw = [x["load_cpu_s"] for x in ab["private"]["per_worker"]]
            sw = ab["symm"]["per_worker"]
            sph = {k: sum(x["load_phases"][k]["cpu_s"] for x in sw) for k in ("alloc", "convert", "map")}
            per_copy = float(np.mean(pw))
            ab_alloc, ab_copy = sph["alloc"], per_copy
            F["symm"]["floor_ratio"] = cap(per_copy)
            F["symm"]["ab2_ratio"] = sum(pw) / sum(sph.values())
            ab_line = (f" The same load at 2 workers (one per core, warm): `private` {per_copy:.2f} s per worker, against "
                       f"{p_['lph']['convert'] / p_['n']:.2f} s per worker with {p_['n']} workers on {os.cpu_count()} cores "
                       f"(the same work per copy); `symm` "
                       f"{sum(sph.values()):.2f} s in all (alloc {sph['alloc']:.2f}, convert {sph['convert']:.2f}, map "
                       f"{sph['map']:.2f}): {sum(pw) / sum(sph.values()):.2f}× less load work than `private`'s "
                       f"{sum(pw):.2f} s, for N = 2. Against {s_['n']} private copies at that per-copy cost "
                       f"({s_['n']} × {per_copy:.2f} s), `symm`'s {s_['load_cpu_cold']:.2f} s is "
                       f"{s_['n'] * per_copy / s_['load_cpu_cold']:.1f}× less work; its one copy in "
                       f"{shm} (alloc + convert, {sph['alloc'] + sph['convert']:.2f} s) costs "
                       f"{(sph['alloc'] + sph['convert']) / per_copy:.2f}× a private copy in anonymous memory (a tmpfs "
                       f"page goes through the page cache: inserted at `fallocate`, looked up at its first fault).")
            if s_["lph_warm"] and p_["lph_warm"] and sph["convert"] > 0:
                ab_line += (f" With {s_['n']} workers time-slicing on {os.cpu_count()} cores (warm), `symm`'s one conversion "
                            f"costs {s_['lph_warm']['convert'] / sph['convert']:.2f}× what it costs at 2 workers, a private "
                            f"copy {p_['lph_warm']['convert'] / p_['n'] / per_copy:.2f}×; `symm`'s alloc and map together "
                            f"{s_['lph_warm']['alloc'] + s_['lph_warm']['map']:.3f} s.")
        L.append(f"One worker's conversion in `private` costs {conv1:.2f} s here ({p_['n']} workers on {os.cpu_count()} "
                 f"cores); `symm` converts the model once in all ({s_['lph']['alloc'] + s_['lph']['convert']:.2f} s with "
                 f"the commit, over {s_['n']} workers) and then every worker maps the {model / MiB:.0f} MiB it reads: "
                 f"{1e3 * mapw:.0f} ms each{mm_map}. With {pgs} that mapping is paid per worker: even if the "
                 f"conversion cost `symm` no more than one private copy, the load-work ratio would be at most "
                 f"{s_['n']} / (1 + {s_['n']} × {mapw:.3f} / {conv1:.2f}) = {floor:.1f}× rather than {s_['n']}×"
                 f"@CAP2@; measured in the runs above: {p_['load_cpu_cold'] / s_['load_cpu_cold']:.1f}× cold, "
                 f"{p_['load_cpu_warm'] / s_['load_cpu_warm']:.1f}× warm"
                 + (f", and over {LA['n']} alternating warm pairs a median of {LA['ratio'][0]:.2f}× "
                    f"({LA['ratio'][1]:.2f}–{LA['ratio'][2]:.2f}; {LA['p']:.2f} s against {LA['s']:.2f} s)"
                    + (": above that cap, so there `symm`'s one conversion cost less than a private copy"
                       if LA["ratio"][0] > floor else "") if LA else "")
                 + f". Cold, each mode reads the file from the disk "
                 f"once (`private`'s other workers find it in the page cache), so that read "
                 f"(`private` cold − warm: {p_['load_cpu_cold'] - p_['load_cpu_warm']:.2f} s; `symm`: "
                 f"{s_['load_cpu_cold'] - s_['load_cpu_warm']:.2f} s) is added to both sides of the ratio"
                 + (f": with the warm pairs' medians, ({s_['n']} copies + one read) / (one copy + one read) = "
                    f"({LA['p']:.2f} + {s_['load_cpu_cold'] - s_['load_cpu_warm']:.2f}) / ({LA['s']:.2f} + "
                    f"{s_['load_cpu_cold'] - s_['load_cpu_warm']:.2f}) = "
                    f"{(LA['p'] + s_['load_cpu_cold'] - s_['load_cpu_warm']) / (LA['s'] + s_['load_cpu_cold'] - s_['load_cpu_warm']):.1f}×: what the one read leaves of the warm ratio" if LA else "")
                 + f". *alloc* is the commit of the heap "
                 f"part (`fallocate`) and with the conversion's first touch of {shm} pages it is the page "
                 f"allocation `private` pays in its own page faults, once per model instead of once per worker"
                 + (f" ({ab_alloc:.2f} s in all at 2 workers, {s_['lph']['alloc']:.2f} s at {s_['n']}: it follows the "
                    f"bytes committed, not the barriers)" if ab_alloc is not None else "")
                 + f"; the runtime's own threads spent {max(0.0, sum(s_['lph'].values()) - sum(s_['lph_t'].values())):.3f} s"
                 + (f"; the largest part is {R['symm']['part_bytes'] / MiB:.1f} MiB against {model / s_['n'] / MiB:.1f} MiB "
                    f"on average ({100 * (R['symm']['part_bytes'] * s_['n'] / model - 1):+.1f} %)" if R["symm"].get("part_bytes") else "")
                 + "."
                 + ab_line + "\n")
        L[-1] = L[-1].replace("@CAP2@", f" ({cap(ab_copy):.1f}× with the 2-worker per-copy cost below)" if ab_copy else "")
    if "symm-staged" in F and "symm-prefetch" in F:
        st, pf = F["symm-staged"], F["symm-prefetch"]
        hid = 1 - pf["fetch_s_per_gb"] / st["fetch_s_per_gb"] if st["fetch_s_per_gb"] else float("nan")
        L.append(f"**Prefetch:** `symm-staged` spends {st['fetch_s_per_gb']:.3f} s per GB copied blocked in `get`; "
                 f"`symm-prefetch` spends {pf['fetch_s_per_gb']:.3f} s per GB in `get_nbi` + `quiet`: it hid "
                 f"{100 * hid:.0f} % of the fetch. On one node `get_nbi` is a copy the calling core does before it "
                 f"returns (no copy engine, and no idle core with {n} workers on {os.cpu_count()} cores), so there is "
                 f"nothing for it to overlap with; a difference in either direction is this run's noise. Both staged modes "
                 f"serve {st['tpc_b1'] / F['symm']['tpc_b1']:.2f}× / {pf['tpc_b1'] / F['symm']['tpc_b1']:.2f}× "
                 f"`symm`'s batch-1 tokens per CPU-second (an extra pass over the weights per token) and hold a private staging buffer "
                 f"the size of the largest layer unit (the LM head), two of them for prefetch: the seed's pipeline is "
                 f"for devices with their own memory and a DMA engine, and on a CPU host computing in place is better.\n")
    if "update" in F:
        u = F["update"]
        L.append(f"**Update:** PE 0 published {u['publishes']:.0f} versions (F16→F32 into the inactive half, "
                 f"{u['publish_s'] / max(u['publishes'], 1):.2f} s each) while {n - 1} readers served; the readers switched "
                 f"{u['switches']} times in all; a request boundary (read the epoch, and on a change switch tables "
                 f"and acknowledge) took {u['stall_mean'] * 1e6:.1f} µs on average, the longest switch "
                 f"{u['stall_max'] * 1e6:.0f} µs (wall time: it includes being descheduled: {n} workers share {os.cpu_count()} cores); and {u['torn']} requests saw a torn layer (a per-layer version tag checked "
                 f"before and after every request). The double buffer holds two copies in the heap while an update "
                 f"is possible (node Δ above).\n")

    # Seeds' claims and the issue's targets, from the table.
    if "private" in F and "symm" in F:
        p, s = F["private"], F["symm"]
        one = model + s["private_bytes"]
        L.append("## Against the seed's claims and the targets\n")
        L.append("| claim / target | measured here |")
        L.append("|---|---|")
        L.append(f"| 82 % less memory per worker | `symm` vs `private` PSS: {100 * (1 - s['pss'] / p['pss']):.0f} % "
                 f"({p['pss'] / MiB:.0f} → {s['pss'] / MiB:.0f} MiB); node: {100 * (1 - s['node'] / p['node']):.0f} % "
                 f"({p['node'] / MiB:.0f} → {s['node'] / MiB:.0f} MiB) |")
        L.append(f"| node memory within 10 % of one copy + activations/KV | `symm` node Δ {s['node'] / MiB:.0f} MiB vs "
                 f"{model / MiB:.0f} + {s['private_bytes'] / MiB:.0f} MiB: {100 * (s['node'] / one - 1):+.1f} % |")
        L.append(f"| 8× faster load; load CPU 1/8 of `private` | load CPU `private` / `symm`"
                 + (f", **{LA['n']} alternating warm pairs: median {LA['ratio'][0]:.2f}×** ({LA['ratio'][1]:.2f}–"
                    f"{LA['ratio'][2]:.2f}; {LA['p']:.2f} vs {LA['s']:.2f} s); best of {len(runs_of(a.res, 'private', 'warm')) or 1} runs" if LA else "")
                 + f": {p['load_cpu_cold'] / s['load_cpu_cold']:.1f}× cold (one read of the file from the disk on both "
                 f"sides), {p['load_cpu_warm'] / s['load_cpu_warm']:.1f}× warm; wall {p['load_wall_cold'] / s['load_wall_cold']:.1f}× "
                 f"cold, {p['load_wall_warm'] / s['load_wall_warm']:.1f}× warm"
                 + (f"; equal conversion costs would give {s['floor_ratio']:.1f}× (the per-worker mapping, see the load "
                    f"paragraph)" if "floor_ratio" in s else "")
                 + (f"; at 2 workers, one per core: {s['ab2_ratio']:.2f}× (N = 2)" if "ab2_ratio" in s else "") + " |")
        ab = ab1(a.res)
        L.append(f"| equal throughput; batch 1 within 5 % of `private` | "
                 + (f"**batch 1, {ab['n']} alternating pairs** ({ab['req']} requests of {ab['gen']} tokens per worker, "
                    f"serving only): `symm` / `private` tok/s median {ab['tps'][0]:.3f} (pairs {ab['tps'][1]:.2f}–"
                    f"{ab['tps'][2]:.2f}; {ab['s_tps']:.1f} vs {ab['p_tps']:.1f} tok/s), per CPU-second {ab['tpc'][0]:.3f} "
                    f"({ab['tpc'][1]:.2f}–{ab['tpc'][2]:.2f}). In the table's single runs: " if ab else "")
                 + f"`symm` / `private` tok/s: "
                 f"{s['tps_b1'] / p['tps_b1']:.2f} at batch 1, {s['tps_bB'] / p['tps_bB']:.2f} at batch {base['batch']}; "
                 f"per CPU-second {s['tpc_b1'] / p['tpc_b1']:.2f} / {s['tpc_bB'] / p['tpc_bB']:.2f}"
                 + (f"; `symm-prefetch` per CPU-second: {F['symm-prefetch']['tpc_b1'] / p['tpc_b1']:.2f} / {F['symm-prefetch']['tpc_bB'] / p['tpc_bB']:.2f}" if "symm-prefetch" in F else "")
                 + " |")
        agree_all = max(F[m]["agree"] for m in F)
        L.append(f"| Σ PSS and node agree within 5 % | worst mode {100 * agree_all:.1f} % |")
        L.append("")
        if "mmap" in F:
            mm = F["mmap"]
            L.append("## When symmem beats `mmap`, and when not\n")
            same_mem = s["node"] <= 1.1 * mm["node"]
            cheaper_load = s["load_cpu_cold"] < 0.5 * p["load_cpu_cold"]
            tput = mm["tpc_b1"] / s["tpc_b1"]
            L.append(
                f"`mmap` of a file already in compute layout held one copy ({mm['node'] / MiB:.0f} MiB node Δ, "
                f"`symm` {s['node'] / MiB:.0f} MiB), loaded with {mm['load_cpu_cold']:.2f} s CPU (page-table set-up "
                f"only) and served {tput:.2f}× `symm`'s batch-1 tokens per CPU-second: **for weights used as stored, symmem adds "
                f"nothing over the page cache** (whose clean pages can also be dropped under pressure; the F32 file "
                f"is twice the F16 one on disk). "
                + (f"**symmem beats it when the weights are transformed at load**: here F16→F32, which `mmap` only "
                   f"avoids by converting offline; `symm` converts once across {n} workers ({s['load_cpu_cold']:.2f} s CPU "
                   f"vs {p['load_cpu_cold']:.2f} s for `private`) and "
                   + ("holds the same memory as `mmap`. " if same_mem else f"holds {s['node'] / mm['node']:.2f}× `mmap`'s memory. ")
                   if cheaper_load else
                   f"In this run `symm`'s load CPU ({s['load_cpu_cold']:.2f} s) was not below half of `private`'s "
                   f"({p['load_cpu_cold']:.2f} s), so the load advantage did not show. ")
                + (f"It also wins **when the weights change while serving** (`update`: {F['update']['publishes']:.0f} "
                   f"versions published while the readers served, {F['update']['stall_mean'] * 1e6:.0f} µs per request "
                   f"boundary, {F['update']['torn']} torn reads, no pause) " if "update" in F else "")
                + (f"and **when the workers are not children of one loader**: `fork` shares as well "
                   f"({F['fork']['node'] / MiB:.0f} MiB) but only for processes forked after the load, and any write "
                   f"to a page makes it private." if "fork" in F else "") + "\n")
    L.append("## Caveats\n")
    L.append("- `symm`'s load CPU is the conversion, done once in all (1/N per worker), plus mapping the peers' parts "
             "in every worker (page-table set-up, as `mmap`'s `MAP_POPULATE` does); the second part is paid per worker, "
             "which keeps the load-work ratio to `private` below N unless the one conversion costs less than a private "
             "copy; with more workers than cores the one conversion costs more than at one worker per core (the load "
             "paragraph above). `update` readers map the "
             "other half when they first switch to it (the faults while serving in its row).\n")
    L.append("- Synthetic weights, shortened model (the preset's layer shape, fewer layers); per-layer figures scale with "
             "the layer count. `PRESET=llama7b-slice LAYERS=2` runs the seed's LLaMA-7B layer shape.\n"
             + ("- 2 MiB pages need a tmpfs mounted with `huge=always` (or hugetlbfs): run.sh mounts one as root. "
                "`/dev/shm` itself has 4 KiB pages here, with which every worker takes many more faults to map "
                "the shared copy (`HUGE=0 run.sh` measures that).\n" if huge else
                "- 4 KiB pages (`/dev/shm`); page tables for the shared copy are paid per worker (in the node figure, "
                "not in PSS). Run as root for 2 MiB pages (run.sh mounts a `huge=always` tmpfs for the heaps).\n")
             + "- run.sh touches 80 % of the available memory once before measuring: a virtual machine may back "
             "memory only at its first touch (15× the cost of a later one on this VM), which would otherwise land on "
             "whichever mode ran first.\n"
             "- The symmetric allocation is as large as the largest PE's part; the matrices are used as row blocks of at "
             "most 4 MiB (in every mode) so the parts balance.\n"
             "- One NUMA node: nothing here says how a shared copy behaves across sockets.\n")
    img = os.path.splitext(a.out)[0] + ".png"
    plot(F, img, base)
    text = "\n".join(L).replace("@PLOT@", f"![memory, load CPU and throughput per mode]({os.path.basename(img)})")
    open(a.out, "w").write(text)
    print(f"wrote {a.out} and {img}")


def plot(F, path, base):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ms = [m for m in MODES if m in F]
    x = np.arange(len(ms))
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    ax[0].bar(x - 0.2, [F[m]["node"] / MiB for m in ms], 0.4, label="node Δ (cgroup)")
    ax[0].bar(x + 0.2, [F[m]["sum_dpss"] / MiB for m in ms], 0.4, label="Σ ΔPSS")
    ax[0].axhline(base["model_f32_bytes"] / MiB, color="k", lw=0.8, ls="--", label="one F32 copy")
    ax[0].set_ylabel("MiB")
    ax[0].set_title(f"memory, {base['workers']} workers")
    ax[0].legend(fontsize=8)
    if all(F[m]["has_phases"] for m in ms if m != "fork"):  # cold, by phase (fork: its total)
        bottom = np.zeros(len(ms))
        for k, col in (("alloc", "C2"), ("convert", "C0"), ("map", "C3"), ("stage", "C4")):
            h = np.array([F[m]["lph"][k] if m != "fork" else (F[m]["load_cpu_cold"] if k == "convert" else 0.0) for m in ms])
            ax[1].bar(x - 0.2, h, 0.4, bottom=bottom, color=col, label=f"cold: {k}")
            bottom += h
    else:
        ax[1].bar(x - 0.2, [F[m]["load_cpu_cold"] for m in ms], 0.4, label="cold")
    ax[1].bar(x + 0.2, [F[m]["load_cpu_warm"] for m in ms], 0.4, color="C1", label="warm")
    ax[1].set_ylabel("CPU s (all workers)")
    ax[1].set_title("load work")
    ax[1].legend(fontsize=8)
    ax[2].bar(x - 0.2, [F[m]["tps_b1"] for m in ms], 0.4, label="batch 1")
    ax2 = ax[2].twinx()
    ax2.bar(x + 0.2, [F[m]["tps_bB"] for m in ms], 0.4, color="C1", label=f"batch {base['batch']}")
    ax[2].set_ylabel("tok/s, batch 1")
    ax2.set_ylabel(f"tok/s, batch {base['batch']}")
    ax[2].set_title("throughput (all workers)")
    h1, l1 = ax[2].get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right", framealpha=0.9)
    for a_ in ax:
        a_.set_xticks(x)
        a_.set_xticklabels(ms, rotation=30, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    main()
